"""Each rule's exact one-line finding (``FILE:LINE:COL: CODE severity: key: message (hint: ...)``)
for a recipe that breaks it, and no finding for the recipe just inside its bound.

A case's body is the start of the recipe (line 1 is its first line); the sections it leaves out
(model, container, bench) are appended after it, pinned and clean, so a clean body gives no
finding at all.  In-memory recipes written to tmp_path, checked in process: fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autobench.recipe import load_recipe
from autobench.recipe.loader import Position
from autobench.recipe.rules import RULES, Finding, check, flag_name, load_error_finding, norm_flag, world_size

SHA = "a" * 40
DIGEST = "sha256:" + "b" * 64
IMAGE = f"vllm/vllm-openai@{DIGEST}"
DEFAULTS = {
    "model": f"model:\n  repo: org/model\n  revision: {SHA}\n  served_name: m\n",
    "container": f'container:\n  image: {IMAGE}\n  ports: ["8000:8000"]\n',
    "bench": "bench:\n  dataset:\n    path: data.json\n",
}
BENCH = DEFAULTS["bench"]  # 3 lines: a body that extends bench starts with it


def container(more: str = "", image: str = IMAGE) -> str:
    """A container section (3 lines, then ``more``)."""
    return f"container:\n  image: {image}\n  ports: ['8000:8000']\n{more}"


def recipe_text(body: str) -> str:
    return body + "".join(block for key, block in DEFAULTS.items() if not re.search(rf"^{key}:", body, re.M))


def lines(tmp_path: Path, body: str, **kw) -> list[str]:
    """The findings of ``body`` (+ the clean defaults) as the text lines a user reads."""
    path = tmp_path / "r.yaml"
    path.write_text(recipe_text(body), encoding="utf-8")
    return [f.text().replace(str(path), "r.yaml") for f in check(load_recipe(path), **kw)]


def L(where: str, code: str, severity: str, key: str, message: str, hint: str | None = None) -> str:
    """One expected line; the hint defaults to the rule's (the table docs/recipes.md shows)."""
    loc = "r.yaml: " if where == "file" else f"r.yaml:{where}: " if where else ""
    return f"{loc}{code} {severity}: {key}: {message} (hint: {RULES[code].hint if hint is None else hint})"


KNOWN_SPEC = "dflash, eagle, eagle3, mtp, ngram, draft_model, medusa, mlp_speculator, suffix"
KNOWN_QUANT = (
    "auto-round, awq, gptq, fp8, nvfp4, mxfp4, int4, int8, bitsandbytes, gguf, compressed-tensors, "
    "modelopt, modelopt_fp4, modelopt_mixed, mixed, none"
)
AB032_LIKE_HINT = "if it is a secret, move the name to secrets:; otherwise ignore this warning"


def test_the_clean_defaults_have_no_finding(tmp_path):
    assert lines(tmp_path, "") == []


# --------------------------------------------------------------------------- speculative
SPEC_CASES = [
    (
        "dflash-bare",
        "speculative:\n  method: dflash\n",
        [
            L(
                "2:11",
                "AB001",
                "error",
                "speculative.method",
                "dflash needs num_speculative_tokens (vLLM refuses to start without it)",
            ),
            L("2:11", "AB002", "error", "speculative.method", "dflash needs a draft model"),
        ],
    ),
    (
        "dflash-complete",
        f"speculative:\n  method: dflash\n  model: z/d\n  revision: {SHA}\n  num_speculative_tokens: 5\n",
        [],
    ),
    ("suffix-needs-nothing", "speculative:\n  method: suffix\n", []),
    ("ngram-tokens-no-draft", "speculative:\n  method: ngram\n  num_speculative_tokens: 3\n", []),
    (
        "ngram-with-draft",
        f"speculative:\n  method: ngram\n  model: z/d\n  revision: {SHA}\n  num_speculative_tokens: 3\n",
        [L("3:10", "AB003", "warning", "speculative.model", "method ngram does not use a draft model")],
    ),
    (
        "unknown-method",
        "speculative:\n  method: newthing\n",
        [
            L(
                "2:11",
                "AB061",
                "warning",
                "speculative.method",
                "speculative method 'newthing' is not one autobench knows",
                f"known: {KNOWN_SPEC}; a new method is passed through as written",
            )
        ],
    ),
    (
        "options-repeat-typed-keys",
        "speculative:\n  method: ngram\n  num_speculative_tokens: 3\n  options:\n    method: x\n    model: y\n"
        "    revision: z\n    num_speculative_tokens: 2\n    prompt_lookup_max: 4\n",
        [
            L("5:13", "AB042", "error", "speculative.options.method", "repeats speculative.method"),
            L("6:12", "AB042", "error", "speculative.options.model", "repeats speculative.model"),
            L(
                "7:15",
                "AB042",
                "error",
                "speculative.options.revision",
                "repeats speculative.revision",
            ),
            L(
                "8:29",
                "AB042",
                "error",
                "speculative.options.num_speculative_tokens",
                "repeats speculative.num_speculative_tokens",
            ),
        ],
    ),
    # ------------------------------------------------------------------- pins
    (
        "model-on-a-branch",
        "model:\n  repo: org/model\n  revision: main\n",
        [L("3:13", "AB010", "warning", "model.revision", "model revision 'main' is not a full commit sha")],
    ),
    (
        "trusted-code-unpinned-and-tokenizer-without-revision",
        "model:\n  repo: org/model\n  revision: v1\n  trust_remote_code: true\n  tokenizer: org/tok\n",
        [
            L("3:13", "AB010", "warning", "model.revision", "model revision 'v1' is not a full commit sha"),
            L("4:22", "AB013", "warning", "model.trust_remote_code", "true with model revision 'v1'"),
            L(
                "5:14",
                "AB011",
                "warning",
                "model.tokenizer",
                "tokenizer revision '(none, i.e. main)' is not a full commit sha",
            ),
        ],
    ),
    (
        "trusted-code-pinned",
        f"model:\n  repo: org/model\n  revision: {SHA}\n  trust_remote_code: true\n  tokenizer: org/tok\n"
        f"  tokenizer_revision: {SHA}\n",
        [],
    ),
    (
        "tokenizer-revision-on-a-branch",
        f"model:\n  repo: org/model\n  revision: {SHA}\n  tokenizer_revision: dev\n",
        [
            L(
                "4:23",
                "AB011",
                "warning",
                "model.tokenizer_revision",
                "tokenizer revision 'dev' is not a full commit sha",
            )
        ],
    ),
    (
        "draft-without-revision",
        "speculative:\n  method: eagle\n  model: z/d\n  num_speculative_tokens: 5\n",
        [
            L(
                "3:10",
                "AB012",
                "warning",
                "speculative.model",
                "draft revision '(none, i.e. main)' is not a full commit sha",
            )
        ],
    ),
    (
        "draft-on-a-branch",
        "speculative:\n  method: eagle\n  model: z/d\n  revision: main\n  num_speculative_tokens: 5\n",
        [L("4:13", "AB012", "warning", "speculative.revision", "draft revision 'main' is not a full commit sha")],
    ),
]


# --------------------------------------------------------------------------- engine vs bench
def _gmu(value: str, bad: bool) -> tuple[str, str, list[str]]:
    shown = str(float(value))
    found = [
        L(
            "2:27",
            "AB023",
            "error",
            "engine.gpu_memory_utilization",
            f"{shown} is outside (0, 1]",
        )
    ]
    return (f"gmu-{value}", f"engine:\n  gpu_memory_utilization: {value}\n", found if bad else [])


RANDOM_NEEDS = [L("2:3", "AB026", "warning", "bench.dataset", "random dataset needs input_len and output_len")]

ENGINE_BENCH_CASES = [
    ("seqs-equal-concurrency", f"engine:\n  max_num_seqs: 8\n{BENCH}  concurrency: 8\n", []),
    (
        "seqs-below-largest-concurrency",
        f"engine:\n  max_num_seqs: 15\n{BENCH}  concurrency: [1, 4, 16]\n",
        [
            L(
                "2:17",
                "AB020",
                "warning",
                "engine.max_num_seqs",
                "15 < bench.concurrency 16",
            )
        ],
    ),
    ("bench-model-is-served-name", f"{BENCH}  model: m\n", []),
    (
        "bench-model-differs",
        f"{BENCH}  model: other\n",
        [L("4:10", "AB021", "error", "bench.model", "'other' != served name 'm'")],
    ),
    _gmu("1.0", False),
    _gmu("0.5", False),
    _gmu("0.01", False),
    _gmu("0", True),
    _gmu("-0.5", True),
    _gmu("1.01", True),
    _gmu("1.5", True),
    _gmu("2", True),
    ("max-tokens-at-the-limit", f"engine:\n  max_model_len: 4096\n{BENCH}  max_tokens: 4096\n", []),
    (
        "max-tokens-over-the-limit",
        f"engine:\n  max_model_len: 4096\n{BENCH}  max_tokens: 4097\n",
        [L("6:15", "AB024", "error", "bench.max_tokens", "4097 output tokens > max_model_len 4096")],
    ),
    ("max-model-len-auto", f"engine:\n  max_model_len: auto\n{BENCH}  max_tokens: 9000\n", []),
    (
        "random-output-len-over-the-limit",
        "engine:\n  max_model_len: 1024\nbench:\n  dataset:\n    kind: random\n    input_len: 10\n"
        "    output_len: [512, 2048]\n",
        [L("7:5", "AB024", "error", "bench.dataset.output_len", "2048 output tokens > max_model_len 1024")],
    ),
    (
        "dataset-jsonl-without-path",
        "bench:\n  dataset:\n    kind: jsonl\n",
        [L("2:3", "AB025", "error", "bench.dataset", "dataset kind jsonl needs a path or a repo")],
    ),
    (
        "dataset-sharegpt-without-path",
        "bench:\n  dataset:\n    kind: sharegpt\n",
        [L("2:3", "AB025", "error", "bench.dataset", "dataset kind sharegpt needs a path or a repo")],
    ),
    (
        "dataset-parquet-without-path",
        "bench:\n  dataset:\n    kind: parquet\n",
        [L("2:3", "AB025", "error", "bench.dataset", "dataset kind parquet needs a path or a repo")],
    ),
    ("dataset-hub-repo", f"bench:\n  dataset:\n    repo: org/data\n    file: a.json\n    revision: {SHA}\n", []),
    (
        "dataset-hub-repo-vllm-client",
        f"bench:\n  client: vllm\n  dataset:\n    repo: org/data\n    file: a.json\n    revision: {SHA}\n",
        [L("3:3", "AB029", "error", "bench.dataset", "client vllm does not read a Hub dataset repo")],
    ),
    (
        "dataset-fields-vllm-client",
        "bench:\n  client: vllm\n  dataset:\n    kind: jsonl\n    path: a.jsonl\n    fields: {prompt: q}\n",
        [L("3:3", "AB029", "error", "bench.dataset", "client vllm does not read a field mapping")],
    ),
    (
        "dataset-parquet-vllm-client",
        "bench:\n  client: vllm\n  dataset:\n    kind: parquet\n    path: a.parquet\n",
        [L("3:3", "AB029", "error", "bench.dataset", "client vllm does not read a parquet file")],
    ),
    ("dataset-jsonl-vllm-client", "bench:\n  client: vllm\n  dataset:\n    kind: jsonl\n    path: a.jsonl\n", []),
    ("random-no-lengths", "bench:\n  dataset: {kind: random}\n", RANDOM_NEEDS),
    ("random-input-only", "bench:\n  dataset: {kind: random, input_len: 8}\n", RANDOM_NEEDS),
    ("random-output-only", "bench:\n  dataset: {kind: random, output_len: 8}\n", RANDOM_NEEDS),
    ("random-both", "bench:\n  dataset: {kind: random, input_len: 8, output_len: 8}\n", []),
    (
        "sampler-keys-autobench-ignores",
        f"{BENCH}  sampler:\n    min_p: 0.1\n    frequency_penalty: 0.5\n    repetition_penalty: 1.1\n"
        "    temperature: 0.7\n",
        [
            L("5:12", "AB028", "warning", "bench.sampler.min_p", "autobench's client does not send it"),
            L(
                "6:24",
                "AB028",
                "warning",
                "bench.sampler.frequency_penalty",
                "autobench's client does not send it",
            ),
            L(
                "7:25",
                "AB028",
                "warning",
                "bench.sampler.repetition_penalty",
                "autobench's client does not send it",
            ),
        ],
    ),
    ("sampler-autobench-sends", f"{BENCH}  sampler:\n    temperature: 0.7\n    top_p: 0.9\n", []),
    ("sampler-vllm-client", f"{BENCH}  client: vllm\n  sampler:\n    min_p: 0.1\n", []),
    (
        "max-seconds-vllm-client",
        f"{BENCH}  client: vllm\n  max_seconds: 60\n",
        [
            L(
                "5:16",
                "AB027",
                "warning",
                "bench.max_seconds",
                "vllm bench serve has no time cap; max_seconds is ignored",
            )
        ],
    ),
    ("max-seconds-autobench-client", f"{BENCH}  client: autobench\n  max_seconds: 60\n", []),
    ("vllm-client-no-max-seconds", f"{BENCH}  client: vllm\n", []),
]


# --------------------------------------------------------------------------- secrets
def _given(where: str, key: str, name: str) -> str:
    return L(where, "AB032", "error", key, f"{name} is given a value in extra_args")


SECRET_CASES = [
    (
        "token-in-a-list",
        "meta:\n  tags: [x, hf_abcdefghijklmnopqrstuvwxyz012345]\n",
        [L("2:13", "AB030", "error", "meta.tags[1]", "looks like a literal token/key value")],
    ),
    (
        "nul-in-a-value",
        'meta:\n  notes: "a\\0b"\n',
        [L("2:10", "AB055", "error", "meta.notes", "contains a NUL character")],
    ),
    (
        "secret-names",
        "secrets: [A, 1B, A, 1B]\n",
        [
            L("1:14", "AB034", "error", "secrets[1]", "secret name '1B' is not a valid shell name"),
            L("1:18", "AB035", "warning", "secrets[2]", "secret A is declared twice"),
            L("1:21", "AB034", "error", "secrets[3]", "secret name '1B' is not a valid shell name"),
            L("1:21", "AB035", "warning", "secrets[3]", "secret 1B is declared twice"),
        ],
    ),
    (
        "env-names",
        "secrets: [HF_TOKEN]\nenv:\n  HF_TOKEN: x\n  OPENAI_API_KEY: y\n  MY_PASSWORD: z\n  9X: w\n  PLAIN: v\n",
        [
            L(
                "3:13",
                "AB031",
                "error",
                "env.HF_TOKEN",
                "declared under secrets: and also given a value in env",
            ),
            L(
                "4:19",
                "AB032",
                "error",
                "env.OPENAI_API_KEY",
                "a secret; its value must not be written in the recipe",
            ),
            L("5:16", "AB032", "warning", "env.MY_PASSWORD", "looks like a secret name", AB032_LIKE_HINT),
            L("6:7", "AB033", "error", "env.9X", "env name '9X' is not a valid shell name"),
        ],
    ),
    (
        "engine-env-flag-values",
        "secrets: [MY_KEY]\nengine:\n  extra_args: ['--env', 'MY_KEY=1', '--rm', '--env=HF_TOKEN=x']\n",
        [
            _given("3:16", "engine.extra_args[0]", "MY_KEY"),
            _given("3:45", "engine.extra_args[3]", "HF_TOKEN"),
            L("3:45", "AB041", "error", "engine.extra_args[3]", "--env appears twice in engine.extra_args"),
        ],
    ),
    (
        "container-env-flag-values",
        "secrets: [MY_KEY]\n"
        + container(
            "  extra_args: ['-e', 'HF_TOKEN=abc', '-e', 'PLAIN=1', '--label', 'HF_TOKEN=x', '-e', 'MY_KEY=v',"
            " '-e=HF_TOKEN=y', '-e', 'HF_TOKEN', '-e', 'OPENAI_API_KEY=z', '--rm', '-e']\n"
        ),
        [
            _given("5:16", "container.extra_args[0]", "HF_TOKEN"),
            _given("5:80", "container.extra_args[6]", "MY_KEY"),
            _given("5:98", "container.extra_args[8]", "HF_TOKEN"),
            _given("5:133", "container.extra_args[11]", "OPENAI_API_KEY"),
        ],
    ),
    (
        # only --env/-e set a variable: another flag's NAME=value (a label here) is not one
        "other-flag-with-a-name-value-pair",
        container("  extra_args: ['--label=HF_TOKEN=present', '--label', 'OPENAI_API_KEY=none']\n"),
        [],
    ),
    (
        # a name alone passes the variable from the shell: no value is written
        "env-flag-by-name-only",
        container("  extra_args: ['-e', 'HF_TOKEN', '--env', 'OPENAI_API_KEY']\n"),
        [],
    ),
]


def test_a_value_of_a_declared_secret_is_refused_only_when_the_environment_is_given(tmp_path):
    body = "secrets: [MY_KEY]\nmeta:\n  notes: uses s3cr3t-value-123 here\n"
    env = {"MY_KEY": "s3cr3t-value-123"}
    assert lines(tmp_path, body, env=env) == [
        L("3:10", "AB030", "error", "meta.notes", "holds the value of the secret variable MY_KEY")
    ]
    assert lines(tmp_path, body) == []
    assert lines(tmp_path, body, env={"MY_KEY": "another-value-456"}) == []


# --------------------------------------------------------------------------- extra_args
STRAY = "item {i} is not a flag and follows no flag that takes a value"
ARGS_CASES = [
    (
        "engine-flags",
        "engine:\n  extra_args: ['--max_num_seqs', '4', '--max-model-len=8', '-tp', '2', '--seed', '1', '--seed=2',"
        " '--api-key', 'a', '--api-key', 'b', '--swap_space', '4', '--swap-space', '4', '--enable-lora']\n",
        [
            L(
                "2:16",
                "AB040",
                "error",
                "engine.extra_args[0]",
                "--max_num_seqs in extra_args shadows the typed field engine.max_num_seqs (vLLM reads it as --max-num-seqs)",
                "delete --max_num_seqs from engine.extra_args and set engine.max_num_seqs instead",
            ),
            L(
                "2:39",
                "AB040",
                "error",
                "engine.extra_args[2]",
                "--max-model-len in extra_args shadows the typed field engine.max_model_len",
                "delete --max-model-len from engine.extra_args and set engine.max_model_len instead",
            ),
            L(
                "2:60",
                "AB040",
                "error",
                "engine.extra_args[3]",
                "-tp in extra_args shadows the typed field engine.tensor_parallel_size",
                "delete -tp from engine.extra_args and set engine.tensor_parallel_size instead",
            ),
            L("2:87", "AB041", "error", "engine.extra_args[7]", "--seed appears twice in engine.extra_args"),
            L("2:156", "AB041", "error", "engine.extra_args[14]", "--swap-space appears twice in engine.extra_args"),
        ],
    ),
    (
        "docker-flags",
        container(
            "  extra_args: ['--name', 'x', '--ipc=host', '--ulimit', 'a=1', '--ulimit', 'b=2', '--network', 'host',"
            " '--network', 'bridge', '-v', '/a:/b', '-v', '/c:/d', '-d']\n"
        ),
        [
            L(
                "4:16",
                "AB040",
                "error",
                "container.extra_args[0]",
                "--name in extra_args shadows the typed field container.name",
                "delete --name from container.extra_args and set container.name instead",
            ),
            L(
                "4:31",
                "AB040",
                "error",
                "container.extra_args[2]",
                "--ipc in extra_args shadows the typed field container.ipc",
                "delete --ipc from container.extra_args and set container.ipc instead",
            ),
            L("4:104", "AB041", "error", "container.extra_args[9]", "--network appears twice in container.extra_args"),
            L(
                "4:157",
                "AB040",
                "error",
                "container.extra_args[15]",
                "-d in extra_args shadows the typed field (autobench runs the container detached)",
                "delete -d from container.extra_args (autobench runs the container detached)",
            ),
        ],
    ),
    (
        "docker-has-no-underscore-flags",
        container("  extra_args: ['--shm_size', '1g']\n"),
        [
            L(
                "4:16",
                "AB040",
                "error",
                "container.extra_args[0]",
                "--shm_size in extra_args shadows the typed field container.shm_size"
                " (docker refuses it as an unknown flag; its name is --shm-size)",
                "delete --shm_size from container.extra_args and set container.shm_size instead",
            ),
        ],
    ),
    (
        "stray-words",
        container(
            "  extra_args: ['--network', 'host', 'img2', '--rm', 'img', '-it', 'x', '-dp', '8000:8000',"
            " '--ipc=host', 'y', '-P', 'z', '-w', '-1', '-e', '--']\n"
        ),
        [
            L("4:37", "AB056", "error", "container.extra_args[2]", STRAY.format(i=2)),
            L("4:53", "AB056", "error", "container.extra_args[4]", STRAY.format(i=4)),
            L("4:67", "AB056", "error", "container.extra_args[6]", STRAY.format(i=6)),
            L(
                "4:92",
                "AB040",
                "error",
                "container.extra_args[9]",
                "--ipc in extra_args shadows the typed field container.ipc",
                "delete --ipc from container.extra_args and set container.ipc instead",
            ),
            L("4:106", "AB056", "error", "container.extra_args[10]", STRAY.format(i=10)),
            L("4:117", "AB056", "error", "container.extra_args[12]", STRAY.format(i=12)),
        ],
    ),
    (
        "a-lone-word-is-the-image",
        container("  extra_args: ['img']\n"),
        [L("4:16", "AB056", "error", "container.extra_args[0]", STRAY.format(i=0))],
    ),
    (
        "double-dash-ends-the-options",
        container("  extra_args: ['--rm', '--', 'img', 'x']\n"),
        [L("4:24", "AB056", "error", "container.extra_args[1]", "'--' ends docker's options here")],
    ),
]


# --------------------------------------------------------------------------- container
def _image(image: str, code: str | None, message: str = "", hint: str | None = None) -> tuple[str, str, list[str]]:
    severity = {"AB050": "warning", "AB051": "info"}.get(code or "", "")
    found = [L("2:10", code, severity, "container.image", message, hint)] if code else []
    return (f"image-{image}", container(image=image), found)


FLOATING = "image tag {!r} moves over time"
CONTAINER_CASES = [
    _image(
        "vllm-node",
        "AB050",
        "image 'vllm-node' is untagged (docker reads it as :latest, which moves over time)",
        "pin it by digest (vllm-node@sha256:...) or name a fixed tag",
    ),
    *(
        _image(f"x/y:{tag}", "AB050", FLOATING.format(tag))
        for tag in ("latest", "nightly-2025", "main", "master", "edge", "dev2")
    ),
    _image("x/y:v0.11.0", "AB051", "image tag 'v0.11.0' is not a digest"),
    _image("x/y:latest2", "AB051", "image tag 'latest2' is not a digest"),
    _image(f"x/y:v1@sha256:{'c' * 64}", None),
    (
        "built-from-a-branch",
        container(image="vllm-node:latest") + "build:\n  base_image: nvidia/cuda:12\n  vllm_ref: main\n",
        [L("6:13", "AB069", "warning", "build.vllm_ref", "'main' is not a full commit sha")],
    ),
    (
        "built-from-an-upper-case-sha",
        container(image="vllm-node:latest") + f"build:\n  base_image: nvidia/cuda:12\n  vllm_ref: {'A' * 40}\n",
        [L("6:13", "AB069", "warning", "build.vllm_ref", f"{'A' * 40!r} is not a full commit sha")],
    ),
    (
        "built-from-a-commit",
        container(image="vllm-node:latest") + f"build:\n  base_image: nvidia/cuda:12\n  vllm_ref: '{'0' * 40}'\n",
        [],
    ),
    ("good-name", container("  name: ab-strict.1_x\n"), []),
    (
        "bad-name",
        container("  name: -bad\n"),
        [L("4:9", "AB052", "error", "container.name", "container name '-bad' is not a valid docker name")],
    ),
]

OFFLINE = [L("5:19", "AB053", "warning", "env.HF_HUB_OFFLINE", "offline mode without a mounted HF cache")]
for value in ("1", "true", "YES", "on", "'1'"):
    CONTAINER_CASES.append((f"offline-{value}", container() + f"env:\n  HF_HUB_OFFLINE: {value}\n", OFFLINE))
CONTAINER_CASES.append(("online-0", container() + "env:\n  HF_HUB_OFFLINE: 0\n", []))
CONTAINER_CASES.append(("other-env-only", container() + "env:\n  PLAIN: 1\n", []))
for volume, mounted in (
    ("~/.cache/huggingface:/root/.cache/huggingface", True),
    ("/srv/HF:/cache", True),
    ("/data:/data", False),
    ("/cache", False),
):
    CONTAINER_CASES.append(
        (
            f"offline-volume-{volume}",
            container(f"  volumes: ['{volume}']\n") + "env:\n  HF_HUB_OFFLINE: 1\n",
            []
            if mounted
            else [L("6:19", "AB053", "warning", "env.HF_HUB_OFFLINE", "offline mode without a mounted HF cache")],
        )
    )


# --------------------------------------------------------------------------- local model
def _local(repo: str, volumes: str, found: bool) -> tuple[str, str, list[str]]:
    message = f"{repo} is a directory on this machine; the container cannot see it"
    return (
        f"local-{repo}-{volumes}",
        f"model:\n  repo: {repo}\n  served_name: m\n" + container(f"  volumes: {volumes}\n"),
        [L("2:9", "AB075", "error", "model.repo", message)] if found else [],
    )


LOCAL_CASES = [
    _local("/models/x", "[]", True),
    _local("/models/x", "['/srv/x:/models/x:ro']", False),
    _local("/models/x", "['/srv/x:/models/x']", False),
    _local("/models/x", "['/srv/x:/models/x/']", False),
    _local("/models/x", "['/srv:/models/']", False),
    _local("/models/x", "['/srv:/models']", False),
    _local("/models/x-int4", "['/srv/x:/models/x', '/cache']", True),
    _local("/models/x", "['/models/x:/elsewhere']", True),
    (
        "local-draft",
        "speculative:\n  method: eagle\n  model: /models/d\n  num_speculative_tokens: 3\n"
        + container("  volumes: []\n"),
        [
            L(
                "3:10",
                "AB075",
                "error",
                "speculative.model",
                "/models/d is a directory on this machine; the container cannot see it",
            )
        ],
    ),
    (
        "meta-baseline-is-itself",
        "name: r\nmeta:\n  baseline: r\n",
        [L("3:13", "AB054", "warning", "meta.baseline", "baseline is the recipe itself")],
    ),
    ("meta-baseline-other", "name: r\nmeta:\n  baseline: other\n", []),
]


# --------------------------------------------------------------------------- consistency
def _quant(method: str, more: str = "") -> str:
    return (
        f"model:\n  repo: org/model\n  revision: {SHA}\n  served_name: m\n  quantization:\n    method: {method}\n{more}"
    )


def _ab062(where: str, key: str, passed: str = "awq", method: str = "gptq") -> str:
    return L(
        where,
        "AB062",
        "error",
        key,
        f"the command passes --quantization {passed} but model.quantization.method is {method}",
    )


def _ab040q(where: str, index: int, flag: str) -> str:
    return L(
        where,
        "AB040",
        "error",
        f"engine.extra_args[{index}]",
        f"{flag} in extra_args shadows the typed field engine.quantization",
        f"delete {flag} from engine.extra_args and set engine.quantization instead",
    )


def _ab060(where: str, key: str, method: str) -> str:
    return L(
        where,
        "AB060",
        "warning",
        key,
        f"quantization method {method!r} is not one autobench knows",
        f"known: {KNOWN_QUANT}; a new method is kept as written",
    )


def _desc(description: str, tokens: str = "4") -> str:
    return f"speculative:\n  method: ngram\n  num_speculative_tokens: {tokens}\nmeta:\n  description: '{description}'\n"


def _ab063(said: str) -> list[str]:
    return [
        L(
            "5:16",
            "AB063",
            "warning",
            "meta.description",
            f"the description says {said!r} but num_speculative_tokens is 4",
        )
    ]


CONSISTENCY_CASES = [
    (
        "unknown-quant-methods",
        _quant("foo", "    components:\n      - {method: awq}\n      - {method: bar}\n"),
        [
            _ab060("6:13", "model.quantization.method", "foo"),
            _ab060("9:18", "model.quantization.components[1].method", "bar"),
        ],
    ),
    (
        "engine-quantization-differs",
        _quant("gptq", "engine:\n  quantization: awq\n"),
        [_ab062("8:17", "engine.quantization")],
    ),
    ("engine-quantization-agrees", _quant("gptq", "engine:\n  quantization: gptq\n"), []),
    ("passed-is-a-prefix", _quant("awq", "engine:\n  quantization: awq_marlin\n"), []),
    (
        "said-starts-with-passed",
        _quant("modelopt_fp4", "engine:\n  quantization: modelopt\n"),
        [],
    ),
    ("spelled-with-underscores", _quant("compressed-tensors", "engine:\n  quantization: compressed_tensors\n"), []),
    (
        "said-in-upper-case",
        _quant("AWQ", "engine:\n  quantization: awq\n"),
        [_ab060("6:13", "model.quantization.method", "AWQ")],
    ),
    ("mixed-passes-anything", _quant("mixed", "engine:\n  quantization: awq\n"), []),
    ("none-passes-anything", _quant("none", "engine:\n  quantization: awq\n"), []),
    ("no-metadata", "engine:\n  quantization: awq\n", []),
    ("metadata-only", _quant("gptq"), []),
    (
        "short-flag-after-others",
        _quant("gptq", "engine:\n  extra_args: ['--seed', '1', '-q', 'awq']\n"),
        [_ab040q("8:31", 2, "-q"), _ab062("8:31", "engine.extra_args[2]")],
    ),
    (
        "long-flag-with-equals",
        _quant("gptq", "engine:\n  extra_args: ['--quantization=awq']\n"),
        [_ab040q("8:16", 0, "--quantization"), _ab062("8:16", "engine.extra_args[0]")],
    ),
    (
        "long-flag-then-value",
        _quant("gptq", "engine:\n  extra_args: ['--quantization', 'awq']\n"),
        [_ab040q("8:16", 0, "--quantization"), _ab062("8:16", "engine.extra_args[0]")],
    ),
    (
        "value-after-a-boolean-flag",
        _quant("gptq", "engine:\n  extra_args: ['--enforce-eager', '-q', 'awq']\n"),
        [
            L(
                "8:16",
                "AB040",
                "error",
                "engine.extra_args[0]",
                "--enforce-eager in extra_args shadows the typed field engine.enforce_eager",
                "delete --enforce-eager from engine.extra_args and set engine.enforce_eager instead",
            ),
            _ab040q("8:35", 1, "-q"),
            _ab062("8:35", "engine.extra_args[1]"),
        ],
    ),
    (
        "flag-without-value-at-the-end",
        _quant("gptq", "engine:\n  extra_args: ['--quantization']\n"),
        [_ab040q("8:16", 0, "--quantization")],
    ),
    (
        "flag-followed-by-a-flag",
        _quant("gptq", "engine:\n  extra_args: ['--quantization', '--seed', '1']\n"),
        [_ab040q("8:16", 0, "--quantization")],
    ),
    (
        "flag-agrees-after-others",
        _quant("gptq", "engine:\n  extra_args: ['--seed', '1', '--quantization', 'gptq']\n"),
        [_ab040q("8:31", 2, "--quantization")],
    ),
    ("description-agrees", _desc("k=4 and 4 draft tokens"), []),
    ("description-k-spaced", _desc("k = 5, k=6"), _ab063("k = 5")),
    ("description-speculative-tokens", _desc("uses 3 speculative tokens"), _ab063("3 speculative tokens")),
    ("description-second-mention-differs", _desc("k=4 then 7 spec tokens"), _ab063("7 spec tokens")),
    ("description-says-nothing", _desc("nothing here"), []),
    ("description-without-token-count", "speculative:\n  method: suffix\nmeta:\n  description: k=3\n", []),
    ("description-without-speculative", "meta:\n  description: k=3\n", []),
    ("tokens-without-description", "speculative:\n  method: ngram\n  num_speculative_tokens: 4\n", []),
]


# --------------------------------------------------------------------------- topology, launch
def _topo(topology: str, engine: str = "") -> str:
    return "topology:\n" + topology + ("engine:\n" + engine if engine else "")


TOPOLOGY_CASES = [
    (
        "two-nodes-no-gpus-per-node",
        _topo("  nodes: 2\n", "  tensor_parallel_size: 2\n"),
        [L("2:10", "AB066", "error", "topology.nodes", "2 nodes but no gpus_per_node")],
    ),
    (
        "two-nodes-one-gpu-no-gpus-per-node",
        _topo("  nodes: 2\n"),
        [
            L(
                "2:10",
                "AB064",
                "error",
                "topology.nodes",
                "TP 1 x PP 1 x DP 1 = 1 GPUs cannot be split evenly over 2 nodes",
            ),
            L("2:10", "AB066", "error", "topology.nodes", "2 nodes but no gpus_per_node"),
        ],
    ),
    (
        "three-nodes-six-gpus-no-gpus-per-node",
        _topo("  nodes: 3\n", "  tensor_parallel_size: 2\n  pipeline_parallel_size: 3\n"),
        [L("2:10", "AB066", "error", "topology.nodes", "3 nodes but no gpus_per_node")],
    ),
    (
        "tp-over-one-node",
        _topo("  gpus_per_node: 2\n", "  tensor_parallel_size: 4\n"),
        [
            L(
                "2:18",
                "AB064",
                "error",
                "topology.gpus_per_node",
                "TP 4 x PP 1 x DP 1 = 4 GPUs, but 1 node(s) x 2 GPU(s) = 2",
            )
        ],
    ),
    (
        "dp-over-one-node",
        _topo("  gpus_per_node: 4\n", "  data_parallel_size: 5\n"),
        [
            L(
                "2:18",
                "AB064",
                "error",
                "topology.gpus_per_node",
                "TP 1 x PP 1 x DP 5 = 5 GPUs, but 1 node(s) x 4 GPU(s) = 4",
            )
        ],
    ),
    (
        "pp-over-two-nodes",
        _topo("  nodes: 2\n  gpus_per_node: 2\n", "  pipeline_parallel_size: 5\n"),
        [
            L(
                "3:18",
                "AB064",
                "error",
                "topology.gpus_per_node",
                "TP 1 x PP 5 x DP 1 = 5 GPUs, but 2 node(s) x 2 GPU(s) = 4",
            )
        ],
    ),
    (
        "one-node-exactly-full",
        _topo("  gpus_per_node: 4\n", "  tensor_parallel_size: 2\n  pipeline_parallel_size: 2\n"),
        [],
    ),
    ("one-node-one-gpu", _topo("  gpus_per_node: 1\n"), []),
    ("one-node-odd-world", _topo("  gpus_per_node: 8\n", "  tensor_parallel_size: 3\n"), []),
    (
        "idle-node",
        _topo("  nodes: 2\n  gpus_per_node: 1\n"),
        [L("2:10", "AB064", "error", "topology.nodes", "TP 1 x PP 1 x DP 1 = 1 GPUs leaves some of the 2 nodes idle")],
    ),
    ("one-gpu-per-node", _topo("  nodes: 2\n  gpus_per_node: 1\n", "  data_parallel_size: 2\n"), []),
    (
        "uneven-split",
        _topo("  nodes: 2\n  gpus_per_node: 4\n", "  tensor_parallel_size: 3\n"),
        [
            L(
                "2:10",
                "AB064",
                "error",
                "topology.nodes",
                "TP 3 x PP 1 x DP 1 = 3 GPUs cannot be split evenly over 2 nodes",
            )
        ],
    ),
    (
        "two-full-nodes",
        _topo("  nodes: 2\n  gpus_per_node: 4\n", "  pipeline_parallel_size: 2\n  tensor_parallel_size: 4\n"),
        [],
    ),
    (
        "too-few-hosts",
        _topo("  nodes: 2\n  gpus_per_node: 4\n  hosts: [a]\n", "  tensor_parallel_size: 2\n"),
        [L("4:3", "AB065", "error", "topology.hosts", "1 host(s) listed for 2 node(s)")],
    ),
    (
        "a-host-twice",
        _topo("  nodes: 2\n  gpus_per_node: 4\n  hosts: [a, a]\n", "  tensor_parallel_size: 2\n"),
        [L("4:3", "AB065", "error", "topology.hosts", "a host is listed twice", "list each node once, head first")],
    ),
    (
        "one-host-per-node",
        _topo("  nodes: 2\n  gpus_per_node: 4\n  hosts: [a, b]\n", "  tensor_parallel_size: 2\n"),
        [],
    ),
    ("one-node-one-host", _topo("  gpus_per_node: 1\n  hosts: [a]\n"), []),
    (
        "entrypoint-with-setup",
        "launch:\n  entrypoint: /bin/sh\n  setup:\n    - run: echo hi\n    - run: echo 2\n",
        [L("2:15", "AB067", "error", "launch.entrypoint", "entrypoint '/bin/sh' with 2 setup step(s)")],
    ),
    ("entrypoint-alone", "launch:\n  entrypoint: /bin/sh\n", []),
    ("setup-alone", "launch:\n  setup:\n    - run: echo hi\n", []),
    (
        "embeddings-autobench-client",
        f"{BENCH}  endpoint: embeddings\n",
        [
            L(
                "4:13",
                "AB068",
                "error",
                "bench.endpoint",
                "embeddings needs bench.client vllm (autobench's client streams completions)",
            )
        ],
    ),
    (
        "embeddings-generate-runner",
        f"{BENCH}  endpoint: embeddings\n  client: vllm\nengine:\n  runner: generate\n",
        [L("7:11", "AB068", "error", "engine.runner", "generate serves no embeddings endpoint")],
    ),
    # vLLM's --runner auto (its default) follows the model: pooling for an embedding model
    ("embeddings-auto-runner", f"{BENCH}  endpoint: embeddings\n  client: vllm\nengine:\n  runner: auto\n", []),
    ("embeddings-pooling-runner", f"{BENCH}  endpoint: embeddings\n  client: vllm\nengine:\n  runner: pooling\n", []),
    ("embeddings-runner-unset", f"{BENCH}  endpoint: embeddings\n  client: vllm\n", []),
    (
        "pooling-on-completions",
        f"{BENCH}  client: vllm\nengine:\n  runner: pooling\n",
        [L("1:1", "AB068", "error", "bench.endpoint", "an embedding model (runner pooling) benched on completions")],
    ),
    (
        "pooling-on-chat",
        f"{BENCH}  endpoint: chat\nengine:\n  runner: pooling\n",
        [L("4:13", "AB068", "error", "bench.endpoint", "an embedding model (runner pooling) benched on chat")],
    ),
    ("generate-on-chat", f"{BENCH}  endpoint: chat\nengine:\n  runner: generate\n", []),
]

ALL_CASES = (
    SPEC_CASES
    + ENGINE_BENCH_CASES
    + SECRET_CASES
    + ARGS_CASES
    + CONTAINER_CASES
    + LOCAL_CASES
    + CONSISTENCY_CASES
    + TOPOLOGY_CASES
)


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES])
def test_each_rule_says_exactly_this(tmp_path, body, expected):
    assert lines(tmp_path, body) == expected


# --------------------------------------------------------------------------- grid, ports, runtimes
ONE_CELL = (
    "run it with autobench run (docker, process, slurm, or a multi-node recipe's nodes: one boot, every cell), "
    "or bench one cell here"
)


def _cells(where: str, key: str, count: int, how: str) -> list[str]:
    return [L(where, "AB081", "error", key, f"{count} bench cells, but {how} benches one cell per job")]


MULTI = "topology:\n  nodes: 2\n  gpus_per_node: 1\nengine:\n  tensor_parallel_size: 2\n"  # 5 lines, clean
RUNTIME_CASES = [
    ("grid-on-docker", f"{BENCH}  concurrency: [1, 4]\n", "docker", []),
    ("grid-on-process", f"{BENCH}  concurrency: [1, 4]\n", "process", []),
    ("grid-on-k8s", f"{BENCH}  concurrency: [1, 4]\n", "k8s", _cells("4:3", "bench.concurrency", 2, "the k8s runtime")),
    # autobench run of a multi-node recipe benches every cell on one boot (autobench.run.cluster);
    # a Slurm job benches every cell in turn on its one allocation
    ("grid-on-cluster", f"{BENCH}  concurrency: [1, 4]\n", "cluster", []),
    ("grid-on-slurm", f"{BENCH}  concurrency: [1, 4]\n", "slurm", []),
    ("rate-grid-on-slurm", f"{BENCH}  concurrency: 4\n  request_rate: [1, 2, 4]\n", "slurm", []),
    ("one-cell-on-slurm", f"{BENCH}  concurrency: 4\n", "slurm", []),
    ("repeats-on-slurm", f"{BENCH}  repeat: 2\n", "slurm", []),
    (
        "schedule-on-k8s",
        f"{BENCH}  concurrency: 4\n  schedule:\n    - {{concurrency: 4}}\n    - {{concurrency: 4}}\n",
        "k8s",
        _cells("5:3", "bench.schedule", 2, "the k8s runtime"),
    ),
    ("multi-node-one-cell", MULTI, "docker", []),
    (
        "multi-node-grid",
        MULTI + f"{BENCH}  concurrency: [1, 4]\n",
        "docker",
        _cells("9:3", "bench.concurrency", 2, "2 nodes"),
    ),
    (
        "multi-node-grid-on-slurm",  # one allocation of both nodes, every cell in turn
        MULTI + f"{BENCH}  concurrency: [1, 4]\n",
        "slurm",
        [],
    ),
    (
        "bad-schedule",
        f"{BENCH}  concurrency: [1, 4]\n  schedule:\n    - {{concurrency: 2}}\n    - {{input_len: 4}}\n    - {{}}\n"
        "    - {concurrency: 4}\n",
        "docker",
        [
            L(
                "6:21",
                "AB080",
                "error",
                "bench.schedule[0].concurrency",
                "schedule entry 1 concurrency=2 is not in the grid",
                "use one of concurrency: [1, 4], or add it",
            ),
            L(
                "7:19",
                "AB080",
                "error",
                "bench.schedule[1].input_len",
                "schedule entry 2 input_len is not a grid axis of this recipe",
                "a schedule entry names grid axes (concurrency)",
            ),
            L(
                "8:7",
                "AB080",
                "error",
                "bench.schedule[2]",
                "schedule entry 3 names no single cell: concurrency not given",
                "give a value for each",
            ),
        ],
    ),
    # container rules: docker only
    (
        "unpublished-port",
        container("  volumes: []\n", image="x/y:latest").replace("['8000:8000']", "['9000:9000']")
        + "model:\n  repo: /models/x\n  served_name: m\nenv:\n  HF_HUB_OFFLINE: 1\n",
        "docker",
        [
            L("2:10", "AB050", "warning", "container.image", "image tag 'latest' moves over time"),
            L(
                "3:3",
                "AB022",
                "error",
                "container.ports",
                "engine.port 8000 is not published (container.ports: 9000:9000)",
                'publish it: container.ports: ["8000:8000"]',
            ),
            L(
                "6:9",
                "AB075",
                "error",
                "model.repo",
                "/models/x is a directory on this machine; the container cannot see it",
            ),
            L("9:19", "AB053", "warning", "env.HF_HUB_OFFLINE", "offline mode without a mounted HF cache"),
        ],
    ),
    (
        "process-skips-the-container-rules",
        container("  name: 'bad name'\n  volumes: []\n", image="x/y:v1").replace("['8000:8000']", "['9000:9000']")
        + "model:\n  repo: /models/x\n  served_name: m\nenv:\n  HF_HUB_OFFLINE: 1\nengine:\n  max_num_seqs: 4\n",
        "process",
        [L("12:17", "AB020", "warning", "engine.max_num_seqs", "4 < bench.concurrency 8")],
    ),
    (
        "engine-port-not-published",
        "engine:\n  port: 9000\ncontainer:\n  image: x/y@sha256:" + "c" * 64 + "\n",
        "docker",
        [
            L(
                "2:9",
                "AB022",
                "error",
                "engine.port",
                "9000 is not published (container.ports: none)",
                'publish it: container.ports: ["9000:9000"]',
            )
        ],
    ),
    (
        # neither key is written: the finding names the file (line 0: `r.yaml: AB022 ...`), first
        "port-nowhere-written",
        container(image="x/y:v1").replace("  ports: ['8000:8000']\n", ""),
        "docker",
        [  # a key written nowhere: the file's line, first (line 0)
            L(
                "file",
                "AB022",
                "error",
                "engine.port",
                "8000 is not published (container.ports: none)",
                'publish it: container.ports: ["8000:8000"]',
            ),
            L("2:10", "AB051", "info", "container.image", "image tag 'v1' is not a digest"),
        ],
    ),
    (
        "multi-node-needs-no-published-port",
        MULTI + container(image=IMAGE).replace("  ports: ['8000:8000']\n", ""),
        "docker",
        [],
    ),
]


@pytest.mark.parametrize(
    ("body", "runtime", "expected"), [c[1:] for c in RUNTIME_CASES], ids=[c[0] for c in RUNTIME_CASES]
)
def test_runtime_aware_rules(tmp_path, body, runtime, expected):
    assert lines(tmp_path, body, runtime=runtime) == expected


def test_the_default_runtime_is_docker_and_strict_is_off(tmp_path):
    body = container(image="x/y:v1").replace("['8000:8000']", "['9000:9000']")
    assert lines(tmp_path, body) == lines(tmp_path, body, runtime="docker", strict=False)
    assert [x.split(": ")[1] for x in lines(tmp_path, body)] == ["AB051 info", "AB022 error"]


def test_strict_makes_warnings_errors_and_leaves_info_and_errors_alone(tmp_path):
    body = (
        "model:\n  repo: org/model\n  revision: main\n  served_name: m\n"
        + container(image="x/y:v1")
        + ("engine:\n  gpu_memory_utilization: 2\n")
    )
    assert lines(tmp_path, body, strict=True) == [
        L("3:13", "AB010", "error", "model.revision", "model revision 'main' is not a full commit sha"),
        L("6:10", "AB051", "info", "container.image", "image tag 'v1' is not a digest"),
        L("9:27", "AB023", "error", "engine.gpu_memory_utilization", "2.0 is outside (0, 1]"),
    ]
    assert [x.split(": ")[1] for x in lines(tmp_path, body)] == ["AB010 warning", "AB051 info", "AB023 error"]


def test_findings_are_ordered_by_file_then_line_then_column(tmp_path):
    """A child's findings, then its parent's (the order of loaded.files), each file's by position."""
    (tmp_path / "base.yaml").write_text(
        recipe_text("engine:\n  max_num_seqs: 4\n  gpu_memory_utilization: 3\n"), encoding="utf-8"
    )
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\nmeta:\n  baseline: child\nmodel:\n  revision: v2\n", encoding="utf-8")
    loaded = load_recipe(child)
    got = [(f.location.file.name, f.location.line, f.location.col, f.code) for f in check(loaded)]
    assert [p.name for p in loaded.files] == ["child.yaml", "base.yaml"]
    assert got == [
        ("child.yaml", 3, 13, "AB054"),
        ("child.yaml", 5, 13, "AB010"),
        ("base.yaml", 2, 17, "AB020"),
        ("base.yaml", 3, 27, "AB023"),
    ]


# --------------------------------------------------------------------------- Finding, load errors
def test_a_finding_line_without_a_location_or_key():
    f = Finding("AB000", "error", "boom", "fix it")
    assert (f.key, f.location) == ("", None)
    assert f.text() == "AB000 error: boom (hint: fix it)"
    assert f.as_dict() == {
        "code": "AB000",
        "severity": "error",
        "file": None,
        "line": None,
        "col": None,
        "key": "",
        "message": "boom",
        "hint": "fix it",
    }


def test_a_finding_line_with_a_location_and_key():
    f = Finding("AB010", "warning", "m", "h", Position(Path("r.yaml"), 3, 13), "model.revision")
    assert f.text() == "r.yaml:3:13: AB010 warning: model.revision: m (hint: h)"
    assert f.as_dict() == {
        "code": "AB010",
        "severity": "warning",
        "file": "r.yaml",
        "line": 3,
        "col": 13,
        "key": "model.revision",
        "message": "m",
        "hint": "h",
    }
    # line 0: the file as a whole
    assert (
        Finding("AB000", "error", "m", "h", Position(Path("r.yaml"), 0, 0)).text() == "r.yaml: AB000 error: m (hint: h)"
    )


def test_a_finding_never_shows_a_secret_of_the_environment(monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", "tok-0123456789abcdef")
    f = Finding("AB030", "error", "value tok-0123456789abcdef here", "not tok-0123456789abcdef either")
    assert "tok-0123456789abcdef" not in f.text()
    assert "tok-0123456789abcdef" not in f.message + f.hint
    assert f.message.startswith("value ") and f.message.endswith(" here")
    assert f.hint.startswith("not ") and f.hint.endswith(" either")


def test_a_finding_is_redacted_of_the_secrets_given_instead_of_the_environment(monkeypatch, tmp_path):
    """``check(redact=...)`` (an experiment reads the environment once for a thousand recipes):
    the findings are redacted of exactly those secrets; without it, of the environment's."""
    monkeypatch.setenv("MY_API_TOKEN", "tok-0123456789abcdef")
    given = Finding(
        "AB030", "error", "a tok-0123456789abcdef b given-secret-value", "h", secrets={"S": "given-secret-value"}
    )
    assert "given-secret-value" not in given.message and "tok-0123456789abcdef" in given.message
    path = tmp_path / "r.yaml"
    path.write_text("model: {repo: org/m, served_name: m}\ncontainer: {image: 'vllm/vllm-openai:given-secret-value'}\n")
    loaded = load_recipe(path)
    told = [f.message for f in check(loaded, redact={"S": "given-secret-value"}) if f.code == "AB051"]
    assert len(told) == 1 and "given-secret-value" not in told[0]
    monkeypatch.setenv("OTHER_SECRET", "given-secret-value")
    read = [f.message for f in check(loaded) if f.code == "AB051"]
    assert len(read) == 1 and "given-secret-value" not in read[0]
    monkeypatch.delenv("OTHER_SECRET")
    assert [f.message for f in check(loaded, redact={}) if f.code == "AB051"] == [
        "image tag 'given-secret-value' is not a digest"
    ]


def test_a_load_error_becomes_one_ab000_line():
    from autobench.errors import AutobenchError

    located = load_error_finding(AutobenchError("bad\n   indent  here", hint="fix line 3", location="r.yaml:3:5"))
    assert located == Finding("AB000", "error", "bad indent here", "fix line 3", Position(Path("r.yaml"), 3, 5))
    assert located.text() == "r.yaml:3:5: AB000 error: bad indent here (hint: fix line 3)"
    whole_file = load_error_finding(AutobenchError("cannot read", location="dir/r.yaml"))
    assert whole_file.text() == "dir/r.yaml: AB000 error: cannot read (hint: fix the recipe)"
    assert whole_file.location == Position(Path("dir/r.yaml"), 0, 0)
    unlocated = load_error_finding(AutobenchError("no file"))
    assert unlocated.text() == "AB000 error: no file (hint: fix the recipe)"
    other = load_error_finding(ValueError("bad  value"))
    assert other == Finding("AB000", "error", "bad  value", "fix the recipe", None)


def test_a_real_load_failure_is_located(tmp_path):
    from autobench.errors import AutobenchError

    path = tmp_path / "r.yaml"
    path.write_text("model:\n  repo: [unclosed\n", encoding="utf-8")
    with pytest.raises(AutobenchError) as err:
        load_recipe(path)
    f = load_error_finding(err.value)
    assert (f.code, f.severity, f.location.file, f.location.line > 0, f.location.col > 0) == (
        "AB000",
        "error",
        path,
        True,
        True,
    )


# --------------------------------------------------------------------------- the flag helpers
@pytest.mark.parametrize(
    ("arg", "name"),
    [
        ("--max-num-seqs=8", "--max-num-seqs"),
        ("--a=b=c", "--a"),
        ("--rm", "--rm"),
        ("-q", "-q"),
        ("--", "--"),
        ("x", None),
        ("", None),
        ("-", None),
        ("-1", None),
        ("-0.5", None),
        ("a-b", None),
    ],
)
def test_flag_name(arg, name):
    assert flag_name(arg) == name


@pytest.mark.parametrize(
    ("name", "normal"),
    [("--max_model_len", "--max-model-len"), ("--max-model-len", "--max-model-len"), ("-t_p", "-t_p"), ("-q", "-q")],
)
def test_norm_flag(name, normal):
    assert norm_flag(name) == normal


@pytest.mark.parametrize(
    ("tp", "pp", "dp", "world"),
    [(None, None, None, 1), (2, None, None, 2), (None, 3, None, 3), (None, None, 5, 5), (2, 3, 5, 30)],
)
def test_world_size(tp, pp, dp, world):
    from types import SimpleNamespace

    engine = SimpleNamespace(tensor_parallel_size=tp, pipeline_parallel_size=pp, data_parallel_size=dp)
    assert world_size(engine) == world
    assert isinstance(world_size(engine), int)


def test_the_strings_of_a_recipe_are_walked_in_document_order_with_their_paths():
    from autobench.recipe.rules import _walk_strings

    doc = {"a": [1, "x", {"b": "y", "c": None, "d": ["p", ["q"]]}, True], "e": "z", "f": 2.5, "g": {}}
    assert list(_walk_strings(doc, ("top",))) == [
        (("top", "a", 1), "x"),
        (("top", "a", 2, "b"), "y"),
        (("top", "a", 2, "d", 0), "p"),
        (("top", "a", 2, "d", 1, 0), "q"),
        (("top", "e"), "z"),
    ]
    assert list(_walk_strings("s", ())) == [((), "s")] and list(_walk_strings(3, ())) == []


def test_no_finding_repeats_its_keys_label():
    """Every line the tables above expect (each one asserted equal to validate's output) says its
    key once: the message never starts with the key or a dotted tail of it
    (`engine.port: engine.port 8000 ...`, `engine.max_num_seqs: max_num_seqs 4 < ...` before)."""
    pattern = re.compile(r"^(?:r\.yaml(?::\d+:\d+)?: )?AB\d{3} \w+: (\S+): (.*)$")
    seen = 0
    for case in [*ALL_CASES, *RUNTIME_CASES]:
        for line in case[-1]:
            m = pattern.match(line)
            assert m is not None, line
            parts = m[1].split(".")
            # the key, or a tail of it written as a key (`sampler.min_p`, `max_num_seqs`); a word
            # of English that names the thing (`image tag ...` at container.image) reads once
            tails = {".".join(parts[i:]) for i in range(len(parts))}
            tails = {t for t in tails if "." in t or "_" in t} | {m[1]}
            first = m[2].split(" ", 1)[0].rstrip(":")
            assert first not in tails, line
            seen += 1
    assert seen > 100

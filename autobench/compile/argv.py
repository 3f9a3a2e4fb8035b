"""Argument lists built from a recipe: ``vllm serve``, ``docker run``, the bench client.

Each builder returns *lines*: a list of word groups (a flag with its value), which the script
renders one group per line and the public ``*_argv`` functions flatten into plain argv lists.
The order follows the seed's docker command: docker flags, env (secrets by name first), image,
model, ``--revision``, then the engine flags in the seed's order, typed flags before extra_args.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.compile.quoting import Word, path_word
from autobench.errors import RecipeError
from autobench.recipe.facts import container_image, is_local_model, output_tokens, server_endpoint
from autobench.recipe.grid import only
from autobench.recipe.loader import LoadedRecipe
from autobench.recipe.rules import flag_name
from autobench.recipe.workerhosts import NODES

if TYPE_CHECKING:
    from autobench.recipe.schema import Dataset, Recipe

Lines = list[list[Word]]

# Sampler keys `autobench bench` accepts (vllm bench serve accepts every Sampler field).
AUTOBENCH_SAMPLER_KEYS = ("temperature", "top_p", "top_k", "presence_penalty")


def num(value: float | int) -> str:
    """900.0 -> "900", 0.85 -> "0.85" (what a person would type)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)  # a float's str is its shortest round-trip repr


def _w(*values: str) -> list[Word]:
    """Fixed words written by autobench itself (program names, sub-commands, literal flags) and
    words that are a command by design (launch.prefix / launch.command)."""
    return [Word(v) for v in values]


def _opt(flag: str, value: str, *, path: bool = False) -> list[Word]:
    """A flag and its recipe value: the ONE way a recipe value follows an option.

    A value that starts with ``-`` is glued on as ``FLAG=VALUE``, so no parser (docker's pflag,
    vllm's argparse, click) can read it as an option of its own; every other value stays a
    separate word.  ``path``: the value may start with ``~/`` (expanded against $HOME).
    """
    if value == "--":  # argparse drops a "--" even from "FLAG=--": vllm could never receive it
        raise RecipeError(
            f"the value of {flag} is '--', which no command can receive as a value",
            hint="fix the recipe field that sets " + flag,
        )
    if value.startswith("-"):
        return [Word(f"{flag}={value}")]
    return [Word(flag), path_word(value) if path else Word(value)]


def _positional(value: str, key: str) -> Word:
    """A recipe value in a positional slot (the image, the model).  Parsers read a word that
    starts with ``-`` there as an option, and no fence (``=``) exists for a positional, so it is
    refused (the schema refuses such values first; this guards every builder that adds one)."""
    if not value or value.startswith("-"):
        raise RecipeError(
            f"{key}: a value that is empty or starts with '-' cannot stand where a command reads its "
            "arguments (it would be read as an option)",
            hint=f"fix {key} in the recipe",
        )
    return Word(value)


def group_args(args: list[str]) -> Lines:
    """Group free-form extra args for display: a flag plus the non-flag words after it."""
    lines: Lines = []
    for arg in args:
        if lines and flag_name(arg) is None and len(lines[-1]) == 1 and flag_name(lines[-1][0].value):
            lines[-1].append(Word(arg))
        else:
            lines.append([Word(arg)])
    return lines


def container_name(recipe: Recipe) -> str:
    return recipe.container.name or f"autobench-{recipe.name}"


def base_url(recipe: Recipe) -> str:
    """Where the script's bench and readiness probe reach the server (``autobench.recipe.facts``:
    the same endpoint ``run`` uses and AB022 checks)."""
    return server_endpoint(recipe).base_url


#: vllm serve reads its API key from this variable (same as ``--api-key``).
SERVER_API_KEY_SECRET = "VLLM_API_KEY"


def bench_api_key_env(recipe: Recipe) -> str | None:
    """The variable the bench takes the server's API key from: ``VLLM_API_KEY`` when the recipe
    passes it to the server as a secret (so the server demands it), else None."""
    return SERVER_API_KEY_SECRET if SERVER_API_KEY_SECRET in recipe.secrets else None


def bench_tokenizer(recipe: Recipe) -> tuple[str, str | None]:
    """(tokenizer, revision) the bench measures prompt lengths with: the served model's own, as
    vllm serve loads it (``model.tokenizer`` at ``tokenizer_revision`` when set, else the model repo
    at its revision; a local model directory as is)."""
    m = recipe.model
    if m.tokenizer:
        return m.tokenizer, m.tokenizer_revision
    if is_local_model(m.repo):
        return m.repo, None
    return m.repo, m.revision


def speculative_json(recipe: Recipe) -> str | None:
    spec = recipe.speculative
    if spec is None:
        return None
    cfg: dict[str, Any] = {"method": spec.method}
    if spec.model:
        cfg["model"] = spec.model
    if spec.revision:
        cfg["revision"] = spec.revision
    if spec.num_speculative_tokens is not None:
        cfg["num_speculative_tokens"] = spec.num_speculative_tokens
    for key, value in spec.options.items():
        cfg.setdefault(key, value)
    return json.dumps(cfg, separators=(",", ":"), ensure_ascii=False)


def _bool_flag(lines: Lines, value: bool | None, flag: str) -> None:
    if value is True:
        lines.append(_w(f"--{flag}"))
    elif value is False:
        lines.append(_w(f"--no-{flag}"))


#: Where mods are mounted in the container (read-only), one folder per setup step.
MOD_MOUNT = "/autobench/mods"


def mod_target(index: int, path: Path) -> str:
    """The container path of setup step ``index``'s mod."""
    return f"{MOD_MOUNT}/{index}-{path.name}"


def setup_script(recipe: Recipe, mods: dict[int, Path], *, in_container: bool) -> str:
    """The bash text that runs the setup steps in order, then ``exec "$@"`` (the serve argv)."""
    from autobench.compile.quoting import shell_word

    out = ["set -euo pipefail"]
    for i, step in enumerate(recipe.launch.setup):
        if step.mod is not None:
            path = mods.get(i, Path(step.mod))
            where = mod_target(i, path) if in_container else str(path)
            label = step.name or path.name
            out.append(f"echo {shell_word('autobench: setup ' + label)} >&2")
            if path.is_dir() or (i not in mods and not Path(step.mod).suffix):
                out.append(f"(cd {shell_word(where)} && bash ./run.sh)")
            else:
                out.append(f"bash {shell_word(where)}")
        elif step.run is not None:  # (the schema: a step is exactly one of mod and run)
            label = step.name or f"step {i + 1}"
            out.append(f"echo {shell_word('autobench: setup ' + label)} >&2")
            out.append(step.run)
    out.append('exec "$@"')
    return "\n".join(out)


def model_word_list(recipe: Recipe) -> list[Word]:
    """The model as the serve command reads it: ``--model-flag REPO`` or the positional REPO."""
    flag = recipe.launch.model_flag
    if flag:
        return _opt(flag, recipe.model.repo)
    return [_positional(recipe.model.repo, "model.repo")]


def engine_flag_lines(recipe: Recipe) -> Lines:
    """Every ``vllm serve`` flag after the model: ``--revision REV``, typed flags, extra_args."""
    m, e = recipe.model, recipe.engine
    lines: Lines = []
    if not is_local_model(m.repo):
        lines.append(_opt("--revision", m.revision))
    if m.tokenizer:
        lines.append(_opt("--tokenizer", m.tokenizer))
    if m.tokenizer_revision:
        lines.append(_opt("--tokenizer-revision", m.tokenizer_revision))
    if m.served_name:
        lines.append(_opt("--served-model-name", m.served_name))
    lines.append(_opt("--host", e.host))
    lines.append(_opt("--port", str(e.port)))
    for flag, value in (
        ("--max-model-len", e.max_model_len),
        ("--gpu-memory-utilization", e.gpu_memory_utilization),
        ("--max-num-batched-tokens", e.max_num_batched_tokens),
        ("--max-num-seqs", e.max_num_seqs),
        ("--dtype", e.dtype),
        ("--kv-cache-dtype", e.kv_cache_dtype),
        ("--tensor-parallel-size", e.tensor_parallel_size),
        ("--pipeline-parallel-size", e.pipeline_parallel_size),
        ("--data-parallel-size", e.data_parallel_size),
        ("--quantization", e.quantization),
        ("--runner", e.runner),
        ("--load-format", e.load_format),
        ("--attention-backend", e.attention_backend),
    ):
        if value is not None:
            lines.append(_opt(flag, value if isinstance(value, str) else num(value)))
    if m.trust_remote_code:
        lines.append(_w("--trust-remote-code"))
    spec = speculative_json(recipe)
    if spec is not None:
        lines.append(_opt("--speculative-config", spec))
    _bool_flag(lines, e.enable_expert_parallel, "enable-expert-parallel")
    _bool_flag(lines, e.enable_prefix_caching, "enable-prefix-caching")
    _bool_flag(lines, e.enable_chunked_prefill, "enable-chunked-prefill")
    _bool_flag(lines, e.enforce_eager, "enforce-eager")
    lines.extend(group_args(e.extra_args))
    return lines


def serve_lines(recipe: Recipe, mods: dict[int, Path] | None = None, extra: Lines | None = None) -> Lines:
    """The serve command as run outside a container: ``[prefix] vllm serve MODEL --revision REV ...``
    (setup steps first, through ``bash -c``).  ``extra`` (multi-node flags) goes before extra_args'
    position-independent tail, right after the typed flags."""
    launch = recipe.launch
    lines: Lines = []
    if launch.setup:
        lines.append(_w("bash", "-c", setup_script(recipe, mods or {}, in_container=False), "autobench-setup"))
    lines.append([*_w(*launch.prefix, *launch.command), *model_word_list(recipe)])
    lines.extend(engine_flag_lines(recipe))
    lines.extend(extra or [])
    return lines


def docker_lines(
    recipe: Recipe,
    mods: dict[int, Path] | None = None,
    *,
    name: str | None = None,
    extra: Lines | None = None,
    detach: bool = True,
) -> Lines:
    """``docker run -d --name ... IMAGE MODEL --revision ...``.  By default the image's entrypoint
    is ``vllm serve``; a launch section (command, prefix, setup, entrypoint) replaces it."""
    c, launch = recipe.container, recipe.launch
    mods = mods or {}
    lines: Lines = [_w("docker", "run")]
    if detach:
        lines.append(_w("-d"))
    lines.append(_opt("--name", name or container_name(recipe)))
    if c.gpus:
        lines.append(_opt("--gpus", c.gpus))
    if c.ipc:
        lines.append(_w(f"--ipc={c.ipc}"))
    if c.shm_size:
        lines.append(_opt("--shm-size", c.shm_size))
    for port in c.ports:
        lines.append(_opt("-p", port))
    for volume in c.volumes:
        lines.append(_opt("-v", volume, path=True))
    for i, step in enumerate(launch.setup):
        if step.mod is not None:
            path = mods.get(i, Path(step.mod))
            lines.append(_opt("-v", f"{path}:{mod_target(i, path)}:ro"))
    for secret in recipe.secrets:
        lines.append(_opt("--env", secret))  # by reference: docker copies it from the caller's env
    for key, value in recipe.env.items():
        lines.append(_opt("--env", f"{key}={value}"))
    lines.extend(group_args(c.extra_args))
    if launch.is_default:
        lines.append([_positional(container_image(recipe), "container.image")])
        lines.append(model_word_list(recipe))  # "vllm serve" is the image's entrypoint
    else:
        entrypoint = "bash" if launch.setup else (launch.entrypoint or "")
        lines.append(_opt("--entrypoint", entrypoint))
        lines.append([_positional(container_image(recipe), "container.image")])
        if launch.setup:
            lines.append(_w("-c", setup_script(recipe, mods, in_container=True), "autobench-setup"))
        lines.append([*_w(*launch.prefix, *launch.command), *model_word_list(recipe)])
    lines.extend(engine_flag_lines(recipe))
    lines.extend(extra or [])
    return lines


def bench_lines(recipe: Recipe) -> Lines:
    """The bench invocation: ``autobench bench ...`` or ``docker exec NAME vllm bench serve ...``."""
    b = recipe.bench
    s = b.sampler
    lines = _vllm_bench_lines(recipe) if b.client == "vllm" else _autobench_bench_lines(recipe)
    if s is not None:
        for key, value in s.model_dump().items():
            if value is not None and (b.client == "vllm" or key in AUTOBENCH_SAMPLER_KEYS):
                lines.append(_opt("--" + key.replace("_", "-"), num(value)))
    return lines


def _vllm_bench_lines(recipe: Recipe) -> Lines:
    """``docker exec NAME vllm bench serve ...`` (the sampler's flags are added by bench_lines)."""
    b = recipe.bench
    d = b.dataset
    key_env = bench_api_key_env(recipe)
    exec_env = ["-e", "OPENAI_API_KEY"] if key_env is not None else []  # set from key_env by the script
    name = _positional(container_name(recipe), "container.name")
    lines: Lines = [[*_w("docker", "exec", *exec_env), name, *_w("vllm", "bench", "serve")]]
    # vLLM's bench backends and their endpoints (vllm/benchmarks/lib/endpoint_request_func.py,
    # ASYNC_REQUEST_FUNCS): a pooling model is benched on /v1/embeddings, never on completions
    backend, endpoint = {
        "chat": ("openai-chat", "/v1/chat/completions"),
        "embeddings": ("openai-embeddings", "/v1/embeddings"),
    }.get(b.endpoint, ("openai", "/v1/completions"))
    lines.append(_w("--backend", backend))
    lines.append(_opt("--base-url", f"http://localhost:{recipe.engine.port}"))
    lines.append(_w("--endpoint", endpoint))
    lines.append(_opt("--model", recipe.model.repo))
    lines.append(_opt("--served-model-name", recipe.bench_model))
    dataset_name = {"jsonl": "custom"}.get(d.kind, d.kind)
    lines.append(_opt("--dataset-name", dataset_name))
    if d.path:
        lines.append(_opt("--dataset-path", d.path, path=True))
    lines.append(_opt("--num-prompts", str(b.num_prompts)))
    lines.append(_opt("--max-concurrency", str(b.concurrency)))
    if d.kind == "random":
        lines.append(_opt("--random-input-len", str(d.input_len or 1024)))
        lines.append(_opt("--random-output-len", str(output_tokens(recipe))))
    else:
        lines.append(_w(f"--{dataset_name}-output-len", str(b.max_tokens)))
    if b.request_rate is not None:
        lines.append(_opt("--request-rate", num(only(b.request_rate))))
    if b.ignore_eos:
        lines.append(_w("--ignore-eos"))
    lines.append(_opt("--seed", str(b.seed)))
    if b.warmup:
        lines.append(_opt("--num-warmups", str(b.warmup)))
    if b.slo is not None:  # vLLM's KEY:VALUE words (ms)
        lines.append(_w("--goodput", *(f"{k}:{num(v)}" for k, v in b.slo.limits().items())))
    return lines


def _dataset_source_lines(d: Dataset) -> Lines:
    """Where ``autobench bench`` reads its prompts: a local file, or a Hub dataset's repo, file and
    revision (fetched into the HF cache by the bench, docs/datasets.md); its sha256 and mapping."""
    lines: Lines = []
    if d.path:
        lines.append(_opt("--dataset", d.path, path=True))
    if d.repo and d.file:
        lines.append(_opt("--dataset-repo", d.repo))
        lines.append(_opt("--dataset-file", d.file))
        if d.revision:
            lines.append(_opt("--dataset-revision", d.revision))
    if d.sha256:
        lines.append(_opt("--dataset-sha256", d.sha256))
    if d.fields is not None:
        for role, name in d.fields.model_dump(exclude_none=True).items():
            lines.append(_opt("--dataset-field", f"{role}={name}"))
    return lines


def _autobench_bench_lines(recipe: Recipe) -> Lines:
    """``autobench bench ...`` (the sampler's flags are added by bench_lines)."""
    b = recipe.bench
    d = b.dataset
    lines: Lines = [_w("autobench", "bench")]
    lines.append(_opt("--base-url", base_url(recipe)))
    lines.append(_opt("--model", recipe.bench_model))
    key_env = bench_api_key_env(recipe)
    if key_env is not None:
        lines.append(_opt("--api-key-env", key_env))
    if b.endpoint != "completions":
        lines.append(_opt("--endpoint", b.endpoint))
    if d.kind != "sharegpt":
        lines.append(_opt("--dataset-kind", d.kind))
    lines.extend(_dataset_source_lines(d))
    if d.kind == "random" and d.input_len is not None:
        lines.append(_opt("--random-input-len", str(d.input_len)))
    if d.depth is not None:
        lines.append(_opt("--depth", str(d.depth)))
    if d.shared_prefix is not None:
        sp = d.shared_prefix
        lines.append(_opt("--shared-prefix", str(sp.prompts) + (f":{sp.length}" if sp.length is not None else "")))
    if d.category is not None:
        lines.append(_opt("--category", str(d.category)))
    if d.multi_turn:
        lines.append(_w("--multi-turn"))
    tok, tok_rev = bench_tokenizer(recipe)
    lines.append(_opt("--tokenizer", tok, path=is_local_model(tok)))
    if tok_rev:
        lines.append(_opt("--tokenizer-revision", tok_rev))
    lines.append(_opt("--num-prompts", str(b.num_prompts)))
    if b.max_seconds is not None:
        lines.append(_opt("--max-seconds", num(b.max_seconds)))
    lines.append(_opt("--concurrency", str(b.concurrency)))
    if b.workers > 1:
        lines.append(_opt("--workers", str(b.workers)))
    lines.extend(worker_host_lines(recipe))
    lines.append(_opt("--max-tokens", str(output_tokens(recipe))))
    if b.request_rate is not None:
        lines.append(_opt("--request-rate", num(only(b.request_rate))))
    if b.ignore_eos:
        lines.append(_w("--ignore-eos"))
    if b.seed:
        lines.append(_opt("--seed", str(b.seed)))
    if b.warmup:
        lines.append(_opt("--warmup", str(b.warmup)))
    if b.slo is not None:
        lines.append(_opt("--slo", ",".join(f"{k}={num(v)}" for k, v in b.slo.limits().items())))
    return lines


def worker_host_lines(recipe: Recipe, nodes: Sequence[str] = ()) -> Lines:
    """``--worker-host H`` for each of bench.worker_hosts (``nodes``: each of the run's nodes,
    given by the multi-node compile that knows them) and a ``--worker-python`` other than python3;
    the remote command is the bench's own (``--remote``, else AUTOBENCH_REMOTE, else ssh)."""
    b = recipe.bench
    hosts = nodes if b.worker_hosts == NODES else b.worker_hosts
    lines: Lines = [_opt("--worker-host", host) for host in hosts]
    if hosts and b.worker_python != "python3":
        lines.append(_opt("--worker-python", b.worker_python))
    return lines


def _flatten(lines: Lines, home: str | None) -> list[str]:
    home = home if home is not None else os.path.expanduser("~")
    return [w.argv(home) for line in lines for w in line]


def _recipe_and_mods(
    recipe: Recipe | LoadedRecipe, mods: dict[int, Path] | None
) -> tuple[Recipe, dict[int, Path] | None]:
    """The argv builders take what ``compile_recipe`` takes (a ``LoadedRecipe``, with its mods)
    or its ``Recipe``."""
    if isinstance(recipe, LoadedRecipe):
        return recipe.recipe, mods if mods is not None else recipe.mods
    return recipe, mods


def serve_argv(
    recipe: Recipe | LoadedRecipe, *, home: str | None = None, mods: dict[int, Path] | None = None
) -> list[str]:
    """``["vllm", "serve", MODEL, "--revision", REV, ...]`` for the process runtime."""
    r, m = _recipe_and_mods(recipe, mods)
    return _flatten(serve_lines(r, m), home)


def docker_argv(
    recipe: Recipe | LoadedRecipe, *, home: str | None = None, mods: dict[int, Path] | None = None
) -> list[str]:
    """``["docker", "run", "-d", "--name", NAME, ...]``; ``~/`` volume sources joined onto ``home``
    (default: the current user's home directory)."""
    r, m = _recipe_and_mods(recipe, mods)
    return _flatten(docker_lines(r, m), home)


def bench_argv(recipe: Recipe | LoadedRecipe, *, home: str | None = None) -> list[str]:
    """``["autobench", "bench", "--base-url", ...]`` (or the ``docker exec ... vllm bench serve`` form)."""
    return _flatten(bench_lines(_recipe_and_mods(recipe, None)[0]), home)

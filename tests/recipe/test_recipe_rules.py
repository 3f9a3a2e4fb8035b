"""Validation rules: each code fires on the input it names, at the right line, and not otherwise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autobench.recipe import load_recipe
from autobench.recipe.rules import RULES, check

REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
SHA = "a" * 40

CLEAN = f"""model:
  repo: org/model
  revision: {SHA}
  served_name: m
container:
  image: vllm/vllm-openai@sha256:{"b" * 64}
  ports: ["8000:8000"]
secrets: [HF_TOKEN]
engine:
  port: 8000
  max_num_seqs: 8
  max_model_len: 4096
bench:
  dataset:
    path: data.json
  concurrency: 8
"""


def findings_for(tmp_path: Path, extra: str, *, strict: bool = False, base: str = CLEAN):
    path = tmp_path / "r.yaml"
    path.write_text(base + extra, encoding="utf-8")
    return check(load_recipe(path), strict=strict)


def test_clean_recipe_has_no_findings(tmp_path):
    assert findings_for(tmp_path, "") == []


# (id, yaml appended to CLEAN (later keys override via a child file when they collide), code, line, key, message bit)
CASES = [
    (
        "AB001",
        "speculative:\n  method: dflash\n  model: z/d\n  revision: " + SHA + "\n",
        "AB001",
        18,
        "speculative.method",
        "num_speculative_tokens",
    ),
    (
        "AB001-eagle3",
        "speculative:\n  method: eagle3\n  model: z/d\n  revision: " + SHA + "\n",
        "AB001",
        18,
        "speculative.method",
        "eagle3",
    ),
    ("AB001-mtp", "speculative:\n  method: mtp\n", "AB001", 18, "speculative.method", "mtp"),
    (
        "AB002",
        "speculative:\n  method: eagle\n  num_speculative_tokens: 3\n",
        "AB002",
        18,
        "speculative.method",
        "draft model",
    ),
    (
        "AB003",
        "speculative:\n  method: ngram\n  num_speculative_tokens: 3\n  model: z/d\n  revision: " + SHA + "\n",
        "AB003",
        20,
        "speculative.model",
        "does not use",
    ),
    (
        "AB012",
        "speculative:\n  method: dflash\n  model: z/d\n  revision: main\n  num_speculative_tokens: 5\n",
        "AB012",
        20,
        "speculative.revision",
        "'main'",
    ),
    (
        "AB012-missing",
        "speculative:\n  method: dflash\n  model: z/d\n  num_speculative_tokens: 5\n",
        "AB012",
        19,
        "speculative.model",
        "(none",
    ),
    (
        "AB042",
        "speculative:\n  method: ngram\n  num_speculative_tokens: 3\n  options:\n    method: eagle\n",
        "AB042",
        21,
        "speculative.options.method",
        "repeats",
    ),
    ("AB024", "  max_tokens: 5000\n", "AB024", 17, "bench.max_tokens", "max_model_len 4096"),
    ("AB027", "  client: vllm\n  max_seconds: 60\n", "AB027", 18, "bench.max_seconds", "no time cap"),
    ("AB028", "  sampler:\n    min_p: 0.1\n", "AB028", 18, "bench.sampler.min_p", "does not send it"),
    ("AB033", "env:\n  BAD-NAME: x\n", "AB033", 18, "env.BAD-NAME", "not a valid shell name"),
    ("AB030-env", "env:\n  X: hf_abcdefghijklmnopqrstuvwxyz012345\n", "AB030", 18, "env.X", "literal token"),
    (
        "AB030-meta",
        "meta:\n  notes: token hf_abcdefghijklmnopqrstuvwxyz012345 here\n",
        "AB030",
        18,
        "meta.notes",
        "literal token",
    ),
    ("AB031", "env:\n  HF_TOKEN: x\n", "AB031", 18, "env.HF_TOKEN", "declared under secrets"),
    ("AB032", "env:\n  OPENAI_API_KEY: x\n", "AB032", 18, "env.OPENAI_API_KEY", "a secret; its value"),
    ("AB055", 'meta:\n  notes: "a\\0b"\n', "AB055", 18, "meta.notes", "NUL"),
]

# Overrides of keys CLEAN already has go in a child file (a duplicate key would be refused).
OVERRIDES = [
    ("AB010", "model:\n  revision: main\n", "AB010", 3, "model.revision", "'main'", "warning"),
    (
        "AB011",
        "model:\n  tokenizer: org/tok\n  tokenizer_revision: v1\n",
        "AB011",
        4,
        "model.tokenizer_revision",
        "'v1'",
        "warning",
    ),
    (
        "AB013",
        "model:\n  revision: main\n  trust_remote_code: true\n",
        "AB013",
        4,
        "model.trust_remote_code",
        "true with model revision",
        "warning",
    ),
    ("AB020", "engine:\n  max_num_seqs: 4\n", "AB020", 3, "engine.max_num_seqs", "4 < bench.concurrency 8", "warning"),
    ("AB021", "bench:\n  model: other\n", "AB021", 3, "bench.model", "'other' != served name 'm'", "error"),
    (
        "AB022",
        "container:\n  ports: ['9000:9000']\n",
        "AB022",
        3,
        "container.ports",
        "engine.port 8000 is not published",
        "error",
    ),
    ("AB022-none", "container:\n  ports: null\n", "AB022", 10, "engine.port", "none", "error"),
    (
        "AB023-high",
        "engine:\n  gpu_memory_utilization: 1.5\n",
        "AB023",
        3,
        "engine.gpu_memory_utilization",
        "outside (0, 1]",
        "error",
    ),
    (
        "AB023-zero",
        "engine:\n  gpu_memory_utilization: 0\n",
        "AB023",
        3,
        "engine.gpu_memory_utilization",
        "outside",
        "error",
    ),
    ("AB025", "bench:\n  dataset:\n    path: null\n", "AB025", 3, "bench.dataset", "needs a path", "error"),
    (
        "AB026",
        "bench:\n  dataset:\n    kind: random\n    path: null\n",
        "AB026",
        3,
        "bench.dataset",
        "input_len",
        "warning",
    ),
    ("AB034", "secrets: ['1BAD']\n", "AB034", 2, "secrets[0]", "not a valid shell name", "error"),
    ("AB035", "secrets: [A, A]\n", "AB035", 2, "secrets[1]", "declared twice", "warning"),
    (
        "AB040",
        "engine:\n  extra_args: ['--max-num-seqs', '16']\n",
        "AB040",
        3,
        "engine.extra_args[0]",
        "--max-num-seqs",
        "error",
    ),
    (
        "AB040-eq",
        "engine:\n  extra_args: ['--served-model-name=x']\n",
        "AB040",
        3,
        "engine.extra_args[0]",
        "--served-model-name",
        "error",
    ),
    (
        "AB040-docker",
        "container:\n  extra_args: ['--name', 'x']\n",
        "AB040",
        3,
        "container.extra_args[0]",
        "--name",
        "error",
    ),
    (
        "AB041",
        "engine:\n  extra_args: ['--seed', '1', '--seed', '2']\n",
        "AB041",
        3,
        "engine.extra_args[2]",
        "appears twice",
        "error",
    ),
    (
        "AB032-extra",
        "container:\n  extra_args: ['-e', 'HF_TOKEN=abc']\n",
        "AB032",
        3,
        "container.extra_args[0]",
        "HF_TOKEN",
        "error",
    ),
    (
        "AB032-pattern",
        "env:\n  MY_SERVICE_TOKEN: x\n",
        "AB032",
        3,
        "env.MY_SERVICE_TOKEN",
        "looks like a secret",
        "warning",
    ),
    ("AB050", "container:\n  image: vllm/vllm-openai:latest\n", "AB050", 3, "container.image", "'latest'", "warning"),
    ("AB050-notag", "container:\n  image: vllm-node\n", "AB050", 3, "container.image", "is untagged", "warning"),
    ("AB051", "container:\n  image: vllm/vllm-openai:v0.11.0\n", "AB051", 3, "container.image", "'v0.11.0'", "info"),
    ("AB052", "container:\n  name: 'bad name'\n", "AB052", 3, "container.name", "not a valid docker name", "error"),
    ("AB053", "env:\n  HF_HUB_OFFLINE: 1\n", "AB053", 3, "env.HF_HUB_OFFLINE", "offline", "warning"),
    ("AB057", "container:\n  shm_size: 20Gx\n", "AB057", 3, "container.shm_size", "'20Gx' is not a size", "error"),
    ("AB054", "name: r\nmeta:\n  baseline: r\n", "AB054", 4, "meta.baseline", "itself", "warning"),
]


@pytest.mark.parametrize(("extra", "code", "line", "key", "bit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_fires(tmp_path, extra, code, line, key, bit):
    found = [f for f in findings_for(tmp_path, extra) if f.code == code]
    assert found, f"{code} did not fire"
    f = found[0]
    assert f.severity == RULES[code].severity
    assert (f.location.file.name, f.location.line, f.key) == ("r.yaml", line, key)
    assert bit in f.message
    assert f.hint == RULES[code].hint or f.hint


@pytest.mark.parametrize(
    ("extra", "code", "line", "key", "bit", "severity"), [c[1:] for c in OVERRIDES], ids=[c[0] for c in OVERRIDES]
)
def test_rule_fires_in_child(tmp_path, extra, code, line, key, bit, severity):
    (tmp_path / "base.yaml").write_text(CLEAN, encoding="utf-8")
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\n" + extra, encoding="utf-8")
    found = [f for f in check(load_recipe(child)) if f.code == code]
    assert found, f"{code} did not fire: {check(load_recipe(child))}"
    f = found[0]
    assert f.severity == severity
    assert f.key == key
    assert f.location.line == line
    assert bit in f.message
    text = f.text()
    assert re.match(rf"^.*\.yaml:{line}:\d+: {code} {severity}: {re.escape(key)}: .+ \(hint: .+\)$", text), text


def test_strict_promotes_warnings(tmp_path):
    (tmp_path / "base.yaml").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "c.yaml").write_text("extends: base.yaml\nmodel:\n  revision: main\n")
    loaded = load_recipe(tmp_path / "c.yaml")
    assert [(f.code, f.severity) for f in check(loaded)] == [("AB010", "warning")]
    assert [(f.code, f.severity) for f in check(loaded, strict=True)] == [("AB010", "error")]


def test_seed_recipes_have_only_the_expected_warnings():
    for path in (BASE, DFLASH):
        found = check(load_recipe(path))
        assert sorted(f.code for f in found) == ["AB010", "AB013", "AB050"], found
        assert all(f.severity == "warning" and f.location.file == BASE for f in found)


def test_dflash_without_num_speculative_tokens_is_refused(tmp_path):
    """The seed's first boot failure, caught in milliseconds."""
    child = tmp_path / "c.yaml"
    child.write_text(f"extends: {DFLASH}\nspeculative:\n  num_speculative_tokens: null\n")
    found = [f for f in check(load_recipe(child)) if f.severity == "error"]
    assert [f.code for f in found] == ["AB001"]
    assert found[0].location.file == DFLASH  # where `method: dflash` was written


def test_every_emitted_code_is_documented():
    docs = (REPO / "docs" / "recipes.md").read_text(encoding="utf-8")
    for code in RULES:
        assert code in docs, f"{code} missing from docs/recipes.md"
    src = (REPO / "autobench" / "recipe" / "rules.py").read_text(encoding="utf-8")
    for code in set(re.findall(r'c\.add\("(AB\d{3})"', src)):
        assert code in RULES


def test_trailing_newline_is_not_a_valid_name_or_sha(tmp_path):
    from autobench.recipe.facts import is_full_sha

    assert is_full_sha(SHA) and not is_full_sha(SHA + "\n") and not is_full_sha(SHA.upper())
    (tmp_path / "base.yaml").write_text(CLEAN, encoding="utf-8")
    child = tmp_path / "c.yaml"
    child.write_text('extends: base.yaml\nsecrets: ["TOKEN_A\\n"]\nenv:\n  "B\\n": x\n')
    codes = {f.code for f in check(load_recipe(child))}
    assert {"AB033", "AB034"} <= codes

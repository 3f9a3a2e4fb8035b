"""A random dataset's ``output_len`` is what each request asks for, in every place that says so:
the compiled bench line (either client), the run plan and the max_model_len rule."""

from __future__ import annotations

from pathlib import Path

import inprocess
import pytest

from autobench.compile import bench_argv
from autobench.recipe import load_recipe, rules

RECIPE = """\
name: out-len
model: {{repo: acme/tiny, revision: {sha}, served_name: tiny}}
container: {{image: "vllm/vllm-openai:v0.23.1", name: ab-out, ports: ["8000:8000"]}}
engine: {{max_model_len: {max_model_len}}}
bench:
  client: {client}
  dataset: {{kind: random, input_len: 32, output_len: {output_len}}}
  max_tokens: 256
"""
SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


def _recipe(tmp_path: Path, *, client: str = "autobench", output_len: int = 64, max_model_len: int = 4096) -> Path:
    path = tmp_path / "out-len.yaml"
    path.write_text(RECIPE.format(sha=SHA, client=client, output_len=output_len, max_model_len=max_model_len))
    return path


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_autobench_client_asks_for_the_datasets_output_len(tmp_path: Path) -> None:
    argv = bench_argv(load_recipe(_recipe(tmp_path)).recipe)
    assert _value(argv, "--max-tokens") == "64"


def test_vllm_client_asks_for_the_datasets_output_len(tmp_path: Path) -> None:
    argv = bench_argv(load_recipe(_recipe(tmp_path, client="vllm")).recipe)
    assert _value(argv, "--random-output-len") == "64"


def test_dry_run_plan_shows_the_datasets_output_len(tmp_path: Path) -> None:
    r = inprocess.autobench("run", str(_recipe(tmp_path)), "--dry-run", "--runtime", "process", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "max_tokens=64" in r.stdout and "max_tokens=256" not in r.stdout
    assert "--max-tokens 64" in r.stdout


@pytest.mark.parametrize(("output_len", "flagged"), [(64, False), (8192, True)])
def test_max_model_len_rule_checks_the_output_len_that_is_sent(tmp_path: Path, output_len: int, flagged: bool) -> None:
    findings = rules.check(load_recipe(_recipe(tmp_path, output_len=output_len, max_model_len=4096)))
    ab024 = [f for f in findings if f.code == "AB024"]
    assert bool(ab024) == flagged
    if flagged:
        assert "8192" in ab024[0].message and ab024[0].key == "bench.dataset.output_len"

"""Booleans and numbers in a recipe are strict (a quoted "yes" is a mistake worth a message), and
range errors say the value, the bound and the fix -- in validate and in compile alike."""

from __future__ import annotations

from pathlib import Path

import inprocess
import pytest

BASE = """\
name: strict
model: {{repo: acme/tiny, revision: 6c7242c934a9870d7c59c05240bdbb2467cc1394, served_name: tiny}}
container: {{image: "vllm/vllm-openai:v0.23.1", name: ab-strict, ports: ["8000:8000"]}}
engine:
  max_model_len: 4096
  enforce_eager: {eager}
bench:
  dataset: {{kind: random, input_len: 32, output_len: 16}}
  concurrency: {concurrency}
"""


def _cli(tmp_path: Path, command: str, *, eager: str = "true", concurrency: str = "8"):
    path = tmp_path / "strict.yaml"
    path.write_text(BASE.format(eager=eager, concurrency=concurrency))
    return inprocess.autobench(command, str(path), cwd=tmp_path)


@pytest.mark.parametrize("command", ["validate", "compile"])
@pytest.mark.parametrize(
    ("eager", "concurrency", "line", "message", "hint"),
    [
        ('"yes"', "8", 6, 'engine.enforce_eager: "yes" is a quoted string, not true or false', "without quotes"),
        ("true", '"8"', 9, 'bench.concurrency: "8" is a quoted string, not a whole number', "without quotes"),
        ("true", "-8", 9, "bench.concurrency: -8 is below the minimum 1", "set `bench.concurrency` to 1 or more"),
    ],
)
def test_quoted_scalars_and_range_errors_are_located_with_a_specific_hint(
    tmp_path: Path, command: str, eager: str, concurrency: str, line: int, message: str, hint: str
) -> None:
    r = _cli(tmp_path, command, eager=eager, concurrency=concurrency)
    assert r.returncode == 2
    first = next(x for x in (r.stdout + r.stderr).splitlines() if message in x)  # validate: stdout
    assert f"strict.yaml:{line}:" in first and hint in first.split("(hint: ", 1)[1]


def test_plain_yaml_scalars_are_accepted(tmp_path: Path) -> None:
    assert _cli(tmp_path, "compile").returncode == 0

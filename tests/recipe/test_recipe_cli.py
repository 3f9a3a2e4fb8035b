"""The recipe commands as a user runs them, through the CLI's entry point in-process
(tests/inprocess.py); what a fresh `python -m autobench` process imports is checked in one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import autobench

REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
SCHEMA = REPO / "schema" / "recipe.schema.json"


def ab(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.pop("AUTOBENCH_TRACEBACK", None)
    full.update(env or {})
    return autobench(*args, cwd=cwd, env=full)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_compile_prints_the_script(tmp_path):
    proc = ab("compile", str(DFLASH), env={"HF_TOKEN": "hf_shouldneverappearanywhere0123456789"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("#!/usr/bin/env bash\n")
    assert "hf_shouldneverappear" not in proc.stdout + proc.stderr
    assert "--revision main" in proc.stdout
    assert "AB010 warning" in proc.stderr  # unpinned base model, reported not fatal
    golden = REPO / "tests" / "compile" / "golden" / f"{DFLASH.stem}.full.sh"
    assert proc.stdout == golden.read_text(encoding="utf-8")


def test_compile_to_file_and_targets(tmp_path):
    out = tmp_path / "run.sh"
    proc = ab("compile", str(DFLASH), "--target", "serve", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_mode & 0o111
    assert "# target:    serve" in out.read_text()
    assert "autobench bench" not in out.read_text()


def test_compile_frozen_refuses_with_one_line():
    proc = ab("compile", "--frozen", str(DFLASH))
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "qwen3-5-122b-a10b-vllm-int4-autoround.yaml:12:13: model.revision:" in line
    assert f"(hint: autobench lock {DFLASH})" in line
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("content", "bit"),
    [
        ("", "recipe file is empty"),
        ("model:\n\trepo: a/b\n", ":2:1: tab character in indentation"),
        ("model: {repo: a/b}\nmodel: {repo: a/b}\n", ":2:1: model: duplicate key"),
        (
            "model:\n  repo: a/b\n  revison: x\ncontainer: {image: i}\n",
            ":3:3: model.revison: unknown key 'revison' (hint: did you mean 'revision'?)",
        ),
        ("extends: nowhere.yaml\n", ":1:10: extends: target not found"),
    ],
)
def test_bad_recipe_one_line_no_traceback(tmp_path, content, bit):
    path = tmp_path / "r.yaml"
    path.write_text(content)
    proc = ab("compile", str(path))
    assert proc.returncode == 2
    assert bit in one_error_line(proc)
    assert proc.stdout == ""


def test_compile_directory_and_missing_file(tmp_path):
    proc = ab("compile", str(tmp_path))
    assert proc.returncode == 2 and "is a directory" in one_error_line(proc)
    proc = ab("compile", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2 and "recipe file not found" in one_error_line(proc)


def test_validate_files_and_folders(tmp_path):
    proc = ab("validate", "recipes")
    assert proc.returncode == 0, proc.stderr
    # The base recipe's unpinned model is reported once, not again through the DFlash recipe extending it.
    assert proc.stdout.count("AB010 warning") == 1
    assert "2 file(s): 0 errors, 3 warning(s)" in proc.stderr
    proc = ab("validate", "--strict", "recipes")
    assert proc.returncode == 2
    assert "AB010 error" in proc.stdout
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.yml").write_text(
        "model:\n  repo: a/b\ncontainer: {image: 'i:1'}\nengine:\n  gpu_memory_utilization: 1.5\n"
    )
    (tmp_path / "empty.yaml").write_text("")
    proc = ab("validate", str(tmp_path), str(DFLASH))
    assert proc.returncode == 2
    out = proc.stdout.splitlines()
    assert f"{tmp_path}/empty.yaml:1:1: AB000 error: recipe file is empty" in out[0]
    assert any(
        line.startswith(f"{tmp_path}/sub/bad.yml:5:27: AB023 error: engine.gpu_memory_utilization:") for line in out
    ), out
    assert "Traceback" not in proc.stderr


def test_validate_json(tmp_path):
    proc = ab("validate", "--format", "json", str(DFLASH))
    assert proc.returncode == 0
    payload = json.loads(proc.stdout)
    assert payload["errors"] == 0 and payload["warnings"] == 3
    finding = payload["files"][0]["findings"][0]
    assert set(finding) == {"code", "severity", "file", "line", "col", "key", "message", "hint"}
    assert finding["code"] == "AB010" and finding["line"] == 12


def test_schema_command_matches_committed_file():
    proc = ab("schema")
    assert proc.returncode == 0
    assert proc.stdout == SCHEMA.read_text(encoding="utf-8"), "regenerate: autobench schema > schema/recipe.schema.json"
    schema = json.loads(proc.stdout)
    # container is optional: a recipe run only as a process needs none (AB076 for docker)
    assert "name" not in schema["required"] and "model" in schema["required"] and "container" not in schema["required"]


def test_recipes_carry_the_schema_modeline():
    for path in sorted((REPO / "recipes").glob("*.yaml")):
        assert path.read_text().startswith("# yaml-language-server: $schema=../schema/recipe.schema.json\n"), path


@pytest.mark.integration
def test_help_does_not_import_pydantic():
    code = (
        "import sys; from autobench.cli import main; rc = main(['--help']); "
        "heavy = [m for m in ('pydantic', 'ruamel.yaml', 'jinja2', 'huggingface_hub', 'sqlalchemy', 'httptools', 'rich') "
        "if m in sys.modules]; print(heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout


@pytest.mark.integration
def test_compile_imports_only_what_it_needs(tmp_path):
    code = (
        "import sys; from autobench.cli import main; rc = main(['compile', sys.argv[1], '-o', sys.argv[2]]); "
        "heavy = [m for m in ('huggingface_hub', 'sqlalchemy', 'sqlmodel', 'httptools', 'rich', 'httpx') "
        "if m in sys.modules]; print(rc, heavy)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(DFLASH), str(tmp_path / "x.sh")], capture_output=True, text=True, cwd=REPO
    )
    assert proc.stdout.strip().splitlines()[-1] == "0 []", proc.stdout + proc.stderr

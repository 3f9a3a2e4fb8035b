"""docs/first-hour.md: every ``sh`` block runs, in order, in a copy of the checkout's layout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
PAGE = REPO / "docs" / "first-hour.md"


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def _layout(tmp_path: Path) -> Path:
    root = tmp_path / "clone"
    root.mkdir()
    for name in ("recipes", "schema"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / "ledger.db", root / "ledger.db")
    # `. .venv/bin/activate` must put this interpreter's `autobench` on PATH, as the README's
    # venv does: the test's own venv when it has an activate script, else a minimal one.
    bindir = Path(sys.executable).parent
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    activate = bindir / "activate"
    if activate.is_file():
        shutil.copy(activate, venv_bin / "activate")
    else:
        (venv_bin / "activate").write_text(f'export PATH="{bindir}:$PATH"\n')
    return root


def test_the_page_has_its_commands_and_is_linked_from_the_readme():
    blocks = sh_blocks(PAGE.read_text())
    assert len(blocks) >= 5
    script = "\n".join(blocks)
    for command in ("autobench tour", "autobench init", "autobench recipes", "_AUTOBENCH_COMPLETE=bash_source"):
        assert command in script
    assert "docs/first-hour.md" in (REPO / "README.md").read_text()


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".venv" not in p.parts
    }


@pytest.mark.integration
@pytest.mark.timeout(600)  # the whole first hour, ~40 commands: over 120 s at load 25 (the script's own cap is 480 s)
def test_every_command_of_the_first_hour_runs(tmp_path: Path):
    root = _layout(tmp_path)
    before = _tree(root)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = "set -euo pipefail\n" + "\n".join(sh_blocks(PAGE.read_text()))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"  # autobench comes from the activate line, as for a new user
    env["PYTHONPATH"] = str(REPO)
    env["TMPDIR"] = str(scratch)  # where the page's `mktemp -d` makes its scratch folder
    done = subprocess.run(
        ["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=480, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (work,) = [d for d in scratch.iterdir() if (d / "ledger.db").is_file() and (d / "tour").is_dir()]
    assert "DONE tour" in done.stdout
    assert (work / "tour" / "docs" / "recipes" / "tour.md").is_file()
    assert (work / "recipes" / "qwen3-8b-eagle3.yaml").is_file()
    assert "qwen3-8b-eagle3" in done.stdout  # listed by the last `autobench recipes`
    # the second hour: a sweep that names its headline cell, a comparison, a report by cell, and
    # a process-only recipe of a local model directory, run
    both = done.stdout + done.stderr  # run prints its summary on stderr
    assert "headline cell concurrency=4 input_len=128 output_len=64 (cell 2 of 2)" in both, both[-4000:]
    assert "all 2 cells: completed 64" in both
    assert "| concurrency |" in (work / "tour" / "docs" / "recipes" / "tour.md").read_text()
    assert "DONE local-tiny" in both
    # following the page changed nothing in the checkout (the scratch folder holds it all)
    assert _tree(root) == before


@pytest.mark.integration
def test_bash_completion_completes_commands(tmp_path: Path):
    env = dict(os.environ, COMP_WORDS="autobench val", COMP_CWORD="1", _AUTOBENCH_COMPLETE="bash_complete")
    done = subprocess.run(
        [sys.executable, "-m", "autobench"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert "plain,validate" in done.stdout.splitlines()

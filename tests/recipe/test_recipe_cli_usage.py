"""Command-line mistakes (missing argument, bad option value, unknown command) are ONE line
`error: ... (hint: ...)` with exit 2, like every other bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["compile"], "Missing argument 'RECIPE'"),
        (["nosuchcommand"], "No such command 'nosuchcommand'"),
        (["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "abc"], "'--concurrency'"),
        (["validate", "--format", "xml", "recipes"], "'--format'"),
        (["hub", "info"], "Missing argument"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], what: str, repo_root) -> None:
    r = subprocess.run([sys.executable, "-m", "autobench", *args], capture_output=True, text=True, cwd=repo_root)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: ") and what in r.stderr and "--help" in r.stderr

"""Command-line mistakes (missing argument, bad option value, unknown command) are ONE line
`error: ... (hint: ...)` with exit 2, like every other bad input."""

from __future__ import annotations

import subprocess

import inprocess
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
    r = inprocess.autobench(*args, cwd=repo_root)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: ") and what in r.stderr and "--help" in r.stderr


def _autobench(repo_root, *args: str) -> subprocess.CompletedProcess[str]:
    return inprocess.autobench(*args, cwd=repo_root)


@pytest.mark.parametrize("group", [[], ["ledger"], ["hub"], ["logs"]])
def test_a_bare_group_prints_its_help_not_an_error(group: list[str], repo_root) -> None:
    r = _autobench(repo_root, *group)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout == _autobench(repo_root, *group, "--help").stdout
    assert r.stdout.startswith("Usage: autobench") and "Commands:" in r.stdout and r.stdout.count("\n") > 5


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [(["valdate"], "'validate'"), (["comple"], "'compile'"), (["ledger", "verfy"], "'verify'")],
)
def test_a_misspelled_command_gets_a_suggestion(args: list[str], suggestion: str, repo_root) -> None:
    r = _autobench(repo_root, *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert f"Did you mean {suggestion}" in r.stderr


def test_an_unlike_command_gets_no_suggestion(repo_root) -> None:
    r = _autobench(repo_root, "xyzzy")
    assert r.returncode == 2 and "No such command 'xyzzy'." in r.stderr and "Did you mean" not in r.stderr

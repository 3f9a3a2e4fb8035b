"""``autobench(*args, cwd=, env=, input=)``: the CLI run in this process, answered like
``subprocess.run(..., capture_output=True, text=True)``.

For unit tests, where what is tested is what a command prints and returns, not the process
around it: the command runs through ``autobench.cli.main`` (the console script's entry point:
the same one-line errors and exit codes) with stdin, stdout and stderr captured by click's
test runner, the working directory changed for the call, and ``env`` (a whole environment, as
``subprocess`` takes it) applied for the call and restored afterwards.  Tests of the process
boundary itself (signals, a child's environment, a real server) stay subprocesses and are
marked ``integration``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner

from autobench.cli import main


def autobench(
    *args: str | Path,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    argv = [str(a) for a in args]
    # A whole environment replaces this one for the call (names it lacks are unset), as in a child.
    delta: dict[str, str | None] | None = None
    if env is not None:
        delta = {name: None for name in os.environ if name not in env}
        delta.update(env)
    before = os.getcwd()
    with CliRunner().isolation(input=input, env=delta) as (out, err, _):
        try:
            if cwd is not None:
                os.chdir(cwd)
            try:
                code = main(argv)
            except SystemExit as exc:  # a command that exits on its own (none should)
                code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os.chdir(before)
    return subprocess.CompletedProcess(
        ["autobench", *argv], code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace")
    )

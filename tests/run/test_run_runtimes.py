"""Runtimes with real child processes: process groups, SIGTERM then SIGKILL, log redaction."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from run_helpers import pid_alive

from autobench.run.runtimes import LogFile, ProcessServer

_STARTED: list[ProcessServer] = []


@pytest.fixture(autouse=True)
def _no_leaked_process_groups():
    """A failing assertion must not leave a SIGTERM-ignoring process group running."""
    yield
    while _STARTED:
        server = _STARTED.pop()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server._proc.pid, signal.SIGKILL)  # its own session: pgid == pid


def started(server: ProcessServer) -> ProcessServer:
    _STARTED.append(server)
    return server


STUBBORN = textwrap.dedent(r"""
    import os, signal, sys, time
    # a worker in the same process group that ignores SIGTERM (like a wedged EngineCore)
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.write(1, f"worker {os.getpid()} token={os.environ['MY_SECRET']}\n".encode())  # one write
        while True:
            time.sleep(0.1)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.write(1, f"leader {os.getpid()}\n".encode())
    while True:
        time.sleep(0.1)
""")


def _wait_for(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.integration
def test_process_group_is_killed_after_the_grace_period_and_log_is_redacted(tmp_path: Path):
    secret = "s3cr3t-value-0042"
    log = LogFile(tmp_path / "server.log", {"MY_SECRET": secret})
    env = {**os.environ, "MY_SECRET": secret}
    server = started(ProcessServer([sys.executable, "-c", STUBBORN], env, log, grace_s=0.5))
    assert _wait_for(
        lambda: "worker" in (tmp_path / "server.log").read_text() and "leader" in (tmp_path / "server.log").read_text()
    )
    text = (tmp_path / "server.log").read_text()
    pids = [int(line.split()[1]) for line in text.splitlines() if line.startswith(("worker", "leader"))]
    assert server.exit_code() is None
    t0 = time.monotonic()
    server.stop()
    took = time.monotonic() - t0
    log.close()
    assert took > 0.4  # it waited the grace period (0.5 s) before killing the group
    assert not any(pid_alive(p) for p in pids)
    assert server.exit_code() is not None
    text = (tmp_path / "server.log").read_text()
    assert secret not in text and "token=[REDACTED:MY_SECRET]" in text
    server.stop()  # idempotent


@pytest.mark.integration
def test_a_well_behaved_server_stops_on_sigterm_quickly(tmp_path: Path):
    log = LogFile(tmp_path / "server.log", {})
    server = started(
        ProcessServer(
            [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
            dict(os.environ),
            log,
            grace_s=10,
        )
    )
    assert _wait_for(lambda: "up" in (tmp_path / "server.log").read_text())
    server.stop()
    assert server.exit_code() == -15  # ended by the SIGTERM, not by a SIGKILL after the 10 s grace


@pytest.mark.integration
def test_exit_code_reports_an_early_exit(tmp_path: Path):
    log = LogFile(tmp_path / "server.log", {})
    server = started(
        ProcessServer(
            [sys.executable, "-c", "import sys; print('bye'); sys.exit(7)"],
            dict(os.environ),
            log,
            grace_s=1,
        )
    )
    assert _wait_for(lambda: server.exit_code() is not None)
    assert server.exit_code() == 7
    server.stop()
    log.close()
    assert (tmp_path / "server.log").read_text() == "bye\n"


def test_missing_executable_is_one_clear_error(tmp_path: Path):
    import pytest

    from autobench.errors import RunError

    log = LogFile(tmp_path / "server.log", {})
    with pytest.raises(RunError, match="'no-such-vllm-binary' not found"):
        ProcessServer(["no-such-vllm-binary", "serve", "x"], dict(os.environ), log, grace_s=1)


@pytest.mark.integration
def test_what_a_server_wrote_before_it_exited_is_before_the_teardown_mark(tmp_path: Path, monkeypatch):
    """A server that exits on its own (a config error at boot) wrote its cause before it ended;
    the log's pump is a thread that can lag the exit on a loaded machine.  The teardown mark
    (after which lines count as shutdown noise, not as a cause) goes after all of it.  The pump
    is slowed here to 10 ms a line; CI once saw the cause land after the mark."""
    real_write = LogFile.write

    def lagging(self: LogFile, text: str) -> None:
        if text and not text.startswith("[autobench]"):
            time.sleep(0.01)
        real_write(self, text)

    monkeypatch.setattr(LogFile, "write", lagging)
    log = LogFile(tmp_path / "server.log", {})
    script = "import sys\nfor i in range(40): print('cause', i)\nsys.exit(1)"
    server = started(ProcessServer([sys.executable, "-c", script], dict(os.environ), log, grace_s=1))
    assert _wait_for(lambda: server.exit_code() is not None)
    server.settle_log()
    mark = log.teardown_mark()
    server.stop()
    log.close()
    lines = (tmp_path / "server.log").read_text().splitlines()
    assert mark == 40 and lines[:40] == [f"cause {i}" for i in range(40)]

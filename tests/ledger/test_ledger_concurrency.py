"""Real processes, on a real SQLite file and on the real PostgreSQL server: 8 concurrent
appenders lose nothing and the chain verifies; a SIGKILL mid-append leaves a ledger that
opens, (SQLite) passes integrity_check, verifies and still accepts appends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ledger_helpers import make_run

from autobench.ledger import open_ledger

WORKER = Path(__file__).with_name("ledger_worker.py")
PROCS, EACH = 8, 100  # 800 appends racing for the chain head: enough to interleave, small enough to be quick


def _spawn(db: str, tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), db, tag, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.integration
def test_eight_processes_append_concurrently_and_lose_nothing(backend):
    open_ledger(backend.url).close()  # create it (the workers open with create=False)
    procs = [_spawn(backend.url, f"p{i}", EACH) for i in range(PROCS)]
    for proc in procs:
        out, err = proc.communicate(timeout=110)
        assert proc.returncode == 0, err
    with open_ledger(backend.url, create=False) as book:
        assert book.count() == PROCS * EACH
        result = book.verify()
        assert result.ok, str(result)
        assert result.runs == PROCS * EACH
    ids = [r[0] for r in backend.query("SELECT id FROM runs ORDER BY id")]
    notes = {r[0] for r in backend.query("SELECT notes FROM runs")}
    assert ids == list(range(1, PROCS * EACH + 1))
    assert notes == {f"p{p}:{i}" for p in range(PROCS) for i in range(EACH)}


@pytest.mark.integration
def test_sigkill_mid_appends_leaves_a_sound_ledger(backend):
    open_ledger(backend.url).close()
    proc = _spawn(backend.url, "k", 0)  # appends forever
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 20
    seen = 0
    while seen < 100 and time.monotonic() < deadline:
        seen = backend.query("SELECT count(*) FROM runs")[0][0]
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of a stream of appends
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    if backend.name == "sqlite":
        assert backend.query("PRAGMA integrity_check") == [("ok",)]
    with open_ledger(backend.url, create=False) as book:
        result = book.verify()
        assert result.ok, str(result)
        assert result.runs >= seen >= 100
        book.append(make_run(notes="after the kill"))  # still appendable
        assert book.verify().ok

"""Real processes: 8 concurrent appenders lose nothing; a SIGKILL mid-append leaves a
database that opens, passes integrity_check and verifies."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ledger_helpers import make_run

from autobench.ledger import open_ledger

WORKER = Path(__file__).with_name("ledger_worker.py")
PROCS, EACH = 8, 250


def _spawn(db: Path, tag: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(db), tag, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_eight_processes_append_concurrently_and_lose_nothing(db_path):
    open_ledger(db_path).close()  # create it (the workers open with create=False)
    procs = [_spawn(db_path, f"p{i}", EACH) for i in range(PROCS)]
    for proc in procs:
        out, err = proc.communicate(timeout=110)
        assert proc.returncode == 0, err
    with open_ledger(db_path, create=False) as book:
        assert book.count() == PROCS * EACH
        result = book.verify()
        assert result.ok, str(result)
        assert result.runs == PROCS * EACH
    con = sqlite3.connect(db_path)
    ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id")]
    notes = {r[0] for r in con.execute("SELECT notes FROM runs")}
    con.close()
    assert ids == list(range(1, PROCS * EACH + 1))
    assert notes == {f"p{p}:{i}" for p in range(PROCS) for i in range(EACH)}


def test_sigkill_mid_appends_leaves_a_sound_ledger(db_path):
    open_ledger(db_path).close()
    proc = _spawn(db_path, "k", 0)  # appends forever
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 20
    seen = 0
    while seen < 100 and time.monotonic() < deadline:
        con = sqlite3.connect(db_path, timeout=30)
        seen = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        con.close()
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of a stream of appends
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    con = sqlite3.connect(db_path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    with open_ledger(db_path, create=False) as book:
        result = book.verify()
        assert result.ok, str(result)
        assert result.runs >= seen >= 100
        book.append(make_run(notes="after the kill"))  # still appendable
        assert book.verify().ok

"""``synthetic-server --workers N``: N processes on one port, all served, all gone with the first."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from autobench.bench.client import BenchConfig, run_bench


def children_of(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_share_the_port_and_stop_with_the_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "autobench.bench.synthetic", "--port", str(port), "--model", "m",
                             "--ttft-ms", "5", "--itl-ms", "1", "--log-stats-interval", "0", "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "Application startup complete." in line:
                break
        kids = children_of(proc.pid)
        assert len(kids) == 1  # one extra worker, and it logs nothing of its own
        d = run_bench(BenchConfig(base_url=f"http://127.0.0.1:{port}", model="m", num_prompts=32, concurrency=16,
                                  max_tokens=8, random_input_len=8, read_timeout=5)).to_json_dict()
        assert d["completed"] == 32 and d["failed"] == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    deadline = time.monotonic() + 5
    while any(alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [k for k in kids if alive(k)]

"""Ctrl-C during `autobench bench`: a partial result, one line, exit 130, no traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_sigint_mid_bench_writes_a_partial_result_and_exits_130(synth, tmp_path: Path) -> None:
    srv = synth(ttft_ms=100, itl_ms=40)  # ~0.5 s per request: 40 prompts at concurrency 2 take ~10 s
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autobench",
            "bench",
            "--base-url",
            srv.base_url,
            "--model",
            "m",
            "--num-prompts",
            "40",
            "--concurrency",
            "2",
            "--max-tokens",
            "10",
            "--result",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while srv.server.counters.success < 2 and time.monotonic() < deadline:  # the measured run is under way
        time.sleep(0.02)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    # (warnings may precede it: a busy client on a loaded machine, the estimated prompt lengths)
    err_lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("warning: ")]
    assert len(err_lines) == 1 and err_lines[0].startswith("interrupted:") and str(out) in err_lines[0]
    d = json.loads(out.read_text())
    assert d["interrupted"] is True
    assert d["completed"] >= 1 and d["not_dispatched"] > 0
    assert d["completed"] + d["failed"] + d["incomplete"] + d["not_dispatched"] == 40
    assert "completed" in stdout  # the summary of what was measured is still printed

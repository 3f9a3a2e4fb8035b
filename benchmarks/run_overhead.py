"""What `autobench run` adds around the server and the bench (prints figures; not a test).

1. readiness detection latency: how long after a server starts answering does
   wait_ready notice (polling backs off from 0.25 s to 2 s);
2. teardown time of the process runtime: a server that exits on SIGTERM, and one that
   ignores it (SIGKILL after the grace period);
3. one whole `autobench run --runtime process` against the synthetic server: wall time
   versus the bench's own duration.

Run: .venv/bin/python benchmarks/run_overhead.py
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "run"))

from run_helpers import FAKE_VLLM, recipe_text  # noqa: E402

from autobench.bench.synthetic import SyntheticConfig, ThreadedServer  # noqa: E402
from autobench.run.readiness import wait_ready  # noqa: E402
from autobench.run.runtimes import LogFile, ProcessServer  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def readiness_latency(boot_s: float) -> float:
    port = free_port()
    srv = ThreadedServer(SyntheticConfig(port=port, model="m"))
    up_at: list[float] = []

    def start() -> None:
        srv.start()
        up_at.append(time.monotonic())

    timer = threading.Timer(boot_s, start)
    timer.start()
    try:
        r = wait_ready(
            f"http://127.0.0.1:{port}/health",
            f"http://127.0.0.1:{port}/v1/models",
            "m",
            timeout_s=boot_s + 30,
            exited=lambda: None,
        )
        seen = time.monotonic()
    finally:
        timer.join()
        srv.stop()
    assert r.ready
    return seen - up_at[0]


def teardown_time(ignore_term: bool, grace: float, tmp: Path) -> float:
    code = (
        "import signal, time\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
        + "print('up', flush=True)\ntime.sleep(60)\n"
    )
    log = LogFile(tmp / f"t{ignore_term}.log", {})
    server = ProcessServer([sys.executable, "-c", code], dict(os.environ), log, grace_s=grace)
    while "up" not in (tmp / f"t{ignore_term}.log").read_text():
        time.sleep(0.01)
    t0 = time.monotonic()
    server.stop()
    took = time.monotonic() - t0
    log.close()
    return took


def whole_run(tmp: Path) -> tuple[float, float, str]:
    recipe = tmp / "r.yaml"
    recipe.write_text(recipe_text(free_port(), num_prompts=64, concurrency=8, max_tokens=32))
    env = dict(os.environ, FAKE_VLLM_ARGS="--ttft-ms 20 --itl-ms 5", PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "autobench",
            "run",
            str(recipe),
            "--runtime",
            "process",
            "--vllm-exec",
            f"{sys.executable} {FAKE_VLLM}",
            "--ledger",
            str(tmp / "l.db"),
            "--runs-dir",
            str(tmp / "runs"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
    )
    wall = time.monotonic() - t0
    out = json.loads(res.stdout)
    return wall, out["metrics"]["duration_s"], out["status"]


def main() -> None:
    print(f"host: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    for boot in (0.5, 2.0, 5.0):
        lat = [readiness_latency(boot) for _ in range(3)]
        print(
            f"readiness detection after a {boot:g} s boot: "
            f"median {statistics.median(lat) * 1e3:.0f} ms, max {max(lat) * 1e3:.0f} ms (3 runs)"
        )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"teardown, server exits on SIGTERM: {teardown_time(False, 10, tmp) * 1e3:.0f} ms")
        took = teardown_time(True, 2, tmp)
        print(f"teardown, server ignores SIGTERM (grace 2 s): {took * 1e3:.0f} ms")
        wall, bench_s, status = whole_run(tmp)
        print(
            f"autobench run (64 prompts, conc 8, 32 tokens): {status}, wall {wall:.2f} s, "
            f"bench {bench_s:.2f} s, everything else {wall - bench_s:.2f} s "
            "(CLI start, validate, compile, server boot, readiness, teardown, log parse, ledger)"
        )


if __name__ == "__main__":
    main()

"""Throughput of `autobench logs parse` on a ~500 MB synthetic vLLM log vs `grep -c`.

The log is built in /tmp by repeating the real corpus excerpts (tests/logs/corpus)
between long runs of V1 engine-stats lines and uvicorn access lines, the mix a
long benchmark run produces.  Prints MB/s for both tools and the parser's
verdict (stats samples, root cause) so a wrong parse cannot look fast.

    .venv/bin/python benchmarks/logs_parse_speed.py [--mb 500] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "logs" / "corpus"

STATS = ("(APIServer pid=1) INFO 05-19 10:13:{s:02d} [loggers.py:271] Engine 000: Avg prompt throughput: "
         "{p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
         "GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%\n")
ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
DEBUG = ("(EngineCore pid=2) DEBUG 05-19 10:13:{s:02d} [core.py:512] EngineCore loop active, "
         "scheduled {r} requests, {t} tokens this step\n")


def build(path: Path, target_mb: int) -> int:
    excerpts = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.log")))
    block = []
    for i in range(400):
        block.append(STATS.format(s=i % 60, p=(i * 37) % 900, g=50 + (i * 13) % 400, r=i % 17,
                                  w=i % 5, kv=(i * 7) % 100))
        block.append(ACCESS.format(port=40000 + i))
        block.append(ACCESS.format(port=41000 + i))
        block.append(DEBUG.format(s=i % 60, r=i % 17, t=i * 3))
    chunk = ("".join(block) + excerpts).encode()
    target = target_mb * 1_000_000
    written = 0
    with open(path, "wb") as f:
        while written < target:
            f.write(chunk)
            written += len(chunk)
    return written


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed: {out.stderr.strip()}")
    return dt, out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()
    fd, name = tempfile.mkstemp(prefix="autobench-logs-bench-", suffix=".log", dir="/tmp")
    os.close(fd)
    path = Path(name)
    try:
        size = build(path, args.mb)
        mb = size / 1e6
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        g_dt, g_out = timed(["grep", "-c", "Avg prompt throughput", str(path)])
        p_dt, p_out = timed([sys.executable, "-m", "autobench", "logs", "parse", "--json", str(path)])
        data = json.loads(p_out)
        print(f"log: {path} ({mb:.1f} MB, {data['lines_read']:,} lines)")
        print(f"grep -c:             {g_dt:7.2f} s  {mb / g_dt:8.1f} MB/s  ({int(g_out):,} stats lines)")
        print(f"autobench logs parse: {p_dt:7.2f} s  {mb / p_dt:8.1f} MB/s  "
              f"({data['stats']['samples']:,} stats samples, root cause: "
              f"{(data['root_cause'] or {}).get('category')}, ratio {p_dt / g_dt:.1f}x grep)")
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()

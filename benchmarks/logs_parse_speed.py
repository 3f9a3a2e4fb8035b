"""Throughput of `autobench logs parse` on a ~500 MB synthetic vLLM log vs `grep -c`.

The log is built in /tmp by repeating real corpus excerpts (tests/logs/corpus)
between long runs of V1 engine-stats lines, uvicorn access lines and DEBUG records,
the mix a long benchmark run produces.  Two mixes are measured:

* ``all``: every excerpt, failures included.  The first failure settles the root
  cause, so the repeated tracebacks after it cost little (the historical figure);
* ``healthy``: only the excerpts of servers that came up.  The root cause never
  settles, so every excerpt line is checked against every cause substring: the
  slow case.

Prints MB/s for both tools, the parser's peak RSS, the load average (the machine is
shared) and the parser's verdict (stats samples, root cause) so a wrong parse
cannot look fast.  The log is deleted afterwards unless --keep.

    .venv/bin/python benchmarks/logs_parse_speed.py [--mb 500] [--mix all|healthy|both] [--keep]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "logs" / "corpus"

STATS = (
    "(APIServer pid=1) INFO 05-19 10:13:{s:02d} [loggers.py:271] Engine 000: Avg prompt throughput: "
    "{p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
    "GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%\n"
)
ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:{port} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
DEBUG = (
    "(EngineCore pid=2) DEBUG 05-19 10:13:{s:02d} [core.py:512] EngineCore loop active, "
    "scheduled {r} requests, {t} tokens this step\n"
)


def build(path: Path, target_mb: int, healthy_only: bool = False) -> int:
    logs = sorted(CORPUS.glob("*.log"))
    if healthy_only:
        logs = [p for p in logs if not _failed(p)]
    excerpts = "".join(p.read_text(encoding="utf-8") for p in logs)
    block = []
    for i in range(400):
        block.append(
            STATS.format(s=i % 60, p=(i * 37) % 900, g=50 + (i * 13) % 400, r=i % 17, w=i % 5, kv=(i * 7) % 100)
        )
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


@functools.cache
def _index() -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load((CORPUS / "index.yaml").read_text(encoding="utf-8"))


def _failed(log: Path) -> bool:
    """Whether the corpus index gives the excerpt a root cause."""
    return bool(_index()[log.stem].get("cause"))


def timed(cmd: list[str]) -> tuple[float, str, int, float]:
    """Wall time, stdout, peak RSS (KiB) and CPU seconds (user + system, from wait4) of one
    command.  On a shared machine the CPU time is the cost; the wall time includes waiting."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{cmd[0]} failed: {err.read().decode(errors='replace').strip()}")
        return dt, out.read().decode(), usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(mix: str, mb_target: int, keep: bool) -> None:
    fd, name = tempfile.mkstemp(prefix=f"autobench-logs-bench-{mix}-", suffix=".log", dir="/tmp")
    os.close(fd)
    path = Path(name)
    try:
        size = build(path, mb_target, healthy_only=(mix == "healthy"))
        mb = size / 1e6
        # warm the page cache
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
        before = load()
        g_dt, g_out, _, _ = timed(["grep", "-c", "Avg prompt throughput", str(path)])
        parse = [sys.executable, "-m", "autobench", "logs", "parse", "--json", str(path)]
        p_dt, p_out, p_rss, p_cpu = timed(parse)
        data = json.loads(p_out)
        print(f"[{mix}] log: {path} ({mb:.1f} MB, {data['lines_read']:,} lines); {before} before, {load()} after")
        print(f"[{mix}] grep -c:              {g_dt:7.2f} s  {mb / g_dt:8.1f} MB/s  ({int(g_out):,} stats lines)")
        print(
            f"[{mix}] autobench logs parse: {p_dt:7.2f} s  {mb / p_dt:8.1f} MB/s  "
            f"(CPU {p_cpu:.2f} s: {mb / p_cpu:.1f} MB/s)  peak RSS {p_rss / 1024:.0f} MiB "
            f"({data['stats']['samples']:,} stats samples, root cause: "
            f"{(data['root_cause'] or {}).get('category')}, ratio {p_dt / g_dt:.1f}x grep)"
        )
    finally:
        if not keep:
            path.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--mix", choices=("all", "healthy", "both"), default="both")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = ap.parse_args()
    if shutil.disk_usage("/tmp").free < 3 * args.mb * 1_000_000:
        raise SystemExit(f"not enough free space in /tmp for a {args.mb} MB log")
    for mix in ("all", "healthy") if args.mix == "both" else (args.mix,):
        measure(mix, args.mb, args.keep)


if __name__ == "__main__":
    main()

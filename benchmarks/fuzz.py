"""The fuzz suite (tests/fuzz) with a longer budget: cases tried per property, time, failures.

    .venv/bin/python benchmarks/fuzz.py [--examples N] [--random]

The test suite runs every property with a small fixed budget and the same cases each time
(about a minute on 2 cores).  This runs them with ``--examples`` cases each (default 1000) --
``--random`` draws fresh cases instead of the fixed sequence -- and prints how many cases each
property really tried (hypothesis stops early when a strategy has fewer distinct cases), the
wall time, and pytest's verdict.  A failure prints hypothesis's minimal failing case.
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

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1000, help="cases per property (default 1000)")
    ap.add_argument("--random", action="store_true", help="fresh cases instead of the fixed sequence")
    ap.add_argument("-k", default=None, help="only the properties matching this pytest -k expression")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "cases.json"
        env = {
            **os.environ,
            "AUTOBENCH_FUZZ_EXAMPLES": str(args.examples),
            "AUTOBENCH_FUZZ_REPORT": str(report),
        }
        if args.random:
            env["AUTOBENCH_FUZZ_RANDOM"] = "1"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fuzz", "-o", "timeout=0"]
        if args.k:
            cmd += ["-k", args.k]
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        elapsed = time.monotonic() - start
        cases = json.loads(report.read_text()) if report.exists() else {}
    print(f"fuzz suite, {args.examples} examples per property ({'random' if args.random else 'fixed'} cases)")
    width = max((len(k) for k in cases), default=10)
    for name, n in sorted(cases.items()):
        print(f"  {name.ljust(width)}  {n:>7,} cases")
    print(f"  {'total'.ljust(width)}  {sum(cases.values()):>7,} cases in {elapsed:.1f} s")
    verdict = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no output)"
    print(f"pytest: {verdict}")
    if proc.returncode != 0:
        print(proc.stdout[-6000:])
        print(proc.stderr[-2000:], file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())

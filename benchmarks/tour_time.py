"""Wall time of `autobench tour` (target: under a minute), as a new user waits for it.

    .venv/bin/python benchmarks/tour_time.py [-n RUNS]

Each run is a separate process in a new temporary folder: write the bundled recipe, run it
against the packaged vLLM stand-in, record it into a scratch ledger, render its pages.
Prints each run's wall time, the median and the run's decode figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", "--runs", type=int, default=3)
    args = parser.parse_args()
    times = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "autobench", "tour", "--dir", str(Path(tmp) / "tour"), "--json"],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            took = time.perf_counter() - start
        if done.returncode != 0:
            print(f"run {i + 1}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
            sys.exit(1)
        doc = json.loads(done.stdout)
        times.append(took)
        print(f"run {i + 1}: {took:.2f} s  {doc['status']}  decode {doc['metrics'].get('decode_tok_s', 0):,.1f} tok/s")
    print(f"median {statistics.median(times):.2f} s over {len(times)} run(s) (target < 60 s)")


if __name__ == "__main__":
    main()

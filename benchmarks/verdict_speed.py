"""Time to judge two runs (autobench.ledger.verdict): what `compare` and `regress` add.

    .venv/bin/python benchmarks/verdict_speed.py [--cells 6] [--requests 500] [--repeats 1] [-n 3]

Two runs of ``--cells`` cells, each with ``--repeats`` repeats of ``--requests`` seeded
requests (16 ITL gaps per request), judged on every metric with 1,000 resamples: with one
repeat the bands come from the requests, with two or more from the repeats.  Prints each
judgement's wall time and the median, and how many metrics read faster or slower (the runs are
drawn from one distribution, so that count should be 0).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from autobench.bench.metrics import percentile
from autobench.ledger.verdict import FASTER, SLOWER, CellData, Requests, judge_cells


def cell(seed: int, concurrency: int, requests: int, repeats: int) -> CellData:
    r = random.Random(seed)
    reps, merged = [], Requests()
    cols: dict[str, list[float]] = {k: [] for k in Requests.__dataclass_fields__}
    for _ in range(repeats):
        ttft = [r.lognormvariate(3.0, 0.3) for _ in range(requests)]
        tpot = [r.lognormvariate(2.0, 0.1) for _ in range(requests)]
        completion = [float(r.randint(60, 200)) for _ in range(requests)]
        prompt = [float(r.randint(100, 300)) for _ in range(requests)]
        e2el = [t + p * (c - 1) for t, p, c in zip(ttft, tpot, completion, strict=True)]
        itl = [r.lognormvariate(2.0, 0.2) for _ in range(requests * 16)]
        m: dict[str, float] = {}
        for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
            m[f"{name}_median_ms"] = percentile(values, 50)
            m[f"{name}_p99_ms"] = percentile(values, 99)
        m["decode_tok_s"] = sum(completion) / (sum(e2el) / 1000 / concurrency)
        reps.append(m)
        for name, values in (
            ("ttft_ms", ttft),
            ("tpot_ms", tpot),
            ("itl_ms", itl),
            ("e2el_ms", e2el),
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
        ):
            cols[name] += values
    merged = Requests(**cols)
    return CellData({"concurrency": concurrency}, reps, merged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=6)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("-n", "--runs", type=int, default=3)
    args = parser.parse_args()
    a = [cell(10 + i, 2**i, args.requests, args.repeats) for i in range(args.cells)]
    b = [cell(100 + i, 2**i, args.requests, args.repeats) for i in range(args.cells)]
    times = []
    for i in range(args.runs):
        start = time.perf_counter()
        v = judge_cells(a, b, threshold=0.05, seed=i)
        took = time.perf_counter() - start
        loud = sum(m.verdict in (FASTER, SLOWER) for _, m in v.rows())
        print(f"judgement {i + 1}: {took:.3f} s, {len(list(v.rows()))} metric verdicts, {loud} faster/slower")
        times.append(took)
    print(
        f"median {statistics.median(times):.3f} s for {args.cells} cells x {args.repeats} repeat(s) x "
        f"{args.requests} requests"
    )


if __name__ == "__main__":
    main()

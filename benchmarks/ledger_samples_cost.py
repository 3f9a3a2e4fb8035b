"""The cost of keeping raw per-request samples in the ledger (schema v8 cells).

    .venv/bin/python benchmarks/ledger_samples_cost.py [--itl 128] [--append-requests 10000]
        [--runs 100] [--requests 1000] [--db-dir /tmp] [--pg URL]

Samples look like a real bench's: TTFT ~ 150 ms, TPOT ~ 10 ms, every ITL gap a random time
(kept to the microsecond, as the samples keep every time), --itl gaps per request, 2 % errors.  Prints:

1. ledger bytes per 1,000 requests: growth of an SQLite ledger file (checkpointed, WAL
   included) when runs with one cell of samples are appended, next to the encoded blob alone
   and the raw column bytes;
2. time to append one run of --append-requests requests (building ``Samples`` from rows,
   encoding, and the one-transaction append), median of 5;
3. time to recompute percentiles over --runs stored runs of --requests requests each: read
   their cells, decode, ``merge`` and ``summary`` (p50/p90/p99/mean of TTFT, TPOT, ITL, E2EL
   over the union of every request), median of 3.

The figures measured are in docs/ledger.md ("The cost of raw samples").
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autobench.ledger import NewRun, open_ledger
from autobench.ledger.models import NewCell
from autobench.samples import Request, Samples, encode, merge, summary


def fake_requests(n: int, itl: int, rng: random.Random) -> list[Request]:
    rows = []
    t = 0.0
    for _ in range(n):
        t += rng.expovariate(20.0)
        if rng.random() < 0.02:
            rows.append(Request("error", start_s=t, prompt_tokens=rng.randint(200, 800), error_kind="http_5xx"))
            continue
        gaps = [rng.lognormvariate(2.3, 0.25) for _ in range(itl)]
        ttft = rng.lognormvariate(5.0, 0.3)
        rows.append(
            Request(
                "ok",
                ttft_ms=ttft,
                tpot_ms=sum(gaps) / len(gaps),
                e2el_ms=ttft + sum(gaps),
                itl_ms=gaps,
                prompt_tokens=rng.randint(200, 800),
                completion_tokens=itl + 1,
                start_s=t,
            )
        )
    return rows


def run_with(samples: Samples, i: int) -> NewRun:
    metrics = {k: v for k, v in summary(samples).items() if k.endswith(("median_ms", "p99_ms"))}
    metrics |= {"concurrency": 8, "completed": samples.count("ok"), "errors": samples.count("error")}
    cell = NewCell({"concurrency": 8, "repeat": 0}, metrics, samples)
    return NewRun(
        recipe_name=f"cost-{i % 5}", model_repo="org/model", status="DONE", source="run", metrics=metrics, cells=(cell,)
    )


def db_bytes(path: Path, book: Any) -> int:
    with book.engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").all()
        conn.rollback()
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--itl", type=int, default=128, help="ITL gaps per request")
    ap.add_argument("--append-requests", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--requests", type=int, default=1_000, help="requests per run for the percentile recompute")
    ap.add_argument("--db-dir", default=None)
    ap.add_argument("--pg", default=None, help="also time the append on this PostgreSQL URL (a fresh schema)")
    args = ap.parse_args(argv)
    rng = random.Random(15)
    folder = Path(args.db_dir or tempfile.mkdtemp(prefix="ab-samples-cost-"))
    print(f"python {sys.version.split()[0]}; samples: {args.itl} ITL gaps per request, 2 % errors")

    # 1. bytes per 1,000 requests
    path = folder / "cost.db"
    path.unlink(missing_ok=True)
    per_run = 10_000
    with open_ledger(path) as book:
        book.append(NewRun(recipe_name="base", model_repo="org/model", status="DONE"))
        before = db_bytes(path, book)
        blobs = raw = 0
        for i in range(3):
            s = Samples.from_requests(fake_requests(per_run, args.itl, rng))
            blobs += len(encode(s))
            # uncompressed: float32 ITL gaps; per request 3 float32 latencies, a float64 start,
            # 2 int32 token counts, 2 uint16 codes and a uint32 ITL count
            raw += 4 * len(s.itl_ms) + 36 * len(s)
            book.append(run_with(s, i))
        growth = db_bytes(path, book) - before
    k = 3 * per_run / 1000
    print(
        f"1. ledger bytes per 1,000 requests: {growth / k / 1024:,.0f} KiB (SQLite file growth over "
        f"{3 * per_run:,} requests); the encoded samples alone {blobs / k / 1024:,.0f} KiB; "
        f"uncompressed float32 columns would be {raw / k / 1024:,.0f} KiB ({raw / blobs:.2f}x more)"
    )

    # 2. append a 10,000-request run
    rows = fake_requests(args.append_requests, args.itl, rng)
    build_s, s = timed(lambda: Samples.from_requests(rows), 5)
    encode_s, _ = timed(lambda: encode(s), 5)
    run = run_with(s, 0)  # its summary is not part of the append
    with open_ledger(folder / "append.db") as book:
        append_s, _ = timed(lambda: book.append(run), 5)
        verify_s, result = timed(book.verify, 1)
    print(
        f"2. append one {args.append_requests:,}-request run (SQLite): {append_s * 1000:,.0f} ms median of 5 "
        f"(of which encoding {encode_s * 1000:,.0f} ms); building Samples from rows {build_s * 1000:,.0f} ms; "
        f"verify of 5 such runs {verify_s * 1000:,.0f} ms ({result.runs} runs ok={result.ok})"
    )
    if args.pg:
        import uuid

        from sqlalchemy import create_engine

        schema = f"ab_cost_{uuid.uuid4().hex[:10]}"
        admin = create_engine(args.pg.replace("postgresql://", "postgresql+psycopg://", 1))
        with admin.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        try:
            with open_ledger(f"{args.pg}?options=-csearch_path%3D{schema}") as book:
                pg_s, _ = timed(lambda: book.append(run), 5)
            print(f"   ... on PostgreSQL: {pg_s * 1000:,.0f} ms median of 5")
        finally:
            with admin.begin() as conn:
                conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
            admin.dispose()

    # 3. percentiles over 100 stored runs
    path = folder / "many.db"
    path.unlink(missing_ok=True)
    with open_ledger(path) as book:
        ids = [
            book.append(run_with(Samples.from_requests(fake_requests(args.requests, args.itl, rng)), i)).id
            for i in range(args.runs)
        ]

        def recompute() -> dict[str, Any]:
            parts = [cell.samples for rid in ids for cell in book.cells(rid)]
            return summary(merge([p for p in parts if p is not None]))

        read_s, _ = timed(lambda: [c.samples for rid in ids for c in book.cells(rid)], 3)
        total_s, stats = timed(recompute, 3)
    n = args.runs * args.requests
    print(
        f"3. percentiles over {args.runs} stored runs ({n:,} requests, {stats['completed'] * args.itl:,} ITL gaps): "
        f"{total_s:,.2f} s median of 3 (reading + decoding the cells {read_s:,.2f} s); "
        f"ITL p99 {stats['itl_p99_ms']:.3f} ms, TTFT p99 {stats['ttft_p99_ms']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

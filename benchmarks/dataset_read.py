"""How a real dataset file reads through autobench.bench.records (docs/datasets.md, "Measured on
real material"): records, skips, categories and turns, the time to read, and the peak memory of
a parquet copy read in batches.  Prints figures; not part of the test suite.

    .venv/bin/python benchmarks/dataset_read.py FILE.jsonl --field turns=turns --field category=category
    .venv/bin/python benchmarks/dataset_read.py FILE.jsonl ... --parquet-copies 200

The file is one you fetched (e.g. Spec-Bench's data/spec_bench/question.jsonl); nothing is
downloaded here.  ``--parquet-copies N`` writes the records N times into a parquet file in a
temporary folder (one row group per copy) and reads it back in a fresh process, reporting the
growth of its peak RSS.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autobench.bench.records import FieldMap, read_records  # noqa: E402


def _fields(pairs: list[str]) -> FieldMap | None:
    if not pairs:
        return None
    return FieldMap(**dict(pair.split("=", 1) for pair in pairs))


def _read(path: str, kind: str, fields: FieldMap | None, rounds: int) -> None:
    best = float("inf")
    records: list = []
    skipped: collections.Counter[str] = collections.Counter()
    for _ in range(rounds):
        skipped = collections.Counter()
        t = time.perf_counter()
        records = list(read_records(path, kind, fields, skipped))
        best = min(best, time.perf_counter() - t)
    cats = collections.Counter(r.category for r in records)
    turns = collections.Counter(len(r.turns) for r in records)
    print(
        f"{kind}: {len(records)} records, skipped {dict(skipped)}, {len(cats)} categories, "
        f"turns per record {dict(sorted(turns.items()))}, best of {rounds}: {best * 1000:.1f} ms"
    )


def _parquet_copy(path: str, fields: FieldMap, copies: int, folder: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    columns = [name for _, name in fields.named()]
    out = os.path.join(folder, "copy.parquet")
    table = pa.table({c: [r.get(c) for r in rows] for c in columns})
    with pq.ParquetWriter(out, table.schema) as writer:
        for _ in range(copies):
            writer.write_table(table)
    return out


def _child(path: str, fields: list[str]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    count = sum(1 for _ in read_records(path, "parquet", _fields(fields), collections.Counter()))
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = os.path.getsize(path) / 2**20
    print(
        f"parquet x copies: {count} records from {size:.1f} MiB in {dt:.2f} s; "
        f"peak RSS {before // 1024} -> {after // 1024} MiB"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--kind", default="jsonl")
    ap.add_argument("--field", action="append", default=[], metavar="ROLE=NAME")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parquet-copies", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.path, a.field)
        return 0
    print(f"load average {os.getloadavg()[0]:.1f}")
    fields = _fields(a.field)
    _read(a.path, a.kind, fields, a.rounds)
    if a.parquet_copies and fields is not None:
        with tempfile.TemporaryDirectory() as folder:
            copy = _parquet_copy(a.path, fields, a.parquet_copies, folder)
            one = _parquet_copy(a.path, fields, 1, tempfile.mkdtemp(dir=folder))
            _read(one, "parquet", fields, a.rounds)
            argv = [sys.executable, __file__, copy, "--child", *(f"--field={f}" for f in a.field)]
            subprocess.run(argv, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Ledger at scale: build a 100,000-run ledger with the public append API (one
transaction per run, hash chain and all), then time the queries people run.

    .venv/bin/python benchmarks/ledger_scale.py [--runs 100000] [--db /tmp/ledger-scale.db]
        [--pg postgresql://postgres@127.0.0.1:5432/test] [--no-sqlite] [--timed-appends 5000]

Per backend (an SQLite file; with --pg also a fresh schema on a PostgreSQL server): the append
rate over --timed-appends appends of one transaction each, the rest of the runs filled through
``import_runs`` (the push path, 500 per transaction), then the median / p95 latency of history
(draft, model, recipe), list (last 50), compare, get and verify, and one end-to-end
`autobench history` process.  Targets: history and list under 50 ms at 100k runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autobench.ledger import NewRun, open_ledger

STATUSES = ["DONE"] * 7 + ["BLOCKED", "BLOCKED", "FAILED", "ABORTED"]
CAUSES = [
    ("assertion", "assert page_size_bytes == max_page_size at kv_cache_utils.py:1077 in get_kv_cache_groups"),
    ("cuda_oom", "CUDA out of memory. Tried to allocate 2.00 GiB"),
    ("no_kv_cache_memory", "No available memory for the cache blocks"),
    ("config_validation", "1 validation error for SpeculativeConfig num_speculative_tokens"),
    ("unsupported_architecture", "Model architectures ['Foo'] are not supported for now"),
]


def _model(k: int) -> str:
    return f"org{k}/model-{k}"


def synthetic_run(i: int, rng: random.Random) -> NewRun:
    model = _model(i % 10)
    has_draft = rng.random() < 0.6
    draft_n = rng.randrange(8)
    status = rng.choice(STATUSES)
    cause = rng.choice(CAUSES) if status != "DONE" else (None, None)
    conc = rng.choice([1, 4, 8, 16])
    day = 1 + i // 4000
    return NewRun(
        recipe_name=f"recipe-{i % 40:02d}",
        recipe_digest=f"sha256:{rng.getrandbits(256):064x}" if i % 40 == 0 else None,
        model_repo=model,
        # ~10 pinned revisions per model; half the runs on an unpinned (unknown) revision
        model_sha=f"{(i % 10) * 100 + rng.randrange(10):040x}" if rng.random() < 0.5 else None,
        draft_repo=f"drafts/draft-{draft_n}" if has_draft else None,
        draft_sha=f"{(draft_n * 1000 + rng.randrange(20)):040x}" if has_draft else None,
        image="vllm/vllm-openai:nightly",
        engine_version="0.23.1",
        status=status,
        root_cause_category=cause[0],
        root_cause_message=cause[1],
        started_at=f"2026-{1 + (day // 28) % 12:02d}-{1 + day % 28:02d}T{i % 24:02d}:00:00Z",
        source="run",
        metrics={
            "decode_tok_s": round(rng.uniform(20, 200), 2),
            "prefill_tok_s": round(rng.uniform(50, 400), 2),
            "completed": rng.randrange(500),
            "errors": rng.randrange(3),
            "concurrency": conc,
            "num_prompts": 500,
            "ttft_median_ms": round(rng.uniform(100, 2000), 1),
            "tpot_median_ms": round(rng.uniform(10, 100), 2),
        }
        if status == "DONE"
        else {},
        boot=_boot(status, rng),
    )


def _boot(status: str, rng: random.Random) -> dict[str, object]:
    """What a boot log states: a blocked boot stops early; a served one states the v3 facts too."""
    boot: dict[str, object] = {"kv_cache_tokens": rng.randrange(10_000, 1_000_000), "vllm_version": "0.23.1"}
    if status != "BLOCKED":
        boot.update(
            max_model_len=262144,
            weights_load_s=round(rng.uniform(30, 500), 2),
            model_load_s=round(rng.uniform(30, 500), 2),
            model_load_gib=63.71,
            cuda_graph_s=float(rng.randrange(5, 60)),
            cuda_graph_gib=round(rng.uniform(0.1, 2), 2),
            torch_compile_s=round(rng.uniform(10, 90), 2),
            engine_init_s=round(rng.uniform(40, 200), 2),
        )
    return boot


def timed_call(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, int(round(0.95 * len(samples))) - 1)]


def _fill(book: Any, start: int, runs: int, rng: random.Random, batch: int = 500) -> float:
    """Runs start..runs-1 through ``import_runs`` (the path `ledger push` takes: one
    transaction per batch, chained and hashed like any append); returns runs per second."""
    from autobench.ledger.rows import new_run_values

    t0 = time.perf_counter()
    done = start
    while done < runs:
        n = min(batch, runs - done)
        book.import_runs([new_run_values(synthetic_run(done + j, rng)) for j in range(n)], {})
        done += n
        if done % 20_000 == 0:
            print(f"  filled {done:>7} runs", flush=True)
    return (runs - start) / max(time.perf_counter() - t0, 1e-9)


def bench_backend(label: str, url: str, args: argparse.Namespace) -> None:
    print(f"\n=== {label}: {url}")
    rng = random.Random(7)
    book = open_ledger(url)
    timed = min(args.timed_appends, args.runs)
    t0 = time.perf_counter()
    for i in range(timed):
        book.append(synthetic_run(i, rng))
    append_s = time.perf_counter() - t0
    print(
        f"append: {timed:,} runs in {append_s:.1f} s = {timed / append_s:,.0f} appends/s "
        f"({append_s / timed * 1000:.2f} ms each, one transaction per run)"
    )
    if args.runs > timed:
        rate = _fill(book, timed, args.runs, rng)
        print(f"fill to {args.runs:,} runs with import_runs (push path, 500 per transaction): {rate:,.0f} runs/s")
    book.close()
    if url.startswith("sqlite:///"):
        print(f"database size: {Path(url[len('sqlite:///') :]).stat().st_size / 1e6:.1f} MB")

    book = open_ledger(url, create=False)
    q = random.Random(11)
    n = args.runs
    cases: list[tuple[str, Callable[[], object]]] = [
        ("history --draft (~7.5k runs/repo)", lambda: book.history(draft=f"drafts/draft-{q.randrange(8)}")),
        ("history --model (~10k runs/repo)", lambda: book.history(model=_model(q.randrange(10)))),
        ("history --recipe (~2.5k runs)", lambda: book.history(recipe=f"recipe-{q.randrange(40):02d}")),
        ("list (last 50)", lambda: book.runs(limit=50, newest_first=True)),
        ("list --recipe (last 50)", lambda: book.runs(recipe=f"recipe-{q.randrange(40):02d}", limit=50)),
        ("list --status BLOCKED (last 50)", lambda: book.runs(status="BLOCKED", limit=50)),
        ("get", lambda: book.get(q.randrange(1, n + 1))),
        ("compare", lambda: book.compare(q.randrange(1, n + 1), q.randrange(1, n + 1))),
    ]
    print(f"query latency at {n:,} runs (library calls; {args.repeat} repetitions):")
    print(f"  {'query':38} {'median ms':>10} {'p95 ms':>10}")
    for name, fn in cases:
        fn()  # warm the page cache / statement cache once
        med, p95 = timed_call(fn, args.repeat)
        print(f"  {name:38} {med:10.2f} {p95:10.2f}")
    med, p95 = timed_call(lambda: book.verify(), 3)
    print(f"  {'verify (whole chain)':38} {med:10.0f} {p95:10.0f}")
    result = book.verify()
    print(f"  verify result: {result}")
    book.close()

    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "autobench", "history", "--draft", "drafts/draft-3", "--json", "--ledger", url],
        capture_output=True,
        text=True,
    )
    wall = (time.perf_counter() - t0) * 1000
    print(
        f"end to end `autobench history --draft ... --json` process: {wall:.0f} ms "
        f"(exit {proc.returncode}; includes interpreter start and imports)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument(
        "--timed-appends",
        type=int,
        default=5_000,
        help="appends timed one transaction each; the rest is filled through import_runs (batches)",
    )
    parser.add_argument("--db", default="/tmp/autobench-ledger-scale.db")
    parser.add_argument(
        "--pg",
        default=None,
        metavar="URL",
        help="also a PostgreSQL server, e.g. postgresql://postgres@127.0.0.1:5432/test "
        "(a fresh schema is created and dropped)",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    if not args.no_sqlite:
        db = Path(args.db)
        for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            p.unlink(missing_ok=True)
        bench_backend("SQLite", f"sqlite:///{db}", args)
    if args.pg:
        import uuid

        import psycopg

        schema = f"ab_scale_{uuid.uuid4().hex[:8]}"
        base = args.pg.split("?", 1)[0]
        with psycopg.connect(base.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as con:
            con.execute(f"CREATE SCHEMA {schema}")
        try:
            bench_backend("PostgreSQL", f"{base}?options=-csearch_path%3D{schema}", args)
        finally:
            with psycopg.connect(base.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as con:
                con.execute(f"DROP SCHEMA {schema} CASCADE")
    return 0


if __name__ == "__main__":
    sys.exit(main())

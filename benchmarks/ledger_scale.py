"""Ledger at scale: build a 100,000-run ledger with the public append API (one
transaction per run, hash chain and all), then time the queries people run.

    .venv/bin/python benchmarks/ledger_scale.py [--runs 100000] [--db /tmp/ledger-scale.db]

Prints the append rate and median / p95 latency of history (draft, model, recipe),
list (last 50), compare, get and verify; plus one end-to-end `autobench history`
process for scale.  Targets: history and list under 50 ms at 100k runs.
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


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, int(round(0.95 * len(samples))) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--db", default="/tmp/autobench-ledger-scale.db")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    db = Path(args.db)
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        p.unlink(missing_ok=True)

    rng = random.Random(7)
    book = open_ledger(db)
    t0 = time.perf_counter()
    for i in range(args.runs):
        book.append(synthetic_run(i, rng))
        if (i + 1) % 20_000 == 0:
            print(f"  appended {i + 1:>7} runs  ({(i + 1) / (time.perf_counter() - t0):,.0f}/s)", flush=True)
    build_s = time.perf_counter() - t0
    print(
        f"append: {args.runs:,} runs in {build_s:.1f} s = {args.runs / build_s:,.0f} appends/s "
        f"({build_s / args.runs * 1000:.2f} ms each, one transaction per run)"
    )
    book.close()
    print(f"database size: {db.stat().st_size / 1e6:.1f} MB")

    book = open_ledger(db, create=False)
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
    print(f"\nquery latency at {n:,} runs (library calls; {args.repeat} repetitions):")
    print(f"  {'query':38} {'median ms':>10} {'p95 ms':>10}")
    for name, fn in cases:
        fn()  # warm the page cache / statement cache once
        med, p95 = timed(fn, args.repeat)
        print(f"  {name:38} {med:10.2f} {p95:10.2f}")
    med, p95 = timed(lambda: book.verify(), 3)
    print(f"  {'verify (whole chain)':38} {med:10.0f} {p95:10.0f}")
    result = book.verify()
    print(f"  verify result: {result}")
    book.close()

    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "autobench", "history", "--draft", "drafts/draft-3", "--json", "--ledger", str(db)],
        capture_output=True,
        text=True,
    )
    wall = (time.perf_counter() - t0) * 1000
    print(
        f"\nend to end `autobench history --draft ... --json` process: {wall:.0f} ms "
        f"(exit {proc.returncode}; includes interpreter start and imports)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

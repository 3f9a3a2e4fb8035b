"""Workloads against a real vLLM (issue 33): categories, depth and shared prefixes.

Needs a running vLLM with n-gram speculative decoding and prefix caching, e.g. the project's
CPU testbed (a tiny random Llama, max_model_len 1024, block size 128 on CPU):

    TMPDIR=/work/scratch/vllm bash /work/shared/tools/vllm-cpu-testbed.sh 18010 --enable-prefix-caching \\
        --speculative-config '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}'
    .venv/bin/python benchmarks/workloads_real.py --base-url http://127.0.0.1:18010 --model tiny \\
        --tokenizer /work/scratch/vllm/tinymodel/tiny-llama

Three checks, each printed with what was expected before it ran; exit 1 when one fails:

1. **Categories**: a JSONL of three categories (``code``: a repetitive snippet, the n-gram
   drafter's best case; ``prose``; ``numbers``), one bench per category, in turn, each reading
   its own /metrics deltas, between a scrape before the first and after the last: the
   categories' drafts, draft tokens, accepted tokens and per-position counts must add up to the
   server's totals over the whole, exactly (nothing else is sent to the server meanwhile: run
   it on a server of your own).
2. **Depth**: random prompts of 64 tokens at depths [0, 256, 512]: every request's prompt
   tokens, as the server counts them (usage), must be exactly depth + 64.
3. **Shared prefix**: 16 random prompts of 64 tokens, groups of 4 sharing a 256-token prefix
   (a fresh seed, so no earlier run cached it), one at a time: expected hits 4 groups x 3 later
   prompts x the prefix's whole blocks, queries 16 x the prompt length; the hit rate read from
   /metrics must be that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autobench.bench.client import BenchConfig, run_bench  # noqa: E402
from autobench.bench.promscrape import SpecCounters, spec_counters, spec_delta  # noqa: E402
from autobench.bench.records import FieldMap  # noqa: E402
from autobench.bench.workload import SharedPrefix  # noqa: E402

CODE = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\n"


def scrape(base: str) -> SpecCounters:
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        return spec_counters(r.read().decode())


def categories(base: str, model: str, tokenizer: str, workdir: Path) -> bool:
    path = workdir / "categories.jsonl"
    with path.open("w") as f:
        for i in range(48):
            cat = ("code", "prose", "numbers")[i % 3]
            text = {
                "code": f"# snippet {i}\n" + CODE * 3 + "def add(a, b):\n",
                "prose": f"Story {i}: the quick brown fox jumps over the lazy dog and runs far away from home.",
                "numbers": " ".join(str((i * 37 + k * 11) % 1000) for k in range(24)),
            }[cat]
            f.write(json.dumps({"text": text, "task": cat}) + "\n")
    before = scrape(base)
    rows = []
    for cat in ("code", "prose", "numbers"):
        cfg = BenchConfig(
            base_url=base,
            model=model,
            dataset=str(path),
            dataset_kind="jsonl",
            dataset_fields=FieldMap(prompt="text", category="task"),
            category=cat,
            num_prompts=16,
            concurrency=4,
            max_tokens=32,
            temperature=0.0,
            tokenizer=tokenizer,
        )
        d = run_bench(cfg).to_json_dict()
        rows.append((cat, d))
        print(
            f"  {cat:8} completed {d['completed']:3}  drafts {d.get('spec_decode_num_drafts')}  draft tokens "
            f"{d.get('spec_decode_draft_tokens')}  accepted {d.get('spec_decode_accepted_tokens')}  acceptance "
            f"length {d.get('spec_decode_acceptance_length')}  per-position "
            f"{d.get('spec_decode_per_position_acceptance_rates')}"
        )
    total = spec_delta(before, scrape(base))
    assert total is not None
    sums = [
        sum(int(d.get(k) or 0) for _, d in rows)
        for k in ("spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
    ]
    want = [int(total.drafts), int(total.draft_tokens), int(total.accepted)]
    per_pos = [
        round(
            sum(
                (d.get("spec_decode_per_position_acceptance_rates") or [0] * 3)[i] * d["spec_decode_num_drafts"]
                for _, d in rows
            )
        )
        for i in range(len(total.accepted_per_pos))
    ]
    print(f"  sum of the categories: drafts, draft tokens, accepted = {sums}; per position {per_pos}")
    print(f"  the server over the whole: {want}; per position {[int(v) for v in total.accepted_per_pos]}")
    ok = (
        sums == want
        and per_pos == [int(v) for v in total.accepted_per_pos]
        and all(d["completed"] == 16 for _, d in rows)
    )
    print("  categories:", "OK (exact)" if ok else "MISMATCH")
    return ok


def depth(base: str, model: str, tokenizer: str) -> bool:
    ok = True
    for dep in (0, 256, 512):
        cfg = BenchConfig(
            base_url=base,
            model=model,
            num_prompts=8,
            concurrency=4,
            max_tokens=8,
            random_input_len=64,
            depth=dep,
            tokenizer=tokenizer,
        )
        d = run_bench(cfg).to_json_dict()
        good = d["completed"] == 8 and d["min_input_tokens"] == d["max_input_tokens"] == dep + 64
        ok &= good
        print(
            f"  depth {dep:4}: expected {dep + 64} prompt tokens on every request; server counted "
            f"{d['min_input_tokens']}..{d['max_input_tokens']} ({'OK' if good else 'MISMATCH'})"
        )
    return ok


def shared_prefix(base: str, model: str, tokenizer: str, block: int) -> bool:
    n, group, length, question = 16, 4, 256, 64
    tokens = length + question  # the question's 64 count its BOS; the prefix adds 256 (no special token)
    shared = 1 + length  # the BOS and the prefix: identical across a group
    hit_each = min(shared // block, (tokens - 1) // block) * block
    exp_hits, exp_queries = (n // group) * (group - 1) * hit_each, n * tokens
    print(
        f"  expected: queries {exp_queries}, hits {exp_hits}, hit rate {exp_hits / exp_queries:.4f} "
        f"(block {block}: {hit_each} tokens hit by each of the 3 later prompts of a group)"
    )
    seed = int(time.time())
    print(f"  seed {seed} (fresh: a prefix an earlier run cached would hit too)")
    cfg = BenchConfig(
        base_url=base,
        model=model,
        num_prompts=n,
        concurrency=1,
        max_tokens=4,
        random_input_len=question,
        shared_prefix=SharedPrefix(group, length),
        tokenizer=tokenizer,
        seed=seed,
    )
    d = run_bench(cfg).to_json_dict()
    got = (d.get("prefix_cache_queries"), d.get("prefix_cache_hits"), d.get("prefix_cache_hit_rate"))
    print(f"  read from /metrics: queries {got[0]}, hits {got[1]}, hit rate {got[2]}")
    ok = got[0] == exp_queries and got[1] == exp_hits
    print("  shared prefix:", "OK" if ok else "MISMATCH")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokenizer", required=True, help="the served model's tokenizer.json or model directory")
    ap.add_argument("--block-size", type=int, default=128, help="the server's KV block size (CPU default 128)")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {a.base_url}")
    with tempfile.TemporaryDirectory() as tmp:
        print("categories (n-gram drafts, /metrics deltas per category):")
        ok = categories(a.base_url, a.model, a.tokenizer, Path(tmp))
    print("depth (the server's own prompt counts):")
    ok &= depth(a.base_url, a.model, a.tokenizer)
    print("shared prefix (prefix-cache hit rate from /metrics):")
    ok &= shared_prefix(a.base_url, a.model, a.tokenizer, a.block_size)
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

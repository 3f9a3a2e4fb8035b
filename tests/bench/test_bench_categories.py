"""Acceptance by category (issue 33): the synthetic server drafts each category with its own
profile; the bench, one category per run, reads each category's acceptance from /metrics deltas.
"""

from __future__ import annotations

from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.datasets import Dataset, Prompt
from autobench.bench.synthetic import SyntheticConfig, category_plan, chunk_plan

PROFILES = {
    "code": (0.9, 0.8, 0.7),
    "chat": (0.5, 0.3, 0.1),
    "math": (0.3, 0.1, 0.05),
}


def test_category_plan_continues_one_sequence_and_counts_whole_steps() -> None:
    prof = (0.78, 0.56, 0.39)
    # one long request and the same steps split over requests are the same steps
    whole_chunks, whole_steps = category_plan(90, prof, 0)
    assert sum(whole_chunks) == 90 and whole_chunks[:-1] == whole_steps[:-1]
    assert whole_steps[-1] >= whole_chunks[-1]  # the step cut by max_tokens counts all it accepted
    a_chunks, a_steps = category_plan(40, prof, 0)
    b_chunks, b_steps = category_plan(50, prof, len(a_steps))
    assert sum(a_chunks) == 40 and sum(b_chunks) == 50
    assert (a_steps + b_steps)[: len(a_steps) + 3] == whole_steps[: len(a_steps) + 3]
    # from step 0 the chunks are chunk_plan's (the per-request plan of --accept-profile)
    assert category_plan(30, prof, 0)[0] == chunk_plan(30, accept_profile=prof)


def test_category_of_the_first_marker_found() -> None:
    cfg = SyntheticConfig(category_profiles=(("[code]", (0.9,)), ("[chat]", (0.5, 0.2))))
    assert cfg.category_of("a [chat] b [code]") == 0
    assert cfg.category_of("[chat]") == 1 and cfg.category_of("plain") is None
    assert cfg.steps_draft_tokens == 2 and cfg.spec_enabled
    assert not SyntheticConfig().spec_enabled


def _dataset(category: str, n: int) -> Dataset:
    prompts = [Prompt(f"[{category}] question {i} about {category}", 8, 64) for i in range(n)]
    return Dataset("jsonl", "cats.jsonl", prompts, [], n)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_each_category_reports_its_injected_acceptance_within_1pct(synth: Any, endpoint: str) -> None:
    srv = synth(
        ttft_ms=1, itl_ms=0.2, category_profiles=tuple((f"[{c}]", p) for c, p in PROFILES.items()), spec_tokens=3
    )
    got: dict[str, dict[str, Any]] = {}
    for cat in ("code", "chat", "math"):  # one cell each, on one server, in turn
        ds = _dataset(cat, 24)
        cfg = BenchConfig(
            base_url=srv.base_url, model="m", endpoint=endpoint, num_prompts=24, concurrency=4, max_tokens=64
        )
        got[cat] = run_bench(cfg, dataset=ds).to_json_dict()
    for cat, prof in PROFILES.items():
        d = got[cat]
        assert d["completed"] == 24
        assert d["spec_decode_acceptance_length"] == pytest.approx(1 + sum(prof), rel=0.01), cat
        for rate, want in zip(d["spec_decode_per_position_acceptance_rates"], prof, strict=True):
            assert rate == pytest.approx(want, abs=0.01), cat
    # the categories' deltas add up to the server's totals (nothing else was sent)
    c = srv.server.counters
    assert sum(got[k]["spec_decode_num_drafts"] for k in PROFILES) == sum(c.drafts)
    assert sum(got[k]["spec_decode_accepted_tokens"] for k in PROFILES) == sum(c.accepted)


def test_prompts_without_a_marker_keep_the_default_profile(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.2, accept_profile=(0.5,), category_profiles=(("[code]", (0.9,)),))
    cfg = BenchConfig(base_url=srv.base_url, model="m", num_prompts=4, max_tokens=40)
    d = run_bench(cfg, dataset=_dataset("chat", 4)).to_json_dict()
    plan = chunk_plan(64, accept_profile=(0.5,))  # each prompt asks for 64 tokens
    assert d["spec_decode_num_drafts"] == 4 * len(plan)
    assert d["spec_decode_accepted_tokens"] == 4 * (64 - len(plan))


def test_synthetic_server_category_profile_option() -> None:
    import click

    from autobench.cli.bench_cmds import _category_profile

    with click.Context(click.Command("x")):
        assert _category_profile("def =0.9,0.8") == ("def ", (0.9, 0.8))
        assert _category_profile("a=b=0.5") == ("a=b", (0.5,))
        for bad, words in (
            ("0.9,0.8", "not MARKER=RATES"),
            ("=0.5", "not MARKER=RATES"),
            ("x=0.5,0.9", "non-increasing"),
        ):
            with pytest.raises(click.BadParameter, match=words):
                _category_profile(bad)


def test_category_filter_and_too_few_prompts(tmp_path: Any) -> None:
    from dataclasses import replace

    from autobench.bench.datasets import load_dataset, only_category
    from autobench.errors import BenchError

    pool = [replace(p, category=c) for p, c in zip(_dataset("x", 5).prompts, "aabbb", strict=True)]
    assert [p.category for p in only_category(pool, "b", 3, "f.jsonl")] == ["b", "b", "b"]
    with pytest.raises(BenchError) as err:
        only_category(pool, "a", 3, "f.jsonl")
    assert str(err.value).startswith("f.jsonl: category 'a' has 2 usable prompts, 3 asked (prompts + warm-up)")
    assert err.value.hint == "ask for fewer, or another category; the dataset's categories: a (2), b (3)"
    with pytest.raises(BenchError, match=r"no category field mapped"):
        only_category(_dataset("x", 2).prompts, "a", 1, "f.jsonl")
    with pytest.raises(BenchError, match="random prompts have no category"):
        load_dataset(kind="random", path=None, num_prompts=2, category="code")
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "one two three four"}\n')
    with pytest.raises(BenchError, match="category 'code' has 0 usable prompts"):  # no category field read
        load_dataset(kind="jsonl", path=str(path), num_prompts=1, category="code")


def test_a_category_grid_from_a_mapped_jsonl_file(synth: Any, tmp_path: Any) -> None:
    """The dataset's own category field picks each cell's prompts; each category's acceptance is
    its injected profile's, from /metrics deltas."""
    import json

    from autobench.bench.records import FieldMap

    path = tmp_path / "tasks.jsonl"
    with path.open("w") as f:
        for i in range(90):
            cat = ("code", "chat", "math")[i % 3]
            f.write(json.dumps({"q": f"[{cat}] task {i} " + "word " * 6, "task": cat}) + "\n")
    srv = synth(ttft_ms=1, itl_ms=0.2, category_profiles=tuple((f"[{c}]", p) for c, p in PROFILES.items()))
    for cat, prof in PROFILES.items():
        cfg = BenchConfig(
            base_url=srv.base_url,
            model="m",
            dataset=str(path),
            dataset_kind="jsonl",
            dataset_fields=FieldMap(prompt="q", category="task"),
            category=cat,
            num_prompts=24,
            warmup=2,
            concurrency=4,
            max_tokens=64,
            tokenizer="estimated",
        )
        d = run_bench(cfg).to_json_dict()
        assert d["completed"] == 24 and d["dataset"]["reused"] == 0 and d["dataset"]["category"] == cat
        assert d["spec_decode_acceptance_length"] == pytest.approx(1 + sum(prof), rel=0.01), cat
    from autobench.errors import BenchError

    with pytest.raises(BenchError, match=r"category 'code' has 30 usable prompts, 31 asked"):
        run_bench(
            BenchConfig(
                base_url=srv.base_url,
                model="m",
                dataset=str(path),
                dataset_kind="jsonl",
                dataset_fields=FieldMap(prompt="q", category="task"),
                category="code",
                num_prompts=31,
                tokenizer="estimated",
            )
        )


def test_the_summary_names_the_workload() -> None:
    from autobench.cli.bench_cmds import _workload_rows

    d: dict[str, Any] = {
        "dataset": {"category": "code", "depth": 4096, "shared_prefix_prompts": 2},
        "prefix_cache_hit_rate": 0.25,
        "prefix_cache_hits": 1024,
        "prefix_cache_queries": 4096,
        "multi_turn": {
            "conversations": 4,
            "conversations_completed": 3,
            "turns_sent": 10,
            "turns_planned": 12,
            "ttft_by_turn_ms": {"1": {"median": 12.5}, "2": {"median": 30.0}},
        },
    }
    assert _workload_rows(d) == [
        ("category", "code"),
        ("context depth (tokens)", "4096"),
        ("shared prefix", "every 2 prompts share the depth context"),
        ("prefix cache hit rate", "25.0 % (1024 of 4096 tokens)"),
        ("conversations (completed / all)", "3 / 4, 10 of 12 turns sent"),
        ("TTFT median by turn (ms)", "12.50 / 30.00"),
    ]
    d["dataset"] = {"depth": 0, "shared_prefix_prompts": 4, "shared_prefix_tokens": 512}
    assert _workload_rows({"dataset": d["dataset"]}) == [("shared prefix", "every 4 prompts share 512 tokens")]
    assert _workload_rows({"dataset": {}}) == []

"""The engine-stats and spec-decode summaries by themselves: every column they fold, the V0
and CPU wordings, and the column-wise fold (add_rows) agreeing with the line-by-line one (add)."""

from __future__ import annotations

import pytest

from autobench.logs.facts import STATS, STATS_BYTES, SpecSummary, StatsSummary

IDLE = (
    "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%"
)
LINES = [
    IDLE,
    "Avg prompt throughput: 1200.5 tokens/s, Avg generation throughput: 80.0 tokens/s, Running: 8 reqs, "
    "Waiting: 2 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 40.0%",
    # V0: Swapped and Pending, a GPU and a CPU column (the GPU one counts)
    "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 120.0 tokens/s, Running: 5 reqs, "
    "Swapped: 1 reqs, Pending: 7 reqs, GPU KV cache usage: 30.0%, CPU KV cache usage: 1.0%",
    # the CPU backend: only a CPU column
    "Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 1 req, "
    "Waiting: 0 reqs, CPU KV cache usage: 55.5%",
]
EXPECTED = {
    "samples": 4,
    "active_samples": 3,
    "prompt_tps_mean_active": 403.5,  # (1200.5 + 0 + 10) / 3: idle samples do not count
    "gen_tps_mean_active": 66.667,
    "prompt_tps_max": 1200.5,
    "gen_tps_max": 120.0,
    "running_max": 8,
    "waiting_max": 7,
    "swapped_max": 1,
    "kv_usage_pct_max": 55.5,
    "prefix_cache_hit_rate_pct_last": 40.0,
    "first_line": 10,
    "last_line": 13,
}


def _by_line(lines: list[str], first: int = 10) -> StatsSummary:
    s = StatsSummary()
    for i, line in enumerate(lines, first):
        m = STATS.search(line)
        assert m is not None, line
        s.add(m, i)
    return s


def test_stats_are_folded_line_by_line():
    assert _by_line(LINES).to_dict() == EXPECTED


@pytest.mark.parametrize("split", [0, 1, 2, 3, 4])
def test_the_column_wise_fold_agrees_with_the_line_by_line_one(split):
    s = StatsSummary()
    s.add_rows(STATS_BYTES.findall("\n".join(LINES[:split]).encode()), 10, 10 + split - 1)
    s.add_rows(STATS_BYTES.findall("\n".join(LINES[split:]).encode()), 10 + split, 13)
    assert s.to_dict() == EXPECTED


def test_many_repeated_values_fold_the_same():
    lines = [IDLE] * 9 + [LINES[1]] * 3
    s = StatsSummary()
    s.add_rows(STATS_BYTES.findall("\n".join(lines).encode()), 1, 12)
    assert s.to_dict() == _by_line(lines, 1).to_dict()
    assert s.to_dict()["active_samples"] == 3 and s.to_dict()["prompt_tps_mean_active"] == 1200.5


def test_no_stats_line_is_no_summary_and_idle_only_has_no_mean():
    assert StatsSummary().to_dict() is None
    s = StatsSummary()
    s.add_rows([], 1, 1)
    assert s.to_dict() is None
    idle = _by_line([IDLE, IDLE]).to_dict()
    assert idle is not None and idle["active_samples"] == 0
    assert idle["prompt_tps_mean_active"] is None and idle["gen_tps_mean_active"] is None
    assert idle["swapped_max"] is None and idle["kv_usage_pct_max"] == 0.0


SPEC_V1_NEW = (
    "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 10.00 tokens/s, Drafted throughput: "
    "20.00 tokens/s, Accepted: 30 tokens, Drafted: 60 tokens, Per-position acceptance rate: 0.800, 0.500, 0.200, "
    "Avg Draft acceptance rate: 50.0%"
)
SPEC_V1_OLD = (
    "SpecDecoding metrics: Draft acceptance rate: 40.0%, Mean acceptance length: 1.50, Accepted: 10 tokens, "
    "Drafted: 40 tokens, Per-position acceptance rate: 0.600, 0.200"
)
SPEC_V0 = "Speculative metrics: Draft acceptance rate: 0.250, Number of accepted tokens: 5, Number of draft tokens: 20,"


def test_each_spec_decode_wording_is_read():
    s = SpecSummary()
    s.add(SPEC_V1_NEW, 5)
    assert s.to_dict() == {
        "samples": 1,
        "accepted_tokens": 30,
        "drafted_tokens": 60,
        "acceptance_rate_pct": 50.0,
        "mean_acceptance_length_mean": 2.5,
        "mean_acceptance_length_last": 2.5,
        "per_position_acceptance_mean": [0.8, 0.5, 0.2],
        "per_position_acceptance_last": [0.8, 0.5, 0.2],
        "avg_draft_acceptance_rate_pct_last": 50.0,
        "draft_acceptance_rate_pct_last": None,  # "Avg Draft acceptance rate" is not this one
        "accepted_tps_last": 10.0,
        "drafted_tps_last": 20.0,
        "first_line": 5,
        "last_line": 5,
    }
    s = SpecSummary()
    s.add(SPEC_V0, 7)
    d = s.to_dict()
    assert d is not None
    assert (d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (5, 20, 25.0)
    assert d["draft_acceptance_rate_pct_last"] == 25.0  # a fraction in V0: turned into a percentage


def test_spec_samples_are_summed_and_averaged():
    s = SpecSummary()
    for line, text in ((5, SPEC_V1_NEW), (9, SPEC_V1_OLD), (12, SPEC_V0), (13, "SpecDecoding metrics: nothing")):
        s.add(text, line)
    d = s.to_dict()
    assert d is not None
    assert (d["samples"], d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (3, 45, 120, 37.5)
    assert d["mean_acceptance_length_mean"] == 2.0 and d["mean_acceptance_length_last"] is None
    # a position a sample does not state counts as 0 for that sample
    assert d["per_position_acceptance_mean"] == [0.7, 0.35, 0.1]
    assert d["draft_acceptance_rate_pct_last"] == 25.0 and (d["first_line"], d["last_line"]) == (5, 12)


def test_spec_lines_without_counts():
    assert SpecSummary().to_dict() is None
    s = SpecSummary()
    s.add("SpecDecoding metrics: Mean acceptance length: 3.00", 1)
    d = s.to_dict()
    assert d is not None and d["accepted_tokens"] is None and d["drafted_tokens"] is None
    assert d["acceptance_rate_pct"] is None and d["per_position_acceptance_mean"] is None
    s.add("SpecDecoding metrics: Accepted: 0 tokens, Drafted: 0 tokens", 2)
    d = s.to_dict()
    assert d is not None and (d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (0, 0, None)

from __future__ import annotations

import pytest

from autobench.bench import metrics as M
from autobench.bench.promscrape import spec_counters, spec_delta
from autobench.bench.synthetic import Counters, SyntheticConfig, SyntheticServer, chunk_plan


def test_percentile_matches_numpy_linear() -> None:
    xs = [15.0, 20.0, 35.0, 40.0, 50.0]
    # numpy.percentile(xs, [50, 90, 99, 0, 100]) = 35, 46, 49.6, 15, 50
    assert M.percentile(xs, 50) == 35.0
    assert M.percentile(xs, 90) == pytest.approx(46.0)
    assert M.percentile(xs, 99) == pytest.approx(49.6)
    assert M.percentile(xs, 0) == 15.0 and M.percentile(xs, 100) == 50.0
    assert M.percentile([3.0, 1.0], 50) == 2.0


def test_summarize_population_std_and_empty() -> None:
    s = M.summarize([1.0, 2.0, 3.0, 4.0], scale=1000.0)
    assert s["mean"] == 2500.0 and s["median"] == 2500.0
    assert s["std"] == pytest.approx(1118.0339887)
    assert M.summarize([]) == {"mean": None, "median": None, "std": None, "p90": None, "p99": None}


def test_tpot_excludes_first_token_and_needs_two_tokens() -> None:
    # 4-token chunks: 13 tokens in 4 chunks 10 ms apart -> (30 ms) / 12 tokens.
    r = M.RequestTiming(start=0.0, first=0.1, last=0.13, output_tokens=13)
    assert M.tpot(r) == pytest.approx(0.0025)
    assert M.ttft(r) == pytest.approx(0.1) and M.e2el(r) == pytest.approx(0.13)
    assert M.tpot(M.RequestTiming(0.0, 0.1, 0.1, 1)) is None


def test_one_value_is_every_percentile_of_itself() -> None:
    for p in (0.0, 50.0, 90.0, 99.0, 100.0):
        assert M.percentile([7.5], p) == 7.5
    assert M.summarize([0.25], scale=1000.0) == {"mean": 250.0, "median": 250.0, "std": 0.0, "p90": 250.0, "p99": 250.0}
    with pytest.raises(ValueError, match="empty"):
        M.percentile([], 50)


def test_tpot_of_exactly_two_tokens_is_the_one_gap() -> None:
    assert M.tpot(M.RequestTiming(start=0.0, first=0.1, last=0.35, output_tokens=2)) == pytest.approx(0.25)
    assert M.tpot(M.RequestTiming(start=0.0, first=0.1, last=0.1, output_tokens=0)) is None


def test_throughput_over_no_time_is_unknown_not_infinite() -> None:
    assert M.throughput(1200.0, 4.0) == 300.0
    assert M.throughput(1200.0, 0.0) is None
    assert M.throughput(0.0, 0.0) is None
    assert M.throughput(1200.0, -1.0) is None


def test_summarize_without_a_scale_keeps_the_unit() -> None:
    assert M.summarize([1.0, 3.0]) == {"mean": 2.0, "median": 2.0, "std": 1.0, "p90": 2.8, "p99": pytest.approx(2.98)}


def test_latencies_are_measured_from_the_request_start_not_from_zero() -> None:
    r = M.RequestTiming(start=100.0, first=100.25, last=101.5, output_tokens=6)
    assert M.ttft(r) == pytest.approx(0.25) and M.e2el(r) == pytest.approx(1.5)
    assert M.tpot(r) == pytest.approx(0.25)


def test_spec_metrics_of_one_draft_and_of_no_draft_tokens() -> None:
    one = M.spec_decode_metrics(M.SpecDecodeDelta(drafts=1, draft_tokens=1, accepted=1, accepted_per_pos=(1,)))
    assert one == {
        "spec_decode_acceptance_length": 2.0,
        "spec_decode_acceptance_rate": 100.0,
        "spec_decode_num_drafts": 1,
        "spec_decode_draft_tokens": 1,
        "spec_decode_accepted_tokens": 1,
        "spec_decode_per_position_acceptance_rates": [1.0],
    }
    # Drafts counted but no draft token reported (a scrape between counters): the rate is
    # unknown, not a division by zero.
    none = M.spec_decode_metrics(M.SpecDecodeDelta(drafts=4, draft_tokens=0, accepted=2, accepted_per_pos=()))
    assert none is not None and none["spec_decode_acceptance_rate"] is None
    assert none["spec_decode_acceptance_length"] == 1.5
    assert M.spec_decode_metrics(M.SpecDecodeDelta(-1, 3, 1, ())) is None


def test_spec_formulas() -> None:
    d = M.SpecDecodeDelta(drafts=100, draft_tokens=500, accepted=223, accepted_per_pos=(78, 56, 39, 29, 21))
    s = M.spec_decode_metrics(d)
    assert s is not None
    assert s["spec_decode_acceptance_length"] == pytest.approx(3.23)
    assert s["spec_decode_acceptance_rate"] == pytest.approx(44.6)
    assert s["spec_decode_per_position_acceptance_rates"] == pytest.approx([0.78, 0.56, 0.39, 0.29, 0.21])
    assert M.spec_decode_metrics(M.SpecDecodeDelta(0, 0, 0, ())) is None


PROM = """# HELP vllm:spec_decode_num_drafts_total x
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="q"} 60.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="q"} 40.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="q"} 1.7e9
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="q"} 500
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="q"} 2.23e2
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="q",position="1"} 50
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="q",position="1"} 6
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="q",position="0"} 78
vllm:spec_decode_draft_acceptance_rate{model_name="q"} 0.5
vllm:generation_tokens_total{model_name="q"} 999
"""


def test_prometheus_parse_sums_engines_drops_created_and_v0() -> None:
    c = spec_counters(PROM)
    assert (c.drafts, c.draft_tokens, c.accepted) == (100.0, 500.0, 223.0)
    assert c.per_pos == {0: 78.0, 1: 56.0}
    before = spec_counters(PROM.replace(" 60.0", " 10.0").replace("} 78", "} 8"))
    d = spec_delta(before, c)
    assert d is not None and d.drafts == 50.0 and d.accepted_per_pos == (70.0, 0.0)
    assert spec_delta(before, spec_counters("vllm:generation_tokens_total 5\n")) is None


def test_chunk_plan_fixed_and_profile() -> None:
    assert chunk_plan(10, 4) == [4, 4, 2]
    assert chunk_plan(3, 1) == [1, 1, 1]
    plan = chunk_plan(20000, accept_profile=(0.78, 0.56, 0.39, 0.29, 0.21))
    assert sum(plan) == 20000 and max(plan) == 6
    steps = len(plan)
    for i, p in enumerate((0.78, 0.56, 0.39, 0.29, 0.21)):
        assert sum(1 for s in plan if s - 1 > i) / steps == pytest.approx(p, abs=0.01)


def test_server_metrics_text_round_trips_through_parser() -> None:
    srv = SyntheticServer(SyntheticConfig(model="q", tokens_per_chunk=3))
    srv.counters = Counters(per_pos=[[0, 0], [0, 0]])
    for size in chunk_plan(8, 3):  # 3, 3, 2 on engine 0
        srv.counters.step(0, size, 2)
    srv.counters.step(1, 3, 2)
    c = spec_counters(srv.prometheus_text())
    assert (c.drafts, c.draft_tokens, c.accepted) == (4.0, 8.0, 7.0)
    assert c.per_pos == {0: 4.0, 1: 3.0}

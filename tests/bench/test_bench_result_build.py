"""build_result and normalize on hand-made request records: every count, total, rate and client
figure of the result JSON from records whose answers are worked out by hand, and the reading
rules users rely on when they record a result file (missing is None, never 0)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from autobench.bench.client import BenchConfig
from autobench.bench.metrics import SpecDecodeDelta
from autobench.bench.record import RequestRecord
from autobench.bench.result import (
    RESULT_FORMAT,
    BenchResult,
    ClientStats,
    _finite,
    build_result,
    load_result_json,
    normalize,
)
from autobench.errors import BenchError

T0 = 100.0


def record(status: str, **values: Any) -> RequestRecord:
    r = RequestRecord(0, 10)
    r.status = status
    for k, v in values.items():
        setattr(r, k, v)
    return r


def records() -> list[RequestRecord]:
    return [
        record(
            "ok",
            dispatch=100.0,
            arrival=100.05,
            start=100.1,
            first=100.2,
            last=100.5,
            completion_tokens=4,
            prompt_tokens=10,
            gaps=[0.1, 0.1, 0.1],
            n_chunks=2,
            finish_reason="stop",
            first_srv=100.15,
            arr_srv=100.12,
        ),
        record(
            "ok",
            start=100.3,
            first=100.35,
            last=100.35,
            completion_tokens=1,
            prompt_tokens=20,
            n_chunks=1,
            usage_fallback=True,
        ),
        record("error", start=100.4, error_kind="http_5xx", error_message="boom"),
        record("error", start=100.4, error_kind="http_5xx", error_message="second"),
        record("error", error_kind="connect"),
        record("incomplete", start=100.6, first=100.7, completion_tokens=3, prompt_tokens=5),
    ]


def dataset(**over: Any) -> Any:
    values = {
        "kind": "random",
        "path": None,
        "available": 8,
        "skipped": {"too_long": 1},
        "reused": False,
        "warmup": [1, 2],
        "tokenizer": "estimated",
        "tokenizer_fallback": None,
        "fingerprint": lambda: "f" * 64,
    }
    values.update(over)
    return SimpleNamespace(**values)


def build(
    *,
    cpu: float = 1.0,
    lags: list[float] | None = None,
    t_end: float = 102.0,
    spec: SpecDecodeDelta | None = None,
    recs: list[RequestRecord] | None = None,
    **cfg: Any,
) -> dict[str, Any]:
    config = BenchConfig(base_url="http://h:1", model="m", num_prompts=8, concurrency=4, **cfg)
    res = build_result(
        config,
        dataset(),
        records() if recs is None else recs,
        t0=T0,
        t_end=t_end,
        time_cap_hit=False,
        spec=spec,
        client=ClientStats(cpu_seconds=cpu, loop_lag_s=[0.001, 0.002] if lags is None else lags, served_models=["m"]),
        base_url="http://h:1",
    )
    assert res.samples is not None and len(res.samples) == len(records() if recs is None else recs)
    return res.to_json_dict()


def test_totals_counts_and_rates():
    d = build()
    assert (d["duration"], d["completed"], d["failed"], d["incomplete"], d["dispatched"], d["not_dispatched"]) == (
        2.0,
        2,
        3,
        1,
        6,
        2,
    )
    assert d["errors_by_kind"] == {"connect": 1, "http_5xx": 2}
    assert list(d["errors_by_kind"]) == ["connect", "http_5xx"]
    assert d["error_samples"] == {"http_5xx": "boom", "connect": ""}  # the first message of each kind
    assert d["usage_fallback_requests"] == 1
    assert (d["total_input_tokens"], d["min_input_tokens"], d["max_input_tokens"], d["total_output_tokens"]) == (
        30,
        10,
        20,
        5,
    )
    assert d["request_throughput"] == pytest.approx(1.0)
    assert d["input_throughput"] == pytest.approx(15.0)
    assert d["output_throughput"] == pytest.approx(2.5)
    assert d["total_token_throughput"] == pytest.approx(17.5)
    assert d["mean_tokens_per_chunk"] == pytest.approx(5 / 3) and d["token_chunks"] == 3
    assert d["itl_samples"] == 3
    assert d["finish_reasons"] == {"stop": 1, "none": 1}
    assert d["time_cap_hit"] is False


def test_latencies_in_ms_over_successful_requests():
    d = build()
    assert d["median_ttft_ms"] == pytest.approx(75.0)  # 100 and 50 ms
    assert d["mean_e2el_ms"] == pytest.approx(225.0)  # 400 and 50 ms
    assert d["median_tpot_ms"] == pytest.approx(100.0)  # one request has a single token: no TPOT
    assert d["p99_itl_ms"] == pytest.approx(100.0) and d["mean_itl_ms"] == pytest.approx(100.0)
    assert d["mean_client_queue_time_ms"] == pytest.approx(50.0)  # only the request with an arrival


def test_no_queue_time_without_arrivals_and_none_without_successes():
    recs = [r for r in records() if r.arrival is None]
    d = build(recs=recs)
    assert not any("client_queue_time" in k for k in d)
    empty = build(recs=[record("error", error_kind="connect")])
    assert empty["completed"] == 0 and empty["median_ttft_ms"] is None and empty["min_input_tokens"] is None
    assert empty["mean_tokens_per_chunk"] is None and empty["client"]["cpu_ms_per_1k_tokens"] is None


def test_settings_section():
    d = build(request_rate=4.0, temperature=0.5, endpoint="chat", label="L", max_seconds=30.0)
    assert d["result_format"] == RESULT_FORMAT
    assert (d["backend"], d["endpoint_type"], d["endpoint"]) == ("openai-chat", "openai-chat", "chat")
    assert (d["label"], d["base_url"], d["model_id"], d["request_rate"], d["max_concurrency"]) == (
        "L",
        "http://h:1",
        "m",
        4.0,
        4,
    )
    assert d["sampling"] == {"temperature": 0.5, "top_p": None, "top_k": None, "presence_penalty": None}
    assert (d["warmup"], d["num_prompts"], d["max_seconds"], d["tokenizer_id"]) == (2, 8, 30.0, "estimated")
    assert (d["burstiness"], d["max_tokens"], d["ignore_eos"], d["seed"], d["grace_seconds"]) == (
        1.0,
        256,
        False,
        0,
        30.0,
    )
    assert d["in_flight_policy"] == "drain within grace, then cancel (incomplete)"
    assert re.fullmatch(r"\d{8}-\d{6}", d["date"])  # vLLM's date format
    seeded = build(max_tokens=9, ignore_eos=True, seed=7, grace_seconds=2.5)
    assert (seeded["max_tokens"], seeded["ignore_eos"], seeded["seed"], seeded["grace_seconds"]) == (9, True, 7, 2.5)
    closed = build()
    assert (closed["backend"], closed["endpoint_type"], closed["request_rate"]) == ("openai", "openai", "inf")
    assert d["dataset"] == {
        "kind": "random",
        "path": None,
        "available": 8,
        "skipped": {"too_long": 1},
        "reused": False,
        "prompts_sha256": "f" * 64,
    }


def test_client_section():
    c = build()["client"]
    assert c["cpu_seconds"] == 1.0
    assert c["cpu_ms_per_1k_tokens"] == pytest.approx(200000.0)  # 1 s of CPU over 5 tokens
    assert c["cpu_fraction_of_one_core"] == pytest.approx(0.5)
    assert c["loop_lag_ms"]["max"] == pytest.approx(2.0) and c["loop_lag_ms"]["mean"] == pytest.approx(1.5)
    assert c["first_token_recv_minus_send_ms"]["mean"] == pytest.approx(50.0)
    assert c["send_to_server_arrival_ms"]["mean"] == pytest.approx(20.0)
    assert c["server_ttft_ms"]["mean"] == pytest.approx(30.0)
    assert c["ttft_client_error_ms"]["mean"] == pytest.approx(70.0)
    assert c["dispatch_to_write_ms"]["mean"] == pytest.approx(100.0)  # only records that were dispatched
    assert c["served_models"] == ["m"]
    bare = build(lags=[], recs=[r for r in records() if r.first_srv is None])["client"]
    assert bare["loop_lag_ms"]["max"] is None and bare["loop_lag_ms"]["p99"] is None
    for key in ("first_token_recv_minus_send_ms", "send_to_server_arrival_ms", "server_ttft_ms"):
        assert bare[key] is None, key
    assert bare["ttft_client_error_ms"] is None and bare["dispatch_to_write_ms"] is None


@pytest.mark.parametrize(
    ("cpu", "lags", "t_end", "bound"),
    [
        (1.0, [0.001], 102.0, False),
        (1.6, [0.001], 102.0, True),  # 80 % of a core
        (1.5, [0.001], 102.0, False),  # exactly 75 %: not over
        (0.1, [0.006], 102.0, True),  # the loop lagged 6 ms at p99
        (0.1, [0.004], 102.0, False),
        (0.1, [0.005], 102.0, False),  # exactly 5 ms: not over
        (0.9, [0.001], 101.0, True),  # a run of exactly 1 s is judged
        (0.5, [0.010], 100.5, False),  # too short a run to judge
    ],
)
def test_client_bound_warning(cpu, lags, t_end, bound):
    assert build(cpu=cpu, lags=lags, t_end=t_end)["client_bound_warning"] is bound


def test_spec_decode_section():
    assert build()["spec_decode_available"] is False
    d = build(spec=SpecDecodeDelta(drafts=2, draft_tokens=4, accepted=2, accepted_per_pos=(1.0, 1.0)))
    assert d["spec_decode_available"] is True and d["spec_decode_acceptance_length"] == pytest.approx(2.0)
    assert build(spec=SpecDecodeDelta(0, 0, 0, ()))["spec_decode_available"] is False


def test_a_spec_decode_stream_is_no_burst():
    """5 tokens in 3 chunks (1.67 a chunk): a burst when a step streams one token, not when the
    server counted 2.5 tokens per speculative-decoding step (1 + 60 accepted / 40 drafts)."""
    plain = build()
    assert plain["mean_tokens_per_chunk"] == pytest.approx(5 / 3)
    assert plain["quality_flags"]["burst_stream"] == "1.67 tokens per chunk"
    spec = build(spec=SpecDecodeDelta(drafts=40, draft_tokens=120, accepted=60, accepted_per_pos=(30.0, 20.0, 10.0)))
    assert spec["spec_decode_acceptance_length"] == 2.5
    assert "burst_stream" not in spec["quality_flags"]


def test_itl_counts_of_shared_reads_are_totalled_over_completed_requests():
    recs = records()
    recs[0].shared_gaps, recs[0].unseen_gaps = 2, 1
    recs[1].shared_gaps, recs[1].unseen_gaps = 3, 4
    recs[5].shared_gaps, recs[5].unseen_gaps = 50, 50  # incomplete: not counted
    d = build(recs=recs)
    assert (d["itl_samples"], d["itl_shared_samples"], d["itl_unseen_gaps"]) == (3, 5, 5)


def test_goodput_needs_slos():
    d = build()
    assert (d["slo"], d["good_requests"], d["request_goodput"]) == (None, None, None)
    g = build(slo={"ttft": 80.0})
    assert g["slo"] == {"ttft": 80.0} and g["good_requests"] == 1 and g["request_goodput"] == pytest.approx(0.5)


def test_non_finite_numbers_become_null():
    assert _finite({"a": [1.0, float("nan"), {"b": float("inf")}], "c": "x", "d": 2}) == {
        "a": [1.0, None, {"b": None}],
        "c": "x",
        "d": 2,
    }
    d = build(cpu=float("nan"))
    assert d["client"]["cpu_seconds"] is None and d["client"]["cpu_fraction_of_one_core"] is None
    json.dumps(d, allow_nan=False)


def test_write_makes_folders_and_leaves_no_temporary(tmp_path: Path):
    target = tmp_path / "a" / "b" / "r.json"
    BenchResult({"x": 1}).write(target)
    assert target.read_text(encoding="utf-8") == '{\n  "x": 1\n}\n'
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]
    with pytest.raises(BenchError, match="cannot write result") as info:
        BenchResult({"x": 1}).write(target / "under-a-file.json")
    assert str(target / "under-a-file.json") in str(info.value)


def ours(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"result_format": RESULT_FORMAT, "completed": 3, "duration": 2.0}
    d.update(over)
    return d


def test_normalize_rules_for_our_own_fields():
    n = normalize(
        ours(
            input_throughput=5.0,
            total_token_throughput=100.0,
            output_throughput=40.0,
            incomplete=2,
            time_cap_hit=True,
            max_concurrency=4.0,
            tokenizer_id="org/tok@abc",
            request_goodput=1.5,
            good_requests=3,
            client_bound_warning=False,
            failed=1,
            median_e2el_ms=9.0,
            p99_e2el_ms=12.0,
        )
    )
    assert n["prefill_tok_s"] == 5.0  # our own input throughput wins over total - output
    assert (n["total_tok_s"], n["decode_tok_s"]) == (100.0, 40.0)
    # without an output throughput, the input rate comes from the input tokens, not total - output
    assert normalize(ours(total_token_throughput=10.0, total_input_tokens=4))["prefill_tok_s"] == 2.0
    assert (n["incomplete"], n["time_cap_hit"], n["concurrency"], n["tokenizer"]) == (2, True, 4, "org/tok@abc")
    assert (n["goodput"], n["good_requests"], n["client_bound"], n["errors"]) == (1.5, 3, False, 1)
    assert (n["e2el_median_ms"], n["e2el_p99_ms"]) == (9.0, 12.0)
    assert n["completed"] == 3 and type(n["completed"]) is int


def test_normalize_reads_missing_or_odd_values_as_none():
    n = normalize(ours(time_cap_hit=1, max_concurrency=True, tokenizer_id=5, client_bound_warning="yes"))
    assert (n["time_cap_hit"], n["concurrency"], n["tokenizer"], n["client_bound"]) == (None, None, None, None)
    assert n["prefill_tok_s"] is None and n["decode_tok_s"] is None
    assert normalize(ours(total_input_tokens=10))["prefill_tok_s"] == pytest.approx(5.0)
    assert normalize(ours(total_input_tokens=10, duration=0))["prefill_tok_s"] is None
    assert normalize(ours(output_throughput=float("inf")))["decode_tok_s"] is None
    assert normalize({"completed": 1, "duration": 1.0, "incomplete": 4})["incomplete"] is None  # not ours


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"duration": "2"}, "field 'duration' must be a number, got str"),
        ({"duration": "inf"}, "field 'duration' must be a number, got str"),  # "inf" is no number here
        ({"completed": True}, "field 'completed' must be a number, got bool"),
        ({"spec_decode_per_position_acceptance_rates": [0.5, True]}, "must be a list of numbers"),
        ({"spec_decode_per_position_acceptance_rates": ["0.5"]}, "must be a list of numbers"),
        ({"spec_decode_per_position_acceptance_rates": ""}, "must be a list of numbers"),
    ],
)
def test_normalize_refuses_wrong_types(over, message):
    with pytest.raises(BenchError, match=message):
        normalize(ours(**over), source="f.json")


def test_normalize_needs_a_result_shape():
    assert normalize({"completed": 1, "output_throughput": 2.0})["decode_tok_s"] == 2.0
    with pytest.raises(BenchError, match="not a benchmark result"):
        normalize({"completed": 1})
    with pytest.raises(BenchError, match="not a benchmark result"):
        normalize({"duration": 1, "output_throughput": 2.0})


def test_unreadable_result_files(tmp_path: Path):
    p = tmp_path / "r.json"
    p.write_bytes(b"\xff\xfe{")
    with pytest.raises(BenchError, match="result file is not UTF-8 text"):
        load_result_json(p)
    p.write_text('{"completed": 1,\n  oops}')
    with pytest.raises(BenchError) as info:
        load_result_json(p)
    assert f"{p}:2:3: result file is not JSON" in str(info.value)
    assert info.value.hint == "pass the JSON written by autobench bench --result or vllm bench serve --save-result"


def test_a_result_file_of_ours_is_known_by_its_format_tag():
    n = normalize({"result_format": "autobench.bench/1", "incomplete": 2, "completed": 1})
    assert n["incomplete"] == 2
    with pytest.raises(BenchError) as info:
        BenchResult({"completed": "x", "result_format": "autobench.bench/1"}).normalized()
    assert str(info.value).startswith("result: field 'completed' must be a number")


def test_write_keeps_the_json_strict(tmp_path: Path):
    target = tmp_path / "r.json"
    with pytest.raises(ValueError):
        BenchResult({"x": float("nan")}).write(target)
    assert not target.exists()


def test_version_and_tokenizer_of_the_run():
    from autobench import __version__

    d = build()
    assert d["autobench_version"] == __version__
    config = BenchConfig(base_url="http://h:1", model="m", num_prompts=8)
    with_tok = dataset(tokenizer="org/tok@abc", tokenizer_fallback="no tokenizer.json")
    without = SimpleNamespace(**{k: v for k, v in vars(dataset()).items() if not k.startswith("tokenizer")})
    for ds, tok, fallback in ((with_tok, "org/tok@abc", "no tokenizer.json"), (without, "estimated", None)):
        res = build_result(
            config,
            ds,
            records(),
            t0=T0,
            t_end=102.0,
            time_cap_hit=True,
            spec=None,
            client=ClientStats(cpu_seconds=0.0),
            base_url="http://h:1",
        ).to_json_dict()
        assert (res["tokenizer_id"], res["tokenizer_fallback"], res["time_cap_hit"]) == (tok, fallback, True)


@pytest.mark.parametrize(
    ("slo", "good"),
    [
        ({"ttft": 250.0}, 1),  # met exactly: good
        ({"ttft": 249.9}, 0),
        ({"tpot": 250.0}, 1),
        ({"tpot": 249.9}, 0),
        ({"e2el": 500.0}, 1),
        ({"e2el": 499.9}, 0),
        ({"ttft": 250.0, "tpot": 250.0, "e2el": 500.0}, 1),
    ],
)
def test_goodput_limits_are_met_at_their_value(slo, good):
    # times exact in binary: TTFT 250 ms, TPOT 250 ms (two tokens), E2EL 500 ms
    one = record("ok", start=1.0, first=1.25, last=1.5, completion_tokens=2, prompt_tokens=4, n_chunks=2)
    d = build(recs=[one], slo=slo, t_end=102.0)
    assert d["good_requests"] == good


def test_queue_time_only_for_requests_that_were_sent():
    unsent = record("incomplete", arrival=100.9)  # its time came, but the run ended first
    d = build(recs=[*records(), unsent])
    assert d["mean_client_queue_time_ms"] == pytest.approx(50.0)
    assert d["p99_client_queue_time_ms"] == pytest.approx(50.0)


def test_client_timings_need_both_server_stamps_and_a_send():
    only_first = record("ok", start=1.0, first=1.25, last=1.5, completion_tokens=2, prompt_tokens=4, first_srv=1.125)
    only_arrival = record("ok", start=1.0, first=1.25, last=1.5, completion_tokens=2, prompt_tokens=4, arr_srv=1.0625)
    at_once = record("ok", dispatch=1.0, start=1.0, first=1.25, last=1.5, completion_tokens=2, prompt_tokens=4)
    unsent = record("incomplete", dispatch=1.5)  # dispatched, never written to the socket
    c = build(recs=[only_first, only_arrival, at_once, unsent])["client"]
    assert c["server_ttft_ms"] is None and c["ttft_client_error_ms"] is None
    assert c["first_token_recv_minus_send_ms"]["mean"] == pytest.approx(125.0)
    assert c["send_to_server_arrival_ms"]["mean"] == pytest.approx(62.5)
    assert c["dispatch_to_write_ms"]["mean"] == 0.0 and c["dispatch_to_write_ms"]["p99"] == 0.0


def test_client_cost_per_token_and_a_zero_duration():
    assert build(cpu=2.0)["client"]["cpu_ms_per_1k_tokens"] == pytest.approx(400000.0)  # 2 s over 5 tokens
    d = build(t_end=T0)
    assert d["client"]["cpu_fraction_of_one_core"] is None and d["client_bound_warning"] is False


def test_a_result_without_a_source_is_named_result():
    with pytest.raises(BenchError) as info:
        normalize([1])
    assert str(info.value) == "result: result must be a JSON object, got list"


def test_every_latency_statistic_is_read_from_its_own_field():
    fields = {
        "ttft_median_ms": "median_ttft_ms",
        "ttft_p99_ms": "p99_ttft_ms",
        "tpot_median_ms": "median_tpot_ms",
        "tpot_p99_ms": "p99_tpot_ms",
        "itl_median_ms": "median_itl_ms",
        "itl_p99_ms": "p99_itl_ms",
        "e2el_median_ms": "median_e2el_ms",
        "e2el_p99_ms": "p99_e2el_ms",
        "spec_acceptance_length": "spec_decode_acceptance_length",
        "request_rate": "request_throughput",
        "num_prompts": "num_prompts",
    }
    given = {theirs: float(i + 1) for i, theirs in enumerate(fields.values())}
    n = normalize(ours(**given))
    assert {ours_: n[ours_] for ours_ in fields} == {ours_: given[theirs] for ours_, theirs in fields.items()}


def ok_timed(start: float, scheduled: float, arrival: float | None = None) -> RequestRecord:
    return record(
        "ok",
        start=start,
        scheduled=scheduled,
        arrival=arrival,
        first=start + 0.125,
        last=start + 0.25,
        completion_tokens=2,
        prompt_tokens=4,
        n_chunks=2,
    )


@pytest.mark.parametrize(
    ("late_ms", "bound"),
    [(3.0, True), (2.0, False), (1.0, False)],  # the budget is 2 ms at p99: exactly 2 is not over
)
def test_dispatch_delay_over_its_budget_makes_the_run_client_bound(late_ms: float, bound: bool):
    recs = [ok_timed(100.5, 100.5 - late_ms / 1000) for _ in range(3)]
    d = build(cpu=0.1, lags=[0.001], recs=recs)
    c = d["client"]
    assert c["dispatch_delay_budget_ms"] == 2.0
    assert c["dispatch_delay_ms"]["median"] == pytest.approx(late_ms)
    assert c["dispatch_delay_ms"]["p99"] == pytest.approx(late_ms)
    assert d["client_bound_warning"] is bound
    if bound:
        assert (
            d["quality_flags"]["client_bound"]
            == f"event-loop lag p99 1.0 ms, 5% of a core, dispatch delay p99 {late_ms:.1f} ms"
        )
    else:
        assert "client_bound" not in d["quality_flags"]


def test_dispatch_delay_percentiles_and_samples():
    # delays of 0, 1, 2, ..., 9 ms, and one request never timed (no due time) left out
    recs = [ok_timed(101.0, 101.0 - i / 1000) for i in range(10)] + [ok_timed(101.0, 0.0)]
    res = build_result(
        BenchConfig(base_url="http://h:1", model="m", num_prompts=11, concurrency=4),
        dataset(),
        recs,
        t0=T0,
        t_end=102.0,
        time_cap_hit=False,
        spec=None,
        client=ClientStats(cpu_seconds=0.1, loop_lag_s=[0.001]),
        base_url="http://h:1",
    )
    delay = res.to_json_dict()["client"]["dispatch_delay_ms"]  # type: ignore[index]
    assert delay["median"] == pytest.approx(4.5) and delay["p99"] == pytest.approx(8.91)
    assert delay["mean"] == pytest.approx(4.5) and delay["p90"] == pytest.approx(8.1)
    assert res.samples is not None
    got = [r.dispatch_ms for r in res.samples.requests()]
    assert got[:10] == pytest.approx([float(i) for i in range(10)]) and got[10] is None
    assert res.to_json_dict()["client_bound_warning"] is True


def test_schedule_adherence_is_send_minus_planned_arrival():
    # rate mode: planned at 100.5; sent 1 ms and 4 ms late; the second waited 3 ms for a free slot
    recs = [ok_timed(100.501, 100.5, arrival=100.5), ok_timed(100.504, 100.503, arrival=100.5)]
    d = build(cpu=0.1, lags=[0.001], recs=recs, request_rate=10.0)
    c = d["client"]
    assert c["schedule_adherence_ms"]["median"] == pytest.approx(2.5)
    assert c["schedule_adherence_ms"]["p99"] == pytest.approx(3.97)
    assert c["dispatch_delay_ms"]["p99"] == pytest.approx(1.0)  # the slot wait is not the client's
    assert d["client_bound_warning"] is False
    assert build(cpu=0.1, lags=[0.001], recs=recs[:1])["client"]["schedule_adherence_ms"]["p99"] == pytest.approx(1.0)
    closed = build(cpu=0.1, lags=[0.001], recs=[ok_timed(100.5, 100.5)])["client"]
    assert closed["schedule_adherence_ms"] is None and closed["dispatch_delay_ms"]["p99"] == 0.0


def test_the_start_burst_is_reported_but_not_judged():
    """A closed loop's first C requests are all due at t0: no client writes them in one instant,
    so their delay is in dispatch_delay_ms but the budget judges the requests due after it."""
    burst = [ok_timed(T0 + 0.010 * (i + 1), T0 + (1e-7 if i else 0.0)) for i in range(3)]  # 10..30 ms late
    steady = [ok_timed(100.501, 100.5), ok_timed(100.6005, 100.6)]  # 1.0 and 0.5 ms late
    d = build(cpu=0.1, lags=[0.001], recs=[*burst, *steady])
    c = d["client"]
    assert c["dispatch_delay_ms"]["p99"] == pytest.approx(29.5999)
    assert c["dispatch_delay_ms"]["median"] == pytest.approx(10)
    assert c["dispatch_delay_after_start_ms"]["p99"] == pytest.approx(0.995)
    assert d["client_bound_warning"] is False
    late = build(cpu=0.1, lags=[0.001], recs=[*burst, ok_timed(100.504, 100.501)])  # 3 ms late after the start
    assert late["client_bound_warning"] is True and "dispatch delay p99 3.0 ms" in late["quality_flags"]["client_bound"]
    only_burst = build(cpu=0.1, lags=[0.001], recs=burst)["client"]
    assert only_burst["dispatch_delay_after_start_ms"] is None and only_burst["dispatch_delay_ms"] is not None


def test_the_dispatch_budget_is_exceeded_only_above_it(monkeypatch: pytest.MonkeyPatch):
    from autobench.bench import result as R

    recs = [ok_timed(100.5, 100.497), ok_timed(100.6, 100.599)]
    p99 = build(cpu=0.1, lags=[0.001], recs=recs)["client"]["dispatch_delay_after_start_ms"]["p99"]
    monkeypatch.setattr(R, "CLIENT_DISPATCH_P99_MS", p99)  # exactly at the budget: not over it
    assert build(cpu=0.1, lags=[0.001], recs=recs)["client_bound_warning"] is False
    monkeypatch.setattr(R, "CLIENT_DISPATCH_P99_MS", p99 * 0.999)
    assert build(cpu=0.1, lags=[0.001], recs=recs)["client_bound_warning"] is True


def test_a_request_due_within_the_slack_of_the_start_is_of_the_start():
    from autobench.bench.result import START_SLACK_S

    at_slack = ok_timed(100.01, T0 + START_SLACK_S)  # 10 ms late, but one of the start's burst
    after = ok_timed(100.5005, 100.5)
    c = build(cpu=0.1, lags=[0.001], recs=[at_slack, after])["client"]
    assert c["dispatch_delay_after_start_ms"]["p99"] == pytest.approx(0.5)


def test_due_to_server_arrival_reads_the_servers_stamp():
    seen = ok_timed(100.5, 100.498)
    seen.arr_srv = 100.5005  # the server read it 2.5 ms after it was due
    unscheduled = ok_timed(100.6, 0.0)
    unscheduled.arr_srv = 100.6005
    c = build(cpu=0.1, lags=[0.001], recs=[seen, unscheduled])["client"]
    assert c["due_to_server_arrival_ms"]["median"] == pytest.approx(2.5)
    assert c["due_to_server_arrival_ms"]["p99"] == pytest.approx(2.5)
    assert build(cpu=0.1, lags=[0.001], recs=[unscheduled])["client"]["due_to_server_arrival_ms"] is None


def test_schedule_adherence_only_for_requests_that_were_sent():
    unsent = record("incomplete", arrival=100.9, scheduled=100.9)  # its time came, but the run ended first
    c = build(cpu=0.1, lags=[0.001], recs=[ok_timed(100.501, 100.5, arrival=100.5), unsent])["client"]
    assert c["schedule_adherence_ms"]["median"] == pytest.approx(1.0) and c["schedule_adherence_ms"][
        "p99"
    ] == pytest.approx(1.0)


def test_a_request_never_written_has_no_dispatch_delay():
    unsent = record("incomplete", scheduled=100.9)  # due, but the run ended before it was written
    res = build_result(
        BenchConfig(base_url="http://h:1", model="m", num_prompts=2, concurrency=1),
        dataset(),
        [ok_timed(100.5005, 100.5), unsent],
        t0=T0,
        t_end=102.0,
        time_cap_hit=False,
        spec=None,
        client=ClientStats(cpu_seconds=0.1, loop_lag_s=[0.001]),
        base_url="http://h:1",
    )
    assert res.samples is not None
    assert [r.dispatch_ms for r in res.samples.requests()] == [pytest.approx(0.5), None]

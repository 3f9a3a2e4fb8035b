"""The client against the real synthetic server over loopback HTTP (in-process, its own thread)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.synthetic import chunk_plan
from autobench.errors import BenchError


def cfg(url: str, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "num_prompts": 8,
        "concurrency": 4,
        "max_tokens": 12,
        "random_input_len": 16,
        "read_timeout": 5.0,
    }
    base.update(kw)
    return BenchConfig(**base)


def test_a_small_run_counts_every_request_token_and_timestamp(synth: Any) -> None:
    """Counts and the order of the timestamps only: how close the figures come to the injected
    timings is measured by benchmarks/bench_accuracy.py (a wall-clock bound here would fail on
    a loaded machine)."""
    srv = synth(ttft_ms=5, itl_ms=2)
    d = run_bench(cfg(srv.base_url, num_prompts=16, max_tokens=20, warmup=4)).to_json_dict()
    assert (d["completed"], d["failed"], d["incomplete"]) == (16, 0, 0)
    # one gap per later token; those that came in the first token's read (a busy machine) unseen
    assert d["total_output_tokens"] == 16 * 20 and d["itl_samples"] + d["itl_unseen_gaps"] == 16 * 19
    assert d["input_throughput"] == pytest.approx(d["total_input_tokens"] / d["duration"])
    assert d["output_throughput"] == pytest.approx(d["total_output_tokens"] / d["duration"])
    assert d["spec_decode_available"] is False and "spec_decode_acceptance_length" not in d
    # TPOT is E2EL minus TTFT over the 19 later tokens of each request: exactly so on the mean.
    assert d["mean_tpot_ms"] * 19 == pytest.approx(d["mean_e2el_ms"] - d["mean_ttft_ms"], abs=1e-6)
    c = d["client"]
    # The server stamps its own send of the first chunk: the client receives it later.
    assert c["server_ttft_ms"]["median"] >= 5.0 and c["ttft_client_error_ms"]["median"] > 0.0
    # st is stamped at the socket write: the server sees the request after it, not before.
    assert c["send_to_server_arrival_ms"]["median"] > 0
    assert c["dispatch_to_write_ms"]["median"] >= 0


def test_every_request_records_its_dispatch_delay_from_when_it_was_due(synth: Any) -> None:
    """Closed loop: the first request of each of the C workers is due at the start, every later
    one when its worker's previous request ended; the delay to its write is >= 0 and in the
    samples (the result's p50/p99 come from the same values)."""
    srv = synth(ttft_ms=2, itl_ms=1)
    res = run_bench(cfg(srv.base_url, num_prompts=16, max_tokens=4, concurrency=4))
    assert res.samples is not None
    rows = res.samples.requests()
    delays = [r.dispatch_ms for r in rows]
    assert all(d is not None and d >= 0 for d in delays), delays
    due = sorted(1000 * r.start_s - r.dispatch_ms for r in rows)  # type: ignore[operator]
    assert due[:4] == pytest.approx([0.0] * 4, abs=0.002) and min(due[4:]) > 1.0  # after a TTFT of 2 ms
    ends = sorted(1000 * r.start_s + r.e2el_ms for r in rows)  # type: ignore[operator]
    for t in due[4:]:  # each later one was due once an earlier request had its last token
        assert any(e <= t + 0.002 for e in ends)
    c = res.to_json_dict()["client"]
    assert isinstance(c, dict)
    from autobench.samples import percentile

    # the same values: the samples are rounded to the microsecond
    assert c["dispatch_delay_ms"]["p99"] == pytest.approx(percentile(delays, 99), abs=0.001)  # type: ignore[arg-type]
    assert c["dispatch_delay_ms"]["median"] == pytest.approx(percentile(delays, 50), abs=0.001)  # type: ignore[arg-type]
    assert c["dispatch_delay_budget_ms"] == 2.0 and c["schedule_adherence_ms"] is None
    # the server read each request after it was due: due -> arrival >= the dispatch delay
    assert c["due_to_server_arrival_ms"]["median"] >= c["dispatch_delay_ms"]["median"]


def test_multi_token_chunks_keep_tpot_right_and_spec_counters_exact(synth: Any) -> None:
    srv = synth(ttft_ms=20, itl_ms=10, tokens_per_chunk=4)
    d = run_bench(cfg(srv.base_url, max_tokens=26, warmup=2)).to_json_dict()
    plan = chunk_plan(26, 4)  # 4,4,4,4,4,4,2
    assert d["completed"] == 8 and d["total_output_tokens"] == 8 * 26
    # TPOT divides by the 25 later tokens, not the 6 later chunks; one ITL per chunk gap.
    assert d["mean_tpot_ms"] * 25 == pytest.approx(d["mean_e2el_ms"] - d["mean_ttft_ms"], abs=1e-6)
    assert d["itl_samples"] + d["itl_unseen_gaps"] == 8 * (len(plan) - 1)
    assert d["mean_tokens_per_chunk"] == pytest.approx(26 / 7)
    # Exactly the 8 measured requests (warm-up excluded by the before/after scrape).
    assert d["spec_decode_num_drafts"] == 8 * len(plan)
    assert d["spec_decode_accepted_tokens"] == 8 * (26 - len(plan))
    assert d["spec_decode_draft_tokens"] == 8 * len(plan) * 3
    assert d["spec_decode_acceptance_length"] == pytest.approx(26 / 7)
    assert d["spec_decode_per_position_acceptance_rates"] == pytest.approx([1.0, 6 / 7, 6 / 7])
    assert d["spec_decode_acceptance_rate"] == pytest.approx(100 * 19 / 21)


def test_acceptance_profile_is_reported_exactly(synth: Any) -> None:
    prof = (0.78, 0.56, 0.39, 0.29, 0.21)
    srv = synth(ttft_ms=1, itl_ms=1, accept_profile=prof)
    d = run_bench(cfg(srv.base_url, endpoint="chat", num_prompts=4, max_tokens=120)).to_json_dict()
    plan = chunk_plan(120, accept_profile=prof)
    steps = 4 * len(plan)
    assert d["completed"] == 4
    assert d["spec_decode_acceptance_length"] == pytest.approx(120 / len(plan))
    want = [sum(1 for s in plan if s - 1 > i) / len(plan) for i in range(5)]
    assert d["spec_decode_per_position_acceptance_rates"] == pytest.approx(want)
    assert d["spec_decode_num_drafts"] == steps and d["spec_decode_draft_tokens"] == 5 * steps


def test_warmup_excluded_and_requests_counted(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    d = run_bench(cfg(srv.base_url, warmup=3)).to_json_dict()
    assert d["completed"] == 8 and d["warmup"] == 3 and d["dispatched"] == 8
    assert srv.server.counters.requests == 11  # 8 measured + 3 warm-up (the model matched: no probe)


def test_same_seed_same_prompts_different_seed_different(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    a = run_bench(cfg(srv.base_url, seed=5)).to_json_dict()["dataset"]["prompts_sha256"]
    b = run_bench(cfg(srv.base_url, seed=5)).to_json_dict()["dataset"]["prompts_sha256"]
    c = run_bench(cfg(srv.base_url, seed=6)).to_json_dict()["dataset"]["prompts_sha256"]
    assert a == b != c


@pytest.mark.parametrize(
    ("server_kw", "client_kw", "kind", "n_err"),
    [
        ({"error_rate": 0.5}, {}, "http_5xx", 4),
        ({"error_rate": 0.25, "error_status": 429}, {}, "http_4xx", 2),
        ({"midstream_error_rate": 0.5}, {}, "in_stream_error", 4),
        ({"drop_rate": 0.5}, {}, "stream_dropped", 4),
        ({"non_json_rate": 0.25}, {}, "non_json", 2),
        ({"no_usage": True}, {}, "no_usage", 8),
        ({"stall_rate": 0.25, "stall_seconds": 5.0}, {"read_timeout": 0.3}, "timeout", 2),
    ],
)
def test_each_fault_is_its_own_error_kind(
    synth: Any, server_kw: dict[str, Any], client_kw: dict[str, Any], kind: str, n_err: int
) -> None:
    srv = synth(ttft_ms=5, itl_ms=2, **server_kw)
    d = run_bench(cfg(srv.base_url, **client_kw)).to_json_dict()
    assert d["errors_by_kind"] == {kind: n_err}
    assert d["failed"] == n_err and d["completed"] == 8 - n_err and d["incomplete"] == 0
    assert d["error_samples"][kind]
    # statistics cover successful requests only
    assert d["total_output_tokens"] == 12 * (8 - n_err)


@pytest.mark.parametrize(
    ("server_kw", "client_kw", "kind", "n_err"),
    [
        ({"stall_rate": 0.25, "stall_seconds": 5.0}, {"read_timeout": 0.3}, "timeout", 2),
        ({"drop_rate": 0.5}, {}, "stream_dropped", 4),
    ],
)
def test_rate_mode_requests_written_at_their_arrival_still_time_out_and_fail_alone(
    synth: Any, server_kw: dict[str, Any], client_kw: dict[str, Any], kind: str, n_err: int
) -> None:
    # rate mode writes a request in the loop that waited for its arrival (no task hop); its task
    # then only waits for the end: the read timeout and a broken stream still end it alone
    srv = synth(ttft_ms=5, itl_ms=2, **server_kw)
    d = run_bench(cfg(srv.base_url, request_rate=400.0, seed=3, **client_kw)).to_json_dict()
    assert srv.server.counters.requests == 8  # each request written once
    assert d["errors_by_kind"] == {kind: n_err}
    assert d["failed"] == n_err and d["completed"] == 8 - n_err and d["incomplete"] == 0
    assert d["total_output_tokens"] == 12 * (8 - n_err)


def test_error_message_keeps_the_server_text(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1, error_rate=1.0)
    d = run_bench(cfg(srv.base_url, num_prompts=2)).to_json_dict()
    assert d["error_samples"]["http_5xx"] == "HTTP 500: synthetic injected error"
    assert d["completed"] == 0 and d["median_ttft_ms"] is None and d["output_throughput"] == 0.0


def test_missing_usage_fallback_counts_chunks(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1, no_usage=True)
    d = run_bench(cfg(srv.base_url, allow_missing_usage=True)).to_json_dict()
    assert d["completed"] == 8 and d["usage_fallback_requests"] == 8 and d["total_output_tokens"] == 96


def test_refused_connection_finishes_with_a_result() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    d = run_bench(cfg(f"http://localhost:{port}/v1", num_prompts=3)).to_json_dict()
    assert d["errors_by_kind"] == {"connect": 3} and d["completed"] == 0
    assert d["base_url"] == f"http://127.0.0.1:{port}"


def test_wrong_model_fails_fast_with_the_server_message(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    with pytest.raises(BenchError) as e:
        run_bench(cfg(srv.base_url, model="qwen", num_prompts=50))
    msg = str(e.value)
    assert "The model `qwen` does not exist." in msg and "served models: m" in msg
    assert srv.server.counters.requests == 0  # the probe was rejected; no benchmark traffic was sent


def test_malformed_dataset_errors_before_any_request(synth: Any, tmp_path: Path) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    bad = tmp_path / "data.json"
    bad.write_text('[{"conversations": ')
    with pytest.raises(BenchError, match="not valid JSON"):
        run_bench(cfg(srv.base_url, dataset=str(bad)))
    assert srv.server.counters.requests == 0


def test_time_cap_drains_within_grace(synth: Any) -> None:
    srv = synth(ttft_ms=10, itl_ms=10)  # 12 tokens: ~120 ms per request
    d = run_bench(cfg(srv.base_url, num_prompts=100, max_seconds=0.3, grace_seconds=5)).to_json_dict()
    assert d["time_cap_hit"] is True and d["incomplete"] == 0 and d["failed"] == 0
    assert 4 <= d["completed"] < 100 and d["not_dispatched"] == 100 - d["completed"]
    # Nothing was sent after the cap, and the requests in flight drained: all that were sent completed.
    assert d["dispatched"] == d["completed"]


def test_time_cap_cancels_after_grace_as_incomplete_not_errors(synth: Any) -> None:
    srv = synth(ttft_ms=10, itl_ms=50)  # 12 tokens: ~560 ms per request
    d = run_bench(cfg(srv.base_url, num_prompts=100, max_seconds=0.25, grace_seconds=0.1)).to_json_dict()
    assert d["time_cap_hit"] is True
    # Cancelled after cap + grace (0.35 s), long before the 560 ms requests could finish.
    assert (d["completed"], d["failed"], d["incomplete"]) == (0, 0, 4)


def test_no_cap_hit_when_all_prompts_finish(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    d = run_bench(cfg(srv.base_url, max_seconds=30)).to_json_dict()
    assert d["time_cap_hit"] is False and d["completed"] == 8


def test_poisson_rate_mode(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    res = run_bench(cfg(srv.base_url, num_prompts=20, request_rate=100.0, concurrency=8, seed=1))
    d = res.to_json_dict()
    assert res.samples is not None and all(r.dispatch_ms >= 0 for r in res.samples.requests())  # type: ignore[operator]
    assert d["completed"] == 20 and d["request_rate"] == 100.0
    assert d["median_client_queue_time_ms"] is not None and d["median_client_queue_time_ms"] >= 0
    adherence = d["client"]["schedule_adherence_ms"]
    # never sent before its arrival time (the loop's timers fire early; the send waits)
    assert adherence["median"] == pytest.approx(d["median_client_queue_time_ms"]) and adherence["mean"] >= 0
    assert d["client"]["dispatch_delay_ms"]["p99"] <= adherence["p99"]  # slot waits taken out


def test_result_json_is_strict_json(synth: Any, tmp_path: Path) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    res = run_bench(cfg(srv.base_url, num_prompts=2))
    res.write(tmp_path / "r.json")
    json.loads((tmp_path / "r.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-strict {c}"))


def test_gc_settings_of_the_measured_run_are_restored(synth: Any) -> None:
    """The run raises the young-generation GC threshold and freezes the heap while measuring;
    both are undone afterwards."""
    import gc

    from autobench.bench import client as client_mod

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    seen: list[tuple[int, ...]] = []
    orig = client_mod._Runner._measure

    async def spy(self: Any, bodies: list[bytes], t_start: float | None = None) -> Any:
        seen.append(gc.get_threshold())
        return await orig(self, bodies, t_start)

    srv = synth(ttft_ms=1, itl_ms=1)
    client_mod._Runner._measure = spy  # type: ignore[method-assign]
    try:
        d = run_bench(cfg(srv.base_url, num_prompts=4)).to_json_dict()
    finally:
        client_mod._Runner._measure = orig  # type: ignore[method-assign]
    assert d["completed"] == 4
    assert seen and seen[0][0] == max(before[0], client_mod.YOUNG_GC_THRESHOLD)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen


def test_rate_mode_counts_a_refused_connection_per_request() -> None:
    d = run_bench(cfg("http://127.0.0.1:9", num_prompts=3, request_rate=1000.0, connect_timeout=2.0)).to_json_dict()
    assert d["errors_by_kind"] == {"connect": 3} and d["completed"] == 0

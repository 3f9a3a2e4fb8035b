"""Several load generators (autobench.bench.fleet, autobench.bench.worker), in-process: the shares,
the clock offset, the rows and the merge (percentiles from the merged records, never averaged),
and the whole protocol with each load generator on a thread (a real multi-process run is
tests/bench/test_bench_fleet_processes.py, integration)."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from typing import Any

import pytest

from autobench.bench import fleet
from autobench.bench import worker as worker_mod
from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.fleet import Report, clock_offset, concurrency_shares, merge, record_of, row_of, shares
from autobench.bench.record import OK, RequestRecord
from autobench.errors import BenchError, UsageError
from autobench.samples import percentile


def test_shares_deal_every_prompt_once_and_split_concurrency_evenly() -> None:
    assert shares(7, 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert shares(0, 2) == [[], []]
    assert concurrency_shares(10, 3) == [4, 3, 3] and concurrency_shares(4, 4) == [1, 1, 1, 1]
    assert concurrency_shares(1024, 2) == [512, 512]


@pytest.mark.parametrize(
    ("workers", "conc", "prompts", "words"),
    [
        (0, 4, 8, "between 1 and 64"),
        (65, 100, 100, "between 1 and 64"),
        (3, 2, 8, "3 load generators for concurrency 2: each needs at least one request in flight"),
        (3, 4, 2, "2 prompts for 3 load generators: each needs at least one prompt"),
    ],
)
def test_impossible_worker_counts_are_refused(workers: int, conc: int, prompts: int, words: str) -> None:
    with pytest.raises(BenchError, match=words) as e:
        fleet.check_workers(workers, conc, prompts)
    if "concurrency" in words:  # the rule a recipe follows too (autobench.recipe.benchrules), at the option
        assert (e.value.location, e.value.hint) == ("--workers", "fewer --workers, or --concurrency 3 or more")
    if "prompts" in words:
        assert (e.value.location, e.value.hint) == (
            "--num-prompts",
            "set --num-prompts to 3 or more, or fewer --workers",
        )
    with pytest.raises(BenchError, match=words):
        BenchConfig(base_url="http://h:1", model="m", workers=workers, concurrency=conc, num_prompts=prompts).check()
    with pytest.raises(BenchError, match="2 load generators with a multi-turn dataset") as e:
        BenchConfig(base_url="http://h:1", model="m", workers=2, concurrency=4, multi_turn=True).check()
    assert str(e.value).startswith("--workers: 2 load generators with a multi-turn dataset: a conversation's turns")
    fleet.check_workers(1, 1, 1, multi_turn=True)
    fleet.check_workers(1, 1, 1)
    fleet.check_workers(64, 64, 64)


def test_the_clock_offset_comes_from_the_shortest_round_trip() -> None:
    # worker clock = parent + 5.0; the 2nd ping is the fastest (0.002 s), answered mid-way
    pings = [(10.0, 15.004, 10.01), (11.0, 16.001, 11.002), (12.0, 17.0, 12.02)]
    offset, rtt = clock_offset(pings)
    assert offset == pytest.approx(5.0) and rtt == pytest.approx(0.002)
    with pytest.raises(ValueError, match="no clock pings"):
        clock_offset([])


def rec(index: int, start: float, ttft: float, **more: Any) -> RequestRecord:
    r = RequestRecord(index, 3)
    r.status = OK
    r.scheduled, r.dispatch, r.start = start - 0.001, start, start
    r.first, r.last, r.end = start + ttft, start + ttft + 0.02, start + ttft + 0.021
    r.gaps = [0.01, 0.01]
    r.n_chunks, r.prompt_tokens, r.completion_tokens = 3, 4, 3
    r.finish_reason = "length"
    for k, v in more.items():
        setattr(r, k, v)
    return r


def test_a_row_is_the_record_in_the_parents_clock() -> None:
    r = rec(2, 100.0, 0.05, first_srv=100.04, arr_srv=100.0005, arrival=99.99)
    row = json.loads(json.dumps(row_of(r)))  # what travels
    back = record_of(row, offset=50.0, index=7)
    assert back.index == 7 and back.status == OK and back.gaps == [0.01, 0.01]
    for name in fleet.TIME_FIELDS:
        assert getattr(back, name) == pytest.approx(getattr(r, name) - 50.0), name
    unsent = RequestRecord(3, 1)  # never written: its zero times stay "none", not -offset
    back = record_of(row_of(unsent), offset=50.0)
    assert (back.start, back.scheduled, back.first, back.index) == (0.0, 0.0, None, 3)
    with pytest.raises(BenchError, match="fields"):
        record_of(row[:-1])


def test_the_merge_keeps_every_record_and_its_percentiles_are_the_unions() -> None:
    # worker 0: fast requests; worker 1 (clock +1000 s): slow ones
    a = Report(rows=[row_of(rec(i, 10.0 + i, 0.010 * (i + 1))) for i in range(4)], t0=10.0, t_end=15.0, cpu=0.5)
    b = Report(
        rows=[row_of(rec(i, 1010.5 + i, 0.200 + 0.010 * i)) for i in range(2)],
        t0=1010.0,
        t_end=1016.0,
        cpu=0.25,
        offset=1000.0,
        lags=[0.001],
    )
    m = merge([a, b], [[0, 2, 4, 6], [1, 3]])
    assert sorted(r.index for r in m.records) == [0, 1, 2, 3, 4, 6]
    assert [r.index for r in m.records] == [0, 1, 2, 3, 4, 6]  # in send order, one clock
    assert (m.t0, m.t_end, m.cpu, m.lags) == (10.0, 16.0, 0.75, [0.001])
    ttfts = [1000 * (r.first - r.start) for r in m.records]  # type: ignore[operator]
    assert sorted(ttfts) == pytest.approx([10, 20, 30, 40, 200, 210])
    # the p99 of the union, not the mean of the two generators' p99s
    union = percentile(ttfts, 99)
    assert union == pytest.approx(209.5) and union != pytest.approx((percentile(ttfts[:4], 99) + 209.9) / 2)
    with pytest.raises(BenchError, match="prompt 5"):
        merge([Report(rows=[row_of(rec(5, 1.0, 0.1))])], [[0, 1]])


def test_messages_are_checked() -> None:
    assert json.loads(fleet.message("ping")) == {"t": "ping"}
    assert fleet.read_message(b'{"t":"pong","clock":1.5}\n', ("pong",), "w")["clock"] == 1.5
    for line, words in [
        (b"", "ended before"),
        (b"garbage\n", "not JSON"),
        (b'{"t":"ready"}\n', "expected pong"),
        (b"[1]\n", "expected pong"),
    ]:
        with pytest.raises(BenchError, match=words):
            fleet.read_message(line, ("pong",), "w")
    with pytest.raises(BenchError, match="model 'x' rejected") as e:
        fleet.read_message(
            fleet.message("error", message="model 'x' rejected", hint="fix --model"), ("pong", "error"), "w"
        )
    assert e.value.hint == "fix --model"


class ThreadGenerator:
    """A load generator on a thread of this process, over two pipes (the protocol unchanged)."""

    def __init__(self, number: int):
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.to_worker = os.fdopen(w1, "wb", buffering=0)
        self.from_worker = os.fdopen(r2, "rb")
        worker_in, worker_out = os.fdopen(r1, "rb"), os.fdopen(w2, "wb")
        self.code: list[int] = []

        def run() -> None:
            try:
                self.code.append(worker_mod.serve(worker_in, worker_out))
            finally:
                worker_out.close()
                worker_in.close()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        self.who = f"load generator {number}"

    def send(self, data: bytes) -> None:
        self.to_worker.write(data)

    def read(self, *expect: str) -> dict[str, Any]:
        return fleet.read_message(self.from_worker.readline(), (*expect, "error"), self.who)

    def close(self) -> None:
        self.to_worker.close()
        self.thread.join(30)
        self.from_worker.close()


def threaded_fleet(cfg: BenchConfig) -> Any:
    from autobench.bench.client import choose_tokenizer  # noqa: F401  (the same path as run_bench)
    from autobench.bench.datasets import load_dataset

    ds = load_dataset(
        kind=None,
        path=None,
        num_prompts=cfg.num_prompts,
        warmup=cfg.warmup,
        max_tokens=cfg.max_tokens,
        seed=cfg.seed,
        min_prompt_tokens=4,
        max_prompt_tokens=1024,
        random_input_len=cfg.random_input_len,
        random_range_ratio=0.0,
    )
    gens: list[ThreadGenerator] = []

    def spawn(w: int) -> ThreadGenerator:
        gens.append(ThreadGenerator(w))
        return gens[-1]

    return fleet.run_fleet(cfg, ds, spawn=spawn), ds, gens


def test_two_threaded_generators_measure_every_prompt_once(synth: Any) -> None:
    srv = synth(ttft_ms=2, itl_ms=1)
    cfg = BenchConfig(
        base_url=srv.base_url,
        model="m",
        num_prompts=12,
        concurrency=4,
        max_tokens=5,
        random_input_len=16,
        workers=2,
        warmup=2,
        tokenizer="estimated",
    )
    res, ds, gens = threaded_fleet(cfg)
    d = res.to_json_dict()
    assert [g.code for g in gens] == [[0], [0]]
    assert (d["completed"], d["failed"], d["dispatched"], d["not_dispatched"]) == (12, 0, 12, 0)
    assert d["total_output_tokens"] == 12 * 5 and d["itl_samples"] + d["itl_unseen_gaps"] == 12 * 4
    w = d["workers"]
    assert w["count"] == 2 and [g["concurrency"] for g in w["generators"]] == [2, 2]
    assert [g["requests"] for g in w["generators"]] == [6, 6] and [g["prompts"] for g in w["generators"]] == [6, 6]
    for g in w["generators"]:  # one process, one clock: the offset is within its round trip
        assert abs(g["clock_offset_ms"]) <= g["clock_round_trip_ms"] / 2 + 1e-6
    # the merged samples hold every request of both, as the ledger's cell will
    assert res.samples is not None and len(res.samples) == 12
    assert res.samples.count(OK) == 12 and all(r.dispatch_ms is not None for r in res.samples.requests())
    assert d["median_ttft_ms"] == pytest.approx(percentile(res.samples.values("ttft_ms"), 50), abs=0.001)
    assert d["dataset"]["prompts_sha256"] == ds.fingerprint()
    # the same prompts as one process would send: the bodies are built from the parent's dataset
    assert d["spec_decode_available"] is False and d["interrupted"] is False


def test_rate_mode_deals_the_one_schedule(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    cfg = BenchConfig(
        base_url=srv.base_url,
        model="m",
        num_prompts=10,
        concurrency=4,
        max_tokens=3,
        random_input_len=16,
        workers=2,
        request_rate=200.0,
        seed=3,
        tokenizer="estimated",
    )
    res, _, _ = threaded_fleet(cfg)
    d = res.to_json_dict()
    assert d["completed"] == 10 and d["client"]["schedule_adherence_ms"] is not None
    assert res.samples is not None
    from autobench.bench.client import poisson_arrivals

    planned = poisson_arrivals(200.0, 10, 3)
    # every request left at or after its planned time (both generators kept the parent's schedule)
    starts = sorted(r.start_s for r in res.samples.requests())  # type: ignore[type-var]
    assert all(s >= p - 1e-6 for s, p in zip(starts, planned, strict=True))


def test_a_generator_refusing_its_plan_is_one_error(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    cfg = BenchConfig(
        base_url=srv.base_url,
        model="nope",
        num_prompts=4,
        concurrency=2,
        max_tokens=3,
        random_input_len=16,
        workers=2,
        tokenizer="estimated",
    )
    with pytest.raises(BenchError, match="model 'nope' rejected"):
        threaded_fleet(cfg)


def test_the_worker_refuses_another_protocol_version() -> None:
    out = io.BytesIO()
    plan = json.dumps({"t": "plan", "version": 99}).encode() + b"\n"
    assert worker_mod.serve(io.BytesIO(plan), out) == 5
    msg = json.loads(out.getvalue())
    assert msg["t"] == "error" and "protocol version 99" in msg["message"]


def test_one_worker_is_the_single_process_path(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    d = run_bench(
        BenchConfig(base_url=srv.base_url, model="m", num_prompts=4, concurrency=2, max_tokens=3, random_input_len=16)
    ).to_json_dict()
    assert "workers" not in d and d["completed"] == 4


def test_a_prompt_travels_whole() -> None:
    from autobench.bench.datasets import Prompt

    p = Prompt("hé", 3, 9, category="code", turns=("and then?", "why"))
    plan = fleet.plan_message(BenchConfig(base_url="http://h:1", model="m"), 0, 1, 1, [p], [], None, 9)
    got = worker_mod._dataset(json.loads(plan))
    assert got.prompts == [p] and got.warmup == []
    with pytest.raises(BenchError, match="rows"):
        worker_mod._dataset({"prompts": [["x", 1, 2]], "warmup": []})


def test_each_generator_keeps_the_common_time_cap(synth: Any) -> None:
    srv = synth(ttft_ms=10, itl_ms=50)  # 12 tokens: ~560 ms per request
    cfg = BenchConfig(
        base_url=srv.base_url, model="m", num_prompts=100, concurrency=4, max_tokens=12, random_input_len=16,
        workers=2, max_seconds=0.25, grace_seconds=0.1, tokenizer="estimated",
    )  # fmt: skip
    res, _, gens = threaded_fleet(cfg)
    d = res.to_json_dict()
    assert [g.code for g in gens] == [[0], [0]]
    # both cancelled their two requests after cap + grace: incomplete, never errors; the rest never sent
    assert (d["completed"], d["failed"], d["incomplete"], d["not_dispatched"]) == (0, 0, 4, 96)
    assert d["time_cap_hit"] is True and d["quality_flags"]["time_capped"]  # type: ignore[index]


def test_what_a_generator_sends_is_checked_field_by_field() -> None:
    row = row_of(rec(0, 1.0, 0.1))
    row[fleet.ROW_FIELDS.index("gaps")] = [0.5, "x", True, None, 2]
    assert record_of(row).gaps == [0.5, 2.0]  # only numbers are gaps
    for bad in ("1", True, None):
        with pytest.raises(BenchError, match="index"):
            fleet.number(bad, "index")
    assert fleet.number(3.0, "index") == 3
    assert fleet.seconds({"t": "done", "t0": 2}, "t0") == 2.0
    for bad in ("2", False, None):
        with pytest.raises(BenchError, match="'done' message has t0"):
            fleet.seconds({"t": "done", "t0": bad}, "t0")


class ScriptedGenerator:
    """A load generator that answers the parent from a script (the parent's side of the protocol);
    its clock runs ``offset`` seconds ahead of the parent's."""

    def __init__(self, rows: list[list[object]], done: dict[str, object], offset: float):
        self.sent: list[dict[str, Any]] = []
        self.offset = offset
        self.script: list[bytes | None] = [fleet.message("ready", served=["m"])]
        self.script += [None] * fleet.PINGS  # pongs, read from the clock when asked
        self.script += [fleet.message("records", rows=rows), fleet.message("done", **done)]
        self.closed = False

    def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def read(self, *expect: str) -> dict[str, object]:
        line = self.script.pop(0) or fleet.message("pong", clock=time.perf_counter() + self.offset)
        return fleet.read_message(line, (*expect, "error"), "scripted")

    def close(self) -> None:
        self.closed = True


def test_the_parent_side_of_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    from autobench.bench.client import poisson_arrivals
    from autobench.bench.datasets import load_dataset

    monkeypatch.setattr(fleet, "_scrape", lambda config: None)  # no server: no /metrics
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-on-the-wire")  # read by each worker by name
    cfg = BenchConfig(
        base_url="http://127.0.0.1:9", model="m", num_prompts=4, concurrency=2, max_tokens=3, workers=2,
        random_input_len=8, tokenizer="estimated", request_rate=10.0,
    )  # fmt: skip
    ds = load_dataset(
        kind=None, path=None, num_prompts=4, warmup=0, max_tokens=3, seed=0, min_prompt_tokens=4,
        max_prompt_tokens=1024, random_input_len=8, random_range_ratio=0.0,
    )  # fmt: skip
    base = time.perf_counter()  # the parent's clock; worker w's reads base + 1000 * (w + 1)
    a, b = base + 1000.0, base + 2000.0
    done = {"cap_hit": False, "cpu": 0.25, "lags": [0.001, 0.003], "interrupted": False}
    gens = [
        ScriptedGenerator(
            [row_of(rec(0, a + 0.1, 0.05)), row_of(rec(1, a + 0.2, 0.05))], {**done, "t0": a, "t_end": a + 1.0}, 1000.0
        ),
        ScriptedGenerator(
            [row_of(rec(0, b + 0.15, 0.05)), row_of(RequestRecord(1, 3))],  # its second prompt never sent
            {**done, "t0": b + 0.05, "t_end": b + 1.5, "cap_hit": True, "interrupted": True},
            2000.0,
        ),
    ]
    import signal

    before = signal.getsignal(signal.SIGINT)
    res = fleet.run_fleet(cfg, ds, spawn=lambda w: gens[w])
    assert signal.getsignal(signal.SIGINT) is before  # the parent's Ctrl-C handler is put back
    d = res.to_json_dict()
    assert all(g.closed for g in gens)
    plans = [g.sent[0] for g in gens]
    assert [p["t"] for p in plans] == ["plan", "plan"] and [p["worker"] for p in plans] == [0, 1]
    assert [p["config"]["concurrency"] for p in plans] == [1, 1]
    assert "sk-never-on-the-wire" not in json.dumps(plans) and plans[0]["config"]["api_key_env"] == "OPENAI_API_KEY"
    planned = poisson_arrivals(10.0, 4, 0)
    assert plans[0]["arrivals"] == [planned[0], planned[2]] and plans[1]["arrivals"] == [planned[1], planned[3]]
    assert [m["t"] for m in gens[0].sent[1:]] == ["ping"] * fleet.PINGS + ["start"]
    # one start, sent in each worker's own clock
    starts = [g.sent[-1]["at"] - g.offset for g in gens]
    assert starts[0] == pytest.approx(starts[1], abs=0.05) and starts[0] >= base + fleet.START_LEAD_S
    offsets = [g["clock_offset_ms"] for g in d["workers"]["generators"]]  # type: ignore[index]
    assert offsets == pytest.approx([1e6, 2e6], abs=50.0)
    # each generator's own start, from the earliest (the second reported 50 ms later)
    assert [g["start_ms"] for g in d["workers"]["generators"]] == pytest.approx([0.0, 50.0], abs=50.0)  # type: ignore[index]
    assert d["workers"]["generators"][1]["start_ms"] > 25.0  # type: ignore[index]
    # the records back in the parent's clock: one run from the earliest start to the latest end
    assert (d["completed"], d["incomplete"], d["dispatched"]) == (3, 1, 4)  # still in flight: incomplete
    assert d["duration"] == pytest.approx(1.5, abs=0.05)
    assert res.samples is not None
    assert sorted(r.start_s for r in res.samples.requests() if r.start_s is not None) == pytest.approx(
        [0.1, 0.15, 0.2], abs=0.05
    )
    assert d["interrupted"] is True and d["time_cap_hit"] is True
    assert d["client"]["cpu_seconds"] == 0.5 and d["client"]["loop_lag_ms"]["max"] == pytest.approx(3.0)
    assert d["workers"]["count"] == 2 and d["client"]["served_models"] == ["m"]
    assert d["spec_decode_available"] is False


def test_the_merge_of_nothing_unusual_is_not_capped_nor_interrupted() -> None:
    m = merge([Report(rows=[row_of(rec(0, 10.0, 0.01))], t0=10.0, t_end=11.0)], [[0]])
    assert (m.cap_hit, m.interrupted) == (False, False)


def test_the_parent_reads_the_servers_counters_around_the_whole_run(synth: Any) -> None:
    from autobench.bench.synthetic import chunk_plan

    srv = synth(ttft_ms=1, itl_ms=1, tokens_per_chunk=2)
    cfg = BenchConfig(
        base_url=srv.base_url, model="m", num_prompts=6, concurrency=2, max_tokens=5, random_input_len=16,
        workers=2, warmup=2, tokenizer="estimated",
    )  # fmt: skip
    d = threaded_fleet(cfg)[0].to_json_dict()
    plan = chunk_plan(5, 2)  # 2, 2, 1
    # both generators' measured requests, and not their warm-up (scraped after it, before the start)
    assert d["spec_decode_available"] is True and d["spec_decode_num_drafts"] == 6 * len(plan)
    assert d["spec_decode_accepted_tokens"] == 6 * (5 - len(plan))


def test_a_server_without_metrics_has_no_counters() -> None:
    import http.server

    class NoMetrics(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_error(404)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoMetrics)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        assert fleet._scrape(BenchConfig(base_url=url, model="m")) is None
        assert fleet._scrape(BenchConfig(base_url="http://127.0.0.1:9", model="m", connect_timeout=2.0)) is None
    finally:
        srv.shutdown()
        srv.server_close()


# ---- from the mutation run of fleet.py (every mutant, 2026-12-07 evening) -----------------------
def test_multi_turn_with_workers_says_how_to_fix_it() -> None:
    with pytest.raises(BenchError) as e:
        fleet.check_workers(2, 4, 8, multi_turn=True)
    assert e.value.hint == (
        "drop --workers (a conversation's turns are not dealt to several processes yet), or drop --multi-turn"
    )


def test_the_clock_offset_picks_the_shortest_round_trip_not_the_closest_clock() -> None:
    # ping 1: round trip 0.010 s, its worker clock right at its receive time; ping 2: round trip
    # 0.002 s.  The answer is ping 2's (worker clock 16.001, mid-point 11.001 -> offset 5.0).
    pings = [(10.0, 15.010, 10.010), (11.0, 16.001, 11.002)]
    offset, rtt = clock_offset(pings)
    assert offset == pytest.approx(5.0) and rtt == pytest.approx(0.002)


def test_a_row_without_an_offset_keeps_its_times_and_a_bad_index_is_named() -> None:
    r = rec(2, 100.0, 0.05)
    back = record_of(json.loads(json.dumps(row_of(r))))
    assert (back.index, back.start, back.first) == (2, 100.0, pytest.approx(100.05))
    bad = row_of(r)
    bad[0] = "two"
    with pytest.raises(BenchError, match=r"^a load generator sent index 'two', not a number$"):
        record_of(bad)
    with pytest.raises(BenchError, match=r"^a load generator sent index 'two', not a number$"):
        merge([Report(rows=[bad])], [[0, 1, 2]])


def test_a_time_field_that_is_not_a_number_is_not_moved_by_the_offset() -> None:
    row = row_of(rec(0, 100.0, 0.05))
    row[fleet.ROW_FIELDS.index("first_srv")] = "soon"  # what a confused worker might send
    back = record_of(row, offset=50.0)
    assert back.first_srv == "soon" and back.start == pytest.approx(50.0)


def test_the_merge_refuses_an_index_one_past_the_share() -> None:
    with pytest.raises(BenchError, match="a load generator sent a record of prompt 2, it had 2"):
        merge([Report(rows=[row_of(rec(2, 1.0, 0.1))])], [[0, 1]])
    m = merge([Report(rows=[row_of(rec(1, 1.0, 0.1))])], [[0, 1]])
    assert [r.index for r in m.records] == [1]


def test_the_merge_puts_sent_records_in_send_order_and_unsent_ones_last_by_index() -> None:
    unsent_a, unsent_b = RequestRecord(3, 1), RequestRecord(1, 1)  # never written: start 0.0
    rows = [row_of(unsent_a), row_of(rec(2, 5.0, 0.1)), row_of(unsent_b), row_of(rec(0, 4.0, 0.1))]
    m = merge([Report(rows=rows)], [[10, 11, 12, 13]])
    assert [r.index for r in m.records] == [10, 12, 11, 13]


def test_a_message_refuses_a_number_json_cannot_carry() -> None:
    with pytest.raises(ValueError):
        fleet.message("done", cpu=float("nan"))
    with pytest.raises(ValueError):
        fleet.message("done", cpu=float("inf"))


# ---- load generators on other hosts (--worker-host) ----------------------------------------------
def test_a_remote_load_generator_is_started_with_the_remote_words_the_host_and_one_command_line() -> None:
    argv = fleet.remote_worker_command("ssh -o BatchMode=yes -i '/k ey'", "u@10.0.0.2", "env A=1 /opt/v env/python")
    assert argv == [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-i",
        "/k ey",
        "u@10.0.0.2",
        "env A=1 /opt/v env/python -m autobench.bench.worker",
    ]
    assert fleet.remote_worker_command("ssh", "h", "python3") == ["ssh", "h", "python3 -m autobench.bench.worker"]


def remote_config(**more: Any) -> BenchConfig:
    settings: dict[str, Any] = {
        "base_url": "http://h:1",
        "model": "m",
        "concurrency": 4,
        "num_prompts": 8,
        "worker_hosts": ("a", "b"),
        "workers": 2,
        "remote": "ssh -o BatchMode=yes",
    }
    return BenchConfig(**{**settings, **more})


@pytest.mark.parametrize(
    ("more", "words", "hint"),
    [
        ({"workers": 3, "concurrency": 3}, "3 load generators for 2 --worker-host hosts", "drop --workers"),
        ({"workers": 1}, "1 load generator for 2 --worker-host hosts", "give it as 2"),  # a config is not followed
        ({"worker_hosts": ("a", "-oProxyCommand=x")}, "'-oProxyCommand=x' is not a host name", "--worker-host user@"),
        ({"worker_hosts": ("a", "b c")}, "'b c' is not a host name", "--worker-host user@"),
        ({"worker_hosts": ("a", " ")}, "' ' is not a host name", "--worker-host user@"),
        ({"worker_hosts": ("a", "")}, "'' is not a host name", "--worker-host user@"),
        ({"remote": None}, "needs a way to reach the hosts", "--remote 'ssh"),
        ({"worker_hosts": ("a",), "workers": 1, "remote": None}, "needs a way to reach the hosts", "--remote 'ssh"),
        ({"remote": " "}, "needs a way to reach the hosts", "--remote 'ssh"),
        ({"worker_python": " "}, "--worker-python ' ' is empty", "python3"),
        ({"workers": 3, "worker_hosts": ("a", "b", "c"), "concurrency": 2}, "for concurrency 2", "fewer hosts"),
    ],
)
def test_remote_load_generators_are_checked(more: dict[str, Any], words: str, hint: str) -> None:
    with pytest.raises(BenchError, match=words) as e:
        remote_config(**more).check()
    assert hint in (e.value.hint or "")
    remote_config().check()
    remote_config(worker_hosts=("only",), workers=1).check()  # one host, one remote load generator


def test_a_remote_command_that_does_not_exist_is_one_error() -> None:
    with pytest.raises(BenchError, match=r"^load generator 1 on h could not be started: /nonexistent/ssh: ") as e:
        fleet._Generator(1, ["/nonexistent/ssh", "h", "python3 -m autobench.bench.worker"], "h")
    assert e.value.hint == "--remote names the command that reaches a host (e.g. ssh)"


def test_the_cli_runs_one_load_generator_per_worker_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from autobench.cli.bench_options import bench_options
    from autobench.compile.cluster import DEFAULT_REMOTE

    seen: list[BenchConfig] = []

    import click

    @click.command()
    @bench_options()
    def cmd(config: BenchConfig) -> None:
        seen.append(config)

    base = ["--base-url", "http://h:1", "--model", "m", "--concurrency", "4"]
    monkeypatch.delenv("AUTOBENCH_REMOTE", raising=False)
    assert CliRunner().invoke(cmd, [*base, "--worker-host", "a", "--worker-host", "u@b"]).exit_code == 0
    assert (seen[-1].worker_hosts, seen[-1].workers, seen[-1].remote) == (("a", "u@b"), 2, DEFAULT_REMOTE)
    assert seen[-1].worker_python == "python3"
    monkeypatch.setenv("AUTOBENCH_REMOTE", "ssh -p 2222")
    assert CliRunner().invoke(cmd, [*base, "--worker-host", "a", "--worker-python", "/v/bin/python"]).exit_code == 0
    assert (seen[-1].worker_hosts, seen[-1].workers, seen[-1].remote) == (("a",), 1, "ssh -p 2222")
    assert seen[-1].worker_python == "/v/bin/python"
    assert CliRunner().invoke(cmd, [*base, "--worker-host", "a", "--remote", "rsh"]).exit_code == 0
    assert seen[-1].remote == "rsh"
    assert CliRunner().invoke(cmd, base).exit_code == 0
    assert (seen[-1].worker_hosts, seen[-1].workers) == ((), 1)
    # --workers given with hosts must agree with them (autobench.recipe.workerhosts: the rule a
    # recipe's bench.worker_hosts follows too); it is refused where the options are read
    n = len(seen)
    bad = CliRunner().invoke(cmd, [*base, "--worker-host", "a", "--worker-host", "b", "--workers", "3"])
    assert isinstance(bad.exception, UsageError) and len(seen) == n  # a usage error, exit 2
    assert str(bad.exception) == (
        "--workers: 3 load generators for 2 --worker-host hosts: one runs on each host "
        "(hint: drop --workers (it follows the hosts), or give it as 2)"
    )
    assert CliRunner().invoke(cmd, [*base, "--worker-host", "a", "--worker-host", "b", "--workers", "2"]).exit_code == 0
    assert (seen[-1].worker_hosts, seen[-1].workers) == (("a", "b"), 2)


def scripted(n: int, served: list[list[str]] | None = None, hook: Any = None) -> list[ScriptedGenerator]:
    """``n`` scripted generators, one record each; ``hook(gen)`` runs when the parent reads its
    records (the measured run is over)."""
    base = time.perf_counter()
    done = {"cap_hit": False, "cpu": 0.25, "lags": [0.001], "interrupted": False, "t0": base, "t_end": base + 1.0}
    gens = [ScriptedGenerator([row_of(rec(0, base + 0.1, 0.05))], done, 0.0) for _ in range(n)]
    for g, names in zip(gens, served or [], strict=False):
        g.script[0] = fleet.message("ready", served=names)
    if hook is not None:
        for g in gens:
            script, real_read = g.script, g.read

            def read(*expect: str, g: ScriptedGenerator = g, script: Any = script, real_read: Any = real_read) -> Any:
                if script and b'"records"' in (script[0] or b""):
                    hook(g)
                return real_read(*expect)

            g.read = read  # type: ignore[method-assign]
    return gens


def fleet_config(**more: Any) -> BenchConfig:
    settings: dict[str, Any] = {
        "base_url": "http://127.0.0.1:9", "model": "m", "num_prompts": 2, "concurrency": 2, "max_tokens": 3,
        "workers": 2, "random_input_len": 8, "tokenizer": "estimated",
    }  # fmt: skip
    return BenchConfig(**{**settings, **more})


def fleet_dataset(n: int = 2, max_tokens: int = 3) -> Any:
    from autobench.bench.datasets import load_dataset

    return load_dataset(
        kind=None, path=None, num_prompts=n, warmup=0, max_tokens=max_tokens, seed=0, min_prompt_tokens=4,
        max_prompt_tokens=1024, random_input_len=8, random_range_ratio=0.0,
    )  # fmt: skip


def test_run_fleet_itself_refuses_more_generators_than_prompts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet, "_scrape", lambda config: None)
    with pytest.raises(BenchError, match="2 prompts for 3 load generators"):
        fleet.run_fleet(
            fleet_config(workers=3, concurrency=3), fleet_dataset(2), spawn=lambda w: pytest.fail("spawned")
        )


def test_every_generator_may_stream_the_longest_answer_any_prompt_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet, "_scrape", lambda config: None)
    import dataclasses

    ds = fleet_dataset(2)
    ds.prompts[1] = dataclasses.replace(ds.prompts[1], max_tokens=40)
    gens = scripted(2)
    fleet.run_fleet(fleet_config(), ds, spawn=lambda w: gens[w])
    assert [g.sent[0]["stream_tokens"] for g in gens] == [40, 40]


def test_the_result_names_the_key_by_name_the_protocol_and_the_first_generators_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fleet, "_scrape", lambda config: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    gens = scripted(2, served=[["m"], ["other"]])
    d = fleet.run_fleet(fleet_config(), fleet_dataset(), spawn=lambda w: gens[w]).to_json_dict()
    assert d["api_key_env"] == "OPENAI_API_KEY" and d["workers"]["protocol"] == fleet.PROTOCOL_VERSION  # type: ignore[index]
    assert d["client"]["served_models"] == ["m"]
    monkeypatch.delenv("OPENAI_API_KEY")
    gens = scripted(1)
    d = fleet.run_fleet(fleet_config(workers=1), fleet_dataset(), spawn=lambda w: gens[w]).to_json_dict()
    assert d["api_key_env"] is None and d["workers"]["count"] == 1  # type: ignore[index]


def test_each_generators_clock_figures_are_in_milliseconds() -> None:
    from autobench.bench.client import prepare_dataset

    cfg = fleet_config()
    ds = prepare_dataset(cfg)
    reports = [
        Report(rows=[row_of(rec(0, 10.1, 0.05))], t0=10.0, t_end=11.0, offset=0.0, rtt=0.002),
        Report(rows=[row_of(rec(0, 1010.2, 0.05))], t0=1010.25, t_end=1011.0, offset=1000.0, rtt=0.004),
    ]
    d = fleet._result(cfg, ds, reports, [[0], [1]], [1, 1], None, None, False).to_json_dict()
    gens = d["workers"]["generators"]  # type: ignore[index]
    assert [g["clock_round_trip_ms"] for g in gens] == pytest.approx([2.0, 4.0], rel=1e-9)
    assert [g["clock_offset_ms"] for g in gens] == pytest.approx([0.0, 1e6], rel=1e-9)
    assert [g["start_ms"] for g in gens] == pytest.approx([0.0, 250.0], rel=1e-9)


def test_ctrl_c_during_the_run_waits_for_the_records_and_marks_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import signal

    scrapes: list[str] = []
    monkeypatch.setattr(fleet, "_scrape", lambda config: scrapes.append("scrape"))
    before = signal.getsignal(signal.SIGINT)
    gens = scripted(2, hook=lambda g: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C as the records come
    d = fleet.run_fleet(fleet_config(), fleet_dataset(), spawn=lambda w: gens[w]).to_json_dict()
    assert signal.getsignal(signal.SIGINT) is before  # the parent's handler is put back
    assert d["interrupted"] is True and d["completed"] == 2  # the generators reported "not interrupted"
    assert scrapes == ["scrape"]  # the closing scrape is skipped after Ctrl-C
    assert d["spec_decode_available"] is False


def test_no_scrape_when_the_counters_are_not_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    scrapes: list[str] = []
    monkeypatch.setattr(fleet, "_scrape", lambda config: scrapes.append("scrape"))
    gens = scripted(2)
    d = fleet.run_fleet(fleet_config(scrape_metrics=False), fleet_dataset(), spawn=lambda w: gens[w]).to_json_dict()
    assert scrapes == [] and d["interrupted"] is False


def test_ctrl_c_before_the_start_stops_the_parent_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    monkeypatch.setattr(fleet, "_scrape", lambda config: None)

    class Gone:
        def send(self, data: bytes) -> None:
            pass

        def read(self, *expect: str) -> dict[str, object]:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: the worker stops at once, its pipe ends
            raise BenchError("load generator 0 ended before it answered")

        def close(self) -> None:
            pass

    with pytest.raises(KeyboardInterrupt):
        fleet.run_fleet(fleet_config(), fleet_dataset(), spawn=lambda w: Gone())


def test_the_parents_scrape_reads_bad_bytes_and_refuses_a_cut_body() -> None:
    import http.server

    whole = b"# \xff not UTF-8\nvllm:spec_decode_num_drafts_total 5\n"

    class Metrics(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            cut = self.server.cut  # type: ignore[attr-defined]
            self.send_response(200)
            self.send_header("Content-Length", str(len(whole) + (1000 if cut else 0)))
            self.end_headers()
            self.wfile.write(whole)  # a cut body: 1,000 bytes short, then the connection closes
            if cut:
                self.close_connection = True

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        srv.cut = False  # type: ignore[attr-defined]
        got = fleet._scrape(BenchConfig(base_url=url, model="m"))
        assert got is not None and got.present and got.drafts == 5
        srv.cut = True  # type: ignore[attr-defined]
        assert fleet._scrape(BenchConfig(base_url=url, model="m")) is None
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("missing", ["before", "after"])
def test_one_scrape_missing_gives_no_counters_and_no_error(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    from autobench.bench.promscrape import SpecCounters

    present = SpecCounters(drafts=5.0, present=True, prefix_queries=3.0, prefix_present=True)
    answers = [None, present] if missing == "before" else [present, None]
    monkeypatch.setattr(fleet, "_scrape", lambda config: answers.pop(0))
    gens = scripted(2)
    d = fleet.run_fleet(fleet_config(), fleet_dataset(), spawn=lambda w: gens[w]).to_json_dict()
    assert answers == [] and d["spec_decode_available"] is False and d["completed"] == 2
    assert d.get("prefix_cache_queries") is None

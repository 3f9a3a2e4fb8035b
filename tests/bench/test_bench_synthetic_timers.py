"""The synthetic server's shared timers: the Ticker (chunks after the first, one loop timer per
millisecond of aim), the Spinner (first chunks spun to their exact time, one spin for all) and
the Pacer (work in slices, due chunks before the parsing of new requests).

Fake streams record when they are fired; the loop runs real callbacks whose times are already
past (no sleep, no wall-clock bound)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from autobench.bench.synthetic import SyntheticConfig, SyntheticServer, Ticker
from autobench.bench.synthetic_http import Pacer


class FakeStream:
    """What the Ticker and the Spinner touch of a ``_Stream``."""

    def __init__(self, name: str, fired: list[str], aim: float = 0.0, target: float = 0.0):
        self.name, self.fired = name, fired
        self.aim, self.target = aim, target
        self.ticking = self.spinning = False
        self.handle: Any = "timer"

    def _fire(self) -> None:
        self.fired.append(self.name)

    def _due(self) -> None:
        self.fired.append(self.name)


class WriteConn:
    """What a ``_Stream`` touches of its connection: the chunk writes it makes are kept."""

    closed = False
    on_close = None

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def start_stream(self) -> None:
        pass

    def write_chunk(self, payload: bytes) -> None:
        self.writes.append(payload)


def text_stream(srv: SyntheticServer, conn: WriteConn, n_out: int, t_arrival: float) -> Any:
    """A streamed completion of ``n_out`` tokens on ``conn``, arrived at ``t_arrival``."""
    from autobench.bench import synthetic

    return synthetic._Stream(
        srv,
        conn,  # type: ignore[arg-type]
        chat=False,
        n=1,
        n_out=n_out,
        prompt_tokens=3,
        include_usage=False,
        fault=None,
        t_arrival=t_arrival,
        stream=True,
    )


def run_until(loop: asyncio.AbstractEventLoop, done: Any) -> None:
    """Run the loop's callbacks until ``done()`` (bounded by turns, not by time); an exception in
    a callback (which the loop would only log) fails the test."""
    errors: list[Any] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))

    async def turns() -> None:
        for _ in range(10_000):
            if done():
                return
            await asyncio.sleep(0)
        raise AssertionError("callbacks did not finish")

    loop.run_until_complete(turns())
    assert errors == []


def test_ticker_shares_one_timer_per_millisecond_and_fires_in_order_of_adding() -> None:
    loop = asyncio.new_event_loop()
    try:
        fired: list[str] = []
        ticker = Ticker()
        now = time.perf_counter()
        base = round(now * 1000) / 1000 - 0.05  # a past millisecond: the timers fire at once
        streams = [
            FakeStream("a", fired, aim=base + 0.0001),
            FakeStream("b", fired, aim=base + 0.0002),  # the same millisecond as a
            FakeStream("c", fired, aim=base + 0.0031),
            FakeStream("d", fired, aim=base - 0.0002),  # the same millisecond as a and b
        ]
        armed: list[float] = []
        real_call_later = loop.call_later

        def counting(delay: float, *args: Any) -> Any:
            armed.append(delay)
            return real_call_later(delay, *args)

        loop.call_later = counting  # type: ignore[method-assign]
        asyncio.set_event_loop(loop)

        async def add_all() -> None:
            for s in streams:
                ticker.add(s, now)  # type: ignore[arg-type]
            assert all(s.ticking for s in streams)

        loop.run_until_complete(add_all())
        assert len(armed) == 2 and all(d == 0.0 for d in armed)  # two milliseconds, two timers
        run_until(loop, lambda: not ticker.buckets)
        assert fired == ["a", "b", "d", "c"]
        assert not any(s.ticking for s in streams)
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_ticker_skips_a_stream_cancelled_while_it_waited() -> None:
    loop = asyncio.new_event_loop()
    try:
        fired: list[str] = []
        ticker = Ticker()
        now = time.perf_counter()
        keep, gone = FakeStream("keep", fired, aim=now - 0.01), FakeStream("gone", fired, aim=now - 0.01)

        async def add() -> None:
            ticker.add(keep, now)  # type: ignore[arg-type]
            ticker.add(gone, now)  # type: ignore[arg-type]
            gone.ticking = False  # what _Stream.cancel does

        loop.run_until_complete(add())
        run_until(loop, lambda: not ticker.buckets)
        assert fired == ["keep"]
    finally:
        loop.close()


def test_spinner_sends_first_chunks_in_time_order_once_each_and_skips_the_cancelled() -> None:
    loop = asyncio.new_event_loop()
    try:
        fired: list[str] = []
        srv = SyntheticServer(SyntheticConfig(port=0, model="m"))
        now = time.perf_counter()
        late = FakeStream("late", fired, target=now - 0.001)
        early = FakeStream("early", fired, target=now - 0.002)
        gone = FakeStream("gone", fired, target=now - 0.003)
        soon = FakeStream("soon", fired, target=now + 0.002)  # spun to: sent after the others

        async def add() -> None:
            for s in (late, early, gone, soon):
                srv.spinner.add(s)  # type: ignore[arg-type]
            assert all(s.handle is None and s.spinning for s in (late, early, gone, soon))
            gone.spinning = False  # cancelled while it spun

        loop.run_until_complete(add())
        run_until(loop, lambda: not srv.spinner.heap and not srv.spinner.scheduled)
        assert fired == ["early", "late", "soon"]
        assert time.perf_counter() >= soon.target - 1e-5  # never before its time (less the slack)
        assert not any(s.spinning for s in (late, early, soon))
    finally:
        loop.close()


def test_spinner_keeps_the_order_of_arrival_between_first_chunks_due_at_the_same_time() -> None:
    loop = asyncio.new_event_loop()
    try:
        fired: list[str] = []
        srv = SyntheticServer(SyntheticConfig(port=0, model="m"))
        due = time.perf_counter() - 0.001
        streams = [FakeStream(name, fired, target=due) for name in ("a", "b", "c")]

        async def add() -> None:
            for s in streams:
                srv.spinner.add(s)  # type: ignore[arg-type]

        loop.run_until_complete(add())
        run_until(loop, lambda: not srv.spinner.heap and not srv.spinner.scheduled)
        assert fired == ["a", "b", "c"]
    finally:
        loop.close()


def test_one_spin_is_pending_however_many_first_chunks_wait_and_it_yields_when_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autobench.bench import synthetic

    loop = asyncio.new_event_loop()
    try:
        fired: list[str] = []
        srv = SyntheticServer(SyntheticConfig(port=0, model="m"))
        srv.spin_yield = True  # as at a raised priority
        yields: list[int] = []
        monkeypatch.setattr(synthetic.os, "sched_yield", lambda: yields.append(1))
        pending = [0, 0]  # spins scheduled now, and the most ever
        real_call_soon = loop.call_soon

        def call_soon(callback: Any, *args: Any, **kw: Any) -> Any:
            if callback == srv.spinner.spin:
                pending[0] += 1
                pending[1] = max(pending)

                def spin() -> None:
                    pending[0] -= 1
                    callback()

                return real_call_soon(spin, *args, **kw)
            return real_call_soon(callback, *args, **kw)

        loop.call_soon = call_soon  # type: ignore[method-assign]
        now = time.perf_counter()
        first = FakeStream("first", fired, target=now + 0.002)

        async def add() -> None:
            srv.spinner.add(first)  # type: ignore[arg-type]
            srv.spinner.add(FakeStream("also", fired, target=now + 0.002))  # type: ignore[arg-type]
            await asyncio.sleep(0)
            await asyncio.sleep(0)  # the spin runs (and comes back: "first" is not due yet)
            for name in ("a", "b"):  # more first chunks while it spins: no second spin
                srv.spinner.add(FakeStream(name, fired, target=now - 0.001))  # type: ignore[arg-type]

        loop.run_until_complete(add())
        run_until(loop, lambda: not srv.spinner.heap and not srv.spinner.scheduled)
        assert fired == ["a", "b", "first", "also"] and pending == [0, 1]
        assert yields  # a yield on each turn of the spin at a raised priority
        srv.spin_yield = False
        yields.clear()

        async def add_late() -> None:
            srv.spinner.add(FakeStream("late", fired, target=time.perf_counter() + 0.001))  # type: ignore[arg-type]

        loop.run_until_complete(add_late())
        run_until(loop, lambda: not srv.spinner.heap and not srv.spinner.scheduled)
        assert fired[-1] == "late" and yields == []
    finally:
        loop.close()


class FakeConn:
    """What a _Stream writes to: nothing is written after its stream was cancelled."""

    closed = False

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.on_close: Any = None

    def start_stream(self) -> None:
        pass

    def write_chunk(self, payload: bytes) -> None:
        self.written.append(payload)

    def end_stream(self, payload: bytes = b"") -> None:
        self.written.append(payload)


def test_a_stream_cancelled_while_it_waits_for_the_spinner_or_the_ticker_sends_nothing() -> None:
    from autobench.bench.synthetic import _Stream

    loop = asyncio.new_event_loop()
    try:
        srv = SyntheticServer(SyntheticConfig(port=0, model="m"))
        conns = [FakeConn(), FakeConn()]
        now = time.perf_counter()
        streams = [
            _Stream(
                srv,
                conn,
                chat=False,
                n=k,
                n_out=3,
                prompt_tokens=1,
                include_usage=False,
                fault=None,  # type: ignore[arg-type]
                t_arrival=now - 1.0,
                stream=True,
            )  # fmt: skip
            for k, conn in enumerate(conns)
        ]
        streams[1].aim = now - 1.0

        async def wait_and_cancel() -> None:
            srv.spinner.add(streams[0])
            srv.ticker.add(streams[1], now)
            for s in streams:
                s.cancel()

        loop.run_until_complete(wait_and_cancel())
        run_until(loop, lambda: not srv.spinner.heap and not srv.ticker.buckets)
        assert [c.written for c in conns] == [[], []]
    finally:
        loop.close()


def test_pacer_runs_due_chunks_before_queued_request_parsing() -> None:
    """The end of a lockstep round: C new requests to parse and the last chunks of streams still
    running, all in the same slice.  Every due chunk goes first, whenever it was queued; the
    parsing keeps its own order."""
    loop = asyncio.new_event_loop()
    try:
        ran: list[str] = []
        pacer = Pacer(budget=-1.0, gap=1e9)  # the slice never restarts and is over budget: all queue

        def unit(name: str) -> Any:
            return lambda: ran.append(name)

        async def burst() -> None:
            pacer.run(unit("chunk-0"))
            for i in range(3):
                pacer.run_later(unit(f"parse-{i}"))
            pacer.run(unit("chunk-1"))
            pacer.run(unit("chunk-2"))
            pacer.run_later(unit("parse-3"))

        loop.run_until_complete(burst())
        run_until(loop, lambda: len(ran) == 7)
        assert ran == ["chunk-0", "chunk-1", "chunk-2", "parse-0", "parse-1", "parse-2", "parse-3"]
    finally:
        loop.close()


def test_pacer_runs_work_at_once_while_the_slice_has_room_and_nothing_waits() -> None:
    loop = asyncio.new_event_loop()
    try:
        ran: list[str] = []
        pacer = Pacer(budget=10.0)

        async def calls() -> list[str]:
            pacer.run_later(lambda: ran.append("parse"))
            pacer.run(lambda: ran.append("chunk"))
            return list(ran)  # before any other callback of the loop

        assert loop.run_until_complete(calls()) == ["parse", "chunk"]
        assert not pacer.scheduled
    finally:
        loop.close()


def test_pacer_queues_parsing_behind_waiting_parsing_even_with_room() -> None:
    """A parse never overtakes one already queued (a connection's requests keep their order)."""
    loop = asyncio.new_event_loop()
    try:
        ran: list[str] = []
        pacer = Pacer(budget=-1.0, gap=1e9)

        async def calls() -> None:
            pacer.run(lambda: ran.append("chunk"))
            pacer.run_later(lambda: ran.append("parse-0"))  # over budget: queued
            pacer.budget = 10.0  # room again, but parse-0 waits
            pacer.run_later(lambda: ran.append("parse-1"))
            assert ran == []

        loop.run_until_complete(calls())
        run_until(loop, lambda: len(ran) == 3)
        assert ran == ["chunk", "parse-0", "parse-1"]
    finally:
        loop.close()


def test_the_timer_error_is_measured_when_the_chunk_is_sent_not_when_its_timer_fired(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chunk whose timer fired on time but that waited 3 ms in the pacer's queue was sent
    3 ms late: the server's tracked lateness (``overshoot``, how early it aims) must grow, so
    that later chunks are aimed earlier.  Measured at the timer it would shrink (the timer was
    on time) and every chunk would keep going out late."""
    from autobench.bench import synthetic, synthetic_http

    clock = [1000.0]
    monkeypatch.setattr(synthetic.time, "perf_counter", lambda: clock[0])
    assert synthetic_http.time.perf_counter() == 1000.0  # the pacer reads the same clock
    loop = asyncio.new_event_loop()
    try:
        srv = SyntheticServer(SyntheticConfig(port=0, model="m"))
        srv.pacer.budget, srv.pacer.gap = -1.0, 1e9  # every unit waits in the queue
        before = srv.overshoot
        sent: list[int] = []

        class Stream(FakeStream):
            _send_due = synthetic._Stream._send_due
            _fire = synthetic._Stream._fire

            def _due(self) -> None:
                sent.append(1)

        streams = [Stream(str(i), [], aim=clock[0]) for i in range(40)]
        for s in streams:
            s.srv = srv  # type: ignore[attr-defined]

        async def fire_all() -> None:
            for s in streams:
                s._fire()  # the timers fire on time
            assert sent == []

        loop.run_until_complete(fire_all())
        clock[0] += 0.003  # the queue is run 3 ms later
        run_until(loop, lambda: len(sent) == 40)
        assert srv.overshoot > before + 0.001
    finally:
        loop.close()


def test_the_first_chunk_never_leaves_early_however_late_the_server_aims_the_others() -> None:
    """At arrival the stream sends what is due; ``overshoot`` (how early later chunks are aimed)
    must not send the first chunk before ``ttft``: with the tracked lateness at its 5 ms cap and
    a 5 ms TTFT, the first chunk went out at arrival."""

    srv = SyntheticServer(SyntheticConfig(port=0, model="m", ttft_ms=5.0, itl_ms=1.0))
    srv.overshoot = 0.005
    conn = WriteConn()
    loop = asyncio.new_event_loop()
    try:

        async def arrive() -> None:
            s = text_stream(srv, conn, 4, time.perf_counter())
            s.begin()
            assert conn.writes == []  # nothing at arrival: the first chunk is 5 ms away
            s.cancel()

        loop.run_until_complete(arrive())
    finally:
        loop.close()


class PacerClock:
    """A fake ``perf_counter`` for the pacer: each unit of work advances it by ``step`` and
    records the start of the slice it ran in."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, step: float):
        from autobench.bench import synthetic_http

        self.now, self.step = 1000.0, step
        self.slice_of: dict[str, float] = {}
        monkeypatch.setattr(synthetic_http.time, "perf_counter", lambda: self.now)

    def unit(self, pacer: Pacer, ran: list[str], name: str) -> Any:
        def work() -> None:
            ran.append(name)
            self.slice_of[name] = pacer.start
            self.now += self.step

        return work

    def slices(self, ran: list[str]) -> list[list[str]]:
        out: list[list[str]] = []
        for name in ran:
            if out and self.slice_of[out[-1][-1]] == self.slice_of[name]:
                out[-1].append(name)
            else:
                out.append([name])
        return out


@dataclass
class PacerRig:
    """A pacer on a fake clock and a fresh event loop (closed after the test)."""

    clock: PacerClock
    loop: asyncio.AbstractEventLoop
    pacer: Pacer
    ran: list[str]


@pytest.fixture
def pacer_rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[PacerRig]:
    loop = asyncio.new_event_loop()
    try:
        yield PacerRig(PacerClock(monkeypatch, step=1e-4), loop, Pacer(), [])
    finally:
        loop.close()


def drain(loop: asyncio.AbstractEventLoop, pacer: Pacer) -> None:
    run_until(loop, lambda: not (pacer.queue or pacer.later or pacer.scheduled))


def test_pacer_slices_a_burst_at_its_budget_and_resumes_after_a_poll(pacer_rig: PacerRig) -> None:
    """0.3 ms slices of 0.1 ms units: four units a slice (the fourth ends at the budget, not
    over it), the rest after the loop polled, in order, due chunks before parsing."""
    clock, loop, ran = pacer_rig.clock, pacer_rig.loop, pacer_rig.ran
    pacer = pacer_rig.pacer  # budget 0.3 ms, gap 0.05 ms

    async def burst() -> None:
        clock.now += 1.0  # long idle: a new slice
        for i in range(5):
            pacer.run_later(clock.unit(pacer, ran, f"p{i}"))
        for i in range(5):
            pacer.run(clock.unit(pacer, ran, f"c{i}"))
        assert ran == ["p0", "p1", "p2", "p3"]  # at once, until the slice was over budget
        assert pacer.scheduled

    loop.run_until_complete(burst())
    drain(loop, pacer)
    assert clock.slices(ran) == [["p0", "p1", "p2", "p3"], ["c0", "c1", "c2", "c3"], ["c4", "p4"]]


def test_pacer_parsing_alone_is_sliced_too_and_a_quiet_gap_starts_a_new_slice(pacer_rig: PacerRig) -> None:
    clock, loop, ran = pacer_rig.clock, pacer_rig.loop, pacer_rig.ran
    pacer = pacer_rig.pacer

    async def burst() -> None:
        clock.now += 1.0
        for i in range(9):
            pacer.run_later(clock.unit(pacer, ran, f"p{i}"))

    loop.run_until_complete(burst())
    drain(loop, pacer)
    assert clock.slices(ran) == [["p0", "p1", "p2", "p3"], ["p4", "p5", "p6", "p7"], ["p8"]]

    async def later_work() -> None:
        clock.now += 4e-5  # within the gap: p8's slice, 0.14 ms old
        pacer.run(clock.unit(pacer, ran, "a"))
        pacer.run(clock.unit(pacer, ran, "b"))  # 0.24 ms: still room
        pacer.run(clock.unit(pacer, ran, "c"))  # 0.34 ms: over budget, queued
        assert ran[-2:] == ["a", "b"] and len(pacer.queue) == 1

    loop.run_until_complete(later_work())
    drain(loop, pacer)

    async def after_a_gap() -> None:
        clock.now += 6e-5  # idle longer than the gap: a new slice, at once
        pacer.run(clock.unit(pacer, ran, "d"))
        assert ran[-1] == "d" and not pacer.queue

    loop.run_until_complete(after_a_gap())
    assert clock.slices(ran)[2:] == [["p8", "a", "b"], ["c"], ["d"]]


def test_pacer_queues_parsing_behind_parsing_left_over_from_a_slice(pacer_rig: PacerRig) -> None:
    """The due chunks are done but parsing is left from the last slice: a new parse waits behind
    it (a connection's requests keep their order), and one resume is pending, not two."""
    clock, loop, ran = pacer_rig.clock, pacer_rig.loop, pacer_rig.ran
    pacer = pacer_rig.pacer
    soon: list[Any] = []
    real_call_soon = loop.call_soon

    def call_soon(callback: Any, *args: Any, **kw: Any) -> Any:
        soon.append(callback)
        return real_call_soon(callback, *args, **kw)

    loop.call_soon = call_soon  # type: ignore[method-assign]

    async def burst() -> None:
        clock.now += 1.0
        for i in range(6):
            pacer.run_later(clock.unit(pacer, ran, f"p{i}"))
        clock.now += 1e-3  # the loop polled: the slice would have room again
        assert not pacer.queue and list(pacer.later)
        pacer.run_later(clock.unit(pacer, ran, "p6"))
        assert ran == ["p0", "p1", "p2", "p3"]
        assert soon.count(pacer._resume) == 1

    loop.run_until_complete(burst())
    drain(loop, pacer)
    assert ran == [f"p{i}" for i in range(7)]


def test_pacer_boundaries_exactly_at_the_budget_and_the_gap(pacer_rig: PacerRig) -> None:
    """Binary fractions, so the clock's sums are exact: a slice exactly at its budget still has
    room, a pause exactly as long as the gap keeps the slice, and a resume that empties the
    queues over budget schedules nothing more."""
    clock, loop, ran = pacer_rig.clock, pacer_rig.loop, pacer_rig.ran
    clock.step = 2**-12
    clock.now = 1024.0
    pacer = Pacer(budget=2**-11, gap=2**-13)  # two steps a slice
    resumes: list[Any] = []
    real_call_soon = loop.call_soon

    def call_soon(callback: Any, *args: Any, **kw: Any) -> Any:
        if callback == pacer._resume:
            resumes.append(1)
        return real_call_soon(callback, *args, **kw)

    loop.call_soon = call_soon  # type: ignore[method-assign]

    async def burst() -> None:
        clock.now += 1.0
        for name in ("a", "b", "c"):  # a at 0, b at 1 step, c at 2 steps = the budget: runs
            pacer.run(clock.unit(pacer, ran, name))
        assert ran == ["a", "b", "c"]
        pacer.run(clock.unit(pacer, ran, "d"))  # 3 steps: over, queued
        for name in ("e", "f"):
            pacer.run(clock.unit(pacer, ran, name))
        assert ran == ["a", "b", "c"]

    loop.run_until_complete(burst())
    drain(loop, pacer)
    # the resume ran d, e, f (f started at exactly the budget), emptied the queue over
    # budget, and scheduled no other resume
    assert clock.slices(ran) == [["a", "b", "c"], ["d", "e", "f"]] and len(resumes) == 1

    async def pause(gap: float, name: str, at_once: bool) -> None:
        clock.now += gap
        pacer.run(clock.unit(pacer, ran, name))
        assert (ran[-1] == name) is at_once

    loop.run_until_complete(pause(2**-13, "g", False))  # exactly the gap: f's slice, over budget
    drain(loop, pacer)
    loop.run_until_complete(pause(2**-13 + 2**-20, "h", True))  # longer than the gap: a new slice


def test_pacer_parsing_never_overtakes_a_queued_chunk_after_a_poll(pacer_rig: PacerRig) -> None:
    """Chunks wait in the queue for the next slice; the loop polled (longer than the gap) and
    a request came in: its parsing waits behind the chunks, though the slice would have room."""
    clock, loop, ran = pacer_rig.clock, pacer_rig.loop, pacer_rig.ran
    pacer = pacer_rig.pacer

    async def burst() -> None:
        clock.now += 1.0
        for i in range(5):
            pacer.run(clock.unit(pacer, ran, f"c{i}"))
        assert ran == ["c0", "c1", "c2", "c3"] and len(pacer.queue) == 1
        clock.now += 1e-3  # the loop polled
        pacer.run_later(clock.unit(pacer, ran, "parse"))
        assert ran == ["c0", "c1", "c2", "c3"]

    loop.run_until_complete(burst())
    drain(loop, pacer)
    assert ran[4:] == ["c4", "parse"]


def test_the_tracked_lateness_moves_by_the_stochastic_median_steps_and_stays_in_its_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``overshoot`` (how early later chunks are aimed): 40 µs steps for the first 32 chunks,
    then 5 µs, up when a chunk went out later than the current estimate, down otherwise (also
    when exactly equal), never beyond -2 ms .. +5 ms."""
    from autobench.bench import synthetic

    clock = [1024.0]
    monkeypatch.setattr(synthetic.time, "perf_counter", lambda: clock[0])
    srv = SyntheticServer(SyntheticConfig(port=0, model="m"))
    sent: list[int] = []

    class Stream(FakeStream):
        _send_due = synthetic._Stream._send_due

        def _due(self) -> None:
            sent.append(1)

    def send(lateness: float, times: int) -> None:
        for _ in range(times):
            s = Stream("s", [], aim=clock[0] - lateness)
            s.srv = srv  # type: ignore[attr-defined]
            s._send_due()

    start = srv.overshoot
    send(0.003, 40)  # 3 ms late, 40 chunks: 32 coarse steps up, then 8 fine ones
    assert srv.overshoot == pytest.approx(start + 32 * 8 * synthetic.TIMER_STEP + 8 * synthetic.TIMER_STEP, abs=1e-12)
    assert len(sent) == 40
    srv.overshoot = 2**-10
    send(2**-10, 1)  # exactly the estimate: a step down
    assert srv.overshoot == pytest.approx(2**-10 - synthetic.TIMER_STEP, abs=1e-12)
    send(1.0, 2000)
    assert srv.overshoot == 0.005
    send(-1.0, 2000)
    assert srv.overshoot == -0.002


def test_a_timer_that_fires_early_still_sends_its_chunk_and_chunks_already_due_go_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Binary-fraction times so the comparisons are exact (ttft 125 ms, itl 62.5 ms, the tracked
    lateness 1/64 s).  A chunk whose timer fired is sent even if the clock is a little short
    of its time (an early timer is not re-armed); a later chunk whose aim (time - lateness) has
    come, exactly, goes in the same write."""
    from autobench.bench import synthetic

    clock = [1024.0]
    monkeypatch.setattr(synthetic.time, "perf_counter", lambda: clock[0])
    srv = SyntheticServer(SyntheticConfig(port=0, model="m", ttft_ms=125.0, itl_ms=62.5))
    conn = WriteConn()
    writes = conn.writes
    loop = asyncio.new_event_loop()
    try:

        async def stream() -> None:
            s = text_stream(srv, conn, 8, 1024.0)
            s.begin()
            assert writes == []
            srv.overshoot = 2**-6
            clock[0] = 1024.125 - 2**-12  # the first chunk's timer, a little early
            s._due()
            assert [w.count(b"data: ") for w in writes] == [1]
            clock[0] = 1024.25 - 2**-6  # chunk 1 (due at 1024.1875) late; chunk 2's aim exactly now
            s._due()
            assert [w.count(b"data: ") for w in writes] == [1, 2]
            s.cancel()

        loop.run_until_complete(stream())
    finally:
        loop.close()

"""The callback-driven closed loop (autobench.bench.closedloop) and the transport's ``after`` hook:
the next request is written right after the bytes that ended the previous one, before the
rest of the poll's batch is parsed; each request is due when its slot came free."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from autobench.bench.closedloop import ClosedLoop
from autobench.bench.record import ERROR, INFLIGHT, OK, RequestRecord
from autobench.bench.stream import StreamSink
from autobench.bench.transport import Conn, Inbox, Pool

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
BODY = (
    b'data: {"choices":[{"index":0,"text":"a","finish_reason":"length"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n'
    b"data: [DONE]\n\n"
)


class FakeTransport(asyncio.Transport):
    def __init__(self, log: list[str], name: str):
        super().__init__()
        self.log, self.name = log, name

    def write(self, data: Any) -> None:
        self.log.append(f"write {self.name}")

    def close(self) -> None:
        self.log.append(f"close {self.name}")

    def abort(self) -> None:
        self.log.append(f"abort {self.name}")


class LogSink:
    def __init__(self, log: list[str], name: str):
        self.log, self.name = log, name

    def on_head(self, status: int) -> None:
        pass

    def on_body(self, data: bytes, now: float) -> bool:
        return True

    def on_end(self, now: float) -> None:
        self.log.append(f"end {self.name} at {now}")

    def on_lost(self, exc: BaseException | None, got_head: bool) -> None:
        self.log.append(f"lost {self.name}")


def test_a_response_end_calls_after_before_the_next_socket_is_parsed() -> None:
    loop = asyncio.new_event_loop()
    try:
        inbox = Inbox(loop)
        log: list[str] = []
        conns = {}
        for name in ("a", "b"):
            conn = Conn(loop, inbox)
            conn.connection_made(FakeTransport(log, name))
            conns[name] = conn

        def after(conn: Conn) -> None:
            name = "a" if conn is conns["a"] else "b"
            log.append(f"after {name} idle={conn.idle}")
            conn.start(b"next", LogSink(log, name + "2"), None)  # the next request, written at once

        for name, conn in conns.items():
            conn.start(b"req", LogSink(log, name), after)
        log.clear()
        one = RESPONSE % (len(BODY), BODY)
        inbox.items = [(conns["a"], one, 1.0), (conns["b"], one, 2.0)]  # one poll's batch, stamped
        inbox.flush()
        assert log == ["end a at 1.0", "after a idle=True", "write a", "end b at 2.0", "after b idle=True", "write b"]
        assert inbox.later == [] and conns["a"].sink is not None  # a's next request is in flight
        # send()'s future path still works and calls no after
        fut = conns["b"].send(b"x", LogSink(log, "b3")) if conns["b"].sink is None else None
        assert fut is None  # b is busy with its next request
    finally:
        loop.close()


def test_a_lost_connection_calls_after_once_and_abort_never() -> None:
    loop = asyncio.new_event_loop()
    try:
        inbox = Inbox(loop)
        log: list[str] = []
        conn = Conn(loop, inbox)
        conn.connection_made(FakeTransport(log, "a"))
        calls: list[bool] = []
        conn.start(b"req", LogSink(log, "a"), lambda c: calls.append(c.closed))
        conn.connection_lost(None)  # before any response byte
        assert calls == [True] and "lost a" in log
        other = Conn(loop, inbox)
        other.connection_made(FakeTransport(log, "b"))
        other.start(b"req", LogSink(log, "b"), lambda c: calls.append(False))
        other.abort()  # a cancelled request: no after, no sink
        other.connection_lost(None)
        assert calls == [True] and inbox.later == []
    finally:
        loop.close()


COMPLETION = b'{"model":"m","prompt":"hi there","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}'


def run_loop(url: str, n: int, conc: int, **kw: Any) -> tuple[list[RequestRecord], Pool, float]:
    records: list[RequestRecord] = []

    problems: list[dict[str, Any]] = []

    async def main() -> tuple[Pool, float]:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: problems.append(context))
        pool = Pool(url, 5.0)
        await pool.prefill(conc)
        tokens = kw.pop("max_tokens", 3)
        sink: Callable[[RequestRecord], StreamSink] = kw.pop("make_sink", None) or (
            lambda r: StreamSink(r, chat=False, allow_missing_usage=False, max_tokens=max(8, tokens))
        )
        body = COMPLETION.replace(b'"max_tokens":3', b'"max_tokens":%d' % tokens)
        loop = ClosedLoop(
            pool=pool,
            bodies=[pool.request_bytes("POST", "/v1/completions", body)] * n,
            prompt_tokens=[2] * n,
            records=records,
            conc=conc,
            make_sink=sink,
            read_timeout=kw.pop("read_timeout", 5.0),
            **kw,
        )
        t0 = time.perf_counter() - 0.001  # due a millisecond ago
        await loop.run(t0)
        assert not loop._inflight  # every request ended or was dropped: none is left behind
        assert all(not c.closed for c in pool.all)  # a dropped connection is forgotten, not kept
        pool.close()
        for _ in range(5):  # a few turns of the loop: late callbacks of closed connections run
            await asyncio.sleep(0)
        return pool, t0

    pool, t0 = asyncio.run(main())
    assert problems == []  # no exception in any callback (a dropped connection ending later, say)
    return records, pool, t0


def test_every_request_is_due_when_its_slot_came_free(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    done: list[int] = []
    records, _, t0 = run_loop(srv.base_url, 7, 3, done=lambda r: done.append(r.index))
    assert [r.status for r in records] == [OK] * 7 and sorted(r.index for r in records) == list(range(7))
    assert sorted(done) == list(range(7))
    assert [r.scheduled for r in records[:3]] == [t0] * 3  # the first C at the start
    # every later one was due exactly when an earlier request ended: one per ended request
    ends = Counter(r.end for r in records)
    later = Counter(r.scheduled for r in records[3:])
    assert all(ends[t] >= k for t, k in later.items()) and sum(later.values()) == 4
    for r in records:
        assert r.end is not None and r.scheduled <= r.dispatch <= r.start < r.end and r.watchdog is None


def test_fewer_prompts_than_slots_and_none() -> None:
    records, _, _ = run_loop("http://127.0.0.1:9", 0, 4)
    assert records == []


def test_stopped_sends_nothing_more(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    finished: list[int] = []
    records, _, _ = run_loop(
        srv.base_url, 10, 2, done=lambda r: finished.append(r.index), stopped=lambda: bool(finished)
    )
    # the two first were sent before anything finished; after that, nothing new
    assert len(records) == 2 and [r.status for r in records] == [OK, OK]


def test_a_read_timeout_fails_the_request_and_the_slot_goes_on(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1, stall_rate=1.0, stall_seconds=30)
    records, pool, _ = run_loop(srv.base_url, 3, 2, read_timeout=0.05)
    assert [(r.status, r.error_kind) for r in records] == [(ERROR, "timeout")] * 3
    assert records[0].error_message == "no response head or SSE data event for 0.05 s"
    assert all(r.timed_out and r.end is not None for r in records)
    assert pool.all == set()  # timed-out connections were dropped, the rest closed


def watch_timers(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.TimerHandle]:
    """Every read-timeout timer the closed loop arms (the standard library's loop)."""
    armed: list[asyncio.TimerHandle] = []
    real = asyncio.BaseEventLoop.call_later

    def call_later(self: Any, delay: float, callback: Any, *args: Any, **kw: Any) -> asyncio.TimerHandle:
        handle = real(self, delay, callback, *args, **kw)
        if getattr(callback, "__name__", "") == "_idle_check":
            armed.append(handle)
        return handle

    monkeypatch.setattr(asyncio.BaseEventLoop, "call_later", call_later)
    return armed


def test_cancelling_drops_the_requests_in_flight(synth: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = synth(ttft_ms=1, itl_ms=1, stall_rate=1.0, stall_seconds=30)
    records: list[RequestRecord] = []
    armed = watch_timers(monkeypatch)

    connecting: list[asyncio.Future[Conn]] = []
    opened: list[Conn] = []

    async def main() -> Pool:
        pool = Pool(srv.base_url, 5.0)
        await pool.prefill(1)  # the second slot has to connect (a task): cancelled too
        opened.extend(pool.all)

        async def never_connects() -> Conn:
            connecting.append(asyncio.get_running_loop().create_future())
            return await connecting[-1]

        pool.acquire = never_connects  # type: ignore[method-assign]
        loop = ClosedLoop(
            pool=pool,
            bodies=[pool.request_bytes("POST", "/v1/completions", COMPLETION)] * 4,
            prompt_tokens=[1] * 4,
            records=records,
            conc=2,
            make_sink=lambda r: StreamSink(r, chat=False, allow_missing_usage=False),
            read_timeout=30.0,
        )
        task = asyncio.ensure_future(loop.run())
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not loop._inflight and all(r.watchdog is None for r in records)
        assert armed and all(h.cancelled() for h in armed)  # no read timeout left to fire
        await asyncio.sleep(0)  # one turn of the loop: the connecting task takes its cancellation
        assert len(connecting) == 1 and connecting[0].cancelled()
        return pool

    pool = asyncio.run(main())
    assert len(records) == 2 and all(r.status == INFLIGHT and r.watchdog is None for r in records)
    assert pool.all == set() and len(opened) == 1 and opened[0].closed  # dropped, and forgotten


def test_every_finished_requests_timer_is_cancelled(synth: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timer left armed after its request ended would fire later and fail that request (and drop
    its connection, by then another request's) as a timeout."""
    armed = watch_timers(monkeypatch)
    srv = synth(ttft_ms=1, itl_ms=1)
    records, _, _ = run_loop(srv.base_url, 9, 2)
    assert [r.status for r in records] == [OK] * 9
    assert len(armed) == 9 and all(h.cancelled() for h in armed)


def test_a_stream_that_keeps_coming_is_not_a_timeout(synth: Any) -> None:
    """The read timeout counts time without progress, not the request's age: 16 chunks 25 ms apart
    (0.4 s) with a 0.25 s timeout finish; the timer re-arms itself from the last progress."""
    srv = synth(ttft_ms=5, itl_ms=25)
    records, _, _ = run_loop(srv.base_url, 2, 2, read_timeout=0.25, max_tokens=16)
    assert [(r.status, r.n_chunks) for r in records] == [(OK, 16), (OK, 16)]


def test_a_bug_in_the_loop_ends_the_run_with_it(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    made: list[int] = []

    def sink(r: RequestRecord) -> StreamSink:
        made.append(r.index)
        if len(made) > 2:
            raise RuntimeError("a bug in the sink")
        return StreamSink(r, chat=False, allow_missing_usage=False)

    with pytest.raises(RuntimeError, match="a bug in the sink"):
        run_loop(srv.base_url, 5, 2, make_sink=sink)

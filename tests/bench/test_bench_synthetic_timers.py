"""The synthetic server's shared timers: the Ticker (chunks after the first, one loop timer per
millisecond of aim) and the Spinner (first chunks spun to their exact time, one spin for all).

Fake streams record when they are fired; the loop runs real callbacks whose times are already
past (no sleep, no wall-clock bound)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from autobench.bench.synthetic import SyntheticConfig, SyntheticServer, Ticker


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


def run_until(loop: asyncio.AbstractEventLoop, done: Any) -> None:
    """Run the loop's callbacks until ``done()`` (bounded by turns, not by time)."""

    async def turns() -> None:
        for _ in range(10_000):
            if done():
                return
            await asyncio.sleep(0)
        raise AssertionError("callbacks did not finish")

    loop.run_until_complete(turns())


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

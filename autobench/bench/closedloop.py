"""The closed loop, driven from the transport's callbacks: no task, no future per request.

``C`` slots; each takes the next prompt, writes it, and when its response has ended (or
failed) takes the next one *from the callback that parsed the end* (``Conn.start``'s
``after``, called by the :class:`autobench.bench.transport.Inbox` right after those bytes),
so the next request is written before the rest of the poll's batch is parsed.  The first C
requests are written in one tight loop at the start.

Why (issue #34, measured in docs/bench.md, "Load at scale"): with one task per worker, a
burst of C streams ending in one poll was parsed whole, then the C tasks woke one by one and
each wrote its next request: at C = 1,024 the last request left ~100 ms after its worker
was free (dispatch delay p99), while the client used a fraction of a core.

A slot whose connection is gone (the server closed it) opens a new one in a task (the only
asynchronous path); a connection that cannot be opened fails that request (``connect``) and
the slot goes on.  The read timeout is one timer per request, re-armed lazily
(``RequestRecord.io``); when it fires the connection is dropped and the request counts as a
``timeout``.  Cancelling :meth:`ClosedLoop.run` (the time cap's grace ran out, Ctrl-C)
drops every connection in flight; their requests stay in flight (the caller counts them
incomplete).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence

from autobench.bench.record import RequestRecord
from autobench.bench.transport import Conn, ConnectFailed, Pool, Sink


class ClosedLoop:
    """``conc`` slots sending ``bodies`` in order; records appended to ``records``.

    ``make_sink(rec)`` builds the response reader of a request; ``stopped()`` is asked before
    each new request (the time cap); ``done(rec)`` is told of each request that finished.
    """

    def __init__(
        self,
        *,
        pool: Pool,
        bodies: Sequence[bytes],
        prompt_tokens: Sequence[int],
        records: list[RequestRecord],
        conc: int,
        make_sink: Callable[[RequestRecord], Sink],
        read_timeout: float,
        stopped: Callable[[], bool] = lambda: False,
        done: Callable[[RequestRecord], None] | None = None,
    ):
        self.pool = pool
        self.bodies = bodies
        self.prompt_tokens = prompt_tokens
        self.records = records
        self.conc = min(conc, len(bodies))
        self.make_sink = make_sink
        self.read_timeout = read_timeout
        self.stopped = stopped
        self.done = done
        self._it: Iterator[int] = iter(range(len(bodies)))
        self._inflight: dict[Conn, RequestRecord] = {}
        self._connecting: set[asyncio.Task[None]] = set()
        self._slots = 0
        self._finished: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self, t_start: float | None = None) -> None:
        """Send every body (or until ``stopped()``); ``t_start``: when the first C are due
        (perf_counter; default now)."""
        loop = self._loop = asyncio.get_running_loop()
        finished = self._finished = loop.create_future()
        due = time.perf_counter() if t_start is None else t_start
        self._slots = self.conc
        if self._slots == 0:
            return
        for _ in range(self.conc):
            self._next(due)
        try:
            await finished
        except asyncio.CancelledError:
            self._drop_all()
            raise

    # ---- one slot -----------------------------------------------------------------
    def _next(self, due: float) -> None:
        """The slot is free since ``due``: send its next request, or end the slot."""
        i = next(self._it, None) if not self.stopped() else None
        if i is None:
            self._slots -= 1
            if self._slots == 0 and self._finished is not None and not self._finished.done():
                self._finished.set_result(None)
            return
        rec = RequestRecord(i, self.prompt_tokens[i])
        rec.scheduled = due
        self.records.append(rec)
        rec.dispatch = rec.start = rec.io = time.perf_counter()
        conn = self.pool.take_idle()
        if conn is None:  # the server closed it: open another, off the hot path
            task = asyncio.ensure_future(self._connect_and_write(rec))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)
            return
        self._write(conn, rec)

    def _write(self, conn: Conn, rec: RequestRecord) -> None:
        assert self._loop is not None
        sink = self.make_sink(rec)
        rec.watchdog = self._loop.call_later(self.read_timeout, self._idle_check, rec, conn)
        self._inflight[conn] = rec
        rec.start = rec.io = time.perf_counter()  # the request reaches the kernel right after
        conn.start(self.bodies[rec.index], sink, self._ended)

    async def _connect_and_write(self, rec: RequestRecord) -> None:
        try:
            conn = await self.pool.acquire()
        except ConnectFailed as exc:
            rec.fail("connect", str(exc))
            self._finish(rec)
            return
        rec.start = rec.io = time.perf_counter()
        self._write(conn, rec)

    def _ended(self, conn: Conn) -> None:
        """The response on ``conn`` ended or failed (called right after its last bytes)."""
        rec = self._inflight.pop(conn)
        if rec.watchdog is not None:
            rec.watchdog.cancel()
            rec.watchdog = None
        self.pool.release(conn)
        self._finish(rec)

    def _finish(self, rec: RequestRecord) -> None:
        if rec.end is None:
            rec.end = time.perf_counter()
        if self.done is not None:
            self.done(rec)
        try:
            self._next(rec.end)
        except Exception as exc:  # a bug here must end the run, not vanish in a callback
            if self._finished is not None and not self._finished.done():
                self._finished.set_exception(exc)

    def _idle_check(self, rec: RequestRecord, conn: Conn) -> None:
        """The read timeout (as ``autobench.bench.client``'s): after ``read_timeout`` seconds
        without progress the connection is dropped and the request is a ``timeout``."""
        assert self._loop is not None
        left = self.read_timeout - (time.perf_counter() - rec.io)
        if left > 1e-3:
            rec.watchdog = self._loop.call_later(left, self._idle_check, rec, conn)
            return
        rec.watchdog = None
        rec.timed_out = True
        self._inflight.pop(conn, None)
        conn.abort()
        self.pool.discard(conn)
        rec.fail("timeout", f"no response head or SSE data event for {self.read_timeout:g} s")
        self._finish(rec)

    def _drop_all(self) -> None:
        """Cancelled: drop every connection in flight (its request stays in flight)."""
        for task in list(self._connecting):
            task.cancel()
        for conn, rec in list(self._inflight.items()):
            if rec.watchdog is not None:
                rec.watchdog.cancel()
                rec.watchdog = None
            conn.abort()
            self.pool.discard(conn)
        self._inflight.clear()

"""A lean HTTP/1.1 server connection for the synthetic server (an ``asyncio.Protocol``).

Just enough HTTP for a benchmark stand-in, so the server costs a few microseconds
per request and per chunk instead of a web framework's tens: request line,
``Content-Length`` or chunked bodies, keep-alive (HTTP/1.1 default,
``Connection: close`` honoured, HTTP/1.0 closes unless ``keep-alive``), one
request at a time per connection (pipelined requests wait in the buffer), fixed
responses with ``Content-Length`` and streamed responses with chunked
transfer encoding.  The arrival time of a request is ``time.perf_counter()`` at
the ``data_received`` call that brought its first unparsed bytes (the earliest
moment Python sees it); parsing runs right after, from ``call_soon``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable
from http import HTTPStatus

MAX_HEAD = 65536
MAX_BODY = 64 * 2**20

_REASONS = {s.value: s.phrase for s in HTTPStatus}

# dispatch(conn, method, path, body, t_arrival) -> None; the handler answers through conn.
Dispatch = Callable[["HttpConn", str, str, bytes, float], None]


class Pacer:
    """Runs units of work in slices of at most ``budget`` seconds, letting the loop poll between.

    A burst (C requests arriving together, C chunks due in the same millisecond) would
    otherwise run as one long stretch of callbacks during which no socket is read, so
    requests arriving meanwhile would be stamped late.  A unit that finds the current
    slice over budget is queued (in order, behind any queued unit) and run from
    ``call_soon`` after the next poll.  A slice starts afresh when the previous unit
    ended more than ``gap`` seconds ago (the loop was idle or polling in between).

    Two queues: chunks whose time has come (:meth:`run`) go before the parsing of new
    requests (:meth:`run_later`).  A request's arrival is stamped when its bytes are read,
    and its first chunk is due ``ttft`` after that, so parsing it a few milliseconds later
    moves no time the server reports; a chunk sent late is a late token.  In one queue, the
    end of a lockstep round put the parsing of up to C new requests (~20 us each) in front
    of the last chunks of the streams still running, which then left 5-12 ms late at
    C = 1,024 (docs/bench.md, "Load at scale").  Past the server's capacity new requests
    wait (their TTFT grows), as in vLLM, whose scheduler serves the running requests first
    (``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``).
    """

    __slots__ = ("budget", "gap", "start", "last", "queue", "later", "scheduled")

    def __init__(self, budget: float = 3e-4, gap: float = 5e-5):
        self.budget = budget
        self.gap = gap
        self.start = 0.0
        self.last = 0.0
        self.queue: deque[Callable[[], None]] = deque()  # due chunks
        self.later: deque[Callable[[], None]] = deque()  # request parsing, after every due chunk
        self.scheduled = False

    def run(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` now if the slice has room and no due unit waits, else queue it."""
        if self.queue:
            self.queue.append(fn)
            return
        self._now_or(fn, self.queue)

    def run_later(self, fn: Callable[[], None]) -> None:
        """As :meth:`run`, but behind every unit of :meth:`run`, queued or yet to come."""
        if self.queue or self.later:
            self.later.append(fn)  # a queued unit has its resume scheduled already
            return
        self._now_or(fn, self.later)

    def _now_or(self, fn: Callable[[], None], queue: deque[Callable[[], None]]) -> None:
        now = time.perf_counter()
        if now - self.last > self.gap:
            self.start = now
        elif now - self.start > self.budget:
            queue.append(fn)
            self._schedule()
            return
        fn()
        self.last = time.perf_counter()

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._resume)

    def _resume(self) -> None:
        self.scheduled = False
        q, later = self.queue, self.later
        self.start = time.perf_counter()
        while q or later:
            (q or later).popleft()()
            self.last = time.perf_counter()
            if (q or later) and self.last - self.start > self.budget:
                self._schedule()
                return


class HttpConn(asyncio.Protocol):
    """One client connection.  The handler answers with ``respond`` or ``start_stream`` /
    ``write_chunk`` / ``end_stream`` (or ``abort``); then the next request is parsed."""

    __slots__ = (
        "dispatch",
        "conns",
        "pacer",
        "transport",
        "buf",
        "busy",
        "keep_alive",
        "closed",
        "on_close",
        "head",
        "t_read",
        "headers",
    )

    def __init__(self, dispatch: Dispatch, conns: set[HttpConn] | None = None, pacer: Pacer | None = None):
        self.dispatch = dispatch
        self.conns = conns
        self.pacer = pacer
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy = False
        self.keep_alive = True
        self.closed = False
        self.on_close: Callable[[], None] | None = None  # the active stream's cleanup
        self.head = b""  # stream headers not written yet
        self.t_read = 0.0  # arrival of unparsed bytes, when a parse is scheduled
        self.headers: dict[str, str] = {}  # the request being answered (names lower-case)

    # ---- asyncio.Protocol ------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.conns is not None:
            self.conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.conns is not None:
            self.conns.discard(self)
        cb, self.on_close = self.on_close, None
        if cb is not None:
            cb()

    def data_received(self, data: bytes) -> None:
        """Stamp and buffer; parse in a ``call_soon`` callback.

        When a burst of requests arrives in one poll, the loop then reads (and stamps)
        every socket of the burst before it parses any request, so a request's arrival
        time does not include the handling of the requests read before it; with a
        ``Pacer`` the parsing itself is sliced so that later arrivals are read promptly.
        """
        if not self.t_read:
            self.t_read = time.perf_counter()
            asyncio.get_running_loop().call_soon(self._parse_pending)
        self.buf += data

    def _parse_pending(self) -> None:
        if self.pacer is not None:
            self.pacer.run_later(self._parse_now)
        else:
            self._parse_now()

    def _parse_now(self) -> None:
        t, self.t_read = self.t_read, 0.0
        if not self.busy:
            self._next(t)

    # ---- parsing -----------------------------------------------------------
    def _next(self, t: float) -> None:
        buf = self.buf
        while not self.busy and not self.closed and buf:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    self._bad(431, "request header too large")
                return
            try:
                lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
                method, target, version = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
            except ValueError:
                self._bad(400, "malformed request line")
                return
            start = end + 4
            if "chunked" in headers.get("transfer-encoding", "").lower():
                got = _dechunk(buf, start)
                if got is None:
                    return
                if got == -1:
                    self._bad(400, "malformed chunked body")
                    return
                body, consumed = got  # type: ignore[misc]
            else:
                try:
                    length = int(headers.get("content-length", "0"))
                except ValueError:
                    self._bad(400, "bad Content-Length")
                    return
                if length < 0 or length > MAX_BODY:
                    self._bad(413, "body too large")
                    return
                if len(buf) < start + length:
                    return
                body, consumed = bytes(buf[start : start + length]), start + length
            del buf[:consumed]
            conn_hdr = headers.get("connection", "").lower()
            if version == "HTTP/1.0":
                self.keep_alive = "keep-alive" in conn_hdr
            else:
                self.keep_alive = "close" not in conn_hdr
            self.busy = True
            self.headers = headers
            path = target.split("?", 1)[0]
            self.dispatch(self, method, path, body, t)

    def _bad(self, status: int, message: str) -> None:
        self.keep_alive = False
        self.busy = True
        self.respond(status, message.encode(), "text/plain; charset=utf-8")

    # ---- answering ---------------------------------------------------------
    def _head(self, status: int, fields: str) -> bytes:
        conn = "keep-alive" if self.keep_alive else "close"
        return (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}\r\n{fields}"
            f"Connection: {conn}\r\nServer: autobench-synthetic\r\n\r\n"
        ).encode("latin-1")

    def respond(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        """A complete response with ``Content-Length``; ends the request."""
        if self.closed or self.transport is None:
            return
        self.transport.write(
            self._head(status, f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n") + body
        )
        self._done()

    def start_stream(self, content_type: str = "text/event-stream") -> None:
        """Send the stream's headers, right after the requests that arrived with this one.

        The write is deferred with ``call_soon`` so that, when a burst of requests
        arrives in one poll, every one of them is read (and its arrival stamped) before
        the server spends a ``send()`` on any header; a chunk written before that
        carries the headers with it.
        """
        if self.closed or self.transport is None:
            return
        self.head = self._head(
            200, f"Content-Type: {content_type}\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
        )
        asyncio.get_running_loop().call_soon(self._flush_head)

    def _flush_head(self) -> None:
        if self.head and not self.closed:
            self.transport.write(self.head)  # type: ignore[union-attr]
        self.head = b""

    def write_chunk(self, payload: bytes) -> None:
        """One write (one send()) carrying ``payload`` as one chunk of the chunked body."""
        if not self.closed and payload:
            self.transport.write(self.head + b"%x\r\n%b\r\n" % (len(payload), payload))  # type: ignore[union-attr]
            self.head = b""

    def end_stream(self, payload: bytes = b"") -> None:
        """The last payload and the chunked terminator in one write; ends the request."""
        if self.closed:
            return
        tail = b"%x\r\n%b\r\n0\r\n\r\n" % (len(payload), payload) if payload else b"0\r\n\r\n"
        self.transport.write(self.head + tail)  # type: ignore[union-attr]
        self.head = b""
        self._done()

    def abort(self) -> None:
        """Cut the connection (an abrupt close in the middle of a body)."""
        self.on_close = None
        if self.transport is not None:
            self.transport.abort()
        self.closed = True

    def _done(self) -> None:
        self.on_close = None
        self.busy = False
        if not self.keep_alive:
            self.transport.close()  # type: ignore[union-attr]
            self.closed = True
            return
        if self.buf:
            self._next(time.perf_counter())


def _dechunk(buf: bytearray, pos: int) -> tuple[bytes, int] | int | None:
    """Decode a chunked body starting at ``pos``: (body, end offset), None if incomplete, -1 if bad."""
    out = bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        try:
            size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
        except ValueError:
            return -1
        pos = eol + 2
        if size == 0:
            end = buf.find(b"\r\n\r\n", pos - 2)  # skip trailers
            if end < 0:
                return None
            return bytes(out), end + 4
        if len(buf) < pos + size + 2:
            return None
        out += buf[pos : pos + size]
        pos += size + 2
        if len(out) > MAX_BODY:
            return -1


def json_bytes(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()

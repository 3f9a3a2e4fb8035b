"""The client's HTTP/1.1 connections: an ``asyncio.Protocol`` around httptools' parser.

Why not a general HTTP client: every byte of a streamed response is handled from
the event loop's socket callbacks, with the time of the socket read that brought
it.  ``data_received`` only stamps the bytes and queues them (:class:`Inbox`); right
after the poll, the queue is parsed in order: httptools (llhttp) calls back with
body bytes and the request's :class:`Sink` consumes them synchronously.  So when C
streams' chunks arrive in one poll, every one is stamped before any is parsed; no
task wakes up per chunk, and a request costs a parser and a future, not a client
library's request and response objects (aiohttp cost ~105 µs of CPU per request and
a task wake-up per read on the same benchmark; see docs/bench.md).

What it speaks: ``http`` and ``https`` (the standard library's default TLS context,
so ``SSL_CERT_FILE`` works), keep-alive with one request at a time per connection,
``Content-Length``, chunked and close-delimited bodies.  No proxies, redirects or
compression (a benchmark measures the server it names; ``Accept-Encoding`` is not
sent, so bodies come uncompressed).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

import httptools

from autobench.errors import BenchError


class ConnectFailed(Exception):
    """The connection could not be opened (refused, unreachable, DNS, TLS, connect timeout)."""


class BadResponse(Exception):
    """The bytes the server sent are not an HTTP/1.1 response."""


class Sink(Protocol):
    """What one response is delivered to, from inside the event loop's socket callbacks."""

    def on_head(self, status: int) -> None: ...

    def on_body(self, data: bytes, now: float) -> bool:
        """Consume body bytes read at ``now``; return False to stop (the connection is closed)."""

    def on_end(self, now: float) -> None: ...

    def on_lost(self, exc: BaseException | None, got_head: bool) -> None:
        """The connection closed or broke before the response ended."""


#: The largest response head (status line and headers) read: vLLM's are a few hundred bytes.
MAX_HEAD_BYTES = 64 * 1024


class Collect:
    """A sink that keeps the status and up to ``limit`` body bytes (small GETs, error bodies)."""

    __slots__ = ("status", "body", "limit", "error")

    def __init__(self, limit: int = 16 * 2**20):
        self.status = 0
        self.body = bytearray()
        self.limit = limit
        self.error: str | None = None

    def on_head(self, status: int) -> None:
        self.status = status

    def on_body(self, data: bytes, now: float) -> bool:
        self.body += data
        if len(self.body) > self.limit:
            self.error = f"response body over {self.limit} bytes"
            return False
        return True

    def on_end(self, now: float) -> None:
        pass

    def on_lost(self, exc: BaseException | None, got_head: bool) -> None:
        self.error = f"connection closed before the response ended ({exc or 'EOF'})"


#: What :meth:`Conn.start` calls when its response ended or failed (the connection, free again
#: unless closed): right after the bytes that ended it were parsed, before the next socket's.
After = Callable[["Conn"], None]


class Inbox:
    """Bytes read from sockets, stamped, parsed in order from one ``call_soon`` after the poll.

    A response started with :meth:`Conn.start` calls its ``after`` as soon as the bytes that
    ended it are parsed (``later``), not after the whole batch: a closed loop writes its next
    request there, so a burst of C streams that end in one poll sends C requests while the
    rest of the batch is parsed, instead of after all of it (docs/bench.md, Load at scale)."""

    __slots__ = ("loop", "items", "scheduled", "later")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.items: list[tuple[Conn, bytes, float]] = []
        self.scheduled = False
        self.later: list[tuple[After, Conn]] = []

    def put(self, conn: Conn, data: bytes) -> None:
        self.items.append((conn, data, time.perf_counter()))
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.scheduled = False
        items, self.items = self.items, []
        for conn, data, t in items:
            conn.feed(data, t)
            if self.later:
                self.run_later()

    def run_later(self) -> None:
        """Call the ``after`` of every response that ended (in the order they ended)."""
        while self.later:
            calls, self.later = self.later, []
            for after, conn in calls:
                after(conn)


class Conn(asyncio.Protocol):
    """One keep-alive connection; ``send`` writes a request, the returned future ends with it."""

    __slots__ = (
        "transport",
        "parser",
        "sink",
        "done",
        "closed",
        "t_recv",
        "got_head",
        "head_bytes",
        "sized",
        "_loop",
        "_stopped",
        "_inbox",
        "_after",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, inbox: Inbox):
        self._loop = loop
        self._inbox = inbox
        self.transport: asyncio.Transport | None = None
        self.parser: httptools.HttpResponseParser | None = None
        self.sink: Sink | None = None
        self.done: asyncio.Future[None] | None = None
        self.closed = False
        self.t_recv = 0.0
        self.got_head = False
        self.head_bytes = 0
        self.sized = False  # the response has a Content-Length or is chunked
        self._stopped = False
        self._after: After | None = None

    # ---- asyncio.Protocol ---------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._inbox.put(self, data)

    def feed(self, data: bytes, t: float) -> None:
        """Parse bytes that were read at ``t`` (called by the inbox, in arrival order)."""
        self.t_recv = t
        parser = self.parser
        if parser is None:  # bytes nobody asked for: the connection is out of step
            self.close()
            return
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._finish_lost(BadResponse("malformed HTTP response: unexpected protocol upgrade"))
        except httptools.HttpParserError as exc:
            if not self._stopped:
                self._finish_lost(BadResponse(f"malformed HTTP response: {exc}"))
        else:
            if not self.got_head and self.sink is not None:
                # The response head (status line and headers) is bounded in size: an endless
                # header grew memory and parse time without limit (68 s, 193 MB).  Its time is
                # bounded by the read timeout (no head, no progress).
                self.head_bytes += len(data)
                if self.head_bytes > MAX_HEAD_BYTES:
                    self._finish_lost(BadResponse(f"response head over {MAX_HEAD_BYTES // 1024} KiB"))

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: BaseException | None) -> None:
        self._inbox.flush()  # bytes read before the loss come first
        self.closed = True
        if self.sink is not None:
            if self.got_head and not self.sized and exc is None:
                self._complete()  # a body without a length ends at EOF
            else:
                self._finish_lost(exc)
            self._inbox.run_later()

    # ---- httptools callbacks --------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        n = name.lower()
        if n == b"content-length" or (n == b"transfer-encoding" and b"chunked" in value.lower()):
            self.sized = True

    def on_headers_complete(self) -> None:
        parser, sink = self.parser, self.sink
        if parser is None or sink is None:  # a response nobody asked for
            raise _Stop
        self.got_head = True
        status = parser.get_status_code()
        if status in (204, 304) or status < 200:
            self.sized = True  # no body
        sink.on_head(status)

    def on_body(self, body: bytes) -> None:
        sink = self.sink
        if sink is not None and not sink.on_body(body, self.t_recv):
            self._stopped = True
            self._release_sink()
            self.close()
            raise _Stop  # stops httptools mid-buffer

    def on_message_complete(self) -> None:
        if self.sink is not None:
            keep = self.parser is not None and self.parser.should_keep_alive()
            self._complete()
            if not keep:
                self.close()

    # ---- requests -------------------------------------------------------------
    def send(self, data: bytes, sink: Sink) -> asyncio.Future[None]:
        """Write one whole request; the future is done when the response ended or failed."""
        self.done = self._loop.create_future()
        self.start(data, sink, None)
        return self.done

    def start(self, data: bytes, sink: Sink, after: After | None) -> None:
        """Write one whole request; ``after(self)`` is called when the response ended or failed
        (no future, no task: from the callback that parsed its end, see :class:`Inbox`)."""
        assert self.transport is not None and self.sink is None
        self.sink = sink
        self._after = after
        self.got_head = self.sized = self._stopped = False
        self.head_bytes = 0
        self.parser = httptools.HttpResponseParser(self)
        self.transport.write(data)

    @property
    def idle(self) -> bool:
        return not self.closed and self.sink is None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Drop the connection now (a cancelled request: the response is not wanted)."""
        self.closed = True
        self.sink = None
        self.parser = None
        self._after = None
        if self.transport is not None:
            self.transport.abort()

    def _complete(self) -> None:
        sink = self.sink
        if sink is not None:
            self._release_sink()
            sink.on_end(self.t_recv)

    def _finish_lost(self, exc: BaseException | None) -> None:
        sink, got_head = self.sink, self.got_head
        self._release_sink()
        self.close()
        if sink is not None:
            sink.on_lost(exc, got_head)

    def _release_sink(self) -> None:
        self.sink = None
        self.parser = None
        done, self.done = self.done, None
        if done is not None and not done.done():
            done.set_result(None)
        after, self._after = self._after, None
        if after is not None:
            self._inbox.later.append((after, self))


class _Stop(Exception):
    """Raised from a parser callback to stop parsing the rest of a buffer."""


def normalize_base_url(url: str) -> str:
    """Strip a trailing ``/`` and ``/v1``; ``localhost`` becomes ``127.0.0.1`` (IPv4, as vLLM's client)."""
    url = url.rstrip("/")
    if url.endswith("/v1"):
        url = url[:-3]
    return url.replace("://localhost", "://127.0.0.1", 1)


class Pool:
    """Keep-alive connections to one origin (``scheme://host:port``), opened on demand."""

    def __init__(self, base_url: str, connect_timeout: float, headers: dict[str, str] | None = None):
        u = urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise BenchError(f"--base-url must be http:// or https:// with a host, got {base_url!r}")
        self.scheme = u.scheme
        self.host = u.hostname
        try:
            self.port = u.port or (443 if u.scheme == "https" else 80)
        except ValueError as exc:
            raise BenchError(f"--base-url has a bad port: {base_url!r}") from exc
        self.prefix = u.path.rstrip("/")
        self.connect_timeout = connect_timeout
        self.ssl = ssl.create_default_context() if u.scheme == "https" else None
        default_port = 443 if u.scheme == "https" else 80
        host_header = self.host if ":" not in self.host else f"[{self.host}]"
        if self.port != default_port:
            host_header += f":{self.port}"
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._fixed = f"Host: {host_header}\r\n{extra}"
        self.idle: list[Conn] = []
        self.all: set[Conn] = set()
        self._inbox: Inbox | None = None

    def request_bytes(self, method: str, path: str, body: bytes | None = None, accept: str = "*/*") -> bytes:
        """The whole request (head and body), built once; the hot path writes it as is."""
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._fixed}Accept: {accept}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        return (head + "\r\n").encode("latin-1") + (body or b"")

    async def acquire(self) -> Conn:
        return self.take_idle() or await self._connect()

    def take_idle(self) -> Conn | None:
        """An open idle connection, or None (then :meth:`acquire` opens one)."""
        idle = self.idle
        while idle:
            c = idle.pop()
            if c.idle:
                return c
            self.all.discard(c)  # closed by the server while it waited
        return None

    def release(self, c: Conn) -> None:
        if c.idle:
            self.idle.append(c)
        else:
            self.discard(c)

    def discard(self, c: Conn) -> None:
        if not c.closed:
            c.close()
        self.all.discard(c)

    async def prefill(self, n: int) -> None:
        """Open up to ``n`` idle connections at once, so handshakes stay out of the measured run."""

        async def one() -> None:
            with contextlib.suppress(ConnectFailed):  # the run itself counts connection errors
                self.idle.append(await self._connect())

        await asyncio.gather(*(one() for _ in range(max(0, n - len(self.idle)))))

    async def fetch(
        self, method: str, path: str, body: bytes | None = None, *, timeout: float, limit: int = 16 * 2**20
    ) -> Collect:
        """One small request read whole (raises ConnectFailed, TimeoutError, or returns with ``error``)."""
        sink = Collect(limit)
        data = self.request_bytes(method, path, body)
        c = await self.acquire()
        try:
            await asyncio.wait_for(c.send(data, sink), timeout)
        except BaseException:
            c.abort()
            self.discard(c)
            raise
        self.release(c)
        return sink

    def close(self) -> None:
        for c in list(self.all):
            if c.sink is not None:
                c.abort()
            else:
                c.close()
        self.all.clear()
        self.idle.clear()

    async def _connect(self) -> Conn:
        loop = asyncio.get_running_loop()
        if self._inbox is None:
            self._inbox = Inbox(loop)
        inbox = self._inbox
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Conn(loop, inbox),
                    self.host,
                    self.port,
                    ssl=self.ssl,
                    server_hostname=self.host if self.ssl else None,
                ),
                self.connect_timeout,
            )
        except TimeoutError as exc:
            raise ConnectFailed(f"connect timeout after {self.connect_timeout:g} s to {self.host}:{self.port}") from exc
        except (OSError, ssl.SSLError) as exc:
            raise ConnectFailed(f"{type(exc).__name__}: {exc}") from exc
        self.all.add(proto)
        return proto

"""What one response may make the bench hold is capped (autobench.bench.stream.stream_caps and
transport.MAX_HEAD_BYTES), and what a server echoes of the API key never reaches the output.

Each case failed before: an endless stream of valid tokens grew memory without a cap (240 MB in
60 s with --max-tokens 16); an endless response header outlasted the read timeout (68 s, 193 MB);
the key listed by /v1/models was printed in the "served models" hint; a key echoed split by a
line break was stored in ``error_samples``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.stream import stream_caps
from autobench.bench.synthetic_http import HttpConn
from autobench.bench.transport import MAX_HEAD_BYTES
from autobench.errors import BenchError

Handler = Callable[[HttpConn, str, str, asyncio.AbstractEventLoop], None]
KEY = "k3y-Secret-Value-12345"


@pytest.fixture
def server() -> Iterator[Callable[[Handler], str]]:
    """start(handler) -> base URL; handler(conn, method, path, loop) answers every request."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers: list[asyncio.AbstractServer] = []

    def start(handler: Handler) -> str:
        def dispatch(conn: HttpConn, method: str, path: str, req: bytes, t: float) -> None:
            handler(conn, method, path, loop)

        async def make() -> int:
            srv = await loop.create_server(lambda: HttpConn(dispatch), "127.0.0.1", 0)
            servers.append(srv)
            return int(srv.sockets[0].getsockname()[1])

        return f"http://127.0.0.1:{asyncio.run_coroutine_threadsafe(make(), loop).result(5)}"

    yield start
    for srv in servers:
        loop.call_soon_threadsafe(srv.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def run(url: str, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "num_prompts": 1,
        "max_tokens": 4,
        "random_input_len": 8,
        "scrape_metrics": False,
        "read_timeout": 5.0,
    }
    base.update(kw)
    return run_bench(BenchConfig(**base)).to_json_dict()


def no_models(conn: HttpConn, method: str) -> bool:
    if method == "GET":
        conn.respond(404, b'{"detail":"Not Found"}')
        return True
    return False


@pytest.mark.parametrize(("max_tokens", "chunks", "size"), [(1, 260, 65 * 16384), (16, 320, 80 * 16384)])
def test_stream_caps_are_a_multiple_of_max_tokens(max_tokens, chunks, size):
    assert stream_caps(max_tokens) == (chunks, size)


def test_an_endless_stream_of_tokens_is_cut_at_the_cap(server):
    token = b'data: {"choices":[{"index":0,"text":"x","finish_reason":null}]}\n\n'

    def endless(conn: HttpConn, method: str, path: str, loop: asyncio.AbstractEventLoop) -> None:
        if no_models(conn, method):
            return
        conn.start_stream()

        def more(left: int) -> None:
            if conn.closed or left == 0:  # bounded here only so that a regression ends
                return
            conn.write_chunk(token * 50)
            loop.call_soon(more, left - 1)

        more(400)  # 20,000 token chunks for max_tokens 4

    d = run(server(endless))
    assert d["errors_by_kind"] == {"overlong_stream": 1}, d["error_samples"]
    assert f"more than {stream_caps(4)[0]} token chunks" in d["error_samples"]["overlong_stream"]


def test_an_endless_response_head_is_cut_at_its_size_cap(server):
    def header_flood(conn: HttpConn, method: str, path: str, loop: asyncio.AbstractEventLoop) -> None:
        if no_models(conn, method):
            return
        assert conn.transport is not None
        conn.transport.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")

        def more(left: int) -> None:
            if conn.closed or conn.transport is None or left == 0:
                return
            conn.transport.write(b"a" * 65536)
            loop.call_soon(more, left - 1)

        more(64)  # 4 MiB of one header value, and then silence

    d = run(server(header_flood))
    assert d["errors_by_kind"] == {"client_error": 1}, d["error_samples"]
    assert f"response head over {MAX_HEAD_BYTES // 1024} KiB" in d["error_samples"]["client_error"]


def test_a_key_the_server_lists_as_a_model_is_not_in_the_hint(server, monkeypatch):
    monkeypatch.setenv("MY_BENCH_CRED", KEY)

    def lists_the_key(conn: HttpConn, method: str, path: str, loop: asyncio.AbstractEventLoop) -> None:
        if method == "GET":
            conn.respond(200, b'{"object":"list","data":[{"id":"real"},{"id":"%s"}]}' % KEY.encode())
        else:
            conn.respond(404, b'{"error":{"message":"The model does not exist."}}')

    with pytest.raises(BenchError) as info:
        run(server(lists_the_key), model="wrong", api_key_env="MY_BENCH_CRED")
    shown = str(info.value)
    assert "served models: [REDACTED:MY_BENCH_CRED], real" in shown
    assert KEY not in shown and KEY not in (info.value.hint or "")


@pytest.mark.parametrize("split", ["\n", "\r\n", " \n  "])
def test_a_key_echoed_split_by_a_line_break_is_not_stored(server, monkeypatch, split):
    monkeypatch.setenv("MY_BENCH_CRED", KEY)
    echoed = KEY[:9] + split + KEY[9:]

    def echo(conn: HttpConn, method: str, path: str, loop: asyncio.AbstractEventLoop) -> None:
        if no_models(conn, method):
            return
        conn.respond(500, f"upstream rejected Bearer {echoed}".encode(), content_type="text/plain")

    d = run(server(echo), api_key_env="MY_BENCH_CRED")
    text = str(d)
    assert d["errors_by_kind"] == {"http_5xx": 1}
    assert KEY[:9] not in text and KEY[9:] not in text
    assert "[REDACTED:MY_BENCH_CRED]" in d["error_samples"]["http_5xx"]

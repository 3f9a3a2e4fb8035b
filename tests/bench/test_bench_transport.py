"""The client's own HTTP/1.1 connections against a raw loopback server that answers scripted bytes.

Real sockets, real httptools parsing; the server side is a plain thread per connection
so each test can send exactly the framing it is about (chunked, Content-Length,
close-delimited, truncated, garbage, TLS).
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.errors import BenchError

# (request_index, method, path, headers) -> bytes to send; None closes without answering
Script = Callable[[int, str, str, dict[str, str]], bytes | None]


def sse_body(n_tokens: int = 3) -> bytes:
    ev = [{"choices": [{"index": 0, "text": f" t{i}", "finish_reason": None}]} for i in range(n_tokens - 1)]
    ev.append({"choices": [{"index": 0, "text": " end", "finish_reason": "length"}]})
    ev.append(
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": n_tokens, "total_tokens": 5 + n_tokens}}
    )
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in ev) + b"data: [DONE]\n\n"


def chunked(body: bytes, head: str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n") -> bytes:
    return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


class RawServer:
    """Answers each request (any connection) with ``script(i, method, path, headers)``."""

    def __init__(self, script: Script, tls: ssl.SSLContext | None = None):
        self.script = script
        self.tls = tls
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.connections = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            f = conn.makefile("rb")
            while True:
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while h := f.readline().decode("latin-1").strip():
                    k, _, v = h.partition(":")
                    headers[k.strip().lower()] = v.strip()
                f.read(int(headers.get("content-length", "0")))
                with self.lock:
                    i = len(self.requests)
                    self.requests.append((method, path, headers))
                out = self.script(i, method, path, headers)
                if out is None:
                    return
                conn.sendall(out)
                if b"Connection: close" in out.split(b"\r\n\r\n", 1)[0]:
                    return
        except (OSError, ValueError):
            return
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def start(script: Script, tls: ssl.SSLContext | None = None) -> RawServer:
        servers.append(RawServer(script, tls))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"


def only_completions(answer: Callable[[int], bytes | None]) -> Script:
    """/v1/models and /metrics: 404 (no model check, no counters); completions: ``answer(n)``."""
    count = iter(range(10**6))

    def script(i: int, method: str, path: str, headers: dict[str, str]) -> bytes | None:
        if not path.endswith("/completions"):
            return NOT_FOUND
        return answer(next(count))

    return script


def cfg(url: str, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "num_prompts": 6,
        "concurrency": 2,
        "max_tokens": 3,
        "random_input_len": 8,
        "read_timeout": 5.0,
        "connect_timeout": 5.0,
    }
    base.update(kw)
    return BenchConfig(**base)


def test_keep_alive_reuses_connections_and_sends_a_plain_request(raw: Callable[..., RawServer]) -> None:
    srv = raw(only_completions(lambda n: chunked(sse_body())))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["completed"] == 6 and d["failed"] == 0 and d["total_output_tokens"] == 18
    posts = [(m, p, h) for m, p, h in srv.requests if p == "/v1/completions"]
    assert len(posts) == 6
    # 2 workers on kept-alive connections (+ the one the /v1/models check opened, reused)
    assert srv.connections <= 3
    _, _, h = posts[0]
    assert h["host"] == f"127.0.0.1:{srv.port}" and h["content-type"] == "application/json"
    assert "authorization" not in h
    again = raw(only_completions(lambda n: chunked(sse_body())))
    d = run_bench(cfg(again.url, request_rate=500.0)).to_json_dict()  # rate mode: the same connections
    assert d["completed"] == 6 and again.connections <= 3
    assert len([p for _, p, _ in again.requests if p == "/v1/completions"]) == 6


def test_content_length_and_close_delimited_bodies_are_read_whole(raw: Callable[..., RawServer]) -> None:
    body = sse_body()
    sized = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    until_eof = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + body
    srv = raw(only_completions(lambda n: sized if n % 2 else until_eof))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["completed"] == 6 and d["failed"] == 0 and d["total_output_tokens"] == 18


def test_a_body_cut_short_is_a_dropped_stream_not_a_success(raw: Callable[..., RawServer]) -> None:
    body = sse_body()
    # Says 500 more bytes than it sends, then closes: must not count as a complete response.
    cut = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body) + 500,
        body[: -len(b"data: [DONE]\n\n")],
    )
    srv = raw(only_completions(lambda n: cut if n < 2 else chunked(sse_body())))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["errors_by_kind"] == {"stream_dropped": 2} and d["completed"] == 4


def test_server_closing_every_connection_costs_no_request(raw: Callable[..., RawServer]) -> None:
    close_each = chunked(sse_body(), "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n")
    srv = raw(only_completions(lambda n: close_each))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["completed"] == 6 and d["failed"] == 0
    assert srv.connections >= 6  # a new connection per request, each one fine
    again = raw(only_completions(lambda n: close_each))
    d = run_bench(cfg(again.url, request_rate=500.0)).to_json_dict()  # rate mode: no idle one, open one
    assert d["completed"] == 6 and d["failed"] == 0 and again.connections >= 6


def test_garbage_and_silent_close_are_their_own_errors(raw: Callable[..., RawServer]) -> None:
    answers = {0: b"SSH-2.0-OpenSSH_9.2\r\n\r\n", 1: None}
    srv = raw(only_completions(lambda n: answers.get(n, chunked(sse_body()))))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["errors_by_kind"] == {"client_error": 1, "connection_lost": 1}, d["error_samples"]
    assert "malformed HTTP response" in d["error_samples"]["client_error"]
    assert d["completed"] == 4


def test_a_huge_error_body_is_cut_to_its_message(raw: Callable[..., RawServer]) -> None:
    big = json.dumps({"error": {"message": "engine overloaded " + "x" * 100_000}}).encode()
    err = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s" % (len(big), big)
    srv = raw(only_completions(lambda n: err if n == 0 else chunked(sse_body())))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["errors_by_kind"] == {"http_5xx": 1} and d["completed"] == 5
    msg = d["error_samples"]["http_5xx"]
    assert msg.startswith("HTTP 503: ") and "engine overloaded" in msg and len(msg) <= 300


def test_a_path_prefix_in_the_base_url_is_kept(raw: Callable[..., RawServer]) -> None:
    srv = raw(lambda i, m, p, h: chunked(sse_body()) if p == "/gw/v1/completions" else NOT_FOUND)
    d = run_bench(cfg(srv.url + "/gw/v1/", num_prompts=2)).to_json_dict()
    assert d["completed"] == 2
    assert {p for _, p, _ in srv.requests} >= {"/gw/v1/models", "/gw/v1/completions"}


def test_api_key_goes_by_name_and_is_never_written(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = "sk-test-4f9a1c2e7b"
    monkeypatch.setenv("MY_VLLM_KEY", key)

    def script(i: int, method: str, path: str, headers: dict[str, str]) -> bytes:
        if headers.get("authorization") != f"Bearer {key}":
            body = b'{"error": "Unauthorized"}'
            return b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        return chunked(sse_body()) if path.endswith("/completions") else NOT_FOUND

    srv = raw(script)
    result = run_bench(cfg(srv.url, api_key_env="MY_VLLM_KEY", api_key_required=True))
    d = result.to_json_dict()
    assert d["completed"] == 6 and d["api_key_env"] == "MY_VLLM_KEY"
    out = tmp_path / "r.json"
    result.write(out)
    assert key not in out.read_text()
    # Without it the server says why, as one error kind.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    d = run_bench(cfg(srv.url, num_prompts=2)).to_json_dict()
    assert d["errors_by_kind"] == {"http_4xx": 2} and "Unauthorized" in d["error_samples"]["http_4xx"]
    monkeypatch.delenv("MY_VLLM_KEY")
    with pytest.raises(BenchError, match="MY_VLLM_KEY: the variable is not set"):
        run_bench(cfg(srv.url, api_key_env="MY_VLLM_KEY", api_key_required=True))


def test_https_with_a_trusted_certificate(
    raw: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    srv = raw(only_completions(lambda n: chunked(sse_body())), tls=server_ctx)
    # Not trusted yet: every request fails to connect, the run still finishes with a result.
    d = run_bench(cfg(srv.url, num_prompts=2)).to_json_dict()
    assert d["errors_by_kind"] == {"connect": 2} and "CERTIFICATE_VERIFY_FAILED" in d["error_samples"]["connect"]
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    d = run_bench(cfg(srv.url)).to_json_dict()
    assert d["completed"] == 6 and d["failed"] == 0

"""The synthetic server's own HTTP/1.1 layer, spoken to over raw loopback sockets."""

from __future__ import annotations

import json
import socket
from typing import Any


def exchange(port: int, raw: bytes, until: bytes | None = None) -> bytes:
    """Send ``raw``; read until the server closes (or ``until`` has been seen)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw)
        out = b""
        while until is None or until not in out:
            data = s.recv(65536)
            if not data:
                break
            out += data
        return out


def test_pipelined_keep_alive_requests_answer_in_order(synth: Any) -> None:
    srv = synth()
    out = exchange(
        srv.port,
        b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    parts = out.split(b"HTTP/1.1 ")[1:]
    assert [p[:3] for p in parts] == [b"200", b"200", b"404"]
    assert b"Connection: keep-alive" in parts[0] and b"Connection: close" in parts[2]
    assert json.loads(parts[1].split(b"\r\n\r\n", 1)[1])["data"][0]["id"] == "m"


def test_chunked_request_body_streams_an_answer(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=1)
    body = json.dumps(
        {
            "model": "m",
            "prompt": "one two three",
            "max_tokens": 3,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    half = len(body) // 2
    chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half, body[half:])
    out = exchange(
        srv.port,
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n" + chunked,
    )
    head, _, rest = out.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"Transfer-Encoding: chunked" in head
    assert rest.endswith(b"0\r\n\r\n") and b"data: [DONE]" in rest
    assert b'"completion_tokens":3' in rest and b'"prompt_tokens":3' in rest and rest.count(b'"t_srv"') == 3


def test_http10_closes_and_bad_requests_get_4xx(synth: Any) -> None:
    srv = synth()
    out = exchange(srv.port, b"GET /health HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and b"Connection: close" in out
    assert exchange(srv.port, b"garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
    out = exchange(srv.port, b"GET /v1/completions HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 405")
    out = exchange(srv.port, b"POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{bad}")
    assert out.startswith(b"HTTP/1.1 400") and b"Invalid request body" in out


def stream_events(port: int, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON events of one streamed answer (the chunked framing undone by hand)."""
    data = json.dumps(body).encode()
    out = exchange(
        port,
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
        % (path.encode(), len(data), data),
    )
    raw, payload = out.partition(b"\r\n\r\n")[2], b""
    while raw:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line, 16)
        payload, raw = payload + raw[:size], raw[size + 2 :]
        if size == 0:
            break
    events = [e[len(b"data: ") :] for e in payload.split(b"\n\n") if e.startswith(b"data: {")]
    return [json.loads(e) for e in events]


def test_token_chunks_carry_their_tokens_text_empty_where_a_token_ends_mid_character(synth: Any) -> None:
    from autobench.bench.synthetic import fault_hit

    srv = synth(ttft_ms=1, itl_ms=1, empty_chunk_rate=0.5)
    ask = {"model": "m", "prompt": "a b", "max_tokens": 4, "stream": True}
    texts = [e["choices"][0]["text"] for e in stream_events(srv.port, "/v1/completions", ask) if e["choices"]]
    assert texts == ["" if fault_hit(0.5, 0 + i) else f" t{i}" for i in range(4)]
    assert texts.count("") == 2  # exactly half, and both kinds present
    srv2 = synth(ttft_ms=1, itl_ms=1, tokens_per_chunk=3)
    chat = {"model": "m", "messages": [{"role": "user", "content": "a"}], "max_tokens": 5, "stream": True}
    events = stream_events(srv2.port, "/v1/chat/completions", chat)
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    assert deltas == [{"role": "assistant", "content": ""}, {"content": " t0 t1 t2"}, {"content": " t3 t4"}]
    assert [e["choices"][0]["finish_reason"] for e in events if e["choices"]] == [None, None, "length"]

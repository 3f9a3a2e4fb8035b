"""The client's stream reader against hand-written SSE bodies (real HTTP over loopback).

After the first token, plain token chunks are counted from their bytes without
``json.loads``; everything unusual must take the parsing path.  These streams mix
both, so a wrong byte test shows up as a wrong token or chunk count.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.synthetic_http import HttpConn


def sse(*events: Any) -> bytes:
    return b"".join(
        b"data: " + (e if isinstance(e, bytes) else json.dumps(e, separators=(",", ":")).encode()) + b"\n\n"
        for e in events
    )


USAGE = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}}
USAGE6 = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}}

COMPLETIONS = sse(
    {"choices": [{"index": 0, "text": " a", "logprobs": None, "finish_reason": None}]},
    {"choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": None}]},  # a token (fast path)
    {"choices": [{"index": 0, "text": " b", "finish_reason": None}], "usage": None},  # fast path
    b'{"choices": [{"index": 0, "text": " c", "finish_reason": null}]}',  # spaced JSON: parsed
    {"choices": [{"index": 0, "text": " d", "finish_reason": None}]},  # fast path
    {"choices": [{"index": 0, "text": " e", "finish_reason": "length"}]},  # the finish: parsed
    USAGE6,
    b"[DONE]",
)

CHAT = sse(
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"reasoning_content": "r"}, "finish_reason": None}]},  # a token
    {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]},  # fast path
    {"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}]},  # a token (partial UTF-8)
    {"choices": [{"index": 0, "delta": {"content": 'y \\"usage\\": {'}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"content": "z"}, "finish_reason": None}]},
    {"choices": [{"index": 0, "delta": {"content": "!"}, "finish_reason": "stop"}]},
    USAGE6,
    b"[DONE]",
)

LATE_ERROR = sse(
    {"choices": [{"index": 0, "text": " a", "finish_reason": None}]},
    {"choices": [{"index": 0, "text": " b", "finish_reason": None}]},
    {"error": {"message": "engine died", "code": 500}},
    b"[DONE]",
)


@pytest.fixture
def canned() -> Iterator[Any]:
    """start(body) -> base URL of a loopback server answering every POST with that SSE body."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers: list[asyncio.AbstractServer] = []

    def start(body: bytes) -> str:
        def dispatch(conn: HttpConn, method: str, path: str, req: bytes, t: float) -> None:
            if method == "POST":
                conn.start_stream()
                for i in range(0, len(body), 97):  # several writes: events split across reads too
                    conn.write_chunk(body[i : i + 97])
                conn.end_stream()
            else:
                conn.respond(404, b'{"detail":"Not Found"}')

        async def make() -> int:
            srv = await loop.create_server(lambda: HttpConn(dispatch), "127.0.0.1", 0)
            servers.append(srv)
            return int(srv.sockets[0].getsockname()[1])

        port = asyncio.run_coroutine_threadsafe(make(), loop).result(5)
        return f"http://127.0.0.1:{port}"

    yield start
    for srv in servers:
        loop.call_soon_threadsafe(srv.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def run(url: str, **kw: Any) -> dict[str, Any]:
    cfg = BenchConfig(
        base_url=url,
        model="m",
        num_prompts=3,
        concurrency=1,
        max_tokens=5,
        random_input_len=8,
        read_timeout=5.0,
        scrape_metrics=False,
        **kw,
    )
    return run_bench(cfg).to_json_dict()


def test_completions_counts_every_chunk_with_a_choice(canned: Any) -> None:
    d = run(canned(COMPLETIONS))
    assert d["completed"] == 3 and d["failed"] == 0
    assert d["total_output_tokens"] == 18 and d["finish_reasons"] == {"length": 3}
    # a "" b c d e: 6 token chunks (the empty one too), 5 gaps each; the usage chunk is not one.
    # The body is written at once: gaps in the first token's read are not measured (unseen).
    assert (d["token_chunks"], d["itl_samples"] + d["itl_unseen_gaps"]) == (18, 15)
    assert d["mean_tokens_per_chunk"] == pytest.approx(1.0)


def test_chat_counts_reasoning_and_empty_content_but_not_the_role(canned: Any) -> None:
    d = run(canned(CHAT), endpoint="chat")
    assert d["completed"] == 3 and d["finish_reasons"] == {"stop": 3}
    assert (d["token_chunks"], d["itl_samples"] + d["itl_unseen_gaps"]) == (18, 15)  # r x "" y z !: 6 chunks
    assert d["mean_tokens_per_chunk"] == pytest.approx(1.0)


EMPTY_FIRST_AND_LAST = sse(
    {"choices": [{"index": 0, "text": "", "finish_reason": None}]},
    {"choices": [{"index": 0, "text": " a", "finish_reason": None}]},
    {"choices": [{"index": 0, "text": "", "finish_reason": "length"}]},
    {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}},
    b"[DONE]",
)


def test_empty_first_and_last_token_chunks_bound_ttft_and_e2el(canned: Any) -> None:
    d = run(canned(EMPTY_FIRST_AND_LAST))
    assert d["completed"] == 3 and d["token_chunks"] == 9 and d["itl_samples"] + d["itl_unseen_gaps"] == 6
    assert d["mean_tokens_per_chunk"] == pytest.approx(1.0)


def test_error_after_tokens_is_an_error(canned: Any) -> None:
    d = run(canned(LATE_ERROR))
    assert d["errors_by_kind"] == {"in_stream_error": 3} and d["completed"] == 0
    assert "engine died" in d["error_samples"]["in_stream_error"]

"""StreamSink fed by hand, with the read times given: what each kind of event does to the
request's record (times, gaps, counts, usage, status and the error kind and message a user sees).
The same bodies over real HTTP are in test_bench_stream_fastpath.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autobench.bench.record import ERROR, OK, RequestRecord
from autobench.bench.sse import SSEParser
from autobench.bench.stream import ERROR_BODY_LIMIT, StreamSink, error_message
from autobench.bench.transport import BadResponse


def ev(obj: Any) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()
    return b"data: " + body + b"\n\n"


def tok(text: str, finish: str | None = None, **extra: Any) -> bytes:
    return ev({"choices": [{"index": 0, "text": text, "finish_reason": finish}], **extra})


def chat(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return ev({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def usage(completion: Any = 3, prompt: Any = 7) -> bytes:
    return ev({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})


DONE = ev(b"[DONE]")


def sink(*, chat: bool = False, allow_missing_usage: bool = False, status: int = 200) -> StreamSink:
    s = StreamSink(RequestRecord(0, prompt_est=11), chat=chat, allow_missing_usage=allow_missing_usage)
    s.on_head(status)
    return s


def feed(s: StreamSink, *parts: tuple[float, bytes], end: float | None = None) -> RequestRecord:
    for now, data in parts:
        assert s.on_body(data, now) is True
    if end is not None:
        s.on_end(end)
    return s.rec


def test_a_completion_stream_times_every_token_chunk():
    s = sink()
    rec = feed(
        s,
        (1.0, tok(" a", t_srv=0.5, t_arr=0.25)),
        (1.5, tok("")),  # a token that ends inside a UTF-8 sequence: still a token (fast path)
        (2.5, tok(" b", "length")),
        (2.75, usage(3, 7) + DONE),
        end=3.0,
    )
    assert (rec.first, rec.last, rec.end, rec.n_chunks) == (1.0, 2.5, 3.0, 3)
    assert rec.gaps == [0.5, 1.0]
    assert (rec.first_srv, rec.arr_srv) == (0.5, 0.25)
    assert (rec.completion_tokens, rec.prompt_tokens, rec.finish_reason) == (3, 7, "length")
    assert rec.status == OK and rec.error_kind is None and not rec.usage_fallback


def test_server_stamps_that_are_not_floats_are_ignored():
    rec = feed(sink(), (1.0, tok("a", t_srv="soon", t_arr=3)), (2.0, tok("b", "stop") + usage(2) + DONE), end=2.0)
    assert rec.first_srv is None and rec.arr_srv is None and rec.status == OK


def test_progress_is_a_complete_event_not_a_keepalive():
    s = sink()
    s.rec.io = 0.0
    assert s.on_body(b": keep-alive\n\n", 5.0) is True
    assert s.rec.io == 0.0  # a comment does not restart the read timeout
    assert s.on_body(b'data: {"cho', 6.0) is True and s.rec.io == 0.0  # nor half an event
    assert s.on_body(b'ices":[]}\n\n', 7.0) is True and s.rec.io == 7.0


def test_a_role_announcement_after_the_first_token_is_still_not_a_token():
    rec = feed(
        sink(chat=True),
        (1.0, chat({"content": "x"})),
        (2.0, chat({"role": "assistant", "content": ""})),  # plain-looking bytes, but no content
        (3.0, chat({"content": "y"}, "stop") + usage(2) + DONE),
        end=3.0,
    )
    assert (rec.n_chunks, rec.gaps, rec.status) == (2, [2.0], OK)


def test_chat_role_announcement_is_not_a_token_but_reasoning_is():
    s = sink(chat=True)
    rec = feed(
        s,
        (1.0, chat({"role": "assistant", "content": ""})),
        (2.0, chat({"role": "assistant", "reasoning_content": "think"})),
        (3.0, chat({"content": "x"})),  # fast path
        (4.0, chat({"content": ""}, "stop")),
        (4.5, usage(3) + DONE),
        end=5.0,
    )
    assert (rec.first, rec.last, rec.n_chunks, rec.gaps) == (2.0, 4.0, 3, [1.0, 1.0])
    assert rec.status == OK


@pytest.mark.parametrize(
    ("delta", "is_token"),
    [
        ({"role": "assistant", "content": ""}, False),
        ({"role": "assistant"}, False),
        ({"role": "assistant", "content": "hi"}, True),
        ({"role": "assistant", "reasoning": "r"}, True),
        ({"role": "assistant", "tool_calls": [{"id": "1"}]}, True),
        ({"content": ""}, True),
        ({}, True),
        (None, True),  # "delta": null is no role announcement
        ("role", True),
    ],
)
def test_which_chat_deltas_are_tokens(delta, is_token):
    rec = feed(sink(chat=True), (1.0, chat(delta)))
    assert (rec.first is not None) is is_token


def test_the_fast_path_counts_plain_chunks_and_parses_the_rest():
    # After the first token, a plain chunk is counted from its bytes; a chunk with a usage or an
    # error key, or without "finish_reason":null, is parsed so nothing is missed.
    s = sink()
    rec = feed(
        s,
        (1.0, tok("a")),
        (2.0, tok("b", usage=None)),  # "usage":null: still plain
        (3.0, tok("c", usage={"prompt_tokens": 1, "completion_tokens": 9})),  # parsed: usage kept
        (4.0, tok("d", "stop") + DONE),
        end=4.0,
    )
    assert rec.n_chunks == 4 and rec.gaps == [1.0, 1.0, 1.0]
    assert rec.completion_tokens == 9 and rec.prompt_tokens == 1 and rec.finish_reason == "stop"


def test_an_error_event_after_tokens_fails_the_request_with_its_message():
    s = sink()
    assert s.on_body(tok("a") + tok("b"), 1.0) is True
    assert s.on_body(ev({"choices": [{"text": "c", "finish_reason": None}], "error": "boom"}), 2.0) is False
    assert s.rec.status == ERROR and s.rec.error_kind == "in_stream_error"
    assert s.rec.error_message == "error in stream after 2 chunks: boom" and s.rec.end == 2.0


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"error": {"message": "engine died", "code": 500}}, "error in stream after 0 chunks: engine died"),
        ({"object": "error", "message": "bad"}, "error in stream after 0 chunks: bad"),
        ({"error": "plain"}, "error in stream after 0 chunks: plain"),
    ],
)
def test_in_stream_errors(event, message):
    s = sink()
    assert s.on_body(ev(event), 1.0) is False
    assert (s.rec.error_kind, s.rec.error_message) == ("in_stream_error", message)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"data: not json\n\n", "event is not JSON: b'not json'"),
        (b"data: [1]\n\n", "event is not a JSON object: b'[1]'"),
    ],
)
def test_events_that_are_not_json_objects(body, message):
    s = sink()
    assert s.on_body(body, 1.0) is False
    assert (s.rec.error_kind, s.rec.error_message, s.rec.end) == ("non_json", message, 1.0)


def test_an_oversized_event_fails_at_once():
    s = sink()
    s.parser = SSEParser(limit=64)
    assert s.on_body(b"data: " + b"x" * 100, 2.0) is False
    assert s.rec.error_kind == "oversized_event" and s.rec.end == 2.0


def test_usage_missing_fails_unless_allowed():
    rec = feed(sink(), (1.0, tok("a")), (2.0, tok("b", "stop") + DONE), end=2.0)
    assert rec.status == ERROR and rec.error_kind == "no_usage" and "--allow-missing-usage" in (rec.error_message or "")
    rec = feed(sink(allow_missing_usage=True), (1.0, tok("a")), (2.0, tok("b", "stop") + DONE), end=2.0)
    assert rec.status == OK and rec.usage_fallback
    assert (rec.completion_tokens, rec.prompt_tokens) == (2, 11)  # chunks counted, prompt estimated


def test_an_empty_usage_object_is_no_usage_report():
    rec = feed(sink(), (1.0, tok("a", "stop")), (2.0, ev({"choices": [], "usage": {}}) + DONE), end=2.0)
    assert rec.error_kind == "no_usage"


def test_usage_without_integer_counts():
    rec = feed(sink(), (1.0, tok("a", "stop") + usage(completion="3") + DONE), end=2.0)
    assert rec.error_kind == "no_usage"
    rec = feed(sink(), (1.0, tok("a", "stop") + usage(completion=1, prompt=None) + DONE), end=2.0)
    assert rec.status == OK and (rec.completion_tokens, rec.prompt_tokens) == (1, 11)


def test_a_stream_that_ends_early_or_without_tokens():
    rec = feed(sink(), (1.0, tok("a")), end=2.0)
    assert rec.error_kind == "stream_dropped" and rec.error_message == "stream ended without [DONE] after 1 chunks"
    # a finish reason without [DONE] is a finished stream
    rec = feed(sink(), (1.0, tok("a", "stop") + usage(1)), end=2.0)
    assert rec.status == OK
    # [DONE] without a trailing blank line still counts (the parser's last event)
    rec = feed(sink(), (1.0, tok("a") + usage(1) + b"data: [DONE]"), end=2.0)
    assert rec.status == OK
    rec = feed(sink(), (1.0, usage(0) + DONE), end=2.0)
    assert rec.error_kind == "no_tokens" and rec.error_message == "the stream finished without any token"


@pytest.mark.parametrize(
    ("status", "kind"), [(500, "http_5xx"), (503, "http_5xx"), (499, "http_4xx"), (404, "http_4xx")]
)
def test_an_http_error_keeps_the_body_message(status, kind):
    s = sink(status=status)
    assert s.rec.http_status == status
    assert s.on_body(b'{"error": {"message": "model ', 1.0) is True
    assert s.on_body(b'not found"}}', 1.5) is True and s.rec.io == 1.5
    s.on_end(2.0)
    assert (s.rec.error_kind, s.rec.error_message, s.rec.end) == (kind, f"HTTP {status}: model not found", 2.0)


def test_an_endless_error_body_is_cut_at_4_kib():
    assert ERROR_BODY_LIMIT == 4096
    s = sink(status=502)
    assert s.on_body(b"x" * 4095, 1.0) is True
    assert s.on_body(b"y", 2.0) is False  # 4 KiB read: the request ends here
    assert s.rec.error_kind == "http_5xx" and s.rec.end == 2.0
    assert s.rec.error_message == "HTTP 502: " + "x" * 200  # a body that is not JSON: its first 200 characters


def test_a_lost_connection_says_when():
    s = sink()
    s.on_body(tok("a"), 1.0)
    s.on_lost(ConnectionResetError("reset"), got_head=True)
    assert (s.rec.error_kind, s.rec.error_message) == ("stream_dropped", "ConnectionResetError: reset after 1 chunks")
    s = StreamSink(RequestRecord(0, 1), chat=False, allow_missing_usage=False)
    s.on_lost(None, got_head=False)
    assert (s.rec.error_kind, s.rec.error_message) == (
        "connection_lost",
        "the server closed the connection before a response arrived",
    )
    s = StreamSink(RequestRecord(0, 1), chat=False, allow_missing_usage=False)
    s.on_lost(BadResponse("bad chunk size"), got_head=True)
    assert (s.rec.error_kind, s.rec.error_message) == ("client_error", "bad chunk size")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"error": {"message": "m1"}}', "m1"),
        ('{"message": "m2"}', "m2"),
        ('{"error": "m3"}', "m3"),
        # a proxy's body ({"status": 400, "error": "Bad Request", "message": ...}): the message says more
        ('{"status": 400, "error": "Bad Request", "message": "m4"}', "m4"),
        ('{"error": {"code": 400}, "message": "m5"}', "m5"),
        ('{"detail": "Not Found"}', '{"detail": "Not Found"}'),
        ('{"error": {"message": 5}}', '{"error": {"message": 5}}'),
        ("[1, 2]", "[1, 2]"),
        ("  upstream\n  timed   out ", "upstream timed out"),
        ("", "(empty body)"),
        ("x" * 300, "x" * 200),
        ('{"detail": "' + "x" * 300 + '"}', '{"detail": "' + "x" * 188),  # JSON without a message: cut too
    ],
)
def test_error_message_of_a_body(text, message):
    assert error_message(text) == message


def test_an_error_body_is_read_as_its_first_4_kib_however_the_reads_fell():
    # a JSON error body longer than 4 KiB: the message is made from its first 4 KiB (no longer JSON)
    # whether the body came in one read or the read stopped at 4 KiB
    body = b'{"error": {"message": "too long"}, "pad": "' + b"x" * 5000 + b'"}'
    want = "HTTP 500: " + body[:200].decode()
    one = sink(status=500)
    assert one.on_body(body, 1.0) is False
    two = sink(status=500)
    assert two.on_body(body[:4000], 1.0) is True and two.on_body(body[4000:4096], 1.5) is False
    assert one.rec.error_message == two.rec.error_message == want


def test_an_error_body_that_is_not_utf8_is_still_a_message():
    s = sink(status=502)
    assert s.on_body(b"\xffbad gateway\xfe", 1.0) is True
    s.on_end(2.0)
    assert (s.rec.error_kind, s.rec.error_message) == ("http_5xx", "HTTP 502: \ufffdbad gateway\ufffd")


@pytest.mark.parametrize(
    "event",
    [
        {"choices": {"text": "a", "finish_reason": None}},  # choices not a list
        {"choices": ["a"]},  # a choice that is not an object
        {"choices": [], "usage": "n/a"},  # a usage that is not an object
        {"choices": [], "usage": [3, 7]},
    ],
)
def test_malformed_choices_and_usage_are_ignored_not_a_crash(event):
    rec = feed(sink(), (1.0, ev(event)), (2.0, tok("a", "stop") + DONE), end=2.0)
    assert (rec.n_chunks, rec.first, rec.error_kind) == (1, 2.0, "no_usage")


def test_an_empty_usage_after_the_report_keeps_the_report():
    rec = feed(sink(), (1.0, tok("a", "stop") + usage(3, 7) + ev({"choices": [], "usage": {}}) + DONE), end=2.0)
    assert rec.status == OK and (rec.completion_tokens, rec.prompt_tokens) == (3, 7)

from __future__ import annotations

from autobench.bench.sse import SSEParser


def feed_all(parts: list[bytes]) -> list[bytes]:
    p = SSEParser()
    out: list[bytes] = []
    for part in parts:
        out.extend(p.feed(part))
    return out + p.finish()


def test_multiple_events_in_one_read_and_done() -> None:
    assert feed_all([b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n']) == [b'{"a":1}', b'{"b":2}', b"[DONE]"]


def test_event_split_across_reads_byte_by_byte() -> None:
    raw = 'data: {"text":"h\u00e9llo \u4e16\u754c"}\n\ndata: [DONE]\n\n'.encode()
    out = feed_all([raw[i : i + 1] for i in range(len(raw))])
    assert out == ['{"text":"h\u00e9llo \u4e16\u754c"}'.encode(), b"[DONE]"]
    assert out[0].decode() == '{"text":"h\u00e9llo \u4e16\u754c"}'


def test_crlf_comments_no_space_and_multiline() -> None:
    raw = b': keepalive\r\n\r\ndata:{"x":1}\r\n\r\nevent: msg\ndata: {"y":\ndata: 2}\nid: 7\n\n'
    assert feed_all([raw[:13], raw[13:30], raw[30:]]) == [b'{"x":1}', b'{"y":\n2}']


def test_crlf_split_between_reads() -> None:
    assert feed_all([b'data: {"x":1}\r', b"\n\r", b"\ndata: [DONE]\r\n\r\n"]) == [b'{"x":1}', b"[DONE]"]


def test_trailing_event_without_blank_line() -> None:
    assert feed_all([b'data: {"a":1}\n\ndata: [DONE]']) == [b'{"a":1}', b"[DONE]"]
    assert feed_all([b'data: {"a":1}\n\n   ']) == [b'{"a":1}']


def test_crlf_split_inside_a_multiline_event_stays_one_event() -> None:
    assert feed_all([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [b"a\nb"]


def test_one_event_per_read_fast_path_matches_the_general_parser() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"a":1}\n\n') == [b'{"a":1}']
    assert p.feed(b'data:{"b":2}\n\n') == [b'{"b":2}']  # no space: general path
    assert p.feed(b"data: x\r\n\n") == [b"x"]  # CR: general path, no stray \r in the data
    assert p.feed(b"data: y\n\ndata: z\n\n") == [b"y", b"z"]
    assert p.feed(b"data: par") == [] and p.feed(b"tial\n\n") == [b"partial"]

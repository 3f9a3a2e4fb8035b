"""Inter-token gaps when several token events arrive in one socket read (issue #31).

Against a real vLLM 0.32 on a busy machine, events the server wrote milliseconds apart arrive
together; stamped with their read's time they gave gaps of exactly 0 and an ITL median of 0 ms.
Now a read's gap is shared by the token events it brought, events in the read of the first token
have no gap (``unseen_gaps``), and tokens per chunk stay per SSE event.  The streams here are
framed as vLLM 0.32 frames them (one HTTP chunk per event, compact JSON, the usage event with
``"choices":[]``, then ``[DONE]``; captured from vllm serve, vllm/entrypoints/openai/completion/
serving.py), fed through the client's own HTTP parser (``Conn``, httptools) with the read times
given: no clock, no socket."""

from __future__ import annotations

import json
import math
import random

import pytest

from autobench.bench.record import OK, RequestRecord
from autobench.bench.stream import StreamSink
from autobench.bench.transport import Conn

HEAD = (
    b"HTTP/1.1 200 OK\r\ndate: Mon, 07 Dec 2026 16:16:46 GMT\r\nserver: uvicorn\r\n"
    b"content-type: text/event-stream; charset=utf-8\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n"
)


def event(obj: object) -> bytes:
    """One SSE event as one HTTP chunk, as uvicorn writes a ``yield`` of vLLM's generator."""
    data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj, separators=(",", ":")).encode()) + b"\n\n"
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def token(text: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}
    choice |= {"prompt_token_ids": None, "token_ids": None}
    return event({"id": "cmpl-9aa9", "object": "text_completion", "created": 1, "model": "tiny", "choices": [choice]})


def tail(n_tokens: int) -> bytes:
    use = {"prompt_tokens": 72, "total_tokens": 72 + n_tokens, "completion_tokens": n_tokens}
    return event({"id": "cmpl-9aa9", "choices": [], "usage": use}) + event(b"[DONE]") + b"0\r\n\r\n"


def stream(n: int) -> list[bytes]:
    """The n token events of an answer (the last one carries finish_reason), an empty text among
    them (a token that ends inside a UTF-8 sequence), then usage and [DONE] with the end chunk."""
    events = [token("" if i == 3 else f" w{i}", "length" if i == n - 1 else None) for i in range(n)]
    events[-1] += tail(n)
    return events


def read(reads: list[tuple[float, bytes]]) -> RequestRecord:
    """Feed raw response bytes to the client's connection parser, one read at each time."""
    rec = RequestRecord(0, 10)
    sink = StreamSink(rec, chat=False, allow_missing_usage=False, max_tokens=4096)
    conn = Conn(None, None)  # type: ignore[arg-type]  # never writes: fed by hand
    conn.sink = sink
    import httptools

    conn.parser = httptools.HttpResponseParser(conn)
    for t, data in reads:
        conn.feed(data, t)
    assert conn.sink is None, "the response did not end"
    return rec


def test_events_of_one_read_share_its_gap() -> None:
    ev = stream(6)
    rec = read([(1.0, HEAD + ev[0]), (2.0, ev[1] + ev[2] + ev[3]), (2.5, ev[4]), (3.0, ev[5])])
    assert rec.status == OK and rec.n_chunks == 6 and rec.completion_tokens == 6
    # the read at 2.0 brought 3 token events in the second since the read before: 3 gaps of 1/3 s
    assert rec.gaps == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.5, 0.5])
    assert (rec.shared_gaps, rec.unseen_gaps) == (3, 0)
    assert math.fsum(rec.gaps) == pytest.approx(rec.last - rec.first)  # type: ignore[operator]


def test_a_read_split_into_http_chunks_is_still_one_read() -> None:
    """httptools hands a read's HTTP chunks to the sink one by one, with the read's time."""
    ev = stream(4)
    whole = read([(1.0, HEAD + ev[0]), (3.0, ev[1] + ev[2]), (4.0, ev[3])])
    parts = read([(1.0, HEAD + ev[0]), (3.0, ev[1]), (3.0, ev[2]), (4.0, ev[3])])
    assert whole.gaps == parts.gaps == [1.0, 1.0, 1.0]
    assert whole.shared_gaps == parts.shared_gaps == 2


def test_the_last_read_shares_its_gap_at_the_end_of_the_stream() -> None:
    ev = stream(4)
    rec = read([(1.0, HEAD + ev[0]), (1.5, ev[1]), (3.5, ev[2] + ev[3])])  # the finish chunk, usage, [DONE]
    assert rec.gaps == [0.5, 1.0, 1.0] and rec.shared_gaps == 2


def test_events_in_the_read_of_the_first_token_have_no_gap() -> None:
    ev = stream(5)
    rec = read([(1.0, HEAD + ev[0] + ev[1] + ev[2]), (2.0, ev[3]), (2.25, ev[4])])
    assert rec.gaps == [1.0, 0.25] and (rec.unseen_gaps, rec.shared_gaps) == (2, 0)
    assert rec.n_chunks == 5  # tokens per chunk stay per event


def test_a_whole_answer_in_one_read_has_no_gap_and_no_zero() -> None:
    rec = read([(1.0, HEAD + b"".join(stream(8)))])
    assert rec.status == OK and rec.n_chunks == 8 and rec.gaps == [] and rec.unseen_gaps == 7


def test_a_spaced_event_inside_a_shared_read_takes_the_parsing_path_and_shares_too() -> None:
    spaced = b'data: {"choices": [{"index": 0, "text": " s", "finish_reason": null}]}\n\n'
    odd = f"{len(spaced):x}\r\n".encode() + spaced + b"\r\n"
    ev = stream(3)
    rec = read([(1.0, HEAD + ev[0]), (3.0, ev[1] + odd + ev[2])])
    assert rec.n_chunks == 4 and rec.gaps == pytest.approx([2 / 3] * 3) and rec.shared_gaps == 3


def test_a_read_that_begins_with_a_parsed_event_shares_its_gap() -> None:
    """The first event of the read takes the parsing path (other spacing), the next ones the
    byte test: one group all the same, and a read of parsed events only too."""

    def spaced(text: str, finish: str = "null") -> bytes:
        data = b'data: {"choices": [{"index": 0, "text": "%s", "finish_reason": %s}]}\n\n' % (
            text.encode(),
            finish.encode(),
        )
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    ev = stream(4)
    rec = read([(1.0, HEAD + ev[0]), (2.0, spaced(" p") + ev[1] + ev[2]), (2.5, ev[3])])
    assert rec.n_chunks == 5 and rec.gaps == pytest.approx([1 / 3] * 3 + [0.5]) and rec.shared_gaps == 3
    rec = read([(1.0, HEAD + ev[0]), (2.0, spaced(" p") + spaced(" q")), (4.0, ev[3])])
    assert rec.n_chunks == 4 and rec.gaps == pytest.approx([0.5, 0.5, 2.0]) and rec.unseen_gaps == 0


@pytest.mark.parametrize("seed", range(40))
def test_random_reads_give_per_event_counts_and_the_shared_gaps(seed: int) -> None:
    """Any split of an answer into reads (events together, events cut mid-way, HTTP chunks cut):
    one chunk per event; the gaps are, per read after the first, k equal shares of the time since
    the read before (worked out here from the reads, not from the sink); none is 0; they add up
    to t_last - t_first."""
    rng = random.Random(seed)
    n = rng.randint(2, 40)
    body = HEAD + b"".join(stream(n))
    cuts = sorted(rng.sample(range(1, len(body)), rng.randint(1, min(60, len(body) - 1))))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    times = [1.0 + i * rng.uniform(0.001, 0.05) for i in range(1, len(pieces) + 1)]
    times = [math.fsum(times[: i + 1]) for i in range(len(times))]  # increasing
    rec = read(list(zip(times, pieces, strict=True)))
    assert rec.status == OK and rec.n_chunks == n and rec.completion_tokens == n

    # the reference: which read completed each token event (an event ends at its blank line)
    ends, offset = [], 0
    for _ in range(n):
        offset = body.index(b"\n\n\r\n", body.index(b'"choices":[{', offset)) + 2
        ends.append(offset)
    read_of = [next(j for j, c in enumerate([*cuts, len(body)]) if c >= e) for e in ends]
    per_read: dict[int, int] = {}
    for j in read_of:
        per_read[j] = per_read.get(j, 0) + 1
    order = sorted(per_read)
    want = [
        (times[j] - times[p]) / per_read[j] for p, j in zip(order, order[1:], strict=False) for _ in range(per_read[j])
    ]
    assert rec.gaps == pytest.approx(want)
    assert rec.unseen_gaps == per_read[order[0]] - 1 and len(rec.gaps) + rec.unseen_gaps == n - 1
    assert rec.shared_gaps == sum(per_read[j] for j in order[1:] if per_read[j] > 1)
    assert all(g > 0 for g in rec.gaps)
    assert math.fsum(rec.gaps) == pytest.approx(rec.last - rec.first)  # type: ignore[operator]

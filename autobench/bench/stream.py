"""Reading one streamed completion into its :class:`RequestRecord` (synchronous, no I/O).

A :class:`StreamSink` is fed the response body from inside the event loop's socket
callback (``autobench.bench.transport``), with the time of the socket read that
brought the bytes, so every chunk is stamped when Python first sees it.

Which events are token events: every chunk that carries a choice, whatever its
text.  vLLM streams one chunk per token (more under speculative decoding), and with
byte-level tokenizers a token that ends inside a UTF-8 sequence has ``"text": ""``
(5-19 % of chunks on a real server): it is still a token, it moves TTFT when it
is the first and E2EL when it is the last, and it is one inter-token gap.  The one
exception is the chat role announcement (a ``delta`` with a ``role`` and nothing
else but an empty ``content``), which vLLM sends before the first token of a chat
stream and which is not a token.  The usage chunk (``"choices": []``) is not one
either.  Token *totals* come from the server's usage report.

Inter-token gaps (ITL) when several token events arrive in one socket read.  A read brings
whatever the kernel holds, so events the server wrote milliseconds apart arrive together when
the client (or the server's API process, on a busy machine) was late; every event of the read is
stamped with the read's time, and stamping each with its own gap would give exact zeros that
were never measured (a median ITL of 0 ms when more than half the events share reads).  vLLM's
own client stamps each event after parsing it (vllm/benchmarks/lib/endpoint_request_func.py), so
its gaps inside a read are its parse time, microseconds: no more a measurement.  What the client
does know: the k token events of a read arrived since the previous read that brought one.  So
that read's gap is shared: it becomes k gaps of (t_read - t_previous) / k, the same even split
TPOT makes over a whole request.  The sum of a request's gaps stays t_last - t_first and (unless
events shared the first token's read) their number chunks - 1, so mean ITL is vLLM's (sum /
count), and one read per event (the usual case) gives exactly vLLM's gaps.  Token events in the
read of the *first* token have no earlier read to measure from: they get no gap at all
(``unseen_gaps``); a whole answer in one read has no ITL (None, not 0; ``burst_stream`` says
why).  Counted per request: ``shared_gaps`` (gaps that are a read's share) and ``unseen_gaps``;
their totals are in the result (docs/bench.md).  What sharing cannot show: a stall that ended in
a burst reads as k equal gaps, not one long and k - 1 short ones (the p99 is lower than the
wire's).

After the first token chunk, an event is taken as one more token chunk without
parsing it when its bytes show a plain streaming chunk: ``"finish_reason":null``,
``"text":"`` (completions) or ``"delta":{"content":"`` (chat) and no
``"usage"`` (other than ``null``) or ``"error"`` key.  Everything else (the first
chunk with the server stamps, finish, usage, errors, unusual chunks, other
spacing) goes through ``json.loads``.  Inside a JSON string a quote is escaped, so
these byte patterns cannot come from generated text.
"""

from __future__ import annotations

import time
from typing import Any

from autobench.bench.record import OK, RequestRecord
from autobench.bench.sse import EventTooLarge, SSEParser
from autobench.bench.transport import BadResponse
from autobench.digits import load_json

#: How much of an error response's body is kept for its message.
ERROR_BODY_LIMIT = 4096
#: Per request, at most this many token chunks per token asked for (``max_tokens``), plus
#: STREAM_SLACK: vLLM sends one chunk per token or fewer (several under speculative decoding),
#: so a stream past this is a server that never stops; each chunk costs memory (its gap).
CHUNKS_PER_TOKEN = 4
#: ... and at most this many bytes per token asked for (a chunk with logprobs is a few KiB).
BYTES_PER_TOKEN = 16 * 1024
STREAM_SLACK = 64


def stream_caps(max_tokens: int) -> tuple[int, int]:
    """(token chunks, body bytes) one streamed response may hold when ``max_tokens`` were asked for."""
    tokens = max(1, max_tokens) + STREAM_SLACK
    return CHUNKS_PER_TOKEN * tokens, BYTES_PER_TOKEN * tokens


_NULL_PAT = b'"finish_reason":null'


class StreamSink:
    """Fills ``rec`` from an OpenAI-compatible SSE response (completions or chat)."""

    __slots__ = (
        "rec",
        "parser",
        "usage",
        "done",
        "tok_pat",
        "allow_missing_usage",
        "status",
        "err_body",
        "max_chunks",
        "max_bytes",
        "bytes_left",
        "group",
    )

    def __init__(self, rec: RequestRecord, *, chat: bool, allow_missing_usage: bool, max_tokens: int = 256):
        self.rec = rec
        self.max_chunks, self.max_bytes = stream_caps(max_tokens)
        self.bytes_left = self.max_bytes
        self.parser = SSEParser()
        self.usage: dict[str, Any] | None = None
        self.done = False
        self.tok_pat = b'"delta":{"content":"' if chat else b'"text":"'
        self.allow_missing_usage = allow_missing_usage
        self.status = 0
        self.err_body: bytearray | None = None
        self.group = 0  # token events in the latest read that share its gap (0: none measured yet)

    def on_head(self, status: int) -> None:
        self.status = self.rec.http_status = status
        self.rec.io = time.perf_counter()  # the response head is progress (the read timeout restarts)
        if status != 200:
            self.err_body = bytearray()

    def on_body(self, data: bytes, now: float) -> bool:
        rec = self.rec
        body = self.err_body
        if body is not None:
            rec.io = now
            body += data  # in place: self.err_body grows
            if len(body) >= ERROR_BODY_LIMIT:
                self._http_error(body, now)
                return False
            return True
        self.bytes_left -= len(data)
        if self.bytes_left < 0:
            rec.end = now
            rec.fail("overlong_stream", f"the response went past {self.max_bytes:,} bytes (the cap for max_tokens)")
            return False
        try:
            events = self.parser.feed(data)
        except EventTooLarge as exc:
            rec.end = now
            rec.fail("oversized_event", str(exc))
            return False
        if not events:
            # Comments, keep-alive blank lines and partial events are not progress: a server
            # that sends ":\n" every second must not keep the read timeout from firing.
            return True
        rec.io = now
        tok_pat = self.tok_pat
        for ev in events:
            if (
                rec.first is not None
                and _NULL_PAT in ev
                and tok_pat in ev
                and (b'"usage"' not in ev or b'"usage":null' in ev)
                and b'"error"' not in ev
            ):
                if rec.n_chunks >= self.max_chunks:
                    rec.end = now
                    rec.fail("overlong_stream", f"more than {self.max_chunks} token chunks (the cap for max_tokens)")
                    return False
                if now != rec.last:  # the first token event of this read (inline _gap: the hot path)
                    if self.group > 1:
                        self._share()
                    rec.gaps.append(now - rec.last)  # type: ignore[operator]
                    rec.last = now
                    self.group = 1
                elif self.group:
                    self.group += 1
                else:
                    rec.unseen_gaps += 1
                rec.n_chunks += 1
                continue
            if ev == b"[DONE]":
                self.done = True
                continue
            if not self._slow_event(ev, now):
                rec.end = now
                return False
        return True

    def on_end(self, now: float) -> None:
        rec = self.rec
        rec.end = now
        if self.group > 1:
            self._share()
        if self.err_body is not None:
            self._http_error(self.err_body, now)
            return
        for ev in self.parser.finish():
            if ev == b"[DONE]":
                self.done = True
        if not self.done and rec.finish_reason is None:
            rec.fail("stream_dropped", f"stream ended without [DONE] after {rec.n_chunks} chunks")
            return
        if rec.first is None:
            rec.fail("no_tokens", "the stream finished without any token")
            return
        usage = self.usage
        if usage is not None and isinstance(usage.get("completion_tokens"), int):
            rec.completion_tokens = usage["completion_tokens"]
            pt = usage.get("prompt_tokens")
            rec.prompt_tokens = pt if isinstance(pt, int) else rec.prompt_est
        elif self.allow_missing_usage:
            rec.usage_fallback = True
            rec.completion_tokens = rec.n_chunks
            rec.prompt_tokens = rec.prompt_est
        else:
            rec.fail(
                "no_usage",
                "the stream carried no usage report (stream_options.include_usage ignored?); see --allow-missing-usage",
            )
            return
        rec.status = OK

    def on_lost(self, exc: BaseException | None, got_head: bool) -> None:
        if isinstance(exc, BadResponse):
            self.rec.fail("client_error", str(exc))
            return
        why = f"{type(exc).__name__}: {exc}" if exc is not None else "the server closed the connection"
        if got_head:
            self.rec.fail("stream_dropped", f"{why} after {self.rec.n_chunks} chunks")
        else:
            self.rec.fail("connection_lost", f"{why} before a response arrived")

    def _http_error(self, body: bytearray, now: float) -> None:
        self.rec.end = now
        kind = "http_5xx" if self.status >= 500 else "http_4xx"
        # the first 4 KiB whatever the reads brought: the message does not depend on how they fell
        text = bytes(body[:ERROR_BODY_LIMIT]).decode("utf-8", "replace")
        self.rec.fail(kind, f"HTTP {self.status}: {error_message(text)}")

    def _gap(self, now: float) -> None:
        """The inter-token gap of a token event after the first, read at ``now`` (module doc)."""
        rec = self.rec
        if now != rec.last:  # a new read: its first token event's gap is measured
            if self.group > 1:
                self._share()
            rec.gaps.append(now - rec.last)  # type: ignore[operator]
            rec.last = now
            self.group = 1
        elif self.group:  # the same read as the previous token event: it shares that gap
            self.group += 1
        else:  # the same read as the first token: no earlier read to measure from
            rec.unseen_gaps += 1

    def _share(self) -> None:
        """The last read brought ``group`` token events: its gap (from the read before) becomes
        ``group`` equal gaps, its time spread over the events it brought.  (The caller starts
        the next group, or the stream has ended.)"""
        k, gaps = self.group, self.rec.gaps
        share = gaps.pop() / k
        gaps.extend([share] * k)
        self.rec.shared_gaps += k

    def _slow_event(self, ev: bytes, now: float) -> bool:
        """Parse one event; False when it failed the request."""
        rec = self.rec
        try:
            obj = load_json(ev)
        except ValueError:
            rec.fail("non_json", f"event is not JSON: {ev[:80]!r}")
            return False
        if not isinstance(obj, dict):
            rec.fail("non_json", f"event is not a JSON object: {ev[:80]!r}")
            return False
        if "error" in obj or obj.get("object") == "error":
            err = obj.get("error", obj)
            msg = err.get("message") if isinstance(err, dict) else err
            rec.fail("in_stream_error", f"error in stream after {rec.n_chunks} chunks: {msg}")
            return False
        choices = obj.get("choices")
        if choices and isinstance(choices, list) and isinstance(choices[0], dict):
            ch = choices[0]
            if _is_token_event(ch):
                if rec.n_chunks >= self.max_chunks:
                    rec.fail("overlong_stream", f"more than {self.max_chunks} token chunks (the cap for max_tokens)")
                    return False
                if rec.first is None:
                    rec.first = rec.last = now
                    srv = obj.get("t_srv")
                    rec.first_srv = srv if isinstance(srv, float) else None
                    arr = obj.get("t_arr")
                    rec.arr_srv = arr if isinstance(arr, float) else None
                else:
                    self._gap(now)
                rec.n_chunks += 1
            fr = ch.get("finish_reason")
            if fr:
                rec.finish_reason = fr
        u = obj.get("usage")
        if isinstance(u, dict) and u:
            self.usage = u
        return True


def _is_token_event(choice: dict[str, Any]) -> bool:
    """Whether a choice is a token event: any choice but a chat role announcement."""
    d = choice.get("delta")
    if isinstance(d, dict) and "role" in d:
        # vLLM's first chat chunk: {"role": "assistant", "content": ""}, sent before the first token.
        return any(d.get(k) for k in ("content", "reasoning_content", "reasoning", "tool_calls"))
    return True


def error_message(text: str) -> str:
    """The message of an OpenAI/vLLM error body, else the (truncated) body itself."""
    try:
        obj = load_json(text)
    except ValueError:
        return " ".join(text.split())[:200] or "(empty body)"
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        message = err.get("message") if isinstance(err, dict) else None
        if isinstance(message, str):
            return message
        message = obj.get("message")
        if isinstance(message, str):
            return message
        if isinstance(err, str):
            return err
    return " ".join(text.split())[:200]

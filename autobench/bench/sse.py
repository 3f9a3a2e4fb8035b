"""Server-sent events, split from raw bytes.

Works on bytes so an event or a UTF-8 sequence split across reads is joined
before anything is decoded.  Events end at a blank line (``\\n\\n``, ``\\r\\n\\r\\n``
or ``\\r\\r``); lines starting with ``:`` are comments; ``data:`` may or may not
be followed by a space; several ``data:`` lines in one event are joined with
``\\n``; other fields (``event:``, ``id:``, ``retry:``) are ignored.  ``finish``
returns a trailing event that had no blank line after it (vLLM's own client
accepts one).

Bounded and linear: the bytes of an event not yet ended (and so of any one line)
may not exceed ``MAX_EVENT_BYTES`` (``EventTooLarge`` is raised as soon as they
do), and every byte is scanned once and copied a constant number of times, however
the event is split across reads (a growing buffer is never rebuilt per read).
"""

from __future__ import annotations

#: The largest SSE event (and so line) held while waiting for its end.  vLLM's token
#: events are ~200 bytes; one with every logprob of a long prompt stays far below this.
MAX_EVENT_BYTES = 16 * 2**20


class EventTooLarge(Exception):
    """An event (or a line) grew past the parser's limit without ending."""


class SSEParser:
    __slots__ = ("_buf", "_scan", "_hold", "limit")

    def __init__(self, limit: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()  # normalized bytes (\n line ends) of the event(s) not yet ended
        self._scan = 0  # how much of _buf has been searched for a blank line
        self._hold = b""  # a trailing \r: maybe the first half of \r\n
        self.limit = limit

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add bytes; return the ``data`` payload of every event completed by them."""
        if (
            not self._buf
            and not self._hold
            and chunk.startswith(b"data: ")
            and chunk.find(b"\n", 6) == len(chunk) - 2
            and chunk.endswith(b"\n\n")
            and b"\r" not in chunk
        ):
            return [chunk[6:-2]]  # the common case: one whole one-line event per read
        if self._hold:
            chunk, self._hold = self._hold + chunk, b""
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):  # maybe the first half of "\r\n": decide on the next read
                chunk, self._hold = chunk[:-1], b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        held = self._buf
        pending = bool(held)
        if pending:  # an event is pending: append (amortized), search only the new bytes
            held += chunk
            buf: bytes | bytearray = held
            pos = max(self._scan - 1, 0)  # a blank line may straddle the previous read
        else:
            buf, pos = chunk, 0
        out: list[bytes] = []
        start = 0
        while True:
            end = buf.find(b"\n\n", pos)
            if end < 0:
                break
            data = _event_data(bytes(buf[start:end]) if pending else chunk[start:end])
            if data is not None:
                out.append(data)
            start = pos = end + 2
        if pending:
            if start:
                del held[:start]
        elif start < len(buf):  # keep the start of the next event
            held += memoryview(buf)[start:]
        self._scan = len(held)
        if len(held) > self.limit:
            size = len(held)
            self._buf = bytearray()
            self._scan = 0
            raise EventTooLarge(f"an SSE event grew past {self.limit:,} bytes without ending ({size:,} bytes held)")
        return out

    def finish(self) -> list[bytes]:
        """Payload of a final event without its blank line, if any."""
        rest = bytes(self._buf) + (b"\n" if self._hold else b"")
        self._buf, self._scan, self._hold = bytearray(), 0, b""
        if not rest.strip():
            return []
        data = _event_data(rest.rstrip(b"\n"))
        return [data] if data is not None else []


def _event_data(block: bytes) -> bytes | None:
    if block.startswith(b"data: ") and b"\n" not in block:  # the common case, fast
        return block[6:]
    parts: list[bytes] = []
    for line in block.split(b"\n"):
        if not line or line.startswith(b":"):
            continue
        if line.startswith(b"data:"):
            value = line[5:]
            if value.startswith(b" "):
                value = value[1:]
            parts.append(value)
    if not parts:
        return None
    return b"\n".join(parts)

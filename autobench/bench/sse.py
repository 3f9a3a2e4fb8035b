"""Server-sent events, split from raw bytes.

Works on bytes so an event or a UTF-8 sequence split across reads is joined
before anything is decoded.  Events end at a blank line (``\\n\\n``, ``\\r\\n\\r\\n``
or ``\\r\\r``); lines starting with ``:`` are comments; ``data:`` may or may not
be followed by a space; several ``data:`` lines in one event are joined with
``\\n``; other fields (``event:``, ``id:``, ``retry:``) are ignored.  ``finish``
returns a trailing event that had no blank line after it (vLLM's own client
accepts one).
"""

from __future__ import annotations


class SSEParser:
    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add bytes; return the ``data`` payload of every event completed by them."""
        if (
            not self._buf
            and chunk.startswith(b"data: ")
            and chunk.find(b"\n", 6) == len(chunk) - 2
            and chunk.endswith(b"\n\n")
            and b"\r" not in chunk
        ):
            return [chunk[6:-2]]  # the common case: one whole one-line event per read
        buf = self._buf + chunk if self._buf else chunk
        hold = b""
        if b"\r" in buf:
            if buf.endswith(b"\r"):  # maybe the first half of "\r\n": decide on the next read
                buf, hold = buf[:-1], b"\r"
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        out: list[bytes] = []
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            data = _event_data(buf[start:end])
            if data is not None:
                out.append(data)
            start = end + 2
        self._buf = buf[start:] + hold
        return out

    def finish(self) -> list[bytes]:
        """Payload of a final event without its blank line, if any."""
        rest, self._buf = self._buf, b""
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

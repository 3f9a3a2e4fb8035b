"""Redact secret values from text before it is stored anywhere.

Secrets travel by name; their values only ever exist in the environment handed
to the server.  Whatever the server prints (a token echoed in an argument dump,
a URL with credentials) passes through :func:`redact` or a :class:`Redactor`
before it reaches a run folder, the ledger or a report.

* Every value of ``secrets`` (name -> value) is replaced by ``[REDACTED:NAME]``,
  longest values first so a value containing another is replaced whole.
* Values shorter than :data:`MIN_SECRET_LEN` characters are ignored: replacing
  "1" or "on" everywhere would shred the log and protect nothing.
* Hugging Face tokens (``hf_`` + 30 or more letters/digits) are replaced by
  ``[REDACTED:hf_token]`` even when nobody named them.
* A multi-line value is also redacted line by line (each line of 4+ characters),
  because a line-oriented stream never holds the whole value at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

MIN_SECRET_LEN = 4
#: Environment variables whose values are always treated as secrets (besides declared ones).
SECRET_NAME_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL)", re.IGNORECASE)
#: An environment variable named like a secret counts from this many characters on.
MIN_ENV_SECRET_LEN = 6
HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{30,}")
_HF_PARTIAL = re.compile(r"hf_[A-Za-z0-9]*$|hf?$")
HF_REPLACEMENT = "[REDACTED:hf_token]"


def _pairs(secrets: Mapping[str, str]) -> list[tuple[str, str]]:
    pairs: dict[str, str] = {}
    for name, value in secrets.items():
        if not isinstance(value, str):
            continue
        for piece in [value, *value.splitlines()] if "\n" in value or "\r" in value else [value]:
            piece = piece.strip("\r\n") if piece is not value else piece
            if len(piece) >= MIN_SECRET_LEN and piece not in pairs:
                pairs[piece] = name
    return sorted(((v, n) for v, n in pairs.items()), key=lambda p: len(p[0]), reverse=True)


def _compile(pairs: list[tuple[str, str]]) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    if not pairs:
        return None, {}
    names = {value: f"[REDACTED:{name}]" for value, name in pairs}
    return re.compile("|".join(re.escape(v) for v, _ in pairs)), names


def environment_secrets(names: Iterable[str] = (), env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Secrets to redact (name -> value): every variable in ``names`` that is set, and any
    environment variable named like a secret (``SECRET_NAME_RE``) with a value of at least
    ``MIN_ENV_SECRET_LEN`` characters.  ``env`` defaults to ``os.environ``."""
    env = os.environ if env is None else env
    out = {n: env[n] for n in names if env.get(n)}
    for name, value in env.items():
        if name not in out and value and len(value) >= MIN_ENV_SECRET_LEN and SECRET_NAME_RE.search(name):
            out[name] = value
    return out


def redact(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value and every ``hf_`` token replaced."""
    pattern, names = _compile(_pairs(secrets or {}))
    if pattern is not None:
        text = pattern.sub(lambda m: names[m.group(0)], text)
    return HF_TOKEN.sub(HF_REPLACEMENT, text)


class Redactor:
    """Streaming redaction: ``feed(chunk) -> str`` then ``flush() -> str``.

    Output is emitted per complete line, so a secret split across two chunks is
    still caught.  A line longer than ``max_line`` characters is emitted in pieces,
    holding back enough characters that no secret or ``hf_`` token is cut.
    """

    def __init__(self, secrets: Mapping[str, str] | None = None, *, max_line: int = 1 << 20):
        pairs = _pairs(secrets or {})
        self._pattern, self._names = _compile(pairs)
        self._longest = max((len(v) for v, _ in pairs), default=0)
        self._max_line = max(max_line, 2 * self._longest + 64)
        self._buf = ""

    def _redact(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(lambda m: self._names[m.group(0)], text)
        return HF_TOKEN.sub(HF_REPLACEMENT, text)

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        cut = self._buf.rfind("\n") + 1
        if cut:
            ready, self._buf = self._buf[:cut], self._buf[cut:]
            return self._redact(ready)
        if len(self._buf) <= self._max_line:
            return ""
        # An endless line: emit all but a tail that could still hold the start of a secret.
        keep = max(self._longest - 1, 0)
        partial = _HF_PARTIAL.search(self._buf)
        if partial:
            keep = max(keep, len(self._buf) - partial.start())
        cut = len(self._buf) - keep
        for rx in (self._pattern, HF_TOKEN):
            if rx is None:
                continue
            for m in rx.finditer(self._buf):
                if m.start() < cut < m.end():
                    cut = m.end()  # never split a match that is already complete
        head, self._buf = self._buf[:cut], self._buf[cut:]
        return self._redact(head)

    def flush(self) -> str:
        text, self._buf = self._buf, ""
        return self._redact(text)

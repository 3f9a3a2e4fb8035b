"""What a secret looks like, and how it is taken out of text: the one place for both.

A leaf module (standard library only).  Every writer of text that leaves the process
-- the stored server log, ``logs parse`` output, ledger rows and their export, report
pages, lock files -- redacts through it, and the recipe rules refuse what it matches.

Token shapes (:data:`TOKEN`, one named group per shape):

* ``hf_token``: a Hugging Face token, ``hf_`` + 20 or more letters/digits.
* ``openai_key`` (``sk-…``), ``github_token`` (``ghp_…``, ``github_pat_…``),
  ``slack_token`` (``xox?-…``), ``aws_key`` (``AKIA…``), ``gitlab_token`` (``glpat-…``).

Secret-looking names (:func:`is_secret_name`): a well-known name
(:data:`WELL_KNOWN_SECRET_NAMES`) or one with a ``_``-separated part from
:data:`SECRET_NAME` (``MY_SERVICE_TOKEN``, ``DB_PASSWORD``; not ``TOKENIZERS_PARALLELISM``).

Redaction (:func:`redact`, :class:`Redactor` for streams, :func:`redact_tree` for JSON):

* Every value of ``secrets`` (name -> value) is replaced by ``[REDACTED:NAME]``,
  longest values first so a value containing another is replaced whole.
* Values shorter than :data:`MIN_SECRET_LEN` characters are ignored: replacing
  "1" or "on" everywhere would shred the log and protect nothing.
* Every token shape is replaced by ``[REDACTED:<shape>]`` (``[REDACTED:hf_token]``)
  even when nobody named it.
* Every URL in the text has its secrets masked (:func:`scrub_url`: the password of its user
  info, query parameters such as ``password``, ``sslpassword``, ``passfile``, ``options``).
* A multi-line value is also redacted line by line (each line of 4+ characters),
  because a line-oriented stream never holds the whole value at once.

:func:`environment_secrets` decides which variables count: the declared names, and
any variable named like a secret whose value has :data:`MIN_ENV_SECRET_LEN`+ characters.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MIN_SECRET_LEN = 4
#: A variable named like a secret counts (for redaction and the AB030 rule) from this many characters on.
MIN_ENV_SECRET_LEN = 6

#: Names that are secrets wherever they appear.
WELL_KNOWN_SECRET_NAMES = frozenset(
    {
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACE_HUB_TOKEN",
        "HF_API_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "WANDB_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "NGC_API_KEY",
        "VLLM_API_KEY",
    }
)
#: A name part (between ``_`` or at either end) that makes a variable name look like a secret.
SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)(?:_|$)",
    re.IGNORECASE,
)

HF_TOKEN = re.compile(r"hf_[A-Za-z0-9]{20,}")
_SHAPES: tuple[tuple[str, str], ...] = (
    ("hf_token", HF_TOKEN.pattern),
    ("openai_key", r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_\-]{20,}"),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"),
    ("slack_token", r"xox[abpr]-[A-Za-z0-9-]{10,}"),
    ("aws_key", r"AKIA[0-9A-Z]{16}"),
    ("gitlab_token", r"glpat-[A-Za-z0-9_\-]{20}"),
)
#: Any token shape; ``match.lastgroup`` names the shape.
TOKEN = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _SHAPES))
#: What a stream may still be in the middle of: the trailing run of token characters.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]{1,256}$")


#: Query parameters of a URL whose values are secrets wherever they appear: libpq's connection
#: parameters (``password``, ``sslpassword``, ``passfile``; ``options`` may carry ``-c`` settings
#: with any value), and the usual names of a token in a query string.  Any other parameter named
#: like a secret (:func:`is_secret_name`: ``api_key``, ``client_secret``) counts too.
URL_SECRET_PARAMS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "sslpassword",
        "passfile",
        "options",
        "token",
        "key",
        "auth",
        "sig",
        "signature",
        "credential",
        "credentials",
    }
)
#: A URL in free text: a scheme of at most 32 characters not glued to a word before it, then
#: everything up to whitespace or a quote.  The bounded scheme keeps the search linear.
URL = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s'\"<>`]*")
_URL_HOLD = 8192
_QUERY_PART = re.compile(r"([?&;])([^=&;#]*)(=?)([^&;#]*)")
URL_MASK = "***"


def _secret_param(name: str) -> bool:
    from urllib.parse import unquote_plus

    name = unquote_plus(name).strip().lower()
    return name in URL_SECRET_PARAMS or is_secret_name(name)


def scrub_url(url: str) -> str:
    """``url`` with its secrets masked as ``***``: the password of its user info
    (``postgresql://me:***@db/ledger``; a user named like a token shape is redacted by
    :func:`redact`) and the value of every query parameter named like a secret
    (:data:`URL_SECRET_PARAMS`, ``?sslmode=require&password=***``).  Anything else, including
    the text's own spelling, is kept, so the URL still says where it points."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    # The user info ends at the last '@' before the query: a password may hold '/' unescaped
    # (SQLAlchemy's URL parser reads it so), and masking too much beats showing a password.
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i != -1), default=len(rest))
    head, tail = rest[:cut], rest[cut:]
    at = head.rfind("@")
    if at != -1:
        user, colon, _password = head[:at].partition(":")
        if colon:
            head = f"{user}:{URL_MASK}{head[at:]}"
    if tail.startswith("?"):
        fragment = tail.find("#")
        query, fragment_text = (tail, "") if fragment == -1 else (tail[:fragment], tail[fragment:])
        tail = _QUERY_PART.sub(_mask_param, query) + fragment_text
    return f"{scheme}://{head}{tail}"


def _mask_param(m: re.Match[str]) -> str:
    sep, name, equals, value = m.groups()
    return sep + name + equals + (URL_MASK if equals and _secret_param(name) else value)


def is_secret_name(name: str) -> bool:
    """Whether a variable named ``name`` holds a secret (well-known, or named like one)."""
    return name.upper() in WELL_KNOWN_SECRET_NAMES or SECRET_NAME.search(name) is not None


def find_token(text: str) -> str | None:
    """The shape name of the first token in ``text`` (``"hf_token"``...), or None."""
    m = TOKEN.search(text)
    return m.lastgroup if m else None


def secret_in(text: str, secrets: Mapping[str, str]) -> str | None:
    """The name of a secret whose value (or a line of it) occurs in ``text``, or None."""
    for value, name in _pairs(secrets):
        if value in text:
            return name
    return None


def environment_secrets(names: Iterable[str] = (), env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Secrets to redact (name -> value): every variable in ``names`` that is set, and any
    variable named like a secret (:func:`is_secret_name`) with a value of at least
    :data:`MIN_ENV_SECRET_LEN` characters.  ``env`` defaults to ``os.environ``."""
    env = os.environ if env is None else env
    out = {n: env[n] for n in names if env.get(n)}
    for name, value in env.items():
        if name not in out and value and len(value) >= MIN_ENV_SECRET_LEN and is_secret_name(name):
            out[name] = value
    return out


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


#: From this many characters on, a named secret without whitespace of its own (a key, a token) is
#: also found with whitespace inside it: a server that echoes a key split by a line break
#: ("abcd\nefgh"), which a one-line message then shows as "abcd efgh".  (Shorter values would
#: match ordinary spaced-out text; a passphrase with spaces is matched as written.)
MIN_SPACED_LEN = 8
_WHITESPACE = re.compile(r"\s")


def _spaced(value: str) -> str:
    return r"\s*".join(re.escape(c) for c in "".join(value.split()))


def _compile(pairs: list[tuple[str, str]], *, spaced: bool = False) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    """The pattern of every value (longest first) and value -> label; with ``spaced``, values of
    MIN_SPACED_LEN+ characters match with whitespace between their characters too (the labels
    are then keyed by the value without whitespace as well)."""
    if not pairs:
        return None, {}
    names = {value: f"[REDACTED:{name}]" for value, name in pairs}
    if not spaced:
        return re.compile("|".join(re.escape(v) for v, _ in pairs)), names
    for value, name in pairs:
        names.setdefault("".join(value.split()), f"[REDACTED:{name}]")
    parts = [_spaced(v) if len(v) >= MIN_SPACED_LEN and not _WHITESPACE.search(v) else re.escape(v) for v, _ in pairs]
    return re.compile("|".join(parts)), names


def _label(names: Mapping[str, str], found: str) -> str:
    return names.get(found) or names.get("".join(found.split())) or "[REDACTED]"


def _token_label(m: re.Match[str]) -> str:
    return f"[REDACTED:{m.lastgroup}]"


def _scrub_one(m: re.Match[str]) -> str:
    url = m.group(0)
    bare = url.rstrip(":.,;)]}!")  # the punctuation of the sentence around it ("URL: message")
    return scrub_url(bare) + url[len(bare) :]


def _scrub_urls(text: str) -> str:
    return URL.sub(_scrub_one, text) if "://" in text else text


def _apply(text: str, pattern: re.Pattern[str] | None, names: Mapping[str, str]) -> str:
    if pattern is not None:
        text = pattern.sub(lambda m: _label(names, m.group(0)), text)
    return TOKEN.sub(_token_label, _scrub_urls(text))


def redact(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value (also split by whitespace) and every token shape replaced."""
    pattern, names = _compile(_pairs(secrets or {}), spaced=True)
    return _apply(text, pattern, names)


def redact_tree(obj: Any, secrets: Mapping[str, str] | None = None) -> Any:
    """``obj`` (JSON-like: dicts, lists, strings, scalars) with every string redacted."""
    pattern, names = _compile(_pairs(secrets or {}), spaced=True)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _apply(node, pattern, names)
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v) for v in node]
        return node

    return walk(obj)


class Redactor:
    """Streaming redaction: ``feed(chunk) -> str`` then ``flush() -> str``.

    Output is emitted per complete line, so a secret split across two chunks is
    still caught.  A line longer than ``max_line`` characters is emitted in pieces,
    holding back enough characters that no secret or token is cut.
    """

    def __init__(self, secrets: Mapping[str, str] | None = None, *, max_line: int = 1 << 20):
        pairs = _pairs(secrets or {})
        self._pattern, self._names = _compile(pairs, spaced=True)
        self._longest = max((len(v) for v, _ in pairs), default=0)
        self._max_line = max(max_line, 2 * self._longest + 64)
        self._buf = ""

    def _redact(self, text: str) -> str:
        return _apply(text, self._pattern, self._names)

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        cut = self._buf.rfind("\n") + 1
        if cut:
            ready, self._buf = self._buf[:cut], self._buf[cut:]
            return self._redact(ready)
        if len(self._buf) <= self._max_line:
            return ""
        # An endless line: emit all but a tail that could still hold the start of a secret:
        # a token shape running to the end, or (below) the start of a named secret.
        partial = _TOKEN_TAIL.search(self._buf)
        cut = partial.start() if partial else len(self._buf)
        for rx in (self._pattern, TOKEN):
            if rx is None:
                continue
            for m in rx.finditer(self._buf):
                if m.start() < cut < m.end():
                    cut = m.end()  # never split a match that is already complete
        # ... but a token shape runs on over any letters, so that step may have moved the cut
        # past the start of a named secret still arriving: keep it whole (named secrets go
        # first, as in redact(); the token before it is redacted on its own).
        cut = min(cut, self._secret_start(self._buf))
        # A URL still arriving keeps its user info and query together (up to _URL_HOLD
        # characters: a longer "URL" is emitted in pieces like any other text).
        last = collections.deque(URL.finditer(self._buf, max(0, len(self._buf) - _URL_HOLD)), maxlen=1)
        if last and last[0].end() == len(self._buf):
            cut = min(cut, last[0].start())
        head, self._buf = self._buf[:cut], self._buf[cut:]
        return self._redact(head)

    def _secret_start(self, text: str) -> int:
        """Where the earliest trailing part of ``text`` that begins a named secret starts
        (``len(text)`` when none does)."""
        start = len(text)
        for value in self._names:
            for k in range(min(len(value) - 1, len(text)), 0, -1):
                if len(text) - k >= start:
                    break
                if text.endswith(value[:k]):
                    start = len(text) - k  # the next, shorter k stops at the test above
        return start

    def flush(self) -> str:
        text, self._buf = self._buf, ""
        return self._redact(text)


__all__ = [
    "HF_TOKEN",
    "MIN_ENV_SECRET_LEN",
    "MIN_SECRET_LEN",
    "SECRET_NAME",
    "TOKEN",
    "URL",
    "URL_MASK",
    "URL_SECRET_PARAMS",
    "WELL_KNOWN_SECRET_NAMES",
    "Redactor",
    "environment_secrets",
    "find_token",
    "is_secret_name",
    "redact",
    "redact_tree",
    "scrub_url",
    "secret_in",
]

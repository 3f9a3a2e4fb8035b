"""ASCII digits: the only digits a port, a run id, a job id or a Content-Length is written in.

A leaf module (standard library only).  ``str.isdigit()`` is also true for ``'²'`` and ``'８'``:
``int('²')`` then raises (a traceback from a recipe's port or a server's header), and
``int('８０００')`` is 8000, a number docker, HTTP and SQL never see written that way.  Every
"is this a number?" test on text from a user, a file or a server goes through here.

Numbers and nesting are bounded here too: :func:`parse_int` refuses more than
:data:`MAX_INT_DIGITS` digits before converting, and :func:`load_json` is the one JSON reader for
text from outside, refusing nesting deeper than :data:`MAX_JSON_DEPTH` before it parses.
"""

from __future__ import annotations

import json
import re
from typing import Any

_DIGITS = re.compile(r"[0-9]+")


def is_digits(text: str) -> bool:
    """True when ``text`` is one or more ASCII digits and nothing else."""
    return _DIGITS.fullmatch(text) is not None


#: No number autobench reads needs more digits than this (a port has 5, a byte count 20); Python
#: refuses int <-> str conversions past 4,300 digits, which was an internal error (exit 70).
MAX_INT_DIGITS = 100
#: No JSON autobench reads (Hub answers, registry manifests, /v1/models, ledger columns, peer
#: configs) nests this deep; deeper is refused before it is parsed (a RecursionError otherwise).
MAX_JSON_DEPTH = 100

_INT = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str, *, max_digits: int = MAX_INT_DIGITS) -> int:
    """``text`` (ASCII digits, an optional sign, surrounding spaces allowed) as an int; ValueError
    for anything else or for more than ``max_digits`` digits (checked before converting)."""
    body = text.strip()
    if _INT.fullmatch(body) is None:
        raise ValueError(f"not a whole number: {body[:40]!r}")
    if len(body.lstrip("+-")) > max_digits:
        raise ValueError(f"a number of {len(body.lstrip('+-'))} digits (at most {max_digits})")
    return int(body)


class JSONLimitError(json.JSONDecodeError):
    """JSON refused by :func:`load_json`: nested too deeply (``too_deep``), or a value Python
    cannot convert.  A ``JSONDecodeError`` (so a ``ValueError``): callers that handle bad JSON
    handle this too."""

    too_deep = False


class JSONTooDeep(JSONLimitError):
    too_deep = True


# Strings (escapes and all) are skipped: a bracket inside one is text.  Linear: the string's
# body is the unrolled loop "plain run, then (escape, plain run)*", whose parts never match the
# same character, so nothing is tried twice.
_JSON_SKIP = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^\[\]{}"]+')
_OPEN = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deeply ``text`` (JSON) nests its arrays and objects, counting only brackets outside
    strings (a linear scan; malformed text gives some number, and json.loads then refuses it)."""
    from itertools import accumulate

    brackets = _JSON_SKIP.sub("", text)
    return max(accumulate(_OPEN[c] for c in brackets), default=0)


def load_json(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with a depth limit and every failure a ``json.JSONDecodeError``: too deep
    (checked before parsing), an integer over Python's 4,300-digit limit, NaN/Infinity kept as
    json.loads keeps them.  The one JSON reader for text from outside (Hub, registry, servers,
    ledger rows, imported files)."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JSONLimitError(f"not UTF-8 text (byte {exc.start})", "", 0) from exc
    opened = text.count("[") + text.count("{")
    depth = json_depth(text) if opened > max_depth else opened
    if depth > max_depth:
        raise JSONTooDeep(f"nested {depth} levels deep (at most {max_depth})", text[:64], 0)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:  # pragma: no mutate  (unreachable after the depth check: a guard)
        raise JSONTooDeep("nested too deeply to read", text[:64], 0) from exc  # pragma: no mutate
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise JSONLimitError(f"a value that cannot be read ({str(exc).split(';')[0]})", text[:64], 0) from exc

"""The hash chain: canonical row hashing and verification.

``row_hash = sha256(canonical_json(content))`` where *content* is every column of
the run except ``row_hash`` itself -- including ``id`` (so rows cannot be reordered)
and ``prev_hash`` (the previous row's ``row_hash``, or 64 zeros for run #1).  The
canonical JSON has sorted keys, no whitespace, UTF-8, each value coerced to its
column's kind (int, float, bool, text; NULL stays null), so the same row hashes the
same on every backend.

Columns added by a later migration (``models.ADDED_IN``, e.g. the v3 boot facts) enter
the content only when they are not NULL.  A row written before such a column existed
has it NULL after the migration, so its content -- and its hash -- is exactly what the
older code computed; a value later written into it (or a value removed from a newer
row) changes the content and breaks the chain.  Columns of the v1 table always enter,
NULL as ``null``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, SupportsFloat, SupportsIndex

from sqlalchemy import Boolean, Column, Float, Integer

from autobench import metric_catalogue as catalogue
from autobench.digits import is_digits
from autobench.ledger.models import ADDED_IN, CONTENT_KEYS, GENESIS_HASH, RUNS


def _kind(column: Column[Any]) -> str:
    if isinstance(column.type, Boolean):
        return "bool"
    if isinstance(column.type, Integer):
        return "int"
    if isinstance(column.type, Float):
        return "float"
    return "str"


KINDS: dict[str, str] = {c.name: _kind(c) for c in RUNS.columns}
#: The kind of every stored metric (``autobench.metric_catalogue``), those without a column too.
METRIC_KINDS: dict[str, str] = {m.key: m.kind for m in catalogue.METRICS if m.stored}


def coerce_metric(key: str, value: object) -> object:
    """Normalize a metric's value to its catalogue kind (a list of numbers for ``floats``);
    raise ValueError/TypeError if impossible."""
    if value is None:
        return None
    kind = METRIC_KINDS[key]
    if kind == "flags":  # quality flags: name -> why
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(w, str) for k, w in value.items()
        ):
            raise TypeError(f"expected flag names mapped to text, got {value!r}")
        return {str(k): str(w) for k, w in value.items()}
    if kind != "floats":
        return _coerce(kind, value)
    if not isinstance(value, list | tuple):
        raise TypeError(f"expected a list of numbers, got {value!r}")
    return [_coerce("float", v) for v in value]


def coerce(key: str, value: object) -> object:
    """Normalize ``value`` to the kind of column ``key``; raise ValueError/TypeError if impossible."""
    if value is None:
        return None
    return _coerce(KINDS[key], value)


def _coerce(kind: str, value: object) -> object:
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ValueError(f"expected true/false, got {value!r}")
    if kind == "int":
        if isinstance(value, bool):
            raise TypeError(f"expected an integer, got {value!r}")
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"expected an integer, got {value!r}")
            return int(value)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and is_digits(value.strip().lstrip("-")):
            return int(value)
        raise TypeError(f"expected an integer, got {value!r}")
    if kind == "float":
        if isinstance(value, bool):
            raise TypeError(f"expected a number, got {value!r}")
        if not isinstance(value, str | bytes | SupportsFloat | SupportsIndex):  # float()'s own refusal
            raise TypeError(f"float() argument must be a string or a real number, not {type(value).__name__!r}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {value!r}")
        return number
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def canonical_content(row: Mapping[str, object]) -> dict[str, object]:
    """The hashed content of ``row``: every v1 column, plus each later column that is not NULL."""
    content = {}
    for key in CONTENT_KEYS:
        value = coerce(key, row.get(key))
        if value is None and key in ADDED_IN:
            continue
        content[key] = value
    return content


def canonical_json(row: Mapping[str, object]) -> str:
    content = canonical_content(row)
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


#: Not part of a run's own content: its place in one ledger (id, chain links, references to
#: other runs by id, which ``ledger push`` renumbers) and its stable id.
LOCAL_KEYS = frozenset({"id", "prev_hash", "row_hash", "corrects", "supersedes", "replay_of", "run_uid"})


def content_hash(row: Mapping[str, object]) -> str:
    """sha256 hex of what the run itself is: the canonical content without ``LOCAL_KEYS``.
    The same in every ledger the run is pushed to (its row hash is not: that covers the chain)."""
    content = {k: v for k, v in canonical_content(row).items() if k not in LOCAL_KEYS}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_hash(row: Mapping[str, object]) -> str:
    """sha256 hex of the canonical JSON of ``row``'s content (prev_hash included)."""
    return hashlib.sha256(canonical_json(row).encode("utf-8")).hexdigest()


def check_head(text: str) -> str:
    """A known chain head as given to ``verify --head``: 64 hex digits (lowercased)."""
    head = text.strip().lower()
    if len(head) != 64 or any(c not in "0123456789abcdef" for c in head):
        from autobench.errors import LedgerError

        raise LedgerError(
            f"--head {text.strip()[:80]!r} is not a chain head (64 hex digits)",
            hint="use the head_hash that autobench ledger verify printed earlier",
        )
    return head


def _cells_problem(stored: object, found: str | None) -> str | None:
    """What is wrong between a run's ``cells_digest`` and the digest of its stored cells."""
    if stored is None and found is None:
        return None
    if stored is None:
        return "the run has no cells_digest but the cells table holds cells for it (cells were inserted)"
    if found is None:
        return "its cells_digest covers cells that are gone from the cells table (cells were deleted)"
    if stored != found:
        return (
            f"its cells do not match its cells_digest (stored {str(stored)[:12]}..., recomputed {found[:12]}...): "
            "a cell's parameters, metrics or samples were changed after it was appended"
        )
    return None


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of ``Ledger.verify()``: ``ok``, runs checked, head hash, first broken row,
    the append-only triggers found missing, and where a known head was found (run id;
    0 for the genesis hash) when one was given."""

    ok: bool
    runs: int
    head_hash: str
    first_bad_id: int | None = None
    problem: str | None = None
    missing_triggers: tuple[str, ...] = ()
    known_head_at: int | None = None

    def __str__(self) -> str:
        if self.ok:
            text = f"ledger OK: {self.runs} runs, chain head {self.head_hash}"
            if self.known_head_at:
                text += f"; the known head is run #{self.known_head_at}"
            return text
        if self.first_bad_id is None:
            return f"ledger NOT OK: {self.problem}"
        return f"ledger chain BROKEN at run #{self.first_bad_id}: {self.problem}"

    def to_json_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "runs": self.runs,
            "head_hash": self.head_hash,
            "first_bad_id": self.first_bad_id,
            "problem": self.problem,
            "missing_triggers": list(self.missing_triggers),
            "known_head_at": self.known_head_at,
        }


def verify_rows(
    rows: Iterable[Mapping[str, object]],
    known_head: str | None = None,
    cells_digests: Mapping[int, str] | None = None,
) -> VerifyResult:
    """Walk rows in ascending id order; stop at the first row that breaks the chain.

    With ``known_head``, the chain must contain that row hash (or be anchored at genesis
    when it is 64 zeros): a head kept earlier that is gone means the tail was removed or
    the chain rewritten from some point on.  ``cells_digests`` (run id -> the digest of its
    stored cells, for every run id that has cells) is checked against each row's
    ``cells_digest``.
    """
    digests = dict(cells_digests or {})
    prev_hash = GENESIS_HASH
    prev_id = 0
    count = 0
    head_at: int | None = 0 if known_head == GENESIS_HASH else None
    for row in rows:
        rid = row["id"]
        if not isinstance(rid, int):  # an INTEGER PRIMARY KEY always is
            return VerifyResult(False, count, prev_hash, None, f"a row after #{prev_id} has the id {rid!r}")
        if rid != prev_id + 1:
            if rid <= prev_id:
                problem = f"id {rid} is out of order after #{prev_id} (rows were reordered)"
            else:
                missing = f"#{prev_id + 1}" if rid == prev_id + 2 else f"#{prev_id + 1}..#{rid - 1}"
                problem = f"run {missing} is missing before it (a row was deleted)"
            return VerifyResult(False, count, prev_hash, rid, problem)
        if row["prev_hash"] != prev_hash:
            where = f"run #{prev_id}'s hash" if prev_id else "the genesis hash (64 zeros)"
            problem = (
                f"prev_hash {str(row['prev_hash'])[:12]}... does not match {where} "
                f"{prev_hash[:12]}... (a row was deleted, inserted or reordered)"
            )
            return VerifyResult(False, count, prev_hash, rid, problem)
        try:
            expected = row_hash(row)
        except (TypeError, ValueError) as exc:
            return VerifyResult(False, count, prev_hash, rid, f"a value has the wrong type: {exc}")
        if row["row_hash"] != expected:
            problem = (
                f"content does not match its row_hash (stored {str(row['row_hash'])[:12]}..., "
                f"recomputed {expected[:12]}...): the row was changed after it was appended"
            )
            return VerifyResult(False, count, prev_hash, rid, problem)
        cells_problem = _cells_problem(row.get("cells_digest"), digests.pop(rid, None))
        if cells_problem is not None:
            return VerifyResult(False, count, prev_hash, rid, cells_problem)
        prev_hash = row["row_hash"]
        prev_id = rid
        count += 1
        if known_head is not None and head_at is None and prev_hash == known_head:
            head_at = rid
    if digests:
        orphans = sorted(digests)
        shown = ", ".join(f"#{i}" for i in orphans[:5]) + (" ..." if len(orphans) > 5 else "")
        problem = f"the cells table holds cells of run(s) {shown} that the chain does not have (cells were inserted)"
        return VerifyResult(False, count, prev_hash, orphans[0], problem)
    if known_head is not None and head_at is None:
        problem = (
            f"the known head {known_head[:12]}... is not in the chain ({count} runs, head {prev_hash[:12]}...): "
            "runs were removed from its end, or the chain was rewritten"
        )
        return VerifyResult(False, count, prev_hash, problem=problem)
    return VerifyResult(True, count, prev_hash, known_head_at=head_at)

"""``ledger push`` / ``pull``: copy the runs of one ledger into another.

A GPU box records to its own SQLite ledger (offline, mid-flight) and pushes later into the
team's PostgreSQL ledger; a laptop pulls the team's runs into a local file.

- **Refuses a source that fails verify** (a broken chain, missing triggers): nothing is
  copied.  The source is only read.  **And a destination that fails verify**: appending onto a
  tampered chain would bury the damage under new, valid-looking runs.  ``--head`` anchors the
  team's side (the destination of a push, the source of a pull) to a head hash kept earlier.
- **Refuses divergent copies.**  A run whose ``run_uid`` is already in the destination is
  compared by its content hash (``chain.content_hash``, the same in every ledger the run is in);
  a copy with other content is a forged or edited run, and nothing is copied.
- **Idempotent by stable id.**  A run is identified by its ``run_uid`` (schema v4; a run
  appended before v4 gets one derived from its row hash, ``models.legacy_uid``).  A run
  already in the destination is skipped, so pushing twice stores each run once.
- **Re-chained, content kept.**  In the destination each copied run gets the next id, the
  destination's ``prev_hash`` and its own ``row_hash``; everything the run is stays as it
  was (``chain.content_hash`` is the same at both ends).  ``corrects`` / ``supersedes`` /
  ``replay_of`` are renumbered to the destination ids of the runs they name.
- **Cells go with their run** (schema v8): a run's cells are copied byte for byte in the
  transaction that appends the run, so its ``cells_digest`` verifies at the other end.
- **Interruptible.**  Runs go over in batches, one transaction each, under the
  destination's append lock: a push killed half-way leaves every committed batch in place
  and nothing partial, and the next push copies the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autobench.errors import LedgerError
from autobench.ledger.chain import VerifyResult, coerce, content_hash
from autobench.ledger.models import CONTENT_KEYS, legacy_uid
from autobench.ledger.store import Ledger

BATCH = 200
REFERENCES = ("corrects", "supersedes", "replay_of")


@dataclass(frozen=True)
class SyncResult:
    source: str
    destination: str
    runs: int  # runs in the source
    copied: int  # new in the destination
    present: int  # already there (skipped)
    head: tuple[int, str]  # the destination's head after the push

    def to_json_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "destination": self.destination,
            "runs": self.runs,
            "copied": self.copied,
            "present": self.present,
            "head_id": self.head[0],
            "head_hash": self.head[1],
        }


def _row_id(raw: Mapping[str, object]) -> int:
    """The id of a stored row (an INTEGER PRIMARY KEY: always an int)."""
    rid = raw["id"]
    if not isinstance(rid, int):
        raise LedgerError(f"a stored run's id is {rid!r}, not an integer: the ledger was not written by autobench")
    return rid


def _stable_id(raw: Mapping[str, object]) -> str:
    """The stable id of a stored row: its ``run_uid``, or derived from its row hash (before v4)."""
    uid, row_hash = raw["run_uid"], raw["row_hash"]
    if uid:
        return str(uid)
    if not isinstance(row_hash, str):
        raise LedgerError(f"run #{raw['id']} has no row hash: the ledger was not written by autobench")
    return legacy_uid(row_hash)


def _content(raw: dict[str, object], stable: dict[int, str]) -> dict[str, object]:
    """A stored row -> the values to append elsewhere (references as stable ids; ``check_copy``
    made sure each names an earlier run)."""
    values = {key: coerce(key, raw[key]) for key in CONTENT_KEYS if key not in ("id", "prev_hash")}
    values["run_uid"] = stable[_row_id(raw)]
    for key in REFERENCES:
        ref = values[key]
        if isinstance(ref, int):  # None, or an earlier run's id (check_copy refused anything else)
            values[key] = stable[ref]
    return values


def _bad_reference(raw: dict[str, object], where: str) -> LedgerError | None:
    """The append path only ever writes a reference to an earlier run (ids are 1..N once the
    chain verifies), so any other value is a forged row re-hashed to verify."""
    for key in REFERENCES:
        ref = raw[key]
        if ref is not None and not (isinstance(ref, int) and 1 <= ref < _row_id(raw)):
            return LedgerError(
                f"run #{raw['id']} {key} run #{ref}, which is not an earlier run of this ledger: "
                "the row was not written by autobench; nothing was copied",
                location=where,
                hint=f"autobench ledger show {raw['id']} --ledger SOURCE; push from a ledger you trust",
            )
    return None


def _import(
    source: Ledger, destination: Ledger, pending: list[tuple[int, dict[str, object]]], known: dict[str, int]
) -> int:
    """Append ``pending`` (source id, values) with their cells; return how many were new."""
    cells = source.raw_cells([rid for rid, values in pending if values.get("cells_digest") is not None])
    runs = [{**values, "cells": cells.get(rid, [])} for rid, values in pending]
    return destination.import_runs(runs, known)


def _verified(book: Ledger, side: str, known_head: str | None) -> VerifyResult:
    checked = book.verify(known_head)
    if not checked.ok:
        raise LedgerError(
            f"the {side} ledger fails verify, nothing was copied: {checked}",
            location=book.where,
            hint=f"autobench ledger verify --ledger {side.upper()} shows the damage; restore it from a copy first",
        )
    return checked


def verified_source(source: Ledger, known_head: str | None = None) -> VerifyResult:
    """Verify the source before anything is copied; refuse it (LedgerError) if it fails,
    or if ``known_head`` (a head hash kept earlier) is no longer in its chain."""
    return _verified(source, "source", known_head)


def verified_destination(destination: Ledger, known_head: str | None = None) -> VerifyResult:
    """The same for the destination, before anything is appended to it."""
    return _verified(destination, "destination", known_head)


def _short(digest: str) -> str:
    return digest[:12] + "..."


def check_copy(source: Ledger, destination: Ledger, checked: VerifyResult, known: dict[str, int]) -> int:
    """Before anything is copied: refuse (LedgerError) a source row whose reference names no
    earlier run, and compare every source run already in ``destination`` (by stable id)
    with the copy there, by content hash, refusing the first that differs (naming both).
    Return how many were compared."""
    present: dict[int, tuple[int, str]] = {}  # destination id -> (source id, source content hash)
    with source.raw_rows() as rows:
        for seen, raw in enumerate(rows):
            if seen == checked.runs:
                break
            bad = _bad_reference(raw, source.where)
            if bad is not None:
                raise bad
            uid = _stable_id(raw)
            if uid in known:
                present[known[uid]] = (_row_id(raw), content_hash(raw))
    for dest_raw in destination.raw_rows_by_id(sorted(present)):
        source_id, source_hash = present[_row_id(dest_raw)]
        dest_hash = content_hash(dest_raw)
        if dest_hash != source_hash:
            uid = _stable_id(dest_raw)
            raise LedgerError(
                f"run {uid} is in both ledgers with different content: source run #{source_id} "
                f"(content {_short(source_hash)}) vs destination run #{dest_raw['id']} "
                f"(content {_short(dest_hash)}); one is a forged or edited copy, nothing was copied",
                location=destination.where,
                hint=(
                    f"autobench ledger show {source_id} --ledger SOURCE and "
                    f"autobench ledger show {dest_raw['id']} --ledger DESTINATION show both"
                ),
            )
    return len(present)


def copy_runs(
    source: Ledger,
    destination: Ledger,
    *,
    batch: int = BATCH,
    checked: VerifyResult | None = None,
    destination_head: str | None = None,
) -> SyncResult:
    """Copy every run of ``source`` that ``destination`` does not have (see the module doc).
    ``checked``: the source's passing verify result, if the caller already has it;
    ``destination_head``: a head hash of the destination kept earlier, which its chain must
    still contain."""
    if checked is None or not checked.ok:
        checked = verified_source(source)
    verified_destination(destination, destination_head)
    known = destination.stable_ids()
    check_copy(source, destination, checked, known)
    stable: dict[int, str] = {}
    pending: list[tuple[int, dict[str, object]]] = []
    runs = copied = 0
    with source.raw_rows() as rows:
        for raw in rows:
            if runs == checked.runs:
                break  # appended since verify: the next push takes them, verified
            runs += 1
            rid = _row_id(raw)
            stable[rid] = _stable_id(raw)
            if stable[rid] in known:
                continue
            pending.append((rid, _content(raw, stable)))
            if len(pending) >= batch:
                copied += _import(source, destination, pending, known)
                pending = []
    if pending:
        copied += _import(source, destination, pending, known)
    return SyncResult(source.where, destination.where, runs, copied, runs - copied, destination.head())

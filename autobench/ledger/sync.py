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
- **Experiment records go too** (schema v10), after the runs they name, as they are: a record
  names each treatment's run by its ``run_uid``, the run's identity in every ledger, so its
  content and content hash are the same at both ends, and a record already in the destination
  (the same content hash) is skipped.  A record written before run_uids were kept names runs by
  a display id (``#12-1a2b3c4d``: this ledger's id and row hash, which the destination re-chains);
  it is copied with each resolved to its run's ``run_uid`` (and its content hash recomputed).
  A record naming a run the source does not have is refused before anything is copied.
"""

from __future__ import annotations

import json
import re
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
    experiments: int  # experiment records in the source
    experiments_copied: int  # new in the destination (the rest were there)

    def to_json_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "destination": self.destination,
            "runs": self.runs,
            "copied": self.copied,
            "present": self.present,
            "head_id": self.head[0],
            "head_hash": self.head[1],
            "experiments": self.experiments,
            "experiments_copied": self.experiments_copied,
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


_DISPLAY = re.compile(r"#([1-9][0-9]{0,17})-([0-9a-f]{8})")


def _refused(record: Mapping[str, object], what: str, where: str) -> LedgerError:
    return LedgerError(
        f"experiment record #{record['id']} {what}; nothing was copied",
        location=where,
        hint="autobench ledger verify --ledger SOURCE; push from a ledger you trust",
    )


def _run_uid(source: Ledger, record: Mapping[str, object], display: object) -> str:
    """The ``run_uid`` of the source run a display id (``#12-1a2b3c4d``) names."""
    match = _DISPLAY.fullmatch(display) if isinstance(display, str) else None
    if match is None:
        raise _refused(record, f"names run {str(display)[:40]!r}, which is not a run's display id", source.where)
    try:
        run = source.get(int(match[1]))
    except LedgerError:
        run = None
    if run is None or not run.row_hash.startswith(match[2]):
        raise _refused(record, f"names run {display}, which is not in this ledger", source.where)
    return run.stable_id


def global_record(source: Ledger, row: Mapping[str, object], uids: set[str]) -> dict[str, object]:
    """The record ``row`` of ``source`` as any ledger keeps it (see the module doc): its content
    columns and content hash, each run named by a ``run_uid`` of ``uids`` (the source's)."""
    from autobench.ledger.experiments import canonical
    from autobench.ledger.experiments import content_hash as record_hash
    from autobench.ledger.models import EXPERIMENT_CONTENT

    out: dict[str, object] = {key: row[key] for key in (*EXPERIMENT_CONTENT, "content_hash")}
    try:
        treatments = json.loads(str(row["treatments"]))
    except ValueError:
        treatments = None
    if not isinstance(treatments, list) or not all(isinstance(t, dict) for t in treatments):
        raise _refused(row, "has treatments that are not a list of objects", source.where)
    legacy = False
    for t in treatments:
        if "run" in t:  # recorded before run_uids were kept: this ledger's display id
            legacy = True
            display = t.pop("run")
            if display is not None and t.get("run_uid") is None:
                t["run_uid"] = _run_uid(source, row, display)
        uid = t.get("run_uid")
        if uid is not None and uid not in uids:
            raise _refused(
                row, f"treatment {t.get('id')} names run {str(uid)[:40]}, which is not in this ledger", source.where
            )
    if legacy:
        out["treatments"] = canonical(treatments)
        out["content_hash"] = record_hash(out)
    return out


def pending_experiments(source: Ledger, destination: Ledger) -> tuple[int, list[dict[str, object]]]:
    """(how many records the source has, those the destination lacks in their global form);
    LedgerError for a record naming a run the source does not have."""
    uids = set(source.stable_ids())
    there = {str(row["content_hash"]) for row in destination.raw_experiments()}
    rows = source.raw_experiments()
    new: dict[str, dict[str, object]] = {}
    for row in rows:
        record = global_record(source, row, uids)
        new.setdefault(str(record["content_hash"]), record)  # the same content twice is one record
    return len(rows), [r for digest, r in new.items() if digest not in there]


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
    experiments, records = pending_experiments(source, destination)  # refused before anything is copied
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
    records_copied = destination.import_experiments(records)  # after the runs they name
    head = destination.head()
    return SyncResult(source.where, destination.where, runs, copied, runs - copied, head, experiments, records_copied)

"""``ledger push`` / ``pull``: copy the runs of one ledger into another.

A GPU box records to its own SQLite ledger (offline, mid-flight) and pushes later into the
team's PostgreSQL ledger; a laptop pulls the team's runs into a local file.

- **Refuses a source that fails verify** (a broken chain, missing triggers): nothing is
  copied.  The source is only read.
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

from dataclasses import dataclass
from typing import Any

from autobench.errors import LedgerError
from autobench.ledger.chain import VerifyResult, coerce
from autobench.ledger.models import CONTENT_KEYS, legacy_uid
from autobench.ledger.store import Ledger

BATCH = 200


@dataclass(frozen=True)
class SyncResult:
    source: str
    destination: str
    runs: int  # runs in the source
    copied: int  # new in the destination
    present: int  # already there (skipped)
    head: tuple[int, str]  # the destination's head after the push

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "destination": self.destination,
            "runs": self.runs,
            "copied": self.copied,
            "present": self.present,
            "head_id": self.head[0],
            "head_hash": self.head[1],
        }


def _content(raw: dict[str, Any], stable: dict[int, str]) -> dict[str, Any]:
    """A stored row -> the values to append elsewhere (references as stable ids)."""
    values = {key: coerce(key, raw[key]) for key in CONTENT_KEYS if key not in ("id", "prev_hash")}
    values["run_uid"] = stable[raw["id"]]
    for key in ("corrects", "supersedes", "replay_of"):
        if values[key] is not None:
            values[key] = stable[values[key]]
    return values


def _import(
    source: Ledger, destination: Ledger, pending: list[tuple[int, dict[str, Any]]], known: dict[str, int]
) -> int:
    """Append ``pending`` (source id, values) with their cells; return how many were new."""
    cells = source.raw_cells([rid for rid, values in pending if values.get("cells_digest") is not None])
    runs = [{**values, "cells": cells.get(rid, [])} for rid, values in pending]
    return destination.import_runs(runs, known)


def verified_source(source: Ledger) -> VerifyResult:
    """Verify the source before anything is copied; refuse it (LedgerError) if it fails."""
    checked = source.verify()
    if not checked.ok:
        raise LedgerError(
            f"the source ledger fails verify, nothing was copied: {checked}",
            location=source.where,
            hint="autobench ledger verify --ledger SOURCE shows the damage; restore it from a copy first",
        )
    return checked


def copy_runs(
    source: Ledger, destination: Ledger, *, batch: int = BATCH, checked: VerifyResult | None = None
) -> SyncResult:
    """Copy every run of ``source`` that ``destination`` does not have (see the module doc).
    ``checked``: the source's passing verify result, if the caller already has it."""
    if checked is None or not checked.ok:
        checked = verified_source(source)
    known = destination.stable_ids()
    stable: dict[int, str] = {}
    pending: list[tuple[int, dict[str, Any]]] = []
    runs = copied = 0
    with source.raw_rows() as rows:
        for raw in rows:
            if runs == checked.runs:
                break  # appended since verify: the next push takes them, verified
            runs += 1
            stable[raw["id"]] = raw["run_uid"] or legacy_uid(raw["row_hash"])
            if stable[raw["id"]] in known:
                continue
            pending.append((raw["id"], _content(raw, stable)))
            if len(pending) >= batch:
                copied += _import(source, destination, pending, known)
                pending = []
    if pending:
        copied += _import(source, destination, pending, known)
    return SyncResult(source.where, destination.where, runs, copied, runs - copied, destination.head())

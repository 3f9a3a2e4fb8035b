"""A run's cells (schema v8): validation into column values, the digest the chain covers,
reading them back, and the rule for a multi-cell run's own metric columns.

**Storage.**  Table ``cells``: ``(run_id, cell_index)`` primary key, ``params`` and
``metrics`` as canonical JSON text (sorted keys, no whitespace, UTF-8, no NaN),
``samples`` as ``autobench.samples.encode`` bytes or NULL.  Cells are appended with their
run in the run's one transaction and, like runs, never updated or deleted (triggers).

**Digest.**  A run with cells stores ``cells_digest`` = sha256 hex of the canonical JSON
(as above) of the list, in index order, of ``{"index": i, "params": <stored text>,
"metrics": <stored text>, "samples": <sha256 hex of the stored bytes, or null>}``.  It is
computed from exactly what is stored (never re-serialised), and holds no run id, so a run
pushed to another ledger keeps it.  ``cells_digest`` is a run column added by v8, so it
enters the run's hashed content only when not NULL: every run written before v8 (and every
run without cells) hashes as before, and ``ledger verify`` recomputes each run's digest
from the cells table -- a cell changed, added, moved or removed breaks that run.

**A multi-cell run's row** (:func:`headline_metrics`): its metric columns are those of the
cell with the highest concurrency (then request rate), merged over its repeats (each metric
as its catalogue entry's ``merge`` says: ``autobench.metric_catalogue``) -- so
``history``, ``compare`` and every query over run columns keep working.  A single-cell run
is exactly as before: its row holds that cell's metrics.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from autobench import metric_catalogue as catalogue
from autobench.errors import LedgerError
from autobench.ledger.chain import METRIC_KINDS, coerce_metric
from autobench.ledger.models import METRIC_KEYS, CellRecord, NewCell, StoredRow, stored, stored_blob, stored_object
from autobench.redaction import find_token
from autobench.samples import Samples, encode, merge, summary

#: The parameter keys a cell usually has (others are allowed); ``repeat`` numbers repeats
#: of the same point from 1 (as ``autobench.recipe.grid`` does).
PARAM_KEYS = ("concurrency", "request_rate", "input_len", "output_len", "prefix_len", "repeat")


def canonical_text(value: object, what: str) -> str:
    """Canonical JSON text of a cell's params or metrics (LedgerError when not JSON)."""
    if not isinstance(value, Mapping):
        raise LedgerError(f"{what} must be a mapping, got {type(value).__name__}")
    try:
        text = json.dumps(dict(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"{what} cannot be stored as JSON: {exc}") from exc
    shape = find_token(text)
    if shape is not None:
        raise LedgerError(
            f"{what} contains what looks like a secret token ({shape}); refusing to store it",
            hint="secrets travel by name (e.g. HF_TOKEN), never by value",
        )
    return text


def _metrics(metrics: Mapping[str, object], what: str) -> dict[str, object]:
    """The ledger's metric keys coerced to their column kinds; extra keys as given."""
    out: dict[str, object] = {}
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise LedgerError(f"{what}: metric names must be text, got {key!r}")
        if key in METRIC_KEYS and METRIC_KINDS[key] != "floats":
            try:
                value = coerce_metric(key, value)
            except (TypeError, ValueError) as exc:
                raise LedgerError(f"{what}: {key}: {exc}") from exc
        elif isinstance(value, float) and not math.isfinite(value):
            value = None  # as the bench's result JSON does
        out[key] = value
    return out


def cell_values(cells: Sequence[NewCell]) -> list[dict[str, object]]:
    """Validate ``cells`` into rows (without ``run_id``): ``cell_index``, ``params``,
    ``metrics``, ``samples``."""
    rows = []
    for index, cell in enumerate(cells):
        what = f"cell {index}"
        if not isinstance(cell, NewCell):
            raise LedgerError(f"{what} is a {type(cell).__name__}, not a NewCell")
        if cell.samples is not None and not isinstance(cell.samples, Samples):
            raise LedgerError(f"{what}: samples must be autobench.samples.Samples or None")
        metrics = _metrics(cell.metrics, what) if isinstance(cell.metrics, Mapping) else cell.metrics
        rows.append(
            {
                "cell_index": index,
                "params": canonical_text(cell.params, f"{what} params"),
                "metrics": canonical_text(metrics, f"{what} metrics"),
                "samples": encode(cell.samples) if cell.samples is not None else None,
            }
        )
    return rows


def digest(rows: Iterable[StoredRow]) -> str:
    """The ``cells_digest`` of a run's stored cell rows (any order; see the module doc)."""
    items = []
    for row in sorted(rows, key=lambda r: stored(r, "cell_index", int)):
        blob = stored_blob(row, "samples")
        items.append(
            {
                "index": stored(row, "cell_index", int),
                "params": row["params"],
                "metrics": row["metrics"],
                "samples": hashlib.sha256(bytes(blob)).hexdigest() if blob is not None else None,
            }
        )
    text = json.dumps(items, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_from_row(row: StoredRow, *, samples: bool = True) -> CellRecord:
    return CellRecord(
        run_id=stored(row, "run_id", int),
        index=stored(row, "cell_index", int),
        params=stored_object(row, "params") or {},
        metrics=stored_object(row, "metrics") or {},
        samples_blob=stored_blob(row, "samples") if samples else None,
    )


# ---- the run row of a multi-cell run ---------------------------------------------


def _point(params: Mapping[str, object]) -> tuple[float, float]:
    def number(key: str) -> float:
        value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return math.inf if key == "request_rate" and value in (None, "inf") else -math.inf
        return float(value)

    return number("concurrency"), number("request_rate")


CellT = TypeVar("CellT", NewCell, CellRecord)


def headline_cells(cells: Sequence[CellT]) -> list[CellT]:
    """The cells whose metrics become the run row's: the repeats of the point (parameters
    other than ``repeat``) with the highest concurrency, then request rate (unset = unbounded);
    among equals, the point that came last."""
    if not cells:
        return []
    points: dict[str, list[CellT]] = {}
    for cell in cells:
        key = json.dumps({k: v for k, v in cell.params.items() if k != "repeat"}, sort_keys=True, default=str)
        points.setdefault(key, []).append(cell)
    groups = list(points.values())
    best = max(range(len(groups)), key=lambda i: (_point(groups[i][0].params), i))
    return groups[best]


def headline_metrics(cells: Sequence[NewCell]) -> dict[str, object]:
    """The run row's metric columns for ``cells`` (see the module doc): over the repeats of
    the headline point, counts and durations are summed, latency medians and p99s come from
    the merged raw samples when every repeat kept them (else the median of the repeats'
    values), anything else is the mean of the repeats' values (``time_cap_hit``: any)."""
    group = headline_cells(cells)
    if not group:
        return {}
    if len(group) == 1:
        return {k: v for k, v in group[0].metrics.items() if k in METRIC_KEYS}
    out: dict[str, object] = {}
    merged = None
    kept = [c.samples for c in group]
    if all(s is not None for s in kept):
        merged = summary(merge([s for s in kept if s is not None]))
    for key in METRIC_KEYS:
        how = catalogue.metric(key).merge
        values = [v for c in group if (v := c.metrics.get(key)) is not None]
        # each metric's values are of its catalogue kind (coerced when the cells were made)
        numbers: list[float] = [v for v in values if isinstance(v, int | float)]
        if how == "samples" and merged is not None:
            out[key] = merged.get(key)
        elif not values:
            continue
        elif how == "any":
            out[key] = any(bool(v) for v in values)
        elif how == "sum":
            out[key] = sum(numbers)
        elif how == "first":
            out[key] = values[0]
        elif how == "union":  # quality flags: every flag a repeat raised, the first why kept
            flags: dict[str, object] = {}
            for v in values:
                for name, why in v.items() if isinstance(v, dict) else ():
                    flags.setdefault(name, why)
            out[key] = flags or None
        elif how == "positions":
            lists = [v for v in values if isinstance(v, list)]
            width = min(len(v) for v in lists)
            out[key] = [math.fsum(v[i] for v in lists) / len(lists) for i in range(width)]
        elif how == "samples":
            ordered = sorted(numbers)
            mid = len(ordered) // 2
            out[key] = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        else:
            out[key] = math.fsum(numbers) / len(numbers)
    return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class SweepSummary:
    """What a multi-cell run's figures are: its row holds the headline cell (:func:`headline_cells`,
    merged over its repeats); ``totals`` are the counts and durations summed over every cell
    (the catalogue's ``sum`` metrics).  One definition, used by ``run``, ``ledger show``,
    ``compare`` and the report (docs/ledger.md, "The run row of a multi-cell run")."""

    count: int
    headline: dict[str, object]  # the headline point's parameters (without repeat)
    headline_cells: tuple[int, ...]  # its cells, 1-based in run order
    totals: dict[str, int | float]

    def headline_text(self) -> str:
        """``headline cell concurrency=16 (cell 3 of 3)``; repeats: ``(cells 3, 6 of 6, repeats merged)``."""
        point = " ".join(f"{k}={v}" for k, v in self.headline.items()) or "(no parameters)"
        which = ", ".join(map(str, self.headline_cells))
        many = len(self.headline_cells) > 1
        return f"headline cell {point} (cell{'s' if many else ''} {which} of {self.count}" + (
            ", repeats merged)" if many else ")"
        )

    def totals_text(self) -> str:
        """``all 3 cells: completed 240, errors 0, duration 180 s``."""
        parts = []
        for key, value in self.totals.items():
            m = catalogue.metric(key)
            parts.append(f"{m.label} {m.format(value)}" + (f" {m.unit}" if m.unit else ""))
        return f"all {self.count} cells: " + (", ".join(parts) or "no totals recorded")

    def to_json_dict(self) -> dict[str, object]:
        return {
            "cells": self.count,
            "headline": dict(self.headline),
            "headline_cells": list(self.headline_cells),
            "totals": dict(self.totals),
        }


def sweep_summary(cells: Sequence[CellT]) -> SweepSummary | None:
    """The :class:`SweepSummary` of a run's cells (``NewCell`` or ``CellRecord``, in run order);
    None for a run of fewer than two cells (its row is its one cell)."""
    if len(cells) < 2:
        return None
    group = headline_cells(cells)
    chosen = {id(c) for c in group}
    positions = tuple(i + 1 for i, c in enumerate(cells) if id(c) in chosen)
    totals: dict[str, int | float] = {}
    for m in catalogue.METRICS:
        if m.stored and m.merge == "sum":
            values = [v for v in (c.metrics.get(m.key) for c in cells) if isinstance(v, int | float)]
            if values:
                totals[m.key] = sum(values)
    headline = {k: v for k, v in group[0].params.items() if k != "repeat"}
    return SweepSummary(len(cells), headline, positions, totals)


__all__ = [
    "SweepSummary",
    "sweep_summary",
    "PARAM_KEYS",
    "canonical_text",
    "cell_values",
    "digest",
    "headline_cells",
    "headline_metrics",
    "record_from_row",
]

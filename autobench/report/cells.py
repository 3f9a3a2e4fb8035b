"""Results by cell: one row per grid point of a run, its repeats merged from raw samples.

Pure functions over the cells a run recorded (``Ledger.cells(run_id)``: index, params,
metrics, samples).  Cells whose params differ only in ``repeat`` are repeats of one grid point; their
latency percentiles are recomputed from the merged raw samples (``autobench.samples``):
percentiles of percentiles cannot be merged.  Throughput over repeats is pooled: the tokens
of every repeat over the sum of their durations.  A point benched once shows its own
metrics; repeats without raw samples show no latency figure (said so in ``note``), never a
made-up one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autobench import metric_catalogue as catalogue

#: (column key, label, unit) of the by-cell table, in catalogue order: the metrics with
#: ``in_cells`` (``autobench.metric_catalogue``).
CELL_COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    (m.key, m.label, m.unit) for m in catalogue.METRICS if m.in_cells
)
#: The throughputs (pooled over repeats), the latencies (from merged raw samples).
RATE_KEYS = tuple(k for k, _, _ in CELL_COLUMNS if catalogue.metric(k).tokens)
LATENCY_KEYS = tuple(k for k, _, _ in CELL_COLUMNS if catalogue.metric(k).sample is not None)
#: The rest of the stored ones: the mean over repeats.
OTHER_KEYS = tuple(
    k for k, _, _ in CELL_COLUMNS if k not in RATE_KEYS and k not in LATENCY_KEYS and catalogue.metric(k).stored
)
#: The grid axes in the order a row names them (autobench.recipe.grid.AXES).
AXIS_ORDER = ("concurrency", "request_rate", "input_len", "output_len", "depth", "category")


@dataclass(frozen=True)
class CellRow:
    """One grid point of ``run_id``: its params, the cells (1-based, in run order) that are its
    repeats, and the figures (None: not measured)."""

    params: Mapping[str, Any]
    run_id: Any
    cells: tuple[int, ...]
    values: Mapping[str, float | None]
    completed: int | None = None
    errors: int | None = None
    note: str | None = None

    @property
    def repeats(self) -> int:
        return len(self.cells)

    def value(self, key: str) -> float | None:
        return self.values.get(key)

    @property
    def concurrency(self) -> Any:
        return self.params.get("concurrency")

    def label(self, skip: Iterable[str] = ()) -> str:
        skipped = set(skip)
        return " ".join(f"{k}={_num(v)}" for k, v in _ordered(self.params) if k not in skipped)


@dataclass(frozen=True)
class CellTable:
    """The by-cell results of one run: ``axes`` are the params that vary between its rows."""

    run_id: Any
    rows: list[CellRow]
    axes: list[str]
    fixed: dict[str, Any] = field(default_factory=dict)  # params every row shares

    @property
    def by_concurrency(self) -> bool:
        return "concurrency" in self.axes


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _ordered(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    known = [(k, params[k]) for k in AXIS_ORDER if k in params]
    return known + sorted((k, v) for k, v in params.items() if k not in AXIS_ORDER)


def _attr(cell: Any, name: str) -> Any:
    return cell.get(name) if isinstance(cell, Mapping) else getattr(cell, name, None)


def _point(params: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's grid point: its params without ``repeat`` (repeats of a point share the rest)."""
    return {k: v for k, v in params.items() if k != "repeat"}


def _key(params: Mapping[str, Any]) -> str:
    import json

    return json.dumps(dict(_ordered(_point(params))), sort_keys=False, default=str)


def _pooled_rates(metrics: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Throughput over repeats: each repeat's rate times its duration, summed, over the summed
    durations (the tokens of all repeats over their time).  A single repeat: its own rate."""
    out: dict[str, float | None] = {}
    for key in RATE_KEYS:
        if len(metrics) == 1:
            out[key] = _float(metrics[0].get(key))
            continue
        pairs = [(_float(m.get(key)), _float(m.get("duration_s"))) for m in metrics]
        known = [(r, d) for r, d in pairs if r is not None and d is not None]
        if len(known) != len(pairs):
            out[key] = None
            continue
        total = math.fsum(d for _, d in known)
        out[key] = math.fsum(r * d for r, d in known) / total if total > 0 else None
    return out


def _float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def _latencies(cells: Sequence[Any]) -> tuple[dict[str, float | None], str | None]:
    """The latency figures of one grid point: merged raw samples over its repeats; a single
    repeat without samples keeps its own metrics."""
    samples = [_attr(c, "samples") for c in cells]
    if all(s is not None for s in samples):
        from autobench.samples import merge, summary

        merged = summary(merge(samples))
        return {k: _float(merged.get(k)) for k in LATENCY_KEYS}, None
    if len(cells) == 1:
        metrics = _attr(cells[0], "metrics") or {}
        return {k: _float(metrics.get(k)) for k in LATENCY_KEYS}, None
    return dict.fromkeys(LATENCY_KEYS), "repeats recorded without raw samples: their percentiles cannot be merged"


def cell_table(run_id: Any, cells: Sequence[Any]) -> CellTable | None:
    """The by-cell table of a run's recorded cells (None when it has fewer than two)."""
    if len(cells) < 2:
        return None
    groups: dict[str, list[Any]] = {}
    for cell in sorted(cells, key=lambda c: int(_attr(c, "index") or 0)):
        groups.setdefault(_key(_attr(cell, "params") or {}), []).append(cell)
    rows = []
    for members in groups.values():
        metrics = [_attr(c, "metrics") or {} for c in members]
        values: dict[str, float | None] = dict(_pooled_rates(metrics))
        latencies, note = _latencies(members)
        bound = [
            int(_attr(c, "index") or 0) + 1 for c, m in zip(members, metrics, strict=True) if m.get("client_bound")
        ]
        if bound:  # the bench's self-check (docs/bench.md): these figures measured the client too
            mark = f"client-bound in cell {', '.join(map(str, bound))}: the bench client was the bottleneck"
            note = f"{note}; {mark}" if note else mark
        for c, m in zip(members, metrics, strict=True):  # every other quality flag, with why
            raised = {k: w for k, w in (m.get("flags") or {}).items() if k != "client_bound"}
            if raised:
                mark = f"cell {int(_attr(c, 'index') or 0) + 1} flagged: {catalogue.flags_text(raised)}"
                note = f"{note}; {mark}" if note else mark
        values.update(latencies)
        for key in OTHER_KEYS:
            known = [v for v in (_float(m.get(key)) for m in metrics) if v is not None]
            values[key] = math.fsum(known) / len(known) if known else None
        tpot = values.get("tpot_median_ms")
        values["per_user_tok_s"] = 1000.0 / tpot if tpot else None
        counts = {
            k: sum(int(m[k]) for m in metrics) if all(isinstance(m.get(k), int) for m in metrics) else None
            for k in ("completed", "errors")
        }
        rows.append(
            CellRow(
                params=_point(_attr(members[0], "params") or {}),
                run_id=run_id,
                cells=tuple(int(_attr(c, "index") or 0) + 1 for c in members),
                values=values,
                completed=counts["completed"],
                errors=counts["errors"],
                note=note,
            )
        )
    rows.sort(key=lambda r: [(_num_sort(v)) for _, v in _ordered(r.params)])
    names = [k for k, _ in _ordered(rows[0].params)] if rows else []
    axes = [k for k in names if len({_key({k: r.params.get(k)}) for r in rows}) > 1]
    fixed = {k: rows[0].params[k] for k in names if k not in axes}
    return CellTable(run_id, rows, axes, fixed)


def _num_sort(value: Any) -> tuple[int, float, str]:
    f = _float(value)
    return (0, f, "") if f is not None else (1, 0.0, str(value))


def series(table: CellTable, x: str = "concurrency") -> list[tuple[str, list[CellRow]]]:
    """The table's rows as lines along ``x``: one line per combination of the other axes
    (label: those axes' values; "" when ``x`` is the only axis)."""
    lines: dict[str, list[CellRow]] = {}
    others = [a for a in table.axes if a != x]
    for row in table.rows:
        label = " ".join(f"{a}={_num(row.params.get(a))}" for a in others)
        lines.setdefault(label, []).append(row)
    return [(label, sorted(rows, key=lambda r: _num_sort(r.params.get(x)))) for label, rows in lines.items()]


__all__ = ["CELL_COLUMNS", "CellRow", "CellTable", "cell_table", "series"]

"""Acceptance and speed-up by category: the rows of a run whose grid has a ``category`` axis.

Each category was its own cell (``bench.dataset.category``), so each cell's spec-decode figures
are the server's counters read as ``/metrics`` deltas over that category's requests alone.  A
row is one grid point (its repeats together: the mean of their acceptance lengths, per-position
rates and decode tok/s); its speed-up is its decode tok/s over the baseline recipe's
(``meta.baseline``) at the same grid point, from the baseline's latest DONE run that benched it.
Pure functions over the runs' ledger cells.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The param that makes a row a category's.
CATEGORY = "category"


@dataclass(frozen=True)
class CategoryRow:
    category: str
    others: str  # the row's other grid axes, ``concurrency=4 depth=0`` ("" when none vary)
    repeats: int
    acceptance_length: float | None
    per_position: tuple[float, ...]
    decode_tok_s: float | None
    base_decode_tok_s: float | None
    run_id: Any
    base_run_id: Any

    @property
    def positions(self) -> str:
        """The per-position rates as ``0.9/0.81/0.7`` (3 significant figures), "" when none."""
        from autobench.metric_catalogue import format_value

        return "/".join(format_value(v, 3) for v in self.per_position)

    @property
    def speedup(self) -> float | None:
        if self.decode_tok_s is None or not self.base_decode_tok_s:
            return None
        return self.decode_tok_s / self.base_decode_tok_s


def _get(cell: Any, name: str) -> Any:
    return cell.get(name) if isinstance(cell, Mapping) else getattr(cell, name, None)


def _point(params: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in params.items() if k != "repeat"}, sort_keys=True, default=str)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _mean(values: Sequence[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def _points(cells: Sequence[Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Each grid point's cell metrics (its repeats), by the point's params."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for cell in cells:
        params = _get(cell, "params") or {}
        metrics = _get(cell, "metrics") or {}
        if isinstance(params, Mapping) and isinstance(metrics, Mapping):
            out.setdefault(_point(params), []).append(metrics)
    return out


def _decode(metrics: Sequence[Mapping[str, Any]]) -> float | None:
    return _mean([_number(m.get("decode_tok_s")) for m in metrics])


def category_rows(run: Any, baseline_runs: Sequence[Any] = ()) -> list[CategoryRow]:
    """The rows of ``run`` (a report Run: ``id``, ``status``, ``cells``) by category, in the run's
    order; [] when its cells have no category.  ``baseline_runs``: the baseline recipe's runs,
    oldest first (its latest DONE run that benched the same point gives the speed-up)."""
    cells = list(_get(run, "cells") or ())
    params_of = {_point(p): p for p in (_get(c, "params") or {} for c in cells) if isinstance(p, Mapping)}
    if not any(CATEGORY in p for p in params_of.values()):
        return []
    points = _points(cells)
    varying = [
        k
        for k in {k for p in params_of.values() for k in p} - {CATEGORY, "repeat"}
        if len({json.dumps(p.get(k), default=str) for p in params_of.values()}) > 1
    ]
    base_points: list[tuple[Any, dict[str, list[Mapping[str, Any]]]]] = [
        (_get(r, "id"), _points(list(_get(r, "cells") or ())))
        for r in reversed(list(baseline_runs))
        if _get(r, "status") == "DONE"
    ]
    rows: list[CategoryRow] = []
    for key, metrics in points.items():
        params = params_of[key]
        if CATEGORY not in params:
            continue
        base_id, base_metrics = next(((rid, pts[key]) for rid, pts in base_points if key in pts), (None, []))
        per_pos = [m.get("spec_per_position") for m in metrics]
        lists = [p for p in per_pos if isinstance(p, list) and p]
        positions = tuple(
            v
            for v in (
                _mean([_number(p[i]) if i < len(p) else None for p in lists])
                for i in range(max((len(p) for p in lists), default=0))
            )
            if v is not None
        )
        rows.append(
            CategoryRow(
                category=str(params[CATEGORY]),
                others=" ".join(f"{k}={params[k]}" for k in sorted(varying) if k in params),
                repeats=len(metrics),
                acceptance_length=_mean([_number(m.get("spec_acceptance_length")) for m in metrics]),
                per_position=positions,
                decode_tok_s=_decode(metrics),
                base_decode_tok_s=_decode(base_metrics) if base_metrics else None,
                run_id=_get(run, "id"),
                base_run_id=base_id,
            )
        )
    return rows


__all__ = ["CategoryRow", "category_rows"]

"""``autobench regress``: did the current run get worse than a baseline, beyond a threshold
and beyond the noise?

Per cell (matched by parameters without ``repeat``) and metric, the verdict of
:mod:`autobench.ledger.verdict`: a regression is a metric whose verdict is *slower* (its
noise band wholly on the worse side of 1.0 and the ratio worse than the threshold).  A
metric with no band (single runs without per-request samples) is judged by the threshold
alone, and the output says so.  Throughputs regress when they fall, latencies when they
rise.  The runs must share their pins (autobench.ledger.pins) and both be DONE.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from autobench.errors import LedgerError, UsageError
from autobench.ledger.models import CellRecord, RunRecord
from autobench.ledger.pins import check_pins, require_same_pins
from autobench.ledger.verdict import (
    HIGHER_IS_BETTER,
    SEED,
    CellData,
    CellVerdict,
    MetricVerdict,
    Verdicts,
    cell_key,
    judge_cells,
    requests_of,
)
from autobench.samples import Samples


def parse_threshold(text: str) -> float:
    """``5%`` or ``5`` -> 0.05 (a percentage, > 0 and < 100)."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 100:
        raise UsageError(f"--threshold {text!r} is not a percentage between 0 and 100", hint="e.g. --threshold 5%")
    return value / 100


@dataclass
class Regression:
    baseline: RunRecord
    current: RunRecord
    verdicts: Verdicts

    @property
    def threshold(self) -> float:
        return self.verdicts.threshold

    @property
    def regressed(self) -> list[tuple[CellVerdict, MetricVerdict]]:
        return self.verdicts.regressions

    @property
    def banded(self) -> bool:
        """Whether any metric has a noise band (else: the threshold alone judged)."""
        return any(m.band is not None for _, m in self.verdicts.rows())

    def to_json_dict(self) -> dict[str, object]:
        v = self.verdicts
        return {
            "baseline": self.baseline.display_id,
            "current": self.current.display_id,
            "threshold": self.threshold,
            "noise_band": {"level": v.level, "resamples": v.resamples, "seed": v.seed} if self.banded else None,
            "regression": bool(self.regressed),
            "metrics": [
                {"cell": c.params, **m.to_json_dict(self.threshold), "baseline": m.a, "current": m.b}
                for c, m in v.rows()
            ],
            "cells_only_in_baseline": v.only_a,
            "cells_only_in_current": v.only_b,
        }


#: ``--baseline latest`` looks among this many most recent DONE runs of the current run's recipe.
LATEST_WINDOW = 500


def latest_baseline(candidates: Iterable[RunRecord], current: RunRecord) -> RunRecord:
    """The newest DONE run before ``current`` with the same pins, from ``candidates`` (newest first)."""
    for run in candidates:
        if run.id < current.id and run.status == "DONE" and check_pins(run, current).same:
            return run
    raise LedgerError(
        f"no DONE run of {current.recipe_name} with the same pins before run {current.display_id}",
        hint="give the baseline run's id with --baseline RUN",
    )


def run_cells(rec: RunRecord, cells: Sequence[CellRecord] = ()) -> list[CellData]:
    """A run's cells for a verdict: its recorded cells grouped by parameters without
    ``repeat`` (every repeat's metrics, their per-request samples merged), or, for a run
    recorded without cells, the run itself as one cell of one repeat."""
    if not cells:
        return [CellData({}, [dict(rec.metrics)])]
    groups: dict[str, tuple[CellData, list[Samples | None]]] = {}
    for c in cells:
        params = {k: v for k, v in dict(c.params).items() if k != "repeat"}
        data, samples = groups.setdefault(cell_key(params), (CellData(params, []), []))
        data.repeats.append(dict(c.metrics))
        samples.append(c.samples)
    out = []
    for data, samples in groups.values():
        present = [s for s in samples if s is not None]
        if present and len(present) == len(samples):
            data.requests = requests_of(present)
        out.append(data)
    return out


def require_done(run: RunRecord, role: str) -> None:
    if run.status != "DONE":
        raise LedgerError(
            f"the {role} run {run.display_id} is {run.status}, not DONE: it has no results to compare",
            hint=f"pick a DONE run as the {role}",
        )


def judge(
    baseline: RunRecord,
    current: RunRecord,
    threshold: float,
    *,
    baseline_cells: Sequence[CellRecord] = (),
    current_cells: Sequence[CellRecord] = (),
    seed: int = SEED,
) -> Regression:
    """Every metric of every cell both runs have: is it slower beyond ``threshold`` and the noise?"""
    require_done(baseline, "baseline")
    require_done(current, "current")
    require_same_pins(baseline, current, check_pins(baseline, current))
    verdicts = judge_cells(
        run_cells(baseline, baseline_cells), run_cells(current, current_cells), threshold=threshold, seed=seed
    )
    if not any(True for _ in verdicts.rows()):
        raise LedgerError(
            f"runs {baseline.display_id} and {current.display_id} share no metric to compare",
            hint="record the runs with their bench results (--metrics)",
        )
    return Regression(baseline, current, verdicts)


__all__ = [
    "HIGHER_IS_BETTER",
    "Regression",
    "LATEST_WINDOW",
    "judge",
    "latest_baseline",
    "parse_threshold",
    "require_done",
    "run_cells",
]

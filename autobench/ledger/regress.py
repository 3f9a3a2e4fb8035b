"""``autobench regress``: did the current run get worse than a baseline beyond a threshold?

Single runs only: each metric is one number per run, so there is no noise band yet and a
change is judged against the threshold alone.  Throughputs regress when they fall, latencies
when they rise.  The runs must share their pins (autobench.ledger.pins) and both be DONE.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from autobench.errors import LedgerError, UsageError
from autobench.ledger.models import RunRecord
from autobench.ledger.pins import check_pins, require_same_pins

#: metric -> True when higher is better.
HIGHER_IS_BETTER: dict[str, bool] = {
    "decode_tok_s": True,
    "prefill_tok_s": True,
    "total_tok_s": True,
    "ttft_median_ms": False,
    "ttft_p99_ms": False,
    "tpot_median_ms": False,
    "tpot_p99_ms": False,
    "itl_median_ms": False,
    "itl_p99_ms": False,
    "e2el_median_ms": False,
    "e2el_p99_ms": False,
}


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


@dataclass(frozen=True)
class MetricChange:
    metric: str
    baseline: float
    current: float
    change: float  # (current - baseline) / baseline
    regressed: bool

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "change": self.change,
            "higher_is_better": HIGHER_IS_BETTER[self.metric],
            "regressed": self.regressed,
        }


@dataclass
class Regression:
    baseline: RunRecord
    current: RunRecord
    threshold: float
    changes: list[MetricChange]

    @property
    def regressed(self) -> list[MetricChange]:
        return [c for c in self.changes if c.regressed]

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.display_id,
            "current": self.current.display_id,
            "threshold": self.threshold,
            "noise_band": None,  # single runs: no repeats to measure noise from
            "regression": bool(self.regressed),
            "metrics": [c.to_json_dict() for c in self.changes],
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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def judge(baseline: RunRecord, current: RunRecord, threshold: float) -> Regression:
    """Every metric both runs have (baseline non-zero): did it move the wrong way by more than ``threshold``?"""
    for run, role in ((baseline, "baseline"), (current, "current")):
        if run.status != "DONE":
            raise LedgerError(
                f"the {role} run {run.display_id} is {run.status}, not DONE: it has no results to compare",
                hint=f"pick a DONE run as the {role}",
            )
    require_same_pins(baseline, current, check_pins(baseline, current))
    changes = []
    for metric, higher in HIGHER_IS_BETTER.items():
        b, c = _number(baseline.metrics.get(metric)), _number(current.metrics.get(metric))
        if b is None or c is None or b == 0:
            continue
        change = (c - b) / b
        worse = -change if higher else change
        changes.append(MetricChange(metric, b, c, change, worse > threshold))
    if not changes:
        raise LedgerError(
            f"runs {baseline.display_id} and {current.display_id} share no metric to compare",
            hint="record the runs with their bench results (--metrics)",
        )
    return Regression(baseline, current, threshold, changes)


__all__ = [
    "HIGHER_IS_BETTER",
    "MetricChange",
    "Regression",
    "LATEST_WINDOW",
    "judge",
    "latest_baseline",
    "parse_threshold",
]

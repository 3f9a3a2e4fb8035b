"""An experiment's results, judged: per bench cell, the treatments ranked by one metric, the
best one under the SLOs with a verdict against the runner-up (from the raw samples, as
``compare`` judges two runs), the Pareto front of output tokens/s per GPU against a latency, the
main effect of each factor, and the spec-decode acceptance length of each treatment.

When the top treatments have confirmation boots (``experiment run --confirm N``,
``autobench.experiment.confirm``), the best and the runner-up are picked among the confirmed
ones by those boots, and the verdict is judged across them: each boot's value is one
observation (Student's t band over boots), so the band holds the boot-to-boot noise that the
requests of one boot cannot show.

Pure: it reads run records and their cells (``autobench.ledger``), never the ledger itself.
"""

from __future__ import annotations

import operator
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autobench.errors import UsageError
from autobench.experiment.plan import ExperimentPlan, PlannedTreatment
from autobench.ledger.models import CellRecord, RunRecord
from autobench.ledger.regress import run_cells
from autobench.ledger.verdict import HIGHER_IS_BETTER, LEVEL, CellData, cell_key, cell_label, judge_metric

OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}


@dataclass(frozen=True)
class Slo:
    metric: str
    op: str
    bound: float

    def holds(self, value: float | None) -> bool:
        return value is not None and OPS[self.op](value, self.bound)

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.bound:g}"


def parse_slo(text: str) -> Slo:
    """``tpot_median_ms<=70`` -> Slo (UsageError, one line, on anything else)."""
    for op in ("<=", ">=", "<", ">"):
        name, found, bound = text.partition(op)
        if found:
            name = name.strip()
            if name not in HIGHER_IS_BETTER:
                raise UsageError(
                    f"--slo {text!r}: {name!r} is not a metric",
                    hint="metrics: " + ", ".join(sorted(HIGHER_IS_BETTER)),
                )
            try:
                value = float(bound)
            except ValueError:
                value = float("nan")
            if value != value or value in (float("inf"), float("-inf")):
                raise UsageError(f"--slo {text!r}: {bound.strip()!r} is not a number", hint="e.g. tpot_median_ms<=70")
            return Slo(name, op, value)
    raise UsageError(f"--slo {text!r}: no comparison", hint="write METRIC<=VALUE, e.g. tpot_median_ms<=70")


@dataclass(frozen=True)
class TreatmentRun:
    """A treatment and its screening run (its latest DONE run that is no confirmation boot;
    None: not run yet), with that run's cells, and its DONE confirmation boots with theirs."""

    planned: PlannedTreatment
    run: RunRecord | None
    cells: Sequence[CellRecord] = ()
    boots: Sequence[tuple[RunRecord, Sequence[CellRecord]]] = ()

    def gpus(self) -> int:
        recipe = self.planned.loaded.recipe
        engine = recipe.engine
        per_node = recipe.topology.gpus_per_node  # the schema keeps every size >= 1
        parallel = (engine.tensor_parallel_size or 1) * (engine.pipeline_parallel_size or 1)
        return recipe.topology.nodes * per_node if per_node else parallel


@dataclass
class Point:
    """One treatment in one bench cell."""

    treatment: TreatmentRun
    cell: CellData
    value: float | None  # the ranking metric's median over repeats
    per_gpu: float | None  # output (decode) tok/s per GPU
    latency: float | None
    acceptance: float | None
    meets_slo: bool
    #: This cell in each confirmation boot (a boot without the cell or the metric is left out).
    boots: list[CellData] = field(default_factory=list)

    def boot_values(self, metric: str) -> list[float]:
        """Each confirmation boot's value of ``metric`` (the median of its repeats)."""
        return [v for v in (_median(c, metric) for c in self.boots) if v is not None]


@dataclass
class CellAnalysis:
    params: dict[str, Any]
    points: list[Point]  # ranked, best first (those without a value last)
    best: Point | None = None
    runner_up: Point | None = None
    verdict: str | None = None  # the best against the runner-up: faster | no change | inconclusive ...
    band: tuple[float, float] | None = None
    level: float | None = None  # the band's confidence level (corrected for the treatments compared)
    #: Judged across confirmation boots: the boots of the best and of the runner-up; None: on one boot each.
    boots: tuple[int, int] | None = None
    pareto: list[Point] = field(default_factory=list)
    effects: dict[str, dict[str, float]] = field(default_factory=dict)  # factor -> level -> mean


@dataclass
class Analysis:
    plan: ExperimentPlan
    metric: str
    latency: str
    slos: tuple[Slo, ...]
    threshold: float
    cells: list[CellAnalysis]
    missing: list[PlannedTreatment]  # treatments with no DONE run


def _median(cell: CellData, metric: str) -> float | None:
    values = cell.values(metric)
    return statistics.median(values) if values else None


def geometric_mean(values: Sequence[float]) -> float:
    """The centre of the across-boot band (a mean of log values); the plain mean when a value is
    not positive (the band is then of the difference of means, as ``log_t_band`` falls back)."""
    return statistics.geometric_mean(values) if all(v > 0 for v in values) else statistics.fmean(values)


def across_boots(point: Point, metric: str) -> CellData:
    """The point's cell as the verdict sees it across boots: one repeat per confirmation boot
    (the boot's value, its marks), no requests: the band is the boots' (``judge_metric``'s
    repeats method)."""
    repeats: list[dict[str, object]] = []
    for cell in point.boots:
        value = _median(cell, metric)
        if value is not None:
            repeats.append({metric: value, "client_bound": cell.client_bound, "flags": cell.flags})
    return CellData(point.cell.params, list(repeats))


def _pareto(points: list[Point]) -> list[Point]:
    """Points no other point beats: at least as high on throughput per GPU and at least as low
    on latency, and strictly better on one of them.  Fastest per GPU first."""
    usable: list[tuple[Point, float, float]] = []
    for p in points:
        if p.per_gpu is not None and p.latency is not None:
            usable.append((p, p.per_gpu, p.latency))

    def beats(speed: float, latency: float, of: tuple[Point, float, float]) -> bool:
        _, other_speed, other_latency = of
        return speed >= other_speed and latency <= other_latency and (speed > other_speed or latency < other_latency)

    front = [u for u in usable if not any(beats(s, lat, u) for _, s, lat in usable)]  # none beats itself
    return [p for p, _, _ in sorted(front, key=operator.itemgetter(1), reverse=True)]


def _effects(points: list[Point]) -> dict[str, dict[str, float]]:
    from autobench.experiment.design import short

    out: dict[str, dict[str, list[float]]] = {}
    for p in points:
        if p.value is None:
            continue
        for key, level, _ in p.treatment.planned.treatment.levels:
            out.setdefault(key, {}).setdefault(short(level), []).append(p.value)
    return {k: {lvl: statistics.fmean(v) for lvl, v in levels.items()} for k, levels in out.items()}


def band_level(treatments: int, level: float = LEVEL) -> float:
    """The level of the best-against-runner-up band when ``treatments`` were ranked: the best and
    the runner-up are picked after looking at all of them, so the band is Bonferroni-corrected
    over the best's comparisons with each of the other ``treatments - 1`` (a conservative form of
    Hsu's multiple comparisons with the best), as ``compare`` corrects over the metrics it
    judges: noise alone then makes the best read faster than the runner-up in under 5 % of
    cells, however many treatments there are.  Two treatments: the plain 95 %."""
    return 1.0 - (1.0 - level) / max(1, treatments - 1)


def analyse(
    plan: ExperimentPlan,
    runs: Sequence[TreatmentRun],
    *,
    metric: str = "decode_tok_s",
    latency: str = "tpot_median_ms",
    slos: Sequence[Slo] = (),
    threshold: float = 0.05,
) -> Analysis:
    """Judge the treatments' runs (see the module doc), one bench cell at a time."""
    for name in (metric, latency):
        if name not in HIGHER_IS_BETTER:
            raise UsageError(f"{name!r} is not a metric", hint="metrics: " + ", ".join(sorted(HIGHER_IS_BETTER)))
    if HIGHER_IS_BETTER[latency]:
        raise UsageError(
            f"--latency {latency}: not a latency (higher is better)",
            hint="latencies: " + ", ".join(sorted(k for k, higher in HIGHER_IS_BETTER.items() if not higher)),
        )
    higher = HIGHER_IS_BETTER[metric]
    by_cell: dict[str, list[Point]] = {}
    params_of: dict[str, dict[str, Any]] = {}
    for tr in runs:
        if tr.run is None:
            continue
        for cell in run_cells(tr.run, tr.cells):
            key = cell_key(cell.params)
            params_of.setdefault(key, cell.params)
            decode = _median(cell, "decode_tok_s")
            point = Point(
                treatment=tr,
                cell=cell,
                value=_median(cell, metric),
                per_gpu=None if decode is None else decode / tr.gpus(),
                latency=_median(cell, latency),
                acceptance=_median(cell, "spec_acceptance_length"),
                meets_slo=all(s.holds(_median(cell, s.metric)) for s in slos),
                boots=[c for run, cells in tr.boots for c in run_cells(run, cells) if cell_key(c.params) == key],
            )
            by_cell.setdefault(key, []).append(point)
    cells: list[CellAnalysis] = []
    for key, points in by_cell.items():
        valued = [(p.value, p) for p in points if p.value is not None]
        ranked = [p for _, p in sorted(valued, key=operator.itemgetter(0), reverse=higher)]
        ranked += [p for p in points if p.value is None]
        # treatments with two or more confirmation boots lead, ranked by them (fresh data)
        confirmed = [p for p in ranked if p.value is not None and p.meets_slo and len(p.boot_values(metric)) >= 2]
        confirmed.sort(key=lambda p: geometric_mean(p.boot_values(metric)), reverse=higher)
        if len(confirmed) >= 2:
            ranked = confirmed + [p for p in ranked if p not in confirmed]
        analysis = CellAnalysis(params_of[key], ranked)
        eligible = [p for p in ranked if p.value is not None and p.meets_slo]
        if eligible:
            analysis.best = eligible[0]
        if len(eligible) > 1:
            analysis.runner_up = eligible[1]
            best, runner = eligible[0].cell, eligible[1].cell
            analysis.level = band_level(len(eligible))
            if len(confirmed) >= 2:
                best, runner = across_boots(eligible[0], metric), across_boots(eligible[1], metric)
                analysis.level = band_level(len(confirmed))
                analysis.boots = (len(best.repeats), len(runner.repeats))
            judged = judge_metric(metric, runner, best, threshold=threshold, level=analysis.level)
            if judged is not None:
                analysis.verdict, analysis.band = judged.label(), judged.band
        analysis.pareto = _pareto(points)
        analysis.effects = _effects(points)
        cells.append(analysis)
    missing = [tr.planned for tr in runs if tr.run is None]
    return Analysis(plan, metric, latency, tuple(slos), threshold, cells, missing)


def to_json_dict(analysis: Analysis) -> dict[str, Any]:
    def point(p: Point | None) -> dict[str, Any] | None:
        if p is None:
            return None
        t = p.treatment
        return {
            "treatment": t.planned.treatment.id,
            "label": t.planned.treatment.label(),
            "run": t.run.display_id if t.run else None,
            analysis.metric: p.value,
            "output_tok_s_per_gpu": p.per_gpu,
            analysis.latency: p.latency,
            "spec_acceptance_length": p.acceptance,
            "meets_slo": p.meets_slo,
            "boots": p.boot_values(analysis.metric),
            "boot_runs": [r.display_id for r, _ in t.boots],
        }

    return {
        "experiment": analysis.plan.experiment.name,
        "plan": analysis.plan.digest,
        "metric": analysis.metric,
        "latency": analysis.latency,
        "slo": [str(s) for s in analysis.slos],
        "threshold": analysis.threshold,
        "cells": [
            {
                "params": c.params,
                "label": cell_label(c.params),
                "treatments": [point(p) for p in c.points],
                "best": point(c.best),
                "runner_up": point(c.runner_up),
                "verdict": c.verdict,
                "band": list(c.band) if c.band else None,
                "level": c.level,
                "across_boots": list(c.boots) if c.boots else None,
                "pareto": [point(p) for p in c.pareto],
                "main_effects": c.effects,
            }
            for c in analysis.cells
        ],
        "not_run": [t.treatment.id for t in analysis.missing],
    }

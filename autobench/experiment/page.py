"""An experiment's report page, in the report's page set (``autobench report``'s ``-o DIR``):

- ``DIR/experiments/NAME.md``: per bench cell, the treatments table (ranked, with the verdict of
  the best against the runner-up, the Pareto front and the main effects), then the pruned
  treatments with their predicted cause and those not run yet;
- ``DIR/experiments/NAME.pareto.N.svg``: the Pareto plot of cell N (``pareto_plot``), every
  point a link to its run;
- ``DIR/recipes/RECIPE.md``: the report page of every recipe the runs belong to, rendered by
  ``autobench.report`` so every link resolves: each row and point links to its run's row there
  (``../recipes/RECIPE.md#run-7``), as the report's index links into its pages.

The page and plots are redacted of the environment's secrets, rewritten only when their bytes
change, and the same ledger gives the same bytes (no "generated at").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.errors import UsageError
from autobench.experiment.analysis import Analysis, CellAnalysis, Point
from autobench.experiment.pareto_plot import PlotPoint, svg
from autobench.ledger.verdict import cell_label
from autobench.metric_catalogue import format_value, metric

PAGE_DIR = "experiments"
TEMPLATE = "report_experiment.md.j2"


@dataclass(frozen=True)
class Row:
    """One treatment's line in a cell's table."""

    treatment: str
    label: str
    value: float | None
    per_gpu: float | None
    latency: float | None
    acceptance: float | None
    meets_slo: bool
    run: int | None
    page: str | None  # the run's recipe page, relative to the experiment page; None: no page
    role: str  # best | runner-up | ""
    on_front: bool


@dataclass(frozen=True)
class CellView:
    label: str
    rows: list[Row]
    best: Row | None
    runner_up: Row | None
    verdict: str | None
    band: tuple[float, float] | None
    level: float | None  # the band's confidence level
    plot: str | None  # the plot's file name, beside the page
    front: list[Row]
    effects: dict[str, dict[str, float]]

    @property
    def band_text(self) -> str:
        return "" if self.band is None else f"{self.band[0]:.3f}..{self.band[1]:.3f}"


@dataclass(frozen=True)
class PageView:
    name: str
    recipe: str
    plan: str
    treatments: int
    metric: str
    metric_label: str
    latency: str
    latency_label: str
    slos: list[str]
    threshold: float
    cells: list[CellView]
    pruned: list[tuple[str, str, str]]  # (id, label, cause)
    missing: list[tuple[str, str]]  # (id, label)


@dataclass
class PageResult:
    page: Path
    plots: list[Path] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    recipe_pages: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _label(key: str) -> str:
    m = metric(key)
    return f"{m.label} ({m.unit})" if m.unit else m.label


def run_page(recipe: str) -> str | None:
    """The run's recipe page relative to an experiment page; None when the ledger's recipe name
    cannot name a page (``report.pages.page_name_ok``: a name written by others never chooses a
    path)."""
    from autobench.report.pages import PAGES_DIR, page_name_ok

    return f"../{PAGES_DIR}/{recipe}.md" if page_name_ok(recipe) else None


def _row(p: Point, cell: CellAnalysis, front: set[int]) -> Row:
    t = p.treatment
    role = "best" if p is cell.best else "runner-up" if p is cell.runner_up else ""
    return Row(
        treatment=t.planned.treatment.id,
        label=t.planned.treatment.label(),
        value=p.value,
        per_gpu=p.per_gpu,
        latency=p.latency,
        acceptance=p.acceptance,
        meets_slo=p.meets_slo,
        run=t.run.id if t.run else None,
        page=run_page(t.run.recipe_name) if t.run else None,
        role=role,
        on_front=id(p) in front,
    )


def build_view(
    analysis: Analysis, *, pruned: Sequence[tuple[str, str, str]] = (), plot_name: str | None = None
) -> PageView:
    """The page's content (pure): ``plot_name`` (``NAME.pareto``) names each cell's plot file."""
    cells = []
    for i, cell in enumerate(analysis.cells, 1):
        front = {id(p) for p in cell.pareto}
        rows = [_row(p, cell, front) for p in cell.points]
        by_id = {r.treatment: r for r in rows}
        usable = any(r.per_gpu is not None and r.latency is not None for r in rows)
        cells.append(
            CellView(
                label=cell_label(cell.params),
                rows=rows,
                best=next((r for r in rows if r.role == "best"), None),
                runner_up=next((r for r in rows if r.role == "runner-up"), None),
                verdict=cell.verdict,
                band=cell.band,
                level=cell.level,
                plot=f"{plot_name}.{i}.svg" if plot_name and usable else None,
                front=[by_id[p.treatment.planned.treatment.id] for p in cell.pareto],
                effects=cell.effects,
            )
        )
    plan = analysis.plan
    return PageView(
        name=plan.experiment.name,
        recipe=str(plan.experiment.recipe.name),
        plan=plan.digest,
        treatments=len(plan.treatments),
        metric=analysis.metric,
        metric_label=_label(analysis.metric),
        latency=analysis.latency,
        latency_label=_label(analysis.latency),
        slos=[str(s) for s in analysis.slos],
        threshold=analysis.threshold,
        cells=cells,
        pruned=list(pruned),
        missing=[(t.treatment.id, t.treatment.label()) for t in analysis.missing],
    )


def _tooltip(row: Row, view: PageView) -> str:
    run = f"run {row.run}" if row.run is not None else "no run"
    return (
        f"{row.treatment} {row.label} ({run}): {format_value(row.per_gpu)} output tok/s per GPU, "
        f"{view.latency_label} {format_value(row.latency)}"
    )


def plot_svg(cell: CellView, view: PageView) -> str:
    points = [
        PlotPoint(
            treatment=r.treatment,
            x=r.latency,
            y=r.per_gpu,
            href=None if r.page is None or r.run is None else f"{r.page}#run-{r.run}",
            title=_tooltip(r, view),
            on_front=r.on_front,
            best=r.role == "best",
        )
        for r in cell.rows
        if r.latency is not None and r.per_gpu is not None
    ]
    return svg(
        points,
        title=f"{view.name}: {cell.label}",
        x_label=view.latency_label,
        y_label="output tok/s per GPU",
    )


def render_page(view: PageView) -> str:
    from autobench.report.render import render_template

    return render_template(TEMPLATE, v=view)


def write_page(
    analysis: Analysis,
    out_dir: str | Path,
    *,
    ledger: str | None,
    pruned: Sequence[tuple[str, str, str]] = (),
    recipes: bool = True,
) -> PageResult:
    """Write the experiment's page and plots into ``out_dir`` (see the module docstring) and,
    with ``recipes``, the report pages of the recipes its runs belong to."""
    from autobench.redaction import environment_secrets, redact
    from autobench.report.pages import page_name_ok, report, write_if_changed

    name = analysis.plan.experiment.name
    if not page_name_ok(name):
        raise UsageError(
            f"experiment name {name!r} cannot name a page file",
            hint="name the experiment with letters, digits, '.', '_' and '-' (`name:` in the experiment file)",
        )
    out = Path(out_dir)
    folder = out / PAGE_DIR
    view = build_view(analysis, pruned=pruned, plot_name=f"{name}.pareto")
    secrets = environment_secrets()
    files: list[tuple[Path, str]] = [(folder / f"{name}.md", render_page(view))]
    for cell in view.cells:
        if cell.plot is not None:
            files.append((folder / cell.plot, plot_svg(cell, view)))
    result = PageResult(files[0][0], plots=[p for p, _ in files[1:]])
    for path, text in files:
        (result.written if write_if_changed(path, redact(text, secrets)) else result.unchanged).append(path)
    names = sorted({r.run.recipe_name for r in _runs(analysis) if page_name_ok(r.run.recipe_name)})
    if recipes and names:
        rendered = report(names, ledger=ledger, out_dir=out, recipes_dir=None)
        result.recipe_pages = [*rendered.written, *rendered.unchanged]
        result.notes += rendered.notes
    return result


def _runs(analysis: Analysis) -> list[Any]:
    return [p.treatment for c in analysis.cells for p in c.points if p.treatment.run is not None]

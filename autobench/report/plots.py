"""Plots beside a recipe page: decode tok/s and TTFT across runs and across concurrency.

Which plots a page gets is decided from the data alone (:func:`plot_specs`), so the
Markdown is the same whether or not matplotlib is installed.  Drawing them needs the
optional extra (``pip install 'autobench[plot]'``); without it :func:`write_plots`
writes nothing and returns one note saying how to get it.  matplotlib is imported
only inside :func:`write_plots`.

The SVGs are made reproducible (fixed hash salt, no date/creator metadata, text kept
as text), so re-rendering unchanged data with the same matplotlib gives the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench import metric_catalogue as catalogue
from autobench.errors import ReportError
from autobench.report.model import DONE, RecipeView, Run

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INSTALL_HINT = "pip install 'autobench[plot]'"
NO_MATPLOTLIB_NOTE = f"plots skipped: matplotlib is not installed ({INSTALL_HINT})"


@dataclass(frozen=True)
class PlotSpec:
    kind: str  # "runs" | "concurrency" | "cells-throughput" | "cells-latency" | "cells-per-user"
    metric: str  # metrics key, or "" for the two-panel concurrency plot
    title: str
    file: str  # file name, beside the page
    #: A "runs" chart holds one comparable set: the runs at this concurrency (None: unknown).
    concurrency: int | None = None


def _comparable_sets(view: RecipeView) -> list[int | None]:
    """The concurrencies of the recipe's runs, the latest DONE run's first: one "runs" chart
    each, so a chart never puts concurrency 8 beside 4 (issue #31)."""
    head = view.latest_done.concurrency if view.latest_done is not None else None
    others = sorted({r.concurrency for r in view.runs if r.concurrency is not None} - {head})
    unknown = [None] if head is not None and any(r.concurrency is None for r in view.runs) else []
    return [head, *others, *unknown]


def plot_specs(view: RecipeView) -> list[PlotSpec]:
    """The plots this recipe's data supports (any DONE run with the value; 2+ concurrency levels)."""
    specs = []
    done = [r for r in view.runs if r.status == DONE]
    sets = _comparable_sets(view)
    for key, title, stem in (
        ("decode_tok_s", "decode tok/s across runs", "decode"),
        ("ttft_median_ms", "TTFT median (ms) across runs", "ttft"),
    ):
        for i, conc in enumerate(sets):
            if not any(r.metric(key) is not None and r.concurrency == conc for r in done):
                continue
            at = f" at concurrency {conc}" if conc is not None else " at an unknown concurrency"
            file = (
                f"{view.name}.{stem}.svg" if i == 0 else f"{view.name}.{stem}.c{conc if conc is not None else 'x'}.svg"
            )
            specs.append(PlotSpec("runs", key, title + at, file, conc))
    levels = [lv for lv in view.levels if lv.concurrency is not None]
    if len(levels) > 1 and any(not lv.decode.missing or not lv.ttft.missing for lv in levels):
        specs.append(
            PlotSpec("concurrency", "", "decode tok/s and TTFT across concurrency", f"{view.name}.concurrency.svg")
        )
    return specs + cell_plot_specs(view)


#: The by-cell plots: (kind, title, file stem).
CELL_PLOTS = (
    ("cells-throughput", "throughput against concurrency", "cells.throughput"),
    ("cells-latency", "TTFT and TPOT against concurrency", "cells.latency"),
    ("cells-per-user", "per-user against total throughput", "cells.per-user"),
)


def cell_plot_specs(view: RecipeView) -> list[PlotSpec]:
    """The by-cell plots of the view's grid run: only when concurrency varies over 2+ values."""
    table = view.cells
    if table is None or not table.by_concurrency:
        return []
    run = f"run {table.run_id}"
    return [PlotSpec(kind, "", f"{run}: {title}", f"{view.name}.{stem}.svg") for kind, title, stem in CELL_PLOTS]


def is_cell_plot(spec: PlotSpec) -> bool:
    return spec.kind.startswith("cells-")


def matplotlib_available() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def _label(run: Run) -> str:
    day = run.day.isoformat() if run.day else "—"
    return f"run {run.id}\n{day}"


def _draw_runs(fig: Figure, view: RecipeView, spec: PlotSpec) -> None:
    ax = fig.add_subplot()
    runs = [r for r in view.runs if r.concurrency == spec.concurrency]  # one comparable set
    xs = list(range(len(runs)))
    heights = [r.metric(spec.metric) if r.status == DONE else None for r in runs]
    top = max((h for h in heights if h is not None), default=1.0) or 1.0
    for x, run, h in zip(xs, runs, heights, strict=True):
        if h is None:  # never drawn as 0: a labelled gap
            why = run.status if run.status != DONE else "—"
            ax.text(x, top * 0.02, why, ha="center", va="bottom", rotation=90, fontsize=8, color="#a33")
        else:
            ax.bar(x, h, color="#4477aa", width=0.6)
            ax.text(x, h, _fmt(spec.metric, h), ha="center", va="bottom", fontsize=8)
    if (
        spec.metric == "decode_tok_s"
        and view.speedup.ok
        and view.speedup.base is not None
        and view.speedup.concurrency == spec.concurrency
    ):
        base = view.speedup.base
        ax.axhline(
            float(base.value),
            color="#888",
            linestyle="--",
            linewidth=1,
            label=f"baseline {view.speedup.baseline} run {base.run_id}: {_fmt('decode_tok_s', base.value)}",
        )
        ax.legend(fontsize=7, loc="upper left")
    ax.set_xticks(xs, [_label(r) for r in runs], fontsize=8)
    ax.set_ylabel(spec.title.split(" across")[0])  # bars from zero: a 1 % difference looks like one
    ax.set_xlim(-0.6, len(runs) - 0.4)
    ax.set_ylim(0, top * 1.3)
    ax.set_title(f"{view.name}\n{spec.title}", fontsize=9)


def _draw_concurrency(fig: Figure, view: RecipeView) -> None:
    levels = [(c, lv) for lv in view.levels if (c := lv.concurrency) is not None]
    for i, (attr, ylabel) in enumerate((("decode", "decode tok/s"), ("ttft", "TTFT median (ms)"))):
        ax = fig.add_subplot(1, 2, i + 1)
        points = [(c, getattr(lv, attr)) for c, lv in levels]
        points = [(c, f) for c, f in points if not f.missing]
        # points, not a line: each is the latest DONE run at its level, unrelated runs
        ax.plot([c for c, _ in points], [f.value for _, f in points], marker="o", linestyle="none", color="#4477aa")
        for c, f in points:
            ax.annotate(
                f"run {f.run_id}", (c, f.value), fontsize=7, textcoords="offset points", xytext=(0, 5), ha="center"
            )
        ax.set_xlabel("concurrency")
        ax.set_ylabel(ylabel)
        ax.set_xticks([c for c, _ in levels], [str(c) for c, _ in levels])
        ax.set_ylim(bottom=0)
    fig.suptitle(f"{view.name}: latest DONE run per concurrency", fontsize=9)


def _lines(view: RecipeView) -> list[tuple[str, list[Any]]]:
    from autobench.report.cells import series

    return series(view.cells, "concurrency")


def _cell_tag(row: Any) -> str:
    """A point's label: the run and its cells (``run 7 cells 1, 4``)."""
    which = ", ".join(str(i) for i in row.cells)
    return f"run {row.run_id} cell{'s' if len(row.cells) > 1 else ''} {which}"


def _fmt(key: str, value: Any) -> str:
    """The one number format of the metric catalogue (significant figures by metric)."""
    m = catalogue.BY_KEY.get(key)
    return catalogue.format_value(value, m.sig if m is not None else 4)


def _concurrency_axis(ax: Any, lines: list[tuple[str, list[Any]]]) -> None:
    """A linear concurrency axis labelled with the levels benched (not 2^1 2^2 ...)."""
    levels = sorted({r.concurrency for _, rows in lines for r in rows if r.concurrency is not None})
    ax.set_xticks(levels, [str(c) for c in levels])
    ax.set_xlabel("concurrency")
    ax.set_ylim(bottom=0)


def _draw_cells(fig: Figure, view: RecipeView, spec: PlotSpec) -> None:
    table = view.cells
    lines = _lines(view)
    if spec.kind == "cells-throughput":
        ax = fig.add_subplot()
        for label, rows in lines:
            for key, style, name in (("total_tok_s", "-o", "total"), ("decode_tok_s", "--s", "decode")):
                pts = [(r.concurrency, r.value(key), r) for r in rows if r.value(key) is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{name} {label}".strip())
                    for c, y, r in pts:
                        ax.annotate(_cell_tag(r), (c, y), fontsize=6, textcoords="offset points", xytext=(0, 4))
        _concurrency_axis(ax, lines)
        ax.set_ylabel("tok/s")
        ax.legend(fontsize=7)
    elif spec.kind == "cells-latency":
        for i, (base, name) in enumerate((("ttft", "TTFT (ms)"), ("tpot", "TPOT (ms)"))):
            ax = fig.add_subplot(1, 2, i + 1)
            for label, rows in lines:
                for stat, style in (("median", "-o"), ("p99", "--^")):
                    key = f"{base}_{stat}_ms"
                    pts = [(r.concurrency, r.value(key), r) for r in rows if r.value(key) is not None]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{stat} {label}".strip())
                        for c, y, r in pts:
                            ax.annotate(_cell_tag(r), (c, y), fontsize=6, textcoords="offset points", xytext=(0, 4))
            _concurrency_axis(ax, lines)
            ax.set_ylabel(name)
            ax.legend(fontsize=7)
    else:
        ax = fig.add_subplot()
        for label, rows in lines:
            shown = [r for r in rows if r.value("total_tok_s") is not None and r.value("per_user_tok_s") is not None]
            if shown:
                ax.plot(
                    [r.value("total_tok_s") for r in shown],
                    [r.value("per_user_tok_s") for r in shown],
                    "-o",
                    label=label or None,
                )
                for r in shown:
                    ax.annotate(
                        f"concurrency {r.concurrency}, {_cell_tag(r)}",
                        (r.value("total_tok_s"), r.value("per_user_tok_s")),
                        fontsize=6,
                        textcoords="offset points",
                        xytext=(3, 3),
                    )
        ax.set_xlabel("total tok/s")
        ax.set_ylabel("per-user tok/s (1000 / TPOT median)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        if any(label for label, _ in lines):
            ax.legend(fontsize=7)
    fig.suptitle(f"{view.name}, {spec.title} (points: cells of run {table.run_id})", fontsize=9)


def write_plots(view: RecipeView, directory: Path, specs: Sequence[PlotSpec]) -> tuple[list[Path], str | None]:
    """Draw ``specs`` as SVG files in ``directory``.  Returns (files written, note or None);
    a file whose bytes would not change is left alone and not listed."""
    if not specs:
        return [], None
    if not matplotlib_available():
        return [], NO_MATPLOTLIB_NOTE
    import matplotlib
    from matplotlib.figure import Figure

    written = []
    rc: Any = {"svg.hashsalt": "autobench", "svg.fonttype": "none", "font.family": "DejaVu Sans"}
    with matplotlib.rc_context(rc):
        for spec in specs:
            fig = Figure(figsize=(7, 4) if spec.kind in ("runs", "cells-throughput", "cells-per-user") else (9, 3.6))
            if spec.kind == "runs":
                _draw_runs(fig, view, spec)
            elif is_cell_plot(spec):
                _draw_cells(fig, view, spec)
            else:
                _draw_concurrency(fig, view)
            fig.tight_layout()
            path = directory / spec.file
            buffer = io.BytesIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
            data = buffer.getvalue()
            try:
                if path.is_file() and path.read_bytes() == data:
                    continue  # unchanged: leave the file (and its mtime) alone
                directory.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            except OSError as exc:
                raise ReportError(f"cannot write plot: {exc.strerror}", location=str(path)) from exc
            written.append(path)
    return written, None

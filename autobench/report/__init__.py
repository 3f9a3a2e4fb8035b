"""Reports from the ledger: a Markdown page per recipe, an index, and plots.

report(args, ledger=, out_dir=, index=, check=, plots=) -> ReportResult
build_recipe_view / build_index_view   the pure view-models (autobench.report.model)
render_recipe / render_index           Markdown via templates/report_*.md.j2
"""

from __future__ import annotations

from autobench.report.model import (
    Fig,
    IndexView,
    RecipeView,
    Run,
    Speedup,
    build_index_view,
    build_recipe_view,
    compute_speedup,
    run_from_record,
)
from autobench.report.pages import ReportResult, report
from autobench.report.render import render_index, render_recipe

__all__ = [
    "Fig",
    "IndexView",
    "RecipeView",
    "ReportResult",
    "Run",
    "Speedup",
    "build_index_view",
    "build_recipe_view",
    "compute_speedup",
    "render_index",
    "render_recipe",
    "report",
    "run_from_record",
]

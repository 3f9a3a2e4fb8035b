"""Turn ledger runs into files: recipe pages, the index, plots; and check committed ones.

    plan_outputs(runs_by_recipe, targets, out_dir, index=, plots=) -> list[Output]   (pure)
    write_outputs(outputs) -> WriteResult                                            (writes)
    check_outputs(outputs) -> list[str]                                              (reads)
    report(args, ledger=, out_dir=, index=, check=, plots=) -> ReportResult          (all of it)

Layout under ``out_dir`` (default ``docs/``): ``index.md`` and ``recipes/<recipe>.md``
with the plots beside each page as ``recipes/<recipe>.<plot>.svg``.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autobench.errors import ReportError, UsageError
from autobench.report.model import (
    Run,
    build_index_view,
    build_recipe_view,
    group_by_recipe,
    runs_from_records,
)
from autobench.report.plots import PlotSpec, plot_specs, write_plots
from autobench.report.render import render_index, render_recipe

PAGES_DIR = "recipes"
INDEX_FILE = "index.md"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._\-]*$")


@dataclass(frozen=True)
class Target:
    name: str
    recipe: Mapping[str, Any] | None = None  # the resolved recipe, when given as a file


@dataclass(frozen=True)
class Output:
    path: Path
    text: str
    plots: tuple[PlotSpec, ...] = ()
    view: Any = None  # the RecipeView the page was rendered from (None for the index)


@dataclass
class WriteResult:
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportResult(WriteResult):
    stale: list[str] = field(default_factory=list)
    checked: list[Path] = field(default_factory=list)


def resolve_targets(args: Iterable[str]) -> list[Target]:
    """Each argument is a recipe file (``*.yaml``/``*.yml`` or an existing file) or a recipe name."""
    targets = []
    for arg in args:
        path = Path(arg)
        if path.suffix in {".yaml", ".yml"} or path.is_file():
            from autobench.recipe import load_recipe

            loaded = load_recipe(path)
            targets.append(Target(loaded.recipe.name, loaded.data))
        elif _NAME_RE.match(arg):
            targets.append(Target(arg))
        else:
            raise UsageError(f"{arg!r} is neither a recipe file nor a recipe name",
                             hint="recipe names are lower-case letters, digits, '.', '_' and '-'")
    return targets


def load_runs(ledger: str | None) -> dict[str, list[Run]]:
    """Every run in the ledger, grouped by recipe name (ledger order within a recipe)."""
    from autobench.ledger import open_ledger

    book = open_ledger(ledger, create=False)
    try:
        records = book.runs()
    finally:
        close = getattr(book, "close", None)
        if close:
            close()
    return group_by_recipe(runs_from_records(records))


def plan_outputs(
    runs_by_recipe: Mapping[str, Sequence[Run]],
    targets: Sequence[Target],
    out_dir: Path,
    *,
    index: bool = False,
    plots: bool = True,
) -> list[Output]:
    """The pages to write.  ``index`` adds docs/index.md and the page of every recipe it lists."""
    wanted: dict[str, Target] = {t.name: t for t in targets}
    if index:
        for name in sorted(runs_by_recipe):
            wanted.setdefault(name, Target(name))
    outputs = []
    for name in sorted(wanted):
        view = build_recipe_view(name, runs_by_recipe, wanted[name].recipe)
        specs = tuple(plot_specs(view)) if plots else ()
        view = replace(view, plots=[(s.title, s.file) for s in specs])
        outputs.append(Output(out_dir / PAGES_DIR / f"{name}.md", render_recipe(view), specs, view))
    if index:
        outputs.append(Output(out_dir / INDEX_FILE,
                              render_index(build_index_view(runs_by_recipe), pages=PAGES_DIR)))
    return outputs


def _write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise ReportError(f"cannot write page: {exc.strerror}", location=str(path)) from exc


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReportError(f"cannot read page: {exc.strerror}", location=str(path)) from exc


def write_outputs(outputs: Sequence[Output], *, draw_plots: bool = True) -> WriteResult:
    result = WriteResult()
    for out in outputs:
        if _read_text(out.path) == out.text:
            result.unchanged.append(out.path)
        else:
            _write_text(out.path, out.text)
            result.written.append(out.path)
        if draw_plots and out.plots:
            files, note = write_plots(out.view, out.path.parent, out.plots)
            result.plots += files
            if note and note not in result.notes:
                result.notes.append(note)
    return result


def check_outputs(outputs: Sequence[Output]) -> list[str]:
    """What is stale on disk: pages that differ or are missing, linked plots that are missing.

    Plot bytes are not compared (they depend on the matplotlib version); their presence is.
    """
    problems = []
    for out in outputs:
        on_disk = _read_text(out.path)
        if on_disk is None:
            problems.append(f"{out.path}: missing")
        elif on_disk != out.text:
            problems.append(f"{out.path}: differs from the ledger")
        for spec in out.plots:
            plot = out.path.parent / spec.file
            if not plot.is_file():
                problems.append(f"{plot}: plot missing")
    return problems


def report(
    args: Sequence[str],
    *,
    ledger: str | None = None,
    out_dir: str | Path = "docs",
    index: bool = False,
    check: bool = False,
    plots: bool = True,
) -> ReportResult:
    """Render (or with ``check`` verify) the pages of ``args`` and, with ``index``, the index."""
    if not args and not index:
        raise UsageError("nothing to render", hint="name a recipe (or recipe file), or pass --index")
    targets = resolve_targets(args)
    runs_by_recipe = load_runs(ledger)
    outputs = plan_outputs(runs_by_recipe, targets, Path(out_dir), index=index, plots=plots)
    result = ReportResult()
    known = sorted(runs_by_recipe)
    for target in targets:
        if target.name not in runs_by_recipe:
            close = difflib.get_close_matches(target.name, known, 1, 0.8)
            hint = f" (did you mean {close[0]}?)" if close else ""
            result.notes.append(f"no runs of {target.name} in the ledger: its page says so{hint}")
    if check:
        result.checked = [o.path for o in outputs]
        result.stale = check_outputs(outputs)
        return result
    written = write_outputs(outputs, draw_plots=plots)
    result.written, result.unchanged, result.plots = written.written, written.unchanged, written.plots
    result.notes += written.notes
    return result

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
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autobench.errors import ReportError, UsageError
from autobench.redaction import environment_secrets, redact
from autobench.report.model import (
    Run,
    build_index_view,
    build_recipe_view,
    group_by_recipe,
    runs_from_records,
)
from autobench.report.plots import (
    NO_MATPLOTLIB_NOTE,
    PlotSpec,
    is_cell_plot,
    matplotlib_available,
    plot_specs,
    write_plots,
)
from autobench.report.render import render_index, render_recipe

PAGES_DIR = "recipes"
INDEX_FILE = "index.md"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._\-]*$")


@dataclass(frozen=True)
class Target:
    name: str
    recipe: Mapping[str, Any] | None = None  # the resolved recipe, when given as a file


class RecipeFiles(Mapping[str, Mapping[str, Any]]):
    """Recipe files of a directory, by recipe name, loaded on first use (``<dir>/<name>.yaml``).

    A file only counts when its recipe name equals its stem (the catalogue's convention).
    """

    def __init__(self, directory: str | Path | None, given: Mapping[str, Mapping[str, Any]] | None = None):
        self.directory = Path(directory) if directory else None
        self._cache: dict[str, Mapping[str, Any] | None] = dict(given or {})

    def _load(self, name: str) -> Mapping[str, Any] | None:
        if name not in self._cache:
            self._cache[name] = None
            if self.directory and page_name_ok(name):
                for suffix in (".yaml", ".yml"):
                    path = self.directory / f"{name}{suffix}"
                    if path.is_file():
                        from autobench.recipe import load_recipe

                        loaded = load_recipe(path)
                        if loaded.recipe.name == name:
                            self._cache[name] = loaded.data
                        break
        return self._cache[name]

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        data = self._load(name)
        if data is None:
            raise KeyError(name)
        return data

    def __iter__(self) -> Iterator[str]:
        names = set(k for k, v in self._cache.items() if v is not None)
        if self.directory and self.directory.is_dir():
            names |= {p.stem for p in self.directory.glob("*.y*ml")}
        return iter(sorted(n for n in names if n in self))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._load(name) is not None

    def __len__(self) -> int:
        return sum(1 for _ in self)


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
        elif page_name_ok(arg):
            targets.append(Target(arg))
        else:
            raise UsageError(
                f"{arg!r} is neither a recipe file nor a recipe name",
                hint="recipe names are lower-case letters, digits, '.', '_' and '-'",
            )
    return targets


def load_runs(ledger: str | None) -> dict[str, list[Run]]:
    """Every run in the ledger, grouped by recipe name (ledger order within a recipe)."""
    from autobench.ledger import open_ledger

    book = open_ledger(ledger, create=False)
    try:
        records = book.runs()
        runs = runs_from_records(records)
        cells_of = getattr(book, "cells", None)
        if cells_of is not None:  # the cells of each DONE run (a grid's results by cell)
            runs = [replace(r, cells=tuple(cells_of(r.id))) if r.status == "DONE" else r for r in runs]
    finally:
        close = getattr(book, "close", None)
        if close:
            close()
    return group_by_recipe(runs)


def plan_outputs(
    runs_by_recipe: Mapping[str, Sequence[Run]],
    targets: Sequence[Target],
    out_dir: Path,
    *,
    index: bool = False,
    plots: bool = True,
    recipes: Mapping[str, Mapping[str, Any]] | None = None,
    secrets: Mapping[str, str] | None = None,
    plot_ok: Callable[[Path], bool] | None = None,
) -> list[Output]:
    """The pages to write.  ``index`` adds docs/index.md and the page of every recipe it lists.

    ``plot_ok(path)`` decides whether a plot the data supports is linked (default: all of them);
    :func:`report` links, without matplotlib, only the plots already on disk, so a page never
    links a file nothing drew and ``--check`` right after agrees with what was written.

    ``recipes`` (recipe files by name) fill in what runs did not record; a target given as a
    file takes precedence over it.  Every page is redacted (``autobench.redaction``): token
    shapes always, and the values of ``secrets`` (name -> value).
    """
    runs_by_recipe = {n: r for n, r in runs_by_recipe.items() if page_name_ok(n)}  # see unsafe_names
    wanted: dict[str, Target] = {t.name: t for t in targets if page_name_ok(t.name)}
    if index:
        for name in sorted(runs_by_recipe):
            wanted.setdefault(name, Target(name))
    given = {t.name: t.recipe for t in targets if t.recipe}
    files: Mapping[str, Mapping[str, Any]] = RecipeFiles(None, given) if recipes is None else _Overlay(given, recipes)
    outputs = []
    for name in sorted(wanted):
        view = build_recipe_view(name, runs_by_recipe, files)
        page_dir = out_dir / PAGES_DIR
        specs = tuple(s for s in plot_specs(view) if plot_ok is None or plot_ok(page_dir / s.file)) if plots else ()
        view = replace(
            view,
            plots=[(s.title, s.file) for s in specs if not is_cell_plot(s)],
            cell_plots=[(s.title, s.file) for s in specs if is_cell_plot(s)],
        )
        outputs.append(Output(out_dir / PAGES_DIR / f"{name}.md", redact(render_recipe(view), secrets), specs, view))
    if index:
        page = render_index(build_index_view(runs_by_recipe, files), pages=PAGES_DIR)
        outputs.append(Output(out_dir / INDEX_FILE, redact(page, secrets)))
    return outputs


def page_name_ok(name: str) -> bool:
    """Whether a recipe name can name a page file: a recipe name as the schema allows it, so it
    has no '/', no '..' and no control character.  A ledger is written by others: a recorded
    name such as ``../../../../tmp/x`` must not choose where a page is written."""
    return bool(_NAME_RE.fullmatch(name)) and ".." not in name


def unsafe_names(names: Iterable[str]) -> list[str]:
    """The names :func:`plan_outputs` leaves out (no page, not in the index)."""
    return sorted(n for n in names if not page_name_ok(n))


class _Overlay(Mapping[str, Mapping[str, Any]]):
    def __init__(self, first: Mapping[str, Mapping[str, Any]], then: Mapping[str, Mapping[str, Any]]):
        self.first, self.then = first, then

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        return self.first[name] if name in self.first else self.then[name]

    def __contains__(self, name: object) -> bool:
        return name in self.first or name in self.then

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(self.first) | set(self.then)))

    def __len__(self) -> int:
        return len(set(self.first) | set(self.then))


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


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds exactly that; whether it was written."""
    if _read_text(path) == text:
        return False
    _write_text(path, text)
    return True


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
    recipes_dir: str | Path | None = "recipes",
) -> ReportResult:
    """Render (or with ``check`` verify) the pages of ``args`` and, with ``index``, the index.

    Recipe files in ``recipes_dir`` (``<name>.yaml``) fill in what runs did not record.
    """
    if not args and not index:
        raise UsageError("nothing to render", hint="name a recipe (or recipe file), or pass --index")
    targets = resolve_targets(args)
    runs_by_recipe = load_runs(ledger)
    drawable = plots and matplotlib_available()
    outputs = plan_outputs(
        runs_by_recipe,
        targets,
        Path(out_dir),
        index=index,
        plots=plots,
        recipes=RecipeFiles(recipes_dir),
        secrets=environment_secrets(),
        plot_ok=None if drawable else Path.is_file,
    )
    result = ReportResult()
    if plots and not drawable and any(o.plots != tuple(plot_specs(o.view)) for o in outputs if o.view):
        result.notes.append(NO_MATPLOTLIB_NOTE + "; pages link only the plots already drawn")
    for name in unsafe_names(runs_by_recipe):
        result.notes.append(
            f"ledger recipe name {json.dumps(name, ensure_ascii=True)} is not a recipe name "
            "(letters, digits, '.', '_', '-'): its runs get no page and no index row"
        )
    known = sorted(runs_by_recipe)
    for target in targets:
        if target.name not in runs_by_recipe:
            close = difflib.get_close_matches(target.name, known, 1, 0.8)
            hint = f" (did you mean {close[0]}?)" if close else ""
            result.notes.append(f"no runs of {target.name} in the ledger: its page says so{hint}")
    # With --index the outputs are every page the ledger backs: any other page is an orphan.
    orphans = _orphan_pages(Path(out_dir), outputs) if index else []
    if check:
        result.checked = [o.path for o in outputs]
        result.stale = check_outputs(outputs) + [f"{p}: no runs of this recipe in the ledger" for p in orphans]
        return result
    written = write_outputs(outputs, draw_plots=plots)
    result.written, result.unchanged, result.plots = written.written, written.unchanged, written.plots
    result.notes += written.notes
    result.notes += [f"{p}: no runs of this recipe in the ledger; delete the page if it is obsolete" for p in orphans]
    return result


def _orphan_pages(out_dir: Path, outputs: Sequence[Output]) -> list[Path]:
    rendered = {o.path.resolve() for o in outputs}
    pages = out_dir / "recipes"
    return sorted(p for p in pages.glob("*.md") if p.resolve() not in rendered) if pages.is_dir() else []

"""The bench grid: which cells one run benches, in which order.

A grid axis is a bench key that takes one value or a list of them: ``bench.concurrency``,
``bench.request_rate``, ``bench.dataset.input_len``, ``bench.dataset.output_len``,
``bench.dataset.depth`` and ``bench.dataset.category`` (a category's name: each category its
own cell, so the server's spec-decode counters read per cell give acceptance by category).  The
cells are the cartesian product of the axes in the order written (the first axis varies
slowest), or the explicit ``bench.schedule``; each is benched ``bench.repeat`` times, one round
of every cell after the other (repeat 1 of every cell, then repeat 2, ...), so a slow drift of
the server shows up as noise between repeats instead of as a difference between cells.

A scalar is a one-value grid: a recipe without lists has exactly one cell, and its cell
recipe is the recipe itself.  Pure functions, no I/O.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, overload

from autobench.errors import RecipeError
from autobench.recipe.bounds import MAX_CELLS, grid_size

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

#: One value of a grid axis (the schema's WholeAxis, RateAxis, DepthAxis and CategoryAxis items;
#: ScheduleEntry's values).
AxisValue = int | float | str
N = TypeVar("N", int, float, str)
#: A cell's params, a grid point, a schedule entry: axis name -> value.
Params = dict[str, AxisValue]

#: (axis name in a cell and a schedule entry, key path in the recipe), in cartesian order.
AXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("concurrency", ("bench", "concurrency")),
    ("request_rate", ("bench", "request_rate")),
    ("input_len", ("bench", "dataset", "input_len")),
    ("output_len", ("bench", "dataset", "output_len")),
    ("depth", ("bench", "dataset", "depth")),
    ("category", ("bench", "dataset", "category")),
)
#: The axes that are keys of ``bench.dataset``.
DATASET_AXES = ("input_len", "output_len", "depth", "category")
AXIS_NAMES = tuple(name for name, _ in AXES)


@dataclass(frozen=True)
class Cell:
    """One point of the grid, benched once: ``index`` (0-based, in run order), ``params``
    (every axis that has a value, by name), ``repeat`` (1-based) of ``repeats``."""

    index: int
    params: Params
    repeat: int
    repeats: int

    def label(self) -> str:
        """``concurrency=4 input_len=128`` (and `` repeat 2/3`` when repeated)."""
        text = " ".join(f"{k}={_num(v)}" for k, v in self.params.items()) or "one cell"
        return text + (f" repeat {self.repeat}/{self.repeats}" if self.repeats > 1 else "")


def _num(value: AxisValue) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)  # a category is its name


def axis(recipe: Recipe, name: str) -> AxisValue | list[int] | list[float] | list[str] | None:
    """The axis ``name`` (one of AXIS_NAMES) as written in ``recipe``: a value, a list, or None."""
    b = recipe.bench
    if name == "concurrency":
        return b.concurrency
    if name == "request_rate":
        return b.request_rate
    if name == "input_len":
        return b.dataset.input_len
    if name == "output_len":
        return b.dataset.output_len
    if name == "depth":
        return b.dataset.depth
    if name == "category":
        return b.dataset.category
    raise KeyError(name)


def axis_values(recipe: Recipe) -> dict[str, list[AxisValue]]:
    """Each axis that has a value -> its values as written (a scalar is one value)."""
    out: dict[str, list[AxisValue]] = {}
    for name in AXIS_NAMES:
        value = axis(recipe, name)
        if value is None:
            continue
        out[name] = list(value) if isinstance(value, list) else [value]
    return out


def is_grid(recipe: Recipe) -> bool:
    """More than one cell to bench (a list with several values, a schedule or repeats): counted,
    not built (cell_recipe asks this once per cell; building every cell each time was quadratic,
    minutes for a 10,000-bench grid)."""
    return _count(recipe) > 1


def _count(recipe: Recipe) -> int:
    schedule = recipe.bench.schedule
    return grid_size(
        [len(v) for v in axis_values(recipe).values()], len(schedule) if schedule else None, recipe.bench.repeat
    )


def grid_points(recipe: Recipe) -> list[Params]:
    """The distinct cells' params in run order (a schedule's order, else cartesian)."""
    axes = axis_values(recipe)
    schedule = recipe.bench.schedule
    if schedule:
        problems = schedule_problems(recipe)
        if problems:  # rule AB081 at validation; a recipe compiled without its checks stops here
            index, _, what, fix = problems[0]
            raise RecipeError(f"bench.schedule[{index}]: {what}", hint=fix)
        return [schedule_point(axes, entry) for entry in schedule]
    names = list(axes)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(axes[n] for n in names))]


def schedule_point(axes: dict[str, list[AxisValue]], entry: Params) -> Params:
    """A schedule entry as a cell's params: the axes it names, plus every one-value axis."""
    point: Params = {}
    for name, values in axes.items():
        if name in entry:
            point[name] = entry[name]
        elif len(values) == 1:
            point[name] = values[0]
    return point


def cells(recipe: Recipe) -> list[Cell]:
    """Every bench of the run, in run order: each point ``bench.repeat`` times, round by round."""
    total = _count(recipe)
    if total > MAX_CELLS:  # validation refuses it; a recipe built in code must not build it either
        raise RecipeError(
            f"the grid is {total:,} benches (cells x repeat); a run benches at most {MAX_CELLS:,}",
            hint="fewer values per axis, a bench.schedule of the cells you need, or a smaller bench.repeat",
        )
    points = grid_points(recipe)
    repeats = int(recipe.bench.repeat)
    out: list[Cell] = []
    for r in range(1, repeats + 1):
        for point in points:
            out.append(Cell(len(out), dict(point), r, repeats))
    return out


def cell_recipe(recipe: Recipe, cell: Cell | Params) -> Recipe:
    """The recipe with every grid axis set to the cell's scalar value (and no schedule): what
    one bench of the cell reads.  A one-cell recipe comes back unchanged."""
    params = cell.params if isinstance(cell, Cell) else cell
    bench = recipe.bench
    if not is_grid(recipe) and all(not isinstance(axis(recipe, name), list) for name in AXIS_NAMES):
        return recipe
    dataset = bench.dataset.model_copy(
        update={k: params.get(k) for k in DATASET_AXES if bench.dataset.__dict__.get(k) is not None}
    )
    update: dict[str, object] = {"dataset": dataset, "schedule": None, "repeat": 1}
    for key in ("concurrency", "request_rate"):
        if getattr(bench, key) is not None:
            update[key] = params[key]
    return recipe.model_copy(update={"bench": bench.model_copy(update=update)})


@overload
def largest(value: N | list[N]) -> N: ...
@overload
def largest(value: N | list[N] | None) -> N | None: ...
def largest(value: N | list[N] | None) -> N | None:
    """The largest value of a grid axis (a scalar is its own largest); None stays None."""
    if isinstance(value, list):
        return max(value)
    return value


@overload
def only(value: N | list[N]) -> N: ...
@overload
def only(value: N | list[N] | None) -> N | None: ...
def only(value: N | list[N] | None) -> N | None:
    """The one value of an axis of a cell's recipe (``cell_recipe`` sets every axis to a
    scalar); None stays None.  A list of several values is not one cell's: ValueError."""
    if isinstance(value, list):
        if len(value) != 1:
            raise ValueError(f"{len(value)} values where one cell has one")
        return value[0]
    return value


def schedule_problems(recipe: Recipe) -> list[tuple[int, str | None, str, str]]:
    """``(entry index, axis or None, what is wrong, how to fix)`` for each schedule entry that
    names no cell of the grid (AB081)."""
    schedule = recipe.bench.schedule
    if not schedule:
        return []
    axes = axis_values(recipe)
    problems: list[tuple[int, str | None, str, str]] = []
    for i, entry in enumerate(schedule):
        for name, value in entry.items():
            if name not in axes:
                grid_axes = ", ".join(axes) or "none"
                what = f"{name} is not a grid axis of this recipe" if name in AXIS_NAMES else f"unknown axis {name!r}"
                problems.append((i, name, what, f"a schedule entry names grid axes ({grid_axes})"))
                break
            if value not in axes[name]:
                shown = ", ".join(_num(v) for v in axes[name])
                problems.append(
                    (i, name, f"{name}={_num(value)} is not in the grid", f"use one of {name}: [{shown}], or add it")
                )
                break
        else:
            missing = [n for n, values in axes.items() if n not in entry and len(values) > 1]
            if missing:
                problems.append(
                    (i, None, "names no single cell: " + ", ".join(missing) + " not given", "give a value for each")
                )
    return problems


__all__ = [
    "AXES",
    "AXIS_NAMES",
    "AxisValue",
    "DATASET_AXES",
    "Cell",
    "Params",
    "axis",
    "axis_values",
    "cell_recipe",
    "cells",
    "grid_points",
    "is_grid",
    "largest",
    "only",
    "schedule_problems",
]

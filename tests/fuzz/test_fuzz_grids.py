"""Fuzz: bench grids -- axes of any length and values, schedules, repeats.  Validation refuses
every grid past the bounds (autobench.recipe.bounds) in one clean line; a grid it accepts has
exactly the cells the bounds count, and compiles and plans without building more."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.errors import AutobenchError, RecipeError
from autobench.recipe import bounds

SETTINGS = settings(
    max_examples=budget(40), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE
)
WHOLE = st.one_of(st.integers(1, 64), st.integers(1, 64), st.integers(-2, 2**25))
GOOD_AXIS = st.one_of(st.integers(1, 4096), st.lists(st.integers(1, 4096), min_size=1, max_size=12, unique=True))
AXIS = st.one_of(
    GOOD_AXIS,
    GOOD_AXIS,
    GOOD_AXIS,
    st.lists(WHOLE, min_size=0, max_size=40),
    st.integers(0, 1200).map(lambda n: list(range(1, n + 1))),  # long axes, up to past the limit
    st.sampled_from(["8", "1e3", None, [1.5], [True], "nan", [1, 1]]),
)
RATE = st.one_of(
    st.none(),
    st.none(),
    st.floats(0.01, 100),
    st.lists(st.floats(0.01, 100), min_size=1, max_size=8, unique=True),
    st.floats(-1, 2e6),
)


@st.composite
def grid_bench(draw: Any) -> dict[str, Any]:
    bench: dict[str, Any] = {
        "dataset": {"kind": "random", "input_len": draw(AXIS), "output_len": draw(AXIS)},
        "concurrency": draw(AXIS),
        "repeat": draw(
            st.one_of(st.integers(1, 5), st.integers(1, 5), st.integers(-1, 150), st.sampled_from([10**9, 10**30]))
        ),
    }
    rate = draw(RATE)
    if rate is not None:
        bench["request_rate"] = rate
    if draw(st.integers(0, 3)) == 0:
        bench["schedule"] = draw(
            st.lists(
                st.dictionaries(st.sampled_from(["concurrency", "input_len", "output_len", "nope"]), WHOLE, max_size=3),
                max_size=5,
            )
        )
    return bench


@SETTINGS
@given(grid_bench())
def test_a_grid_is_within_bounds_or_refused_in_one_clean_line(bench):
    from autobench.compile import compile_recipe
    from autobench.recipe.grid import axis_values, cells
    from autobench.recipe.loader import load_recipe
    from autobench.recipe.rules import check

    tried("grids: validate/cells/compile")
    doc = {
        "name": "g",
        "model": {"repo": "org/m", "revision": "main"},
        "container": {"image": "img:1", "ports": ["8000:8000"]},
        "bench": bench,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.yaml"
        path.write_text(json.dumps(doc), encoding="utf-8")
        try:
            loaded = load_recipe(path)
        except RecipeError as exc:
            assert_clean_line(str(exc))
            return
        tried("grids: accepted (of which)")
        recipe = loaded.recipe
        schedule = recipe.bench.schedule
        counted = bounds.grid_size(
            [len(v) for v in axis_values(recipe).values()], len(schedule) if schedule else None, recipe.bench.repeat
        )
        assert counted <= bounds.MAX_CELLS
        findings = check(loaded)
        for finding in findings:
            assert_clean_line(finding.text())
        try:
            assert len(cells(recipe)) == counted
        except RecipeError as exc:  # a schedule naming no cell: validate refuses it too (AB080)
            assert_clean_line(str(exc))
            assert any(f.code == "AB080" and f.severity == "error" for f in findings)
            return
        try:
            compile_recipe(loaded, "full", check=False)
        except AutobenchError as exc:
            assert_clean_line(str(exc))

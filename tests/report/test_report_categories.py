"""Acceptance and speed-up by category on a recipe's report page (issue 33)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from autobench.report.categories import category_rows
from autobench.report.model import DONE, Run, build_recipe_view
from autobench.report.render import render_recipe


def _cell(category: str, repeat: int, al: float | None, pos: list[float] | None, decode: float, **params: Any) -> dict:
    metrics: dict[str, Any] = {"decode_tok_s": decode}
    if al is not None:
        metrics |= {"spec_acceptance_length": al, "spec_per_position": pos}
    return {"params": {"category": category, **params, "repeat": repeat}, "metrics": metrics}


SPEC = Run(
    2,
    "spec",
    DONE,
    started_at=date(2026, 1, 2),
    snapshot={"meta": {"baseline": "base"}},
    cells=[
        _cell("code", 1, 3.4, [0.9, 0.8, 0.7], 200.0),
        _cell("chat", 1, 1.9, [0.5, 0.3, 0.1], 110.0),
        _cell("code", 2, 3.2, [0.8, 0.7, 0.7], 220.0),
        _cell("chat", 2, 1.9, [0.5, 0.3, 0.1], 130.0),
    ],
)
BASE = Run(
    1,
    "base",
    DONE,
    started_at=date(2026, 1, 1),
    cells=[_cell("code", 1, None, None, 100.0), _cell("chat", 1, None, None, 100.0)],
)


def test_rows_merge_repeats_and_divide_by_the_baselines_same_cell() -> None:
    rows = category_rows(SPEC, [BASE])
    assert [(r.category, r.repeats, r.others) for r in rows] == [("code", 2, ""), ("chat", 2, "")]
    code, chat = rows
    assert code.acceptance_length == pytest.approx(3.3) and code.per_position == pytest.approx((0.85, 0.75, 0.7))
    assert (code.decode_tok_s, code.base_decode_tok_s, code.speedup) == (210.0, 100.0, 2.1)
    assert chat.speedup == pytest.approx(1.2) and chat.positions == "0.5/0.3/0.1"
    assert (code.run_id, code.base_run_id) == (2, 1)
    assert category_rows(SPEC, [])[0].speedup is None  # no baseline run
    assert category_rows(BASE, [])[0].acceptance_length is None  # no drafts: no acceptance
    assert category_rows(Run(3, "x", DONE, cells=[{"params": {"concurrency": 2}, "metrics": {}}])) == []


def test_other_axes_name_the_row_and_pick_the_baselines_point() -> None:
    run = Run(
        5,
        "spec",
        DONE,
        cells=[
            _cell("code", 1, 3.0, [0.9], 90.0, concurrency=1),
            _cell("code", 1, 3.0, [0.9], 300.0, concurrency=4),
        ],
    )
    old_base = Run(3, "base", DONE, cells=[_cell("code", 1, None, None, 10.0, concurrency=4)])
    new_base = Run(4, "base", DONE, cells=[_cell("code", 1, None, None, 30.0, concurrency=1)])
    failed = Run(6, "base", "FAILED", cells=[_cell("code", 1, None, None, 1.0, concurrency=4)])
    rows = category_rows(run, [old_base, new_base, failed])
    assert [(r.others, r.base_run_id, r.speedup) for r in rows] == [
        ("concurrency=1", 4, 3.0),
        ("concurrency=4", 3, 30.0),
    ]


def test_the_recipe_page_shows_acceptance_and_speedup_by_category() -> None:
    view = build_recipe_view("spec", {"spec": [SPEC], "base": [BASE]})
    page = render_recipe(view)
    assert "## Acceptance and speed-up by category" in page
    assert "| code | 2 | 3.3 | 0.85/0.75/0.7 | 210 | 100 | 2.10× |" in page
    assert "| chat | 2 | 1.9 | 0.5/0.3/0.1 | 120 | 100 | 1.20× |" in page
    plain = render_recipe(build_recipe_view("base", {"base": [BASE]}))
    assert "by category" in plain  # the baseline benched categories too (no drafts: no acceptance)
    assert "| code | 1 | — | — | 100 | — | — |" in plain


def test_odd_cells_and_figures() -> None:
    from autobench.report.categories import CategoryRow

    run = Run(
        7,
        "spec",
        DONE,
        cells=[
            {
                "params": {"category": "code", "repeat": 1},
                "metrics": {"decode_tok_s": True, "spec_acceptance_length": 2.5},
            },
            {"params": None, "metrics": {"decode_tok_s": 5.0}},  # unreadable cells are left out
            {"params": {"category": "x"}, "metrics": None},
            {"params": None, "metrics": None},
            {"params": ["category"], "metrics": {}},
            {"params": {"category": "y"}, "metrics": ["decode_tok_s"]},
        ],
    )
    row, empty = category_rows(run)
    assert (row.category, row.decode_tok_s, row.acceptance_length) == ("code", None, 2.5)  # a flag is no figure
    assert (empty.category, empty.repeats, empty.decode_tok_s) == ("x", 1, None)  # no metrics: its point, no figure
    # a baseline cell written with its params in another order is the same grid point
    base = Run(
        8,
        "base",
        DONE,
        cells=[{"params": {"repeat": 1, "concurrency": 2, "category": "c"}, "metrics": {"decode_tok_s": 10.0}}],
    )
    mine = Run(
        9,
        "spec",
        DONE,
        cells=[{"params": {"category": "c", "concurrency": 2, "repeat": 1}, "metrics": {"decode_tok_s": 30.0}}],
    )
    assert [r.speedup for r in category_rows(mine, [base])] == [3.0]
    row = CategoryRow("c", "", 1, None, (0.73645, 0.5), None, 10.0, 1, 2)
    assert row.positions == "0.736/0.5" and row.speedup is None
    assert CategoryRow("c", "", 1, None, (), 5.0, 0.0, 1, 2).speedup is None


def _c(params: dict[str, Any], **metrics: Any) -> dict[str, Any]:
    return {"params": params, "metrics": metrics}


def test_which_axes_name_a_row() -> None:
    run = Run(
        1,
        "r",
        DONE,
        cells=[
            _c({"category": "code", "concurrency": 4, "depth": 0, "repeat": 1}, decode_tok_s=1.0),
            _c({"category": "code", "concurrency": 4, "depth": 0, "repeat": 2}, decode_tok_s=3.0),
            _c({"category": "chat", "concurrency": 4, "depth": 0, "repeat": 1}, decode_tok_s=5.0),
            _c({"concurrency": 4, "depth": 0, "repeat": 1}, decode_tok_s=7.0),  # no category: no row
        ],
    )
    rows = category_rows(run)
    # the repeats and the axes every row shares name no row
    assert [(r.category, r.others, r.repeats, r.decode_tok_s) for r in rows] == [
        ("code", "", 2, 2.0),
        ("chat", "", 1, 5.0),
    ]
    two = Run(
        2,
        "r",
        DONE,
        cells=[_c({"category": "a", "concurrency": c, "depth": d}) for c in (1, 2) for d in (0, 8)],
    )
    assert [r.others for r in category_rows(two)] == [
        "concurrency=1 depth=0",
        "concurrency=1 depth=8",
        "concurrency=2 depth=0",
        "concurrency=2 depth=8",
    ]


def test_per_position_over_repeats_of_unequal_lengths() -> None:
    run = Run(
        1,
        "r",
        DONE,
        cells=[
            _c({"category": "a", "repeat": 1}, spec_per_position=[0.9, 0.8]),
            _c({"category": "a", "repeat": 2}, spec_per_position=[0.7]),
            _c({"category": "a", "repeat": 3}, spec_per_position={"0": 0.5}),  # not a list: left out
            _c({"category": "a", "repeat": 4}, spec_per_position=[]),
        ],
    )
    (row,) = category_rows(run)
    assert row.per_position == pytest.approx((0.8, 0.8)) and row.repeats == 4


def test_runs_without_cells() -> None:
    none = {"id": 3, "status": "DONE", "cells": None}
    assert category_rows(none) == []
    base = {"id": 4, "status": "DONE", "cells": None}
    (row,) = category_rows(Run(5, "r", DONE, cells=[_c({"category": "a"}, decode_tok_s=2.0)]), [base])
    assert row.base_decode_tok_s is None and row.base_run_id is None

"""Results by cell: a grid run's cells grouped by their params, repeats merged, every figure
naming its run and cells; the by-cell plots drawn and linked only when drawn."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from report_fixtures import record, utc

from autobench.report.cells import cell_table, series
from autobench.report.model import build_recipe_view, group_by_recipe, runs_from_records
from autobench.report.render import render_recipe

NAME = "grid-recipe"


def _cell(index: int, conc: int, tok: float, tpot: float, duration: float = 10.0, samples=None):
    metrics = {
        "total_tok_s": tok,
        "decode_tok_s": tok / 2,
        "duration_s": duration,
        "completed": 6,
        "errors": 0,
        "ttft_median_ms": 10.0 + conc,
        "ttft_p99_ms": 20.0 + conc,
        "tpot_median_ms": tpot,
        "tpot_p99_ms": tpot * 2,
    }
    return {"index": index, "params": {"concurrency": conc, "output_len": 64}, "metrics": metrics, "samples": samples}


def _grid_cells(repeats: int = 1):
    cells = []
    for r in range(repeats):
        for conc, tok, tpot in ((1, 100.0, 10.0), (4, 300.0, 12.5), (16, 800.0, 20.0)):
            cells.append(_cell(len(cells), conc, tok + r * 10, tpot))
            cells[-1]["params"]["repeat"] = r + 1  # as run records it; a point is params without it
    return cells


def _view(cells, status: str = "DONE"):
    runs = runs_from_records([record(7, NAME, status, utc(2026, 7, 1), metrics={"completed": 18})])
    runs = [replace(runs[0], cells=tuple(cells))]
    return build_recipe_view(NAME, group_by_recipe(runs))


def test_one_row_per_concurrency_with_the_run_and_cell_of_each_figure():
    table = cell_table(7, _grid_cells())
    assert table is not None and table.axes == ["concurrency"] and table.fixed == {"output_len": 64}
    assert [(r.concurrency, r.cells, r.repeats) for r in table.rows] == [(1, (1,), 1), (4, (2,), 1), (16, (3,), 1)]
    row = table.rows[1]
    assert row.value("total_tok_s") == 300.0 and row.value("ttft_median_ms") == 14.0
    assert row.value("per_user_tok_s") == pytest.approx(80.0)  # 1000 / 12.5 ms
    assert row.run_id == 7 and row.note is None


def test_repeats_pool_throughput_and_refuse_to_merge_percentiles_without_samples():
    cells = _grid_cells(repeats=2)
    cells[3]["metrics"]["duration_s"] = 30.0  # repeat 2 of concurrency 1 took three times as long
    table = cell_table(7, cells)
    first = table.rows[0]
    assert first.cells == (1, 4) and first.repeats == 2 and first.completed == 12
    assert first.value("total_tok_s") == pytest.approx((100.0 * 10 + 110.0 * 30) / 40)  # tokens over time
    assert first.value("ttft_median_ms") is None  # percentiles of percentiles are not merged
    assert "cannot be merged" in (first.note or "")


def test_a_run_with_one_cell_has_no_table():
    assert cell_table(7, _grid_cells()[:1]) is None
    assert _view(_grid_cells()[:1]).cells is None


def test_only_a_done_run_gives_the_table():
    assert _view(_grid_cells(), status="ABORTED").cells is None


def test_the_page_shows_the_by_concurrency_table_with_links():
    page = render_recipe(_view(_grid_cells()))
    assert "## Results by cell" in page
    assert "3 grid points of [run 7](#run-7) (output_len=64)" in page
    header = next(line for line in page.splitlines() if line.startswith("| concurrency |"))
    assert (
        "| decode tok/s | total tok/s | per-user tok/s |" in header
        and "TTFT p99 ms" in header
        and "E2E latency median ms" in header
        and header.endswith("run · cells |")
    )
    row = next(line for line in page.splitlines() if line.startswith("| 4 |"))
    assert row.startswith("| 4 | 1 | 6 | 0 | 150 | 300 | 80 | 14 |") and row.endswith("[run 7](#run-7) · cell 2 |")


def test_a_client_bound_cell_is_marked():
    cells = _grid_cells(repeats=2)
    cells[4]["metrics"]["client_bound"] = True  # repeat 2 of concurrency 4
    table = cell_table(7, cells)
    assert table.rows[1].note is not None and "client-bound in cell 5" in table.rows[1].note
    assert table.rows[0].note is not None and "client-bound" not in table.rows[0].note
    page = render_recipe(_view(cells))
    assert (
        "- concurrency=4 output_len=64: " in page
        and "client-bound in cell 5: the bench client was the bottleneck" in page
    )


def test_series_split_by_the_other_axes():
    cells = []
    for ilen in (128, 512):
        for conc in (1, 4):
            c = _cell(len(cells), conc, 100.0 * conc, 10.0)
            c["params"] = {"concurrency": conc, "input_len": ilen}
            cells.append(c)
    table = cell_table(3, cells)
    assert table.axes == ["concurrency", "input_len"]
    lines = series(table)
    assert [label for label, _ in lines] == ["input_len=128", "input_len=512"]
    assert [[r.concurrency for r in rows] for _, rows in lines] == [[1, 4], [1, 4]]


def test_cell_plots_are_drawn_and_linked_only_when_drawn(tmp_path: Path):
    pytest.importorskip("matplotlib")
    from autobench.report.pages import Target, plan_outputs, write_outputs

    runs = runs_from_records([record(7, NAME, "DONE", utc(2026, 7, 1), metrics={"completed": 18})])
    runs = [replace(runs[0], cells=tuple(_grid_cells()))]
    [out] = plan_outputs(group_by_recipe(runs), [Target(NAME)], tmp_path, plots=True, recipes={})
    files = [f for _, f in out.view.cell_plots]
    assert files == [f"{NAME}.cells.throughput.svg", f"{NAME}.cells.latency.svg", f"{NAME}.cells.per-user.svg"]
    assert "![run 7: throughput against concurrency](grid-recipe.cells.throughput.svg)" in out.text
    result = write_outputs([out])
    assert sorted(p.name for p in result.plots) == sorted(files)
    svg = (tmp_path / "recipes" / files[0]).read_text()
    assert "cells of run 7" in svg and "run 7 cell 2" in svg  # every point names its run and cell
    assert "2^" not in svg and "mathdefault" not in svg  # a linear concurrency axis labelled 1, 4, 16
    # without the plot files and without drawing, nothing is linked
    [bare] = plan_outputs(
        group_by_recipe(runs), [Target(NAME)], tmp_path / "x", plots=True, recipes={}, plot_ok=Path.is_file
    )
    assert bare.view.cell_plots == [] and ".cells." not in bare.text


def test_repeats_with_samples_merge_their_raw_requests():
    from autobench.samples import Request, Samples, percentile

    def samples(ttfts: list[float]) -> Samples:
        return Samples.from_requests(
            Request("ok", ttft_ms=t, tpot_ms=10.0, e2el_ms=t + 100, itl_ms=[10.0, 10.0], completion_tokens=3)
            for t in ttfts
        )

    a, b = [10.0, 11.0, 12.0, 13.0], [30.0, 31.0, 32.0, 33.0]
    cells = [_cell(0, 4, 100.0, 10.0, samples=samples(a)), _cell(1, 4, 100.0, 10.0, samples=samples(b))]
    for i, c in enumerate(cells):
        c["params"]["repeat"] = i + 1
    table = cell_table(9, cells + [_cell(2, 8, 200.0, 10.0)])
    row = table.rows[0]
    assert row.cells == (1, 2) and row.note is None
    assert row.value("ttft_median_ms") == pytest.approx(percentile(a + b, 50))  # 21.5: no repeat's own median
    assert row.value("ttft_p99_ms") == pytest.approx(percentile(a + b, 99))
    assert row.value("e2el_median_ms") == pytest.approx(121.5)
    assert row.value("itl_median_ms") == pytest.approx(10.0)

"""Plots: chosen from the data alone, optional matplotlib, reproducible SVG bytes."""

from __future__ import annotations

import sys

import pytest
from report_fixtures import DFLASH, record, seed_records, utc

from autobench.report import plots
from autobench.report.model import build_recipe_view, group_by_recipe, runs_from_records
from autobench.report.render import render_recipe


def _view(records, name=DFLASH):
    return build_recipe_view(name, group_by_recipe(runs_from_records(records)))


def _levels():
    return [
        record(
            i, DFLASH, "DONE", utc(2026, 6, 20 + i), metrics={"decode_tok_s": d, "ttft_median_ms": t, "concurrency": c}
        )
        for i, (c, d, t) in enumerate([(1, 30.0, 200.0), (8, 107.43, 681.0), (16, 150.0, None)], 1)
    ]


def test_specs_come_from_the_data():
    assert [s.file for s in plots.plot_specs(_view(seed_records()))] == [f"{DFLASH}.decode.svg", f"{DFLASH}.ttft.svg"]
    # one "runs" chart per comparable set (concurrency), the latest DONE run's (16) first: never
    # concurrency 8 beside 1 in one chart (issue #31); TTFT has no figure at 16
    assert [s.file for s in plots.plot_specs(_view(_levels()))] == [
        f"{DFLASH}.decode.svg",
        f"{DFLASH}.decode.c1.svg",
        f"{DFLASH}.decode.c8.svg",
        f"{DFLASH}.ttft.c1.svg",
        f"{DFLASH}.ttft.c8.svg",
        f"{DFLASH}.concurrency.svg",
    ]
    assert plots.plot_specs(_view(_levels()))[0].title == "decode tok/s across runs at concurrency 16"
    assert plots.plot_specs(_view(seed_records()[1:2])) == []  # only a BLOCKED run: nothing to plot
    assert plots.plot_specs(_view([], "none")) == []


def test_without_matplotlib_nothing_is_written_and_one_note_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    monkeypatch.setattr(plots, "matplotlib_available", lambda: False)
    view = _view(seed_records())
    written, note = plots.write_plots(view, tmp_path, plots.plot_specs(view))
    assert written == [] and list(tmp_path.iterdir()) == []
    assert note == "plots skipped: matplotlib is not installed (pip install 'autobench[plot]')"


def test_the_page_is_the_same_with_or_without_matplotlib(monkeypatch):
    from dataclasses import replace

    view = _view(seed_records())
    with_links = replace(view, plots=[(s.title, s.file) for s in plots.plot_specs(view)])
    page = render_recipe(with_links)
    monkeypatch.setattr(plots, "matplotlib_available", lambda: False)
    assert render_recipe(with_links) == page  # the Markdown never depends on the extra
    assert f"![decode tok/s across runs at concurrency 8]({DFLASH}.decode.svg)" in page


def test_svgs_are_written_reproducibly_and_carry_run_ids(tmp_path):
    pytest.importorskip("matplotlib")
    view = _view(seed_records() + _levels())
    specs = plots.plot_specs(view)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, note = plots.write_plots(view, tmp_path / "a", specs)
    second, _ = plots.write_plots(view, tmp_path / "b", specs)
    assert note is None and [p.name for p in first] == [s.file for s in specs]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()  # no dates, no random ids
    decode = first[0].read_text()
    assert decode.startswith("<?xml") and "<svg" in decode
    assert "run 2" in decode and "BLOCKED" in decode  # a blocked run is a labelled gap, not a 0 bar
    assert "<dc:date>" not in decode and "Matplotlib v" not in decode
    assert "run 3" in first[2].read_text()  # the concurrency plot names its runs
    assert plots.write_plots(view, tmp_path / "a", specs) == ([], None)  # unchanged: not rewritten

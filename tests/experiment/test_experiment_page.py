"""`autobench experiment report --page DIR`: the experiment's page in the report's page set, its
Pareto plots (SVG), every row and point linked to its run's row on the recipe page, which is
rendered too so every link resolves.  Runs built in-process (experiment_world)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from experiment_world import cell, plan, record, runs, write

from autobench.cli import main
from autobench.errors import UsageError
from autobench.experiment.analysis import analyse
from autobench.experiment.page import build_view, plot_svg, render_page, write_page
from autobench.experiment.pareto_plot import nice_ticks

SVG = "{http://www.w3.org/2000/svg}"
FACTORS = "  speculative.num_speculative_tokens: [1, 2, 3, 4]\n"


def _world(tmp_path: Path) -> tuple[Path, Path]:
    """t1..t3 run at concurrency 1 and 8 (t2 the fastest, t3 on the front with more tok/s at
    concurrency 8), t4 not run."""
    exp = write(tmp_path, FACTORS)
    p = plan(exp)
    db = tmp_path / "ledger.db"
    record(
        db,
        p,
        {
            "t1": [cell(1, 3.0, concurrency=1), cell(2, 3.0, concurrency=8)],
            "t2": [cell(3, 2.0, concurrency=1), cell(4, 2.0, concurrency=8)],
            "t3": [cell(5, 2.5, concurrency=1), cell(6, 2.5, concurrency=8, decode=9000.0)],
        },
    )
    return exp, db


def _links(page: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", page)


def _resolves(base: Path, target: str) -> bool:
    path, _, anchor = target.partition("#")
    file = (base / path).resolve() if path else None
    if file is None or not file.is_file():
        return False
    return not anchor or f'<a id="{anchor}"></a>' in file.read_text(encoding="utf-8")


def test_the_page_shows_each_cells_treatments_verdict_and_front_each_linked_to_its_run(tmp_path, capsys) -> None:
    exp, db = _world(tmp_path)
    out = tmp_path / "site"
    code = main(["experiment", "report", str(exp), "--ledger", str(db), "--metric", "tpot_median_ms",
                 "--page", str(out)])  # fmt: skip
    text_out, err = capsys.readouterr()
    assert code in (0, None), err
    page_file = out / "experiments" / "exp.md"
    assert f"page: {page_file} (2 plot(s), 1 recipe page(s))" in text_out
    page = page_file.read_text(encoding="utf-8")
    assert page.startswith("# Experiment exp\n")
    assert "4 treatments of `r.yaml`" in page and "0 pruned, 1 not run yet" in page
    assert "Treatments are ranked by TPOT median (ms)" in page and "±5%" in page
    one, eight = page.split("\n## concurrency=1 input_len=16 output_len=64\n")[1].split(
        "\n## concurrency=8 input_len=16 output_len=64\n"
    )
    # the ranked table: t2, t3, t1, each row linked to its run's row on the recipe page
    rows = [line for line in one.splitlines() if re.match(r"\| [a-z -]*\| t\d", line)]
    assert [row.split(" | ")[1] for row in rows] == ["t2", "t3", "t1"]
    assert rows[0].startswith("| best | t2 | num\\_speculative\\_tokens=2 |") or rows[0].startswith(
        "| best | t2 | num_speculative_tokens=2 |"
    )
    assert rows[0].endswith("| front | [run 2](../recipes/exp-base.md#run-2) |")
    assert rows[1].startswith("| runner-up | t3 |") and rows[1].endswith("[run 3](../recipes/exp-base.md#run-3) |")
    assert rows[2].startswith("|  | t1 |") and rows[2].endswith("[run 1](../recipes/exp-base.md#run-1) |")
    assert "**Best: t2**" in one and "**faster** against the runner-up t3" in one
    assert re.search(r"; band 0\.\d{3}\.\.0\.\d{3} \(best / runner-up, at 97\.5%\)\.", one)
    # ranked by TPOT and plotted against TPOT: one TPOT column
    assert (
        "| | treatment | levels | TPOT median (ms) | output tok/s per GPU | acceptance length | Pareto | run |" in one
    )
    assert "![Pareto plot of concurrency=1 input_len=16 output_len=64" in one and "(exp.pareto.1.svg)" in one
    assert "fastest per GPU first):\nt2 [run 2](../recipes/exp-base.md#run-2).\n" in one
    assert (
        "| speculative.num\\_speculative\\_tokens | 2 |" in one or "| speculative.num_speculative_tokens | 2 |" in one
    )
    # concurrency 8: t3 has the most tok/s per GPU, so the front is t3 then t2
    assert "t3 [run 3](../recipes/exp-base.md#run-3) · t2 [run 2](../recipes/exp-base.md#run-2)." in eight
    assert "(exp.pareto.2.svg)" in eight
    assert "## Not run yet\n\n- t4 (num" in page
    # every link on the page resolves, anchors included: the recipe page was rendered
    links = _links(page)
    assert len([link for link in links if "#run-" in link]) >= 12
    unresolved = [link for link in links if not link.startswith("http") and not _resolves(page_file.parent, link)]
    assert unresolved == []


def test_each_plot_point_is_a_link_to_its_run_with_its_figures(tmp_path) -> None:
    exp, db = _world(tmp_path)
    p = plan(exp)
    out = tmp_path / "site"
    result = write_page(analyse(p, runs(db, p), metric="tpot_median_ms"), out, ledger=str(db))
    assert [path.name for path in result.plots] == ["exp.pareto.1.svg", "exp.pareto.2.svg"]
    assert set(result.written) == {result.page, *result.plots}
    doc = ET.fromstring((out / "experiments" / "exp.pareto.2.svg").read_text(encoding="utf-8"))
    assert doc.tag == f"{SVG}svg" and doc.findtext(f"{SVG}title") == "exp: concurrency=8 input_len=16 output_len=64"
    points = {a.get("data-treatment"): a for a in doc.iter(f"{SVG}a")}
    assert sorted(points) == ["t1", "t2", "t3"]
    base = out / "experiments"
    for tid, run_id in (("t1", 1), ("t2", 2), ("t3", 3)):
        link = points[tid]
        assert link.get("href") == f"../recipes/exp-base.md#run-{run_id}" and _resolves(base, link.get("href") or "")
        title = link.findtext(f"{SVG}title") or ""
        assert title.startswith(f"{tid} num_speculative_tokens={tid[1]} (run {run_id}): ")
        assert len(link.findall(f"{SVG}circle")) == (2 if tid == "t2" else 1)  # the best is ringed
    assert "9,000 output tok/s per GPU, TPOT median (ms) 2.49" in (points["t3"].findtext(f"{SVG}title") or "")
    assert {tid for tid, a in points.items() if "front" in (a.get("class") or "")} == {"t2", "t3"}
    labels = {t.text for a in points.values() for t in a.iter(f"{SVG}text")}
    assert labels == {"t2", "t3"}  # the front and the best are labelled
    assert len(doc.findall(f"{SVG}polyline")) == 1
    texts = [t.text or "" for t in doc.iter(f"{SVG}text")]
    assert "TPOT median (ms) (lower is better)" in texts and "output tok/s per GPU" in texts
    # the same ledger gives the same bytes; nothing is rewritten
    again = write_page(analyse(p, runs(db, p), metric="tpot_median_ms"), out, ledger=str(db))
    assert again.written == [] and set(again.unchanged) == {again.page, *again.plots}


def test_the_latency_axis_is_chosen_and_ttft_can_be_plotted(tmp_path) -> None:
    exp, db = _world(tmp_path)
    p = plan(exp)
    view = build_view(analyse(p, runs(db, p), latency="ttft_median_ms"), plot_name="exp.pareto")
    assert view.latency_label == "TTFT median (ms)" and view.metric_label == "decode (tok/s)"
    svg = plot_svg(view.cells[0], view)
    assert "TTFT median (ms) (lower is better)" in svg and re.search(r"TTFT median \(ms\) (19\.9|20)", svg)
    assert "against TTFT median (ms)" in render_page(view)


def test_text_from_the_ledger_and_the_file_is_escaped_in_the_page_and_the_plot(tmp_path) -> None:
    exp = write(tmp_path, "  env.NOTE: ['<b>x</b> [y](z) & \"q\"', plain]\n", bench="bench: {concurrency: 1}\n")
    p = plan(exp)
    db = tmp_path / "ledger.db"
    record(db, p, {"t1": [cell(1, 2.0)], "t2": [cell(2, 2.5)]})
    a = analyse(p, runs(db, p))
    pruned = [("t9", "NOTE=<script>", "AssertionError: `page | size` <i>")]
    view = build_view(a, pruned=pruned, plot_name="exp.pareto")
    page = render_page(view)
    assert "<b>" not in page and "<script>" not in page and "<i>" not in page
    assert "&lt;b>x&lt;/b> \\[y\\](z)" in page
    svg = plot_svg(view.cells[0], view)
    doc = ET.fromstring(svg)  # it parses: nothing the text held became markup
    assert not [e for e in doc.iter() if e.tag in (f"{SVG}b", "b")]
    titles = [a.findtext(f"{SVG}title") or "" for a in doc.iter(f"{SVG}a")]
    assert any('NOTE=<b>x</b> [y](z) & "q"' in t for t in titles)
    assert "## Pruned: predicted not to boot, not booted" in page and "| t9 | NOTE=&lt;script> |" in page


def test_a_ledger_recipe_name_that_cannot_name_a_page_is_not_linked(tmp_path) -> None:
    from autobench.ledger import NewRun, open_ledger

    exp = write(tmp_path, FACTORS, bench="bench: {concurrency: 1}\n")
    p = plan(exp)
    db = tmp_path / "ledger.db"
    with open_ledger(db) as book:
        book.append(
            NewRun(
                recipe_name="../../evil",
                recipe_digest=p.treatments[0].digest,
                model_repo="org/model",
                status="DONE",
                metrics={"decode_tok_s": 1.0},
                cells=(cell(1, 2.0),),
            )
        )
    result = write_page(analyse(p, runs(db, p)), tmp_path / "site", ledger=str(db))
    page = result.page.read_text(encoding="utf-8")
    assert "evil" not in page and "| best | t1 |" in page and result.recipe_pages == []
    assert not (tmp_path / "evil.md").exists() and not list((tmp_path / "site").glob("**/evil*"))
    doc = ET.fromstring((tmp_path / "site" / "experiments" / "exp.pareto.1.svg").read_text(encoding="utf-8"))
    assert list(doc.iter(f"{SVG}a")) == [] and len(list(doc.iter(f"{SVG}g"))) == 1


def test_an_experiment_name_that_cannot_name_a_page_is_refused(tmp_path) -> None:
    exp = write(tmp_path, FACTORS, name="name: 'bad/name'\n")
    p = plan(exp)
    with pytest.raises(UsageError, match="experiment name 'bad/name' cannot name a page file"):
        write_page(analyse(p, []), tmp_path / "site", ledger=None)


def test_the_json_names_the_page_and_its_files(tmp_path, capsys) -> None:
    exp, db = _world(tmp_path)
    out = tmp_path / "site"
    code = main(["experiment", "report", str(exp), "--ledger", str(db), "--page", str(out), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, None)
    assert doc["page"]["page"] == str(out / "experiments" / "exp.md")
    assert doc["page"]["plots"] == [str(out / "experiments" / f"exp.pareto.{i}.svg") for i in (1, 2)]
    assert doc["page"]["recipe_pages"] == [str(out / "recipes" / "exp-base.md")]
    assert sorted(doc["page"]["written"]) == sorted([doc["page"]["page"], *doc["page"]["plots"]])


@pytest.mark.parametrize(
    ("top", "ticks"),
    [
        (3.15, [0.0, 1.0, 2.0, 3.0, 4.0]),
        (0.9, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (10.0, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]),
        (1234.0, [0.0, 500.0, 1000.0, 1500.0]),
        (0.0, [0.0, 1.0]),
        (float("nan"), [0.0, 1.0]),
    ],
)
def test_the_axes_start_at_zero_on_round_ticks(top: float, ticks: list[float]) -> None:
    assert nice_ticks(top) == ticks


def test_the_text_report_states_the_band_its_level_and_the_margin(tmp_path, capsys) -> None:
    exp, db = _world(tmp_path)
    code = main(["experiment", "report", str(exp), "--ledger", str(db), "--metric", "tpot_median_ms"])
    out = capsys.readouterr().out
    assert code in (0, None)
    found = re.findall(
        r"best t2 against runner-up t3: faster \(band 0\.\d{3}\.\.0\.\d{3} at 97\.50%; no change within ±5%\)", out
    )
    assert len(found) == 2, out
    # ranked by the latency it plots: each row names it once
    rows = [line for line in out.splitlines() if line.startswith(("   t", " * t"))]
    assert len(rows) == 6 and all(row.count("tpot_median_ms=") == 1 for row in rows)
    main(["experiment", "report", str(exp), "--ledger", str(db)])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("   t", " * t"))]
    assert len(rows) == 6 and all("decode_tok_s=" in row and "tpot_median_ms=" in row for row in rows)

"""A sweep's figures say what they are: its headline cell, named, and the totals over every cell,
in ``run``'s summary, ``ledger show``, ``compare`` and the report (issue #31: ``completed=80``
after 240 requests, and nothing said it was the concurrency-16 cell)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.ledger.cells import sweep_summary
from autobench.ledger.models import NewCell
from autobench.recipe import load_recipe
from autobench.runrow import RunFacts, new_run

REPO = Path(__file__).resolve().parent.parent
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"


def metrics(conc: int, decode: float) -> dict[str, object]:
    return {"concurrency": conc, "completed": 80, "errors": 0, "duration_s": 60.0, "num_prompts": 80}


def cells(scale: float = 1.0) -> list[NewCell]:
    return [
        NewCell({"concurrency": c, "repeat": 1}, {**metrics(c, 10.0 * c), "decode_tok_s": scale * 10.0 * c})
        for c in (1, 4, 16)
    ]


def test_the_summary_names_the_headline_cell_and_totals_every_cell() -> None:
    s = sweep_summary(cells())
    assert s is not None
    assert s.headline_text() == "headline cell concurrency=16 (cell 3 of 3)"
    assert s.totals_text() == "all 3 cells: completed 240, errors 0, duration 180 s, prompts 240"
    repeats = [NewCell({"concurrency": c, "repeat": r}, metrics(c, 1.0)) for r in (1, 2) for c in (4, 16)]
    assert sweep_summary(repeats).headline_text() == "headline cell concurrency=16 (cells 2, 4 of 4, repeats merged)"  # type: ignore[union-attr]
    assert sweep_summary(cells()[:1]) is None  # one cell: the row is that cell


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "l.db"
    loaded = load_recipe(BASE)
    with open_ledger(path) as book:
        for scale in (1.0, 0.8):
            book.append(new_run(loaded, "", RunFacts("DONE", "run", cells=cells(scale)), env={}))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_ledger_show_compare_and_the_report_name_the_headline_cell(db: Path, tmp_path: Path, capsys) -> None:
    code, out, _ = run(capsys, "ledger", "show", "1", "--ledger", str(db))
    assert code == 0
    assert "    completed: 80" in out  # the row: the headline cell's figure ...
    assert "  cells: 3; the metrics above are the headline cell concurrency=16 (cell 3 of 3)" in out  # ... named
    assert "  all 3 cells: completed 240, errors 0, duration 180 s, prompts 240" in out

    code, out, err = run(capsys, "compare", "1", "2", "--ledger", str(db))
    assert code == 0, err
    lines = out.splitlines()
    assert any(
        line.startswith("A #1-")
        and line.endswith(
            ": figures of its headline cell concurrency=16 (cell 3 of 3); all 3 cells: completed 240, errors 0, "
            "duration 180 s, prompts 240"
        )
        for line in lines
    ), out
    code, out, _ = run(capsys, "compare", "1", "2", "--json", "--ledger", str(db))
    sweeps = json.loads(out)["sweeps"]
    assert sweeps["b"]["headline"] == {"concurrency": 16} and sweeps["b"]["totals"]["completed"] == 240

    docs = tmp_path / "docs"
    code, _, err = run(capsys, "report", "--index", "--ledger", str(db), "-o", str(docs), "--no-plots")
    assert code == 0, err
    page = " ".join((docs / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.md").read_text().split())
    assert (
        "concurrency 16 (its headline cell concurrency=16 (cell 3 of 3); every cell is under Results by cell; "
        "all 3 cells: completed 240, errors 0, duration 180 s, prompts 240):"
    ) in page


def test_the_run_summary_names_the_headline_cell() -> None:
    from autobench.cli.run_cmds import _outcome_lines

    def result(c: int) -> SimpleNamespace:
        return SimpleNamespace(normalized=lambda: metrics(c, 1.0), samples=None)

    benched = [
        (SimpleNamespace(index=i, params={"concurrency": c}, repeat=1), result(c)) for i, c in enumerate((1, 4, 16))
    ]
    outcome = SimpleNamespace(
        status="DONE",
        plan=SimpleNamespace(recipe_name="r", run_dir=Path("runs/r")),
        display_id=None,
        root_cause_category=None,
        root_cause_message=None,
        root_cause_detail=None,
        metrics={"completed": 80, "errors": 0},
        notes=[],
        cells=benched,
    )
    lines: list[str] = []
    _outcome_lines(outcome, lines.append)
    assert lines[1:3] == [
        "  headline cell concurrency=16 (cell 3 of 3): completed=80 errors=0",
        "  all 3 cells: completed 240, errors 0, duration 180 s, prompts 240",
    ]

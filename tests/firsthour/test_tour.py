"""The no-GPU tour, and a server that refuses its command line recorded with that usage error.

Real parts: the packaged stand-in (`python -m autobench.run.standin`, the synthetic server behind
vLLM's command line) as a real child process on loopback, a real SQLite ledger, real report pages.
Only the GPU and vLLM itself are stood in for (neither exists here).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.run import RunOptions, run_recipe
from autobench.tour import prepare

REPO = Path(__file__).resolve().parent.parent.parent


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.integration
def test_tour_runs_records_and_renders_in_its_own_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    committed = _digest(REPO / "ledger.db")
    monkeypatch.chdir(REPO)  # even from the checkout, the committed ledger is never written
    folder = tmp_path / "tour"
    assert main(["tour", "--dir", str(folder), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "DONE"
    assert doc["ledger"] == str(folder / "ledger.db")
    assert doc["metrics"]["completed"] == 32 and doc["metrics"]["errors"] == 0
    assert doc["metrics"]["spec_acceptance_length"] > 1  # the stand-in drafted (ngram, 4 tokens)
    with open_ledger(folder / "ledger.db", create=False) as book:
        runs = book.runs()
        assert [(r.recipe_name, r.status) for r in runs] == [("tour", "DONE")]
        assert book.verify().ok
    index = (folder / "docs" / "index.md").read_text()
    assert "tour" in index
    page = (folder / "docs" / "recipes" / "tour.md").read_text()
    assert "**DONE**" in page and "ngram" in page
    assert (Path(doc["run_dir"]) / "server.log").is_file()
    assert _digest(REPO / "ledger.db") == committed


@pytest.mark.integration
def test_tour_prints_where_everything_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    folder = tmp_path / "t"
    assert main(["tour", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DONE tour")
    for where in ("recipes/tour.yaml", "ledger.db", "docs/index.md", str(folder / "runs")):
        assert where in out


def test_tour_refuses_a_folder_with_files_in_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["tour", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not an empty folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


@pytest.mark.integration
def test_a_server_that_refuses_its_arguments_is_recorded_with_the_usage_error(tmp_path: Path):
    """vLLM's argparse refuses an unknown flag (exit 2): the cause is that line, not the exit code."""
    recipe = prepare(tmp_path / "t")
    text = recipe.read_text().replace("  max_num_seqs: 4\n", '  max_num_seqs: 4\n  extra_args: ["--no-such-flag"]\n')
    recipe.write_text(text)
    ledger = tmp_path / "t" / "ledger.db"
    outcome = run_recipe(
        recipe,
        RunOptions(
            runtime="process",
            runs_dir=str(tmp_path / "t" / "runs"),
            ledger=str(ledger),
            vllm_exec=f"{sys.executable} -m autobench.run.standin",
            ready_timeout_s=30,
            grace_s=2,
        ),
        echo=lambda _line: None,
    )
    assert outcome.status == "BLOCKED"
    assert outcome.root_cause_category == "launcher_usage"
    assert "unrecognized arguments: --no-such-flag" in (outcome.root_cause_message or "")
    assert "exited with code" not in (outcome.root_cause_message or "")
    with open_ledger(ledger, create=False) as book:
        (row,) = book.runs()
    assert row.status == "BLOCKED" and row.root_cause_category == "launcher_usage"
    assert "unrecognized arguments: --no-such-flag" in (row.root_cause_message or "")

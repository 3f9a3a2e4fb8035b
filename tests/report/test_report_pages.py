"""`autobench report` end to end on real SQLite ledgers: pages, index, --check, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from report_fixtures import BASE, DFLASH, seed_records, snapshot

from autobench.cli import main
from autobench.report import pages

REPO = Path(__file__).resolve().parents[2]


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_renders_every_recipe_page_and_is_idempotent(seed_ledger, tmp_path, capsys):
    out = tmp_path / "docs"
    code, stdout, _ = _run(
        capsys,
        "report",
        "--index",
        "--ledger",
        str(seed_ledger),
        "-o",
        str(out),
        "--recipes",
        str(tmp_path / "none"),
        "--no-plots",
    )
    assert code == 0, stdout
    assert (out / "index.md").is_file()
    assert {p.name for p in (out / "recipes").iterdir()} == {f"{BASE}.md", f"{DFLASH}.md"}
    page = (out / "recipes" / f"{DFLASH}.md").read_text()
    assert "**1.26× decode**" in page and "## Plots" not in page
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.md")}
    code, stdout, _ = _run(
        capsys,
        "report",
        "--index",
        "--ledger",
        str(seed_ledger),
        "-o",
        str(out),
        "--recipes",
        str(tmp_path / "none"),
        "--no-plots",
    )
    assert code == 0 and "3 page(s) already up to date" in stdout
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.md")} == before  # nothing rewritten


def test_check_passes_when_fresh_and_fails_when_stale(seed_ledger, tmp_path, capsys):
    out = tmp_path / "docs"
    args = [
        "report",
        "--index",
        "--ledger",
        str(seed_ledger),
        "-o",
        str(out),
        "--no-plots",
        "--recipes",
        str(tmp_path / "none"),
    ]
    assert _run(capsys, *args)[0] == 0
    code, stdout, _ = _run(capsys, *args, "--check")
    assert code == 0 and "3 page(s) up to date" in stdout
    page = out / "recipes" / f"{DFLASH}.md"
    page.write_text(page.read_text().replace("107.43", "170.43"))
    (out / "index.md").unlink()
    code, stdout, err = _run(capsys, *args, "--check")
    assert code == 8
    assert f"stale: {page}: differs from the ledger" in stdout
    assert f"stale: {out / 'index.md'}: missing" in stdout
    # the hint repeats every option given, so following it fixes what --check found
    again = f"autobench report --index --ledger {seed_ledger} --recipes {tmp_path / 'none'} --no-plots -o {out}"
    assert err.strip() == f"error: 2 page(s) stale against the ledger (hint: re-render with: {again})"
    assert not (out / "index.md").exists()  # --check writes nothing
    assert _run(capsys, *again.split()[1:])[0] == 0
    assert _run(capsys, *args, "--check")[0] == 0


def test_index_check_flags_the_page_of_a_recipe_no_longer_in_the_ledger(seed_ledger, tmp_path, capsys):
    out = tmp_path / "docs"
    args = [
        "report",
        "--index",
        "--ledger",
        str(seed_ledger),
        "-o",
        str(out),
        "--no-plots",
        "--recipes",
        str(tmp_path / "none"),
    ]
    assert _run(capsys, *args)[0] == 0
    orphan = out / "recipes" / "renamed-recipe.md"
    orphan.write_text("# renamed-recipe\n")
    code, stdout, _ = _run(capsys, *args, "--check")
    assert code == 8
    assert f"stale: {orphan}: no runs of this recipe in the ledger" in stdout
    code, _, stderr = _run(capsys, *args)  # rendering never deletes a page; it says so
    assert code == 0 and orphan.exists()
    assert f"note: {orphan}: no runs of this recipe in the ledger; delete the page if it is obsolete" in stderr


def _no_matplotlib(monkeypatch) -> None:
    monkeypatch.setattr("autobench.report.plots.matplotlib_available", lambda: False)
    monkeypatch.setattr("autobench.report.pages.matplotlib_available", lambda: False)


def test_without_matplotlib_pages_link_no_undrawn_plot_and_check_agrees_at_once(seed_ledger, tmp_path, monkeypatch):
    _no_matplotlib(monkeypatch)
    out = tmp_path / "docs"
    result = pages.report([], index=True, ledger=str(seed_ledger), out_dir=out, recipes_dir=None)
    assert result.plots == []
    assert result.notes == [
        "plots skipped: matplotlib is not installed (pip install 'autobench[plot]'); "
        "pages link only the plots already drawn"
    ]
    assert ".svg" not in "".join(p.read_text() for p in out.rglob("*.md"))
    check = pages.report([], index=True, ledger=str(seed_ledger), out_dir=out, check=True, recipes_dir=None)
    assert check.stale == []


def test_without_matplotlib_plots_already_drawn_stay_linked_and_a_lost_one_is_stale(seed_ledger, tmp_path, monkeypatch):
    _no_matplotlib(monkeypatch)
    out = tmp_path / "docs"
    drawn = [out / "recipes" / f"{DFLASH}.{stem}.svg" for stem in ("decode", "ttft")]
    for svg in drawn:  # drawn earlier on a machine with matplotlib (as the committed docs/ are)
        svg.parent.mkdir(parents=True, exist_ok=True)
        svg.write_text("<svg/>")
    pages.report([DFLASH], ledger=str(seed_ledger), out_dir=out, recipes_dir=None)
    page = (out / "recipes" / f"{DFLASH}.md").read_text()
    assert all(svg.name in page for svg in drawn)
    assert pages.report([DFLASH], ledger=str(seed_ledger), out_dir=out, check=True, recipes_dir=None).stale == []
    drawn[0].unlink()
    stale = pages.report([DFLASH], ledger=str(seed_ledger), out_dir=out, check=True, recipes_dir=None).stale
    assert stale == [f"{out / 'recipes' / (DFLASH + '.md')}: differs from the ledger"]


def test_check_reports_a_linked_plot_that_is_missing(seed_ledger, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    out = tmp_path / "docs"
    pages.report([DFLASH], ledger=str(seed_ledger), out_dir=out, recipes_dir=None)
    plot = out / "recipes" / (DFLASH + ".decode.svg")
    plot.unlink()
    stale = pages.report([DFLASH], ledger=str(seed_ledger), out_dir=out, check=True, recipes_dir=None).stale
    assert stale == [f"{plot}: plot missing"]


def test_a_recipe_file_argument_gives_its_name_and_fills_in_the_stack(seed_ledger, tmp_path, capsys):
    out = tmp_path / "docs"
    recipe = REPO / "recipes" / f"{DFLASH}.yaml"
    code, stdout, _ = _run(
        capsys, "report", str(recipe), "--ledger", str(seed_ledger), "-o", str(out), "--no-plots", "--json"
    )
    assert code == 0
    assert json.loads(stdout)["written"] == [str(out / "recipes" / f"{DFLASH}.md")]
    assert not (out / "index.md").exists()


def test_an_unknown_recipe_renders_a_no_runs_page_and_notes_the_close_match(seed_ledger, tmp_path, capsys):
    out = tmp_path / "docs"
    code, _, err = _run(
        capsys,
        "report",
        DFLASH + "x",
        "--ledger",
        str(seed_ledger),
        "-o",
        str(out),
        "--no-plots",
        "--recipes",
        str(tmp_path),
    )
    assert code == 0
    assert f"no runs of {DFLASH}x in the ledger: its page says so (did you mean {DFLASH}?)" in err
    assert "**No runs recorded.**" in (out / "recipes" / f"{DFLASH}x.md").read_text()


def test_recipe_files_fill_in_the_baseline_when_runs_recorded_no_snapshot(tmp_path):
    records = seed_records()
    for rec in records:
        rec.pop("recipe_snapshot")  # like the committed seed ledger: no snapshots
    from report_ledger_helpers import build_ledger

    ledger = build_ledger(tmp_path / "l.db", records)
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    out = tmp_path / "docs"
    pages.report([DFLASH], ledger=str(ledger), out_dir=out, recipes_dir=recipes, plots=False)
    page = (out / "recipes" / f"{DFLASH}.md").read_text()
    assert "No baseline declared" in page  # nothing says what the baseline is
    (recipes / f"{BASE}.yaml").write_text((REPO / "recipes" / f"{BASE}.yaml").read_text())
    (recipes / f"{DFLASH}.yaml").write_text((REPO / "recipes" / f"{DFLASH}.yaml").read_text())
    pages.report([DFLASH], ledger=str(ledger), out_dir=out, recipes_dir=recipes, plots=False)
    page = (out / "recipes" / f"{DFLASH}.md").read_text()
    assert f"**1.26× decode** vs `{BASE}`" in page
    assert "the\nrest from the recipe file, as the run recorded no recipe snapshot" in page


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["report"], 2, "error: nothing to render (hint: name a recipe (or recipe file), or pass --index)"),
        (["report", "../etc/passwd"], 2, "error: '../etc/passwd' is neither a recipe file nor a recipe name"),
        (["report", "--index", "--ledger", "{tmp}/absent.db"], 4, "error: "),
        (["report", "{tmp}/missing.yaml"], 2, "error: "),
    ],
)
def test_bad_input_is_one_line_and_a_nonzero_exit(args, code, message, tmp_path, capsys):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    got, _, err = _run(capsys, *args, "-o", str(tmp_path / "docs"))
    assert got == code
    assert err.startswith(message) and err.count("\n") == 1, err
    assert not (tmp_path / "absent.db").exists()  # reporting never creates a ledger


@pytest.mark.integration
def test_the_command_runs_as_a_subprocess_against_the_seed_ledger(seed_ledger, tmp_path):
    out = tmp_path / "docs"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autobench",
            "report",
            "--index",
            "--ledger",
            str(seed_ledger),
            "-o",
            str(out),
            "--no-plots",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout
    index = (out / "index.md").read_text()
    assert f"[{BASE}](recipes/{BASE}.md)" in index and f"[{DFLASH}](recipes/{DFLASH}.md)" in index


def test_snapshot_helper_matches_the_schema():
    from autobench.recipe.schema import Recipe

    Recipe.model_validate({k: v for k, v in snapshot(DFLASH, spec=True, baseline=BASE).items()})


def test_an_empty_ledger_renders_an_index_that_says_so(tmp_path):
    from autobench.ledger import open_ledger

    open_ledger(tmp_path / "empty.db").close()
    out = tmp_path / "docs"
    result = pages.report([], ledger=str(tmp_path / "empty.db"), out_dir=out, index=True)
    assert result.written == [out / "index.md"]
    assert "No runs recorded yet." in (out / "index.md").read_text()

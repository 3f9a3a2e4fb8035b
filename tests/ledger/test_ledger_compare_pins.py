"""``compare`` refuses runs whose pins differ (listing each with both values) unless
``--anyway``, which puts the differences first.  Real SQLite ledgers; runs recorded through
``autobench record`` from recipe files (so they carry recipe snapshots) and the seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger.seed import build

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
GOOD = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
BAD = "bce6f76cef2027552bed4a8a1bc9c449def48f05"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _recipes(folder: Path, *, draft: str = GOOD, max_num_seqs: int = 8) -> Path:
    """A copy of the DFlash recipe (and the base it extends) with the draft sha and one engine argument set."""
    folder.mkdir()
    base = BASE.read_text()
    assert "max_num_seqs: 8\n" in base
    (folder / BASE.name).write_text(base.replace("max_num_seqs: 8\n", f"max_num_seqs: {max_num_seqs}\n"))
    (folder / DFLASH.name).write_text(DFLASH.read_text().replace(GOOD, draft))
    return folder / DFLASH.name


def _record(capsys, recipe: Path, db: Path) -> None:
    code, _, err = run(capsys, "record", str(recipe), "--status", "DONE", "--ledger", str(db))
    assert code == 0, err


@pytest.fixture
def db(tmp_path: Path, capsys) -> Path:
    """Runs 1, 2: same pins; 3: another draft sha; 4: another max_num_seqs."""
    path = tmp_path / "ledger.db"
    same = _recipes(tmp_path / "same")
    _record(capsys, same, path)
    _record(capsys, same, path)
    _record(capsys, _recipes(tmp_path / "draft", draft=BAD), path)
    _record(capsys, _recipes(tmp_path / "engine", max_num_seqs=16), path)
    return path


def test_runs_with_the_same_pins_compare(capsys, db):
    code, out, err = run(capsys, "compare", "1", "2", "--ledger", str(db))
    assert code == 0 and "pins differ" not in out + err
    code, out, _ = run(capsys, "compare", "1", "2", "--json", "--ledger", str(db))
    assert code == 0 and json.loads(out)["pin_differences"] == []


def test_another_draft_sha_is_refused_with_both_shas_named(capsys, db):
    code, out, err = run(capsys, "compare", "1", "3", "--ledger", str(db))
    assert code == 4 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"draft_sha: {GOOD} vs {BAD}" in err and "--anyway" in err
    assert "engine.max_num_seqs" not in err  # only what differs


def test_another_engine_argument_is_refused(capsys, db):
    code, out, err = run(capsys, "compare", "4", "1", "--json", "--ledger", str(db))
    assert code == 4 and out == ""
    assert "engine.max_num_seqs: 16 vs 8" in err and "draft_sha" not in err


def test_anyway_puts_the_differences_first(capsys, db):
    code, out, err = run(capsys, "compare", "1", "3", "--anyway", "--ledger", str(db))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "pins differ (A vs B):"
    assert lines[1].split() == ["draft_sha:", GOOD, "vs", BAD]
    assert any(line.startswith("draft_sha") for line in lines[2:])  # then the side-by-side table
    code, out, _ = run(capsys, "compare", "1", "3", "--anyway", "--json", "--ledger", str(db))
    assert code == 0
    assert json.loads(out)["pin_differences"] == [{"pin": "draft_sha", "a": GOOD, "b": BAD}]


def test_seed_runs_of_two_draft_revisions_are_refused(capsys, tmp_path):
    seeded = build(tmp_path / "seeded.db")
    code, out, err = run(capsys, "compare", "2", "3", "--ledger", str(seeded))
    assert code == 4 and out == "" and f"draft_sha: {BAD} vs {GOOD}" in err
    # the base against the DFlash run: no draft against a draft (and the concurrency the base
    # stated against the draft run's) -- compared only when asked
    code, out, err = run(capsys, "compare", "1", "3", "--ledger", str(seeded))
    assert code == 4 and "draft_repo: (none) vs z-lab/Qwen3.5-122B-A10B-DFlash" in err


def test_a_pin_one_run_does_not_know_is_a_warning_not_a_difference(capsys, tmp_path):
    seeded = build(tmp_path / "seeded.db")
    _record(capsys, _recipes(tmp_path / "again"), seeded)  # run 4: a snapshot; seed run 3 has none
    code, out, err = run(capsys, "compare", "3", "4", "--ledger", str(seeded))
    assert code == 0 and "pins differ" not in out
    assert "warning: engine_version is unknown for run #4-" in err  # 0.23.1 vs unknown
    assert "warning: concurrency is unknown for run #4-" in err
    assert "stored no recipe snapshot; engine arguments and bench parameters not checked" in err


def test_runs_that_do_not_exist(capsys, db):
    code, out, err = run(capsys, "compare", "1", "99", "--anyway", "--ledger", str(db))
    assert code == 4 and out == "" and "no run #99" in err and len(err.strip().splitlines()) == 1

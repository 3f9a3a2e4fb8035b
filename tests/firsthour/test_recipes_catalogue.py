"""``autobench recipes``: the catalogue with pin status and the last run from a real SQLite ledger."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger import NewRun, open_ledger

REPO = Path(__file__).resolve().parent.parent.parent
SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


def _catalogue(tmp_path: Path) -> Path:
    folder = tmp_path / "recipes"
    folder.mkdir()
    for p in (REPO / "recipes").glob("*.yaml"):
        shutil.copy(p, folder / p.name)
    (folder / "pinned.yaml").write_text(
        f"name: pinned\nmodel: {{repo: acme/tiny, revision: {SHA}}}\ncontainer: {{image: vllm/vllm-openai:v0.11.0}}\n"
    )
    (folder / "broken.yaml").write_text("name: broken\nmodel: {repo: nope}\ncontainer: {image: x}\n")
    return folder


def test_recipes_lists_pins_and_the_last_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    folder = _catalogue(tmp_path)
    db = tmp_path / "ledger.db"
    with open_ledger(db) as book:
        book.append(NewRun(recipe_name="pinned", model_repo="acme/tiny", status="BLOCKED"))
        newest = book.append(NewRun(recipe_name="pinned", model_repo="acme/tiny", status="DONE"))
    assert main(["recipes", str(folder), "--ledger", str(db), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["pinned"]["pinned"] is True and rows["pinned"]["last_status"] == "DONE"
    assert rows["pinned"]["last_run"] == newest.display_id
    dflash = rows["qwen3-5-122b-a10b-vllm-int4-autoround-dflash"]
    assert dflash["draft"] == "z-lab/Qwen3.5-122B-A10B-DFlash"
    assert dflash["pinned"] is False and dflash["unpinned"] == ["model"]  # the base model floats on main
    assert dflash["last_run"] is None
    assert rows["broken"]["error"] and rows["broken"]["pinned"] is None

    assert main(["recipes", str(folder), "--ledger", str(db)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["NAME", "MODEL", "DRAFT", "PINNED", "LAST", "RUN"]
    line = next(x for x in table if x.startswith("pinned "))
    assert "yes" in line and f"DONE {newest.display_id}" in line
    assert "no: model" in next(x for x in table if x.startswith("qwen3-5-122b-a10b-vllm-int4-autoround "))
    assert "never run" in next(x for x in table if x.startswith("qwen3-5-122b-a10b-vllm-int4-autoround-dflash"))
    assert "invalid" in next(x for x in table if x.startswith("broken "))


def test_recipes_on_the_committed_catalogue_and_ledger(capsys: pytest.CaptureFixture[str], monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["recipes", "--ledger", "ledger.db", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["qwen3-5-122b-a10b-vllm-int4-autoround-dflash"]["last_status"] == "DONE"


def test_recipes_with_a_missing_named_ledger_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    folder = _catalogue(tmp_path)
    assert main(["recipes", str(folder), "--ledger", str(tmp_path / "none.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no ledger at" in err
    assert not (tmp_path / "none.db").exists()

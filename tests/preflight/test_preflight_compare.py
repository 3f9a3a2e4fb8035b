"""Prediction against boot facts: the seed's two boots (corpus 900 DONE, 901 BLOCKED) agree with
the predictions on every fact they print; a run's prediction is kept in the ledger (schema v5)
and `preflight-report` compares it with the run's boot facts."""

from __future__ import annotations

import json
from pathlib import Path

import preflight_configs as c
from preflight_helpers import seed_recipe

from autobench.cli import main
from autobench.logs import parse_log
from autobench.preflight.compare import compare

CORPUS = Path(__file__).resolve().parents[1] / "logs" / "corpus"


def _prediction(capsys, recipe: Path, *more: str) -> dict:
    main(["preflight", str(recipe), "--json", *more])
    return json.loads(capsys.readouterr().out)


def test_done_boot_agrees_on_every_fact(hub, write_recipe, capsys) -> None:
    pred = _prediction(capsys, write_recipe(seed_recipe(c.DRAFT_OLD, 5)), "--gpu", "GB10")
    facts = parse_log(CORPUS / "900_seed-done-qwen35-dflash.log").to_json_dict()
    rows = {r.fact: r for r in compare(pred, facts, "DONE")}
    assert rows["boot"].agrees and rows["attention block size"].agrees
    assert rows["attention block size"].logged == "2144"
    assert (
        rows["mamba padding %"].predicted == "none" == rows["mamba padding %"].logged and rows["mamba padding %"].agrees
    )
    assert rows["GPU KV cache tokens"].agrees and rows["GPU KV cache tokens"].predicted == "800,129"
    assert rows["max concurrency"].agrees and rows["max concurrency"].logged == "3.05x"
    assert rows["KV blocks"].predicted.startswith("1,694 (from 27.72 GiB logged)")
    assert rows["KV memory (budget)"].agrees


def test_blocked_boot_agrees_with_the_predicted_assertion(hub, write_recipe, capsys) -> None:
    pred = _prediction(capsys, write_recipe(seed_recipe(c.DRAFT_NEW, 8)))
    facts = parse_log(CORPUS / "901_seed-blocked-page-size-assert.log").to_json_dict()
    rows = {r.fact: r for r in compare(pred, facts, "BLOCKED")}
    assert rows["boot"].agrees and rows["boot"].predicted == "fails (assertion)"
    assert rows["attention block size"].agrees and rows["mamba padding %"].agrees
    assert rows["mamba padding %"].logged == "0.55"


def test_preflight_against_a_log(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8))
    code = main(["preflight", str(recipe), "--against", str(CORPUS / "901_seed-blocked-page-size-assert.log")])
    out = capsys.readouterr().out
    assert code == 6
    assert "vs log: attention block size" in out and "logged 2192" in out
    assert "vs log: boot" in out and "did not boot (BLOCKED)" in out

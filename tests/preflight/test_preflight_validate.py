"""validate runs the preflight when the configs are in the local HF cache: a recipe pinned to the
bad draft gets AB070 (warning; error under --strict) with the predicted assertion and the fix."""

from __future__ import annotations

import json

import preflight_configs as c
from preflight_helpers import seed_recipe

from autobench.cli import main


def _cache_configs(recipe: str, capsys) -> None:
    """`autobench lock` reads both configs through the real client into the isolated HF cache."""
    assert main(["lock", "--no-images", recipe]) == 0
    capsys.readouterr()


def test_bad_draft_warns_with_the_assertion_and_the_fix(hub, write_recipe, capsys, monkeypatch) -> None:
    recipe = str(write_recipe(seed_recipe(c.DRAFT_NEW, 8)))
    _cache_configs(recipe, capsys)
    hub.stop()  # validate must not need the network
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    code = main(["validate", recipe, "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, [(f["code"], f["severity"], f["message"]) for f in out["files"][0]["findings"]]  # a warning
    ab060 = [f for f in out["files"][0]["findings"] if f["code"] == "AB070"]
    assert len(ab060) == 1
    f = ab060[0]
    assert f["severity"] == "warning" and f["key"] == "speculative.revision" and f["line"] == 9
    assert "assert new_spec.page_size_bytes == max_page_size" in f["message"] and "0.23.1" in f["message"]
    assert "previous revision" in f["hint"]


def test_bad_draft_is_an_error_under_strict(hub, write_recipe, capsys) -> None:
    recipe = str(write_recipe(seed_recipe(c.DRAFT_NEW, 8)))
    _cache_configs(recipe, capsys)
    code = main(["validate", "--strict", recipe])
    out, err = capsys.readouterr()
    assert code == 2
    line = next(x for x in out.splitlines() if "AB070" in x)
    assert "AB070 error: speculative.revision: predicted boot failure on vLLM 0.23.1" in line
    assert "(hint: pin the draft's previous revision" in line


def test_good_draft_has_no_preflight_finding(hub, write_recipe, capsys) -> None:
    recipe = str(write_recipe(seed_recipe(c.DRAFT_OLD, 5)))
    _cache_configs(recipe, capsys)
    main(["validate", "--format", "json", recipe])
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["files"][0]["findings"]}
    assert not codes & {"AB070", "AB071"}


def test_no_cached_configs_no_preflight_and_no_network(write_recipe, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    recipe = str(write_recipe(seed_recipe(c.DRAFT_NEW, 8)))
    main(["validate", "--format", "json", recipe])
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["files"][0]["findings"]}
    assert not codes & {"AB070", "AB071"}


def test_cannot_predict_is_info_not_a_guess(hub, write_recipe, capsys) -> None:
    text = seed_recipe(c.DRAFT_NEW, 8).replace(c.DRAFT_REPO, c.OTHER_VOCAB_DRAFT).replace(c.DRAFT_NEW, c.FILLER_SHA)
    recipe = str(write_recipe(text))
    _cache_configs(recipe, capsys)
    main(["validate", "--format", "json", recipe])
    findings = json.loads(capsys.readouterr().out)["files"][0]["findings"]
    f = next(f for f in findings if f["code"] == "AB071")
    assert f["severity"] == "info" and "vocab_size 151936" in f["message"] and "known crash class" in f["message"]

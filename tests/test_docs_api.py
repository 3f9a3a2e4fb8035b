"""docs/api.md's examples run as written, in a scratch copy of recipes/ and ledger.db (running
the docs never changes the checkout)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_every_example_of_the_api_page_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    shutil.copytree(REPO / "recipes", tmp_path / "recipes")
    shutil.copy(REPO / "ledger.db", tmp_path / "ledger.db")
    code = blocks()
    assert len(code) == 3
    monkeypatch.chdir(tmp_path)
    exec(compile("\n".join(code), str(PAGE), "exec"), {"__name__": "docs_api"})  # noqa: S102 - the page's own code
    out = capsys.readouterr().out
    assert "refused: with_changes:1:1: engine.max_num_seqs" in out
    assert "#1-" in out and "few_samples" in out


def test_a_loaded_recipe_cannot_be_edited_in_place() -> None:
    import dataclasses

    import pytest
    from pydantic import ValidationError

    from autobench.recipe import load_recipe

    loaded = load_recipe(REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml")
    with pytest.raises(ValidationError, match="frozen"):
        loaded.recipe.engine.max_num_seqs = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.digest = "sha256:0"  # type: ignore[misc]
    again = loaded.with_changes({"engine": {"max_num_seqs": 8}})  # no change: the same digest
    assert again.digest == loaded.digest and again is not loaded

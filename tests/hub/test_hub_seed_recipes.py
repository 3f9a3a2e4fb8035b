"""The done-when checks on copies of the real seed recipes (recipes/*.yaml)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakehub import BASE_NEW, DRAFT_NEW, DRAFT_OLD
from test_hub_lock import run

from autobench.recipe.loader import load_recipe

SEED = Path(__file__).resolve().parents[2] / "recipes"
DFLASH = "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
BASE = "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    if not (SEED / DFLASH).exists():
        pytest.skip("seed recipes not present")
    for name in (DFLASH, BASE):
        shutil.copy(SEED / name, tmp_path / name)
    return tmp_path


def test_outdated_on_the_seed_pin(hub_env, seed, capsys):
    code, out, _ = run(capsys, "outdated", "--json", str(seed / DFLASH))
    assert code == 0
    draft = next(i for i in json.loads(out) if i["kind"] == "draft")
    assert (draft["status"], draft["pinned"], draft["current"], draft["label"]) == (
        "moved",
        DRAFT_OLD,
        DRAFT_NEW,
        "main",
    )
    assert {(c["field"], c["old"], c["new"]) for c in draft["changes"] if c["breaking"]} == {
        ("num_key_value_heads", 4, 8),
        ("num_hidden_layers", 4, 6),
        ("sliding_window", 2048, 4096),
    }


def test_lock_on_the_seed_dflash_recipe_pins_model_and_draft(hub_env, seed, capsys):
    before = (seed / BASE).read_text()
    code, out, err = run(capsys, "lock", str(seed / DFLASH))
    assert (code, err) == (0, ""), out
    loaded = load_recipe(seed / DFLASH)
    assert loaded.recipe.model.revision == BASE_NEW
    assert loaded.recipe.speculative.revision == DRAFT_OLD
    after = (seed / BASE).read_text()
    # one line changed in the parent, every comment kept
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed == [("  revision: main", f"  revision: {BASE_NEW}  # frozen: main")]
    assert len(before.splitlines()) == len(after.splitlines())
    assert "main has moved to bce6f76" in out  # the kept draft pin's label moved upstream

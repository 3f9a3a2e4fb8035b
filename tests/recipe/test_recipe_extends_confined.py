"""`extends:` reads only recipe files and never echoes another file (issue 12, item 5)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import inprocess
import pytest

from autobench.errors import RecipeError
from autobench.recipe.loader import load_recipe

MINIMAL = "model: {repo: org/m}\ncontainer: {image: img:1}\n"
SHADOW = "root:$6$saltsalt$hashhashhash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nsecretuser:$6$x$y:1:0:9:7:::\n"


def _validate(recipe: Path) -> subprocess.CompletedProcess[str]:
    return inprocess.autobench("validate", str(recipe))


@pytest.mark.parametrize("target_name", ["shadow", "passwd.txt", "notes.json"])
def test_a_file_without_a_recipe_suffix_is_not_read_nor_echoed(tmp_path, target_name):
    target = tmp_path / target_name
    target.write_text(SHADOW)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"extends: {target}\n" + MINIMAL)
    proc = _validate(recipe)
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, out  # one finding, not one line per entry of the file
    assert "not a recipe file" in out
    for secret in ("saltsalt", "hashhash", "secretuser", "daemon"):
        assert secret not in out


def test_a_link_named_like_a_recipe_to_another_file_is_refused(tmp_path):
    target = tmp_path / "shadow"
    target.write_text(SHADOW)
    (tmp_path / "base.yaml").symlink_to(target)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("extends: base.yaml\n" + MINIMAL)
    with pytest.raises(RecipeError, match="not a recipe file") as info:
        load_recipe(recipe)
    assert "secretuser" not in str(info.value)


def test_a_yaml_file_that_is_not_a_recipe_is_refused_without_naming_its_keys(tmp_path):
    (tmp_path / "secret.yaml").write_text("apiVersion: v1\nkind: Secret\ndata:\n  password: c2VjcmV0cGFzcw==\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("extends: secret.yaml\n" + MINIMAL)
    proc = _validate(recipe)
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert "is not a recipe: 3 of its 3 top-level keys are not recipe keys" in out
    for word in ("apiVersion", "Secret", "password", "c2VjcmV0cGFzcw"):
        assert word not in out
    assert out.count("AB000") == 1


def test_a_fifo_target_is_refused_without_blocking(tmp_path):
    import os

    os.mkfifo(tmp_path / "base.yaml")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("extends: base.yaml\n" + MINIMAL)
    with pytest.raises(RecipeError, match="not a regular file"):
        load_recipe(recipe)


def test_a_recipe_parent_still_extends(tmp_path):
    (tmp_path / "base.yml").write_text(MINIMAL + "engine: {max_num_seqs: 4}\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("extends: base.yml\nengine: {max_model_len: 1024}\n")
    loaded = load_recipe(recipe)
    assert (loaded.recipe.engine.max_num_seqs, loaded.recipe.engine.max_model_len) == (4, 1024)


@pytest.mark.parametrize("text", ["{{}}", "? [a, b]\n: 1\n", "{[1]: x}"])
def test_a_collection_as_a_mapping_key_is_one_recipe_error(tmp_path, text):
    """Found by tests/fuzz (benchmarks/fuzz.py --random): `{{}}` was an internal error."""
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RecipeError, match="a mapping key must be a plain scalar"):
        load_recipe(path)

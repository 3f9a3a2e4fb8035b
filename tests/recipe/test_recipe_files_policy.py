"""The one file-reading policy (autobench.files) as the recipe loader applies it: a mod a recipe
names lies in the recipe's tree (or a folder the user allows); a bench profile is a YAML file of
key names, never echoed line by line; a recipe file is read with a byte bound on every path."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench import files
from autobench.cli import main
from autobench.errors import AutobenchError, RecipeError
from autobench.recipe.loader import load_recipe

BASE = (
    "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n"
    "bench:\n  dataset:\n    kind: random\n"
)
SHADOW = "sysadm:$6$saltsalt$hashhashhash:19000:0:99999:7:::\nmeuser:$y$j9T$abc$def:19000:0:99999:7:::\n"


def recipe_with_mod(folder: Path, mod: str) -> Path:
    path = folder / "r.yaml"
    path.write_text(BASE + f"launch:\n  setup:\n    - mod: {mod!r}\n")
    return path


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.delenv(files.ALLOW_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "x.sh").write_text("echo home\n")
    (tmp_path / "outside.sh").write_text("echo outside\n")
    recipes = tmp_path / "recipes"
    (recipes / "mods").mkdir(parents=True)
    (recipes / "mods" / "ok.sh").write_text("echo ok\n")
    (recipes / "mods" / "link.sh").symlink_to(tmp_path / "outside.sh")
    return recipes


@pytest.mark.parametrize(
    ("mod", "ok"),
    [
        ("mods/ok.sh", True),
        ("./mods/../mods/ok.sh", True),
        ("../outside.sh", False),
        ("../../../../../../etc/passwd", False),
        ("/etc/passwd", False),
        ("~/x.sh", False),
        ("mods/link.sh", False),  # a link out of the tree is outside it
    ],
)
def test_a_mod_is_a_file_of_the_recipes_tree(tree, mod, ok):
    path = recipe_with_mod(tree, mod)
    if ok:
        assert load_recipe(path).mods
        return
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert "is outside the recipe's folder" in str(info.value)
    assert str(info.value).startswith(f"{path}:")


def test_a_folder_the_user_allows_may_hold_mods(tree, monkeypatch):
    monkeypatch.setenv(files.ALLOW_ENV, str(tree.parent / "home"))
    assert load_recipe(recipe_with_mod(tree, "~/x.sh")).mods
    with pytest.raises(RecipeError):
        load_recipe(recipe_with_mod(tree, "../outside.sh"))


@pytest.mark.parametrize("name", ["shadow", "shadow.yaml"])
def test_a_profile_that_is_some_other_file_is_refused_without_its_lines(tmp_path, capsys, name):
    """Before: every line of /etc/shadow came back as an unknown key."""
    (tmp_path / name).write_text(SHADOW)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(BASE)
    code = main(["validate", str(recipe), "--profile", str(tmp_path / name)])
    out, err = capsys.readouterr()
    assert code == 2
    for secret in ("sysadm", "saltsalt", "hashhash", "meuser", "j9T"):
        assert secret not in out + err
    assert "it is not read" in out + err if name == "shadow" else "2 of its 2 top-level keys" in out + err


def test_a_profile_with_a_typo_still_names_the_key(tmp_path, capsys):
    (tmp_path / "p.yaml").write_text("concurrncy: [1, 2]\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(BASE)
    assert main(["validate", str(recipe), "--profile", str(tmp_path / "p.yaml")]) == 2
    assert "concurrncy" in capsys.readouterr().out


@pytest.mark.skipif(not Path("/proc/self/pagemap").exists(), reason="Linux /proc only")
def test_a_proc_file_is_read_with_the_bound():
    """Size 0 in stat, and it never ends: the bound holds on the read itself."""
    with pytest.raises(AutobenchError, match="over the 1000 bytes limit"):
        files.read_regular("/proc/self/pagemap", what="f", limit=1000)


def test_a_duplicate_line_of_another_file_is_not_echoed(tmp_path, capsys):
    """Found by tests/fuzz/test_fuzz_profiles.py: the duplicate-key error quoted the line."""
    (tmp_path / "p.yaml").write_text("sysadm:$6$saltsalt$hh:1::\nsysadm:$6$saltsalt$hh:1::\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(BASE)
    assert main(["validate", str(recipe), "--profile", str(tmp_path / "p.yaml")]) == 2
    out = capsys.readouterr().out
    assert "duplicate key" in out and "saltsalt" not in out and "sysadm" not in out

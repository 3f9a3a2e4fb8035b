"""`lock` never rewrites YAML aliasing: a revision carrying an anchor (`revision: &r main`, used
elsewhere as *r) is refused at its line before anything is written; a fallback rewrite keeps
the file's final line break as it was.  The real huggingface_hub client against the fake Hub."""

from __future__ import annotations

from fakehub import BASE_NEW, BASE_REPO, DRAFT_REPO

from autobench.cli import main
from autobench.recipe.loader import load_recipe

IMAGE = "img@sha256:" + "a" * 64


def test_an_anchored_revision_is_refused_and_nothing_is_written(hub_env, tmp_path, capsys):
    """Before: the anchor moved to meta.notes, which took 'main' while the revision was pinned."""
    recipe = tmp_path / "r.yaml"
    text = (
        f"model:\n  repo: {BASE_REPO}\n  revision: &r main\n"
        f"speculative:\n  method: dflash\n  model: {DRAFT_REPO}\n  revision: main\n"
        f"container:\n  image: {IMAGE}\nmeta:\n  notes: *r\n"
    )
    recipe.write_text(text)
    assert main(["lock", str(recipe)]) == 2
    _, err = capsys.readouterr()
    assert f"{recipe}:3:13: cannot pin model.revision: its value carries the YAML anchor &r" in err
    assert recipe.read_text() == text and not (tmp_path / "r.yaml.lock.json").exists()


def test_an_alias_as_the_revision_is_pinned_in_place(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"meta:\n  notes: &r main\nmodel:\n  repo: {BASE_REPO}\n  revision: *r\ncontainer:\n  image: {IMAGE}"
    )
    assert main(["lock", str(recipe)]) == 0, capsys.readouterr()
    text = recipe.read_text()
    assert "notes: &r main" in text and "revision: " + BASE_NEW in text
    loaded = load_recipe(recipe)
    assert loaded.recipe.model.revision == BASE_NEW and loaded.recipe.meta.notes == "main"


def test_a_rewrite_never_drops_the_final_line_break(hub_env, tmp_path, capsys):
    for text in (
        f"model: {{repo: {BASE_REPO}}}\ncontainer:\n  image: {IMAGE}\n",
        f"meta: {{notes: x}}\ncontainer: {{image: '{IMAGE}'}}\nmodel: {{repo: {BASE_REPO}}}\n",
    ):
        recipe = tmp_path / "r.yaml"
        recipe.write_text(text)
        assert main(["lock", str(recipe)]) == 0, capsys.readouterr()
        assert recipe.read_text().endswith("\n")
        assert load_recipe(recipe).recipe.model.revision == BASE_NEW


def test_revisions_a_variant_writes_are_pinned_where_they_are_written(hub_env, tmp_path, capsys):
    """Before: lock pinned the base cell only; a variant's `revision: main` stayed unpinned."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"model:\n  repo: {BASE_REPO}\n  revision: main\ncontainer:\n  image: {IMAGE}\n"
        f"variants:\n  other:\n    model:\n      repo: {DRAFT_REPO}\n      revision: main\n"
        f"  same:\n    engine:\n      max_num_seqs: 4\n"
        f"  repo-only:\n    model:\n      repo: {DRAFT_REPO}\n"
    )
    assert main(["lock", str(recipe)]) == 0, capsys.readouterr()
    text = recipe.read_text()
    assert text.count("# frozen: main") == 3, text  # base, other, and repo-only (inserted)
    for cell in ("base", "other", "same", "repo-only"):
        revision = load_recipe(recipe, cell).recipe.model.revision
        assert revision is not None and len(revision) == 40, (cell, revision)
    assert load_recipe(recipe, "other").recipe.model.revision != BASE_NEW
    import json

    refs = json.loads((tmp_path / "r.yaml.lock.json").read_text())["references"]
    assert refs["variants.other.model"]["cell"] == "other" and refs["variants.other.model"]["repo"] == DRAFT_REPO

"""`lock` keeps a recipe's layout byte for byte: CRLF files stay CRLF, and a Unicode line break
inside a value (which YAML counts as a line) never shifts the edited line (issue 12, item 8).
The real huggingface_hub client against the fake Hub on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakehub import BASE_NEW, BASE_REPO, DRAFT_NEW, DRAFT_REPO

from autobench.cli import main
from autobench.hub.lockfile import yaml_lines
from autobench.recipe.loader import load_recipe

IMAGE = "img@sha256:" + "a" * 64  # pinned already: lock resolves nothing for it


def lock(path: Path, capsys) -> None:
    assert main(["lock", str(path)]) == 0, capsys.readouterr()
    capsys.readouterr()


def test_a_crlf_recipe_stays_crlf_with_only_the_pinned_line_changed(hub_env, tmp_path, capsys):
    lines = [
        "# a recipe written on Windows",
        "model:",
        f"  repo: {BASE_REPO}",
        "  revision: main   # track main",
        "container:",
        f"  image: {IMAGE}",
        "",
    ]
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes("\r\n".join(lines).encode())
    lock(recipe, capsys)
    expected = list(lines)
    expected[3] = f"  revision: {BASE_NEW}  # frozen: main; track main"
    assert recipe.read_bytes() == "\r\n".join(expected).encode()


def test_an_inserted_revision_uses_the_files_line_break(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes(f"model:\r\n  repo: {DRAFT_REPO}\r\ncontainer:\r\n  image: {IMAGE}\r\n".encode())
    lock(recipe, capsys)
    text = recipe.read_bytes().decode()
    assert text == (
        f"model:\r\n  repo: {DRAFT_REPO}\r\n  revision: {DRAFT_NEW}  # frozen: main\r\n"
        f"container:\r\n  image: {IMAGE}\r\n"
    )


def test_a_flow_style_crlf_recipe_is_redumped_with_crlf(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_bytes(f"# top\r\nmodel: {{repo: {DRAFT_REPO}}}\r\ncontainer:\r\n  image: {IMAGE}\r\n".encode())
    lock(recipe, capsys)
    raw = recipe.read_bytes()
    assert b"\n" not in raw.replace(b"\r\n", b"")  # every line break is still CRLF
    assert load_recipe(recipe).recipe.model.revision == DRAFT_NEW


@pytest.mark.parametrize("odd", ["\u2028", "\u2029"])
def test_a_unicode_line_break_in_a_value_does_not_shift_the_edit(hub_env, tmp_path, capsys, odd):
    recipe = tmp_path / "r.yaml"
    text = (
        f"meta:\n  notes: 'page{odd}break'\nmodel:\n  repo: {BASE_REPO}\n  revision: main\n"
        f"container:\n  image: {IMAGE}\n"
    )
    recipe.write_bytes(text.encode())
    lock(recipe, capsys)
    after = recipe.read_bytes().decode()
    assert after == text.replace("  revision: main\n", f"  revision: {BASE_NEW}  # frozen: main\n")
    assert load_recipe(recipe).recipe.meta.notes == f"page{odd}break"


def test_yaml_lines_counts_only_yaml_line_breaks():
    assert yaml_lines("a\r\nb\x0c\u2028c\rd\ne") == ["a\r\n", "b\x0c\u2028c\r", "d\n", "e"]

"""A hostile ledger cannot steer where pages go nor put markup in them (issue 12, item 2).

Real SQLite ledgers written through the real store, rendered by the CLI's entry point in-process
(`autobench report --index -o docs`, tests/inprocess.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from inprocess import autobench

from autobench.escape import markdown, markdown_block
from autobench.ledger import NewRun, open_ledger


def ledger_with(path: Path, *runs: dict) -> Path:
    with open_ledger(path) as ledger:
        for run in runs:
            ledger.append(NewRun(**{"model_repo": "org/m", "status": "DONE", "started_at": "2026-06-01", **run}))
    return path


def report(tmp_path: Path, ledger: Path) -> subprocess.CompletedProcess[str]:
    return autobench("report", "--index", "--ledger", ledger, "-o", "docs", "--no-plots", cwd=tmp_path)


@pytest.mark.parametrize("name", ["../../../../tmp/x", "../escape", "a/b", "/abs/x", "x\n", "..", "UPPER"])
def test_a_recipe_name_from_the_ledger_never_chooses_where_a_page_is_written(tmp_path, name):
    work = tmp_path / "work"
    work.mkdir()
    ledger = ledger_with(tmp_path / "l.db", {"recipe_name": name}, {"recipe_name": "good"})
    before = {p for p in tmp_path.rglob("*")}
    proc = report(work, ledger)
    assert proc.returncode == 0, proc.stderr
    written = {p for p in tmp_path.rglob("*")} - before
    docs = work / "docs"
    assert all(p == docs or docs in p.parents for p in written if p.is_file()), written
    assert (docs / "recipes" / "good.md").is_file()
    assert sorted(p.name for p in (docs / "recipes").iterdir()) == ["good.md"]
    assert "is not a recipe name" in proc.stderr
    assert "\n" not in proc.stderr.split("ledger recipe name ", 1)[1].split("is not")[0]


def test_notes_and_root_causes_render_as_text_not_markup(tmp_path):
    hostile = '<script>alert("x")</script> [click](javascript:alert(1)) | **bold** <img src=x onerror=y>'
    ledger = ledger_with(
        tmp_path / "l.db",
        {
            "recipe_name": "r",
            "status": "FAILED",
            "notes": hostile + "\n# not a heading\n> not a quote",
            "root_cause_category": "crash<b>",
            "root_cause_message": hostile,
            "engine_version": "<i>0.1</i>",
        },
    )
    proc = report(tmp_path, ledger)
    assert proc.returncode == 0, proc.stderr
    for page in (tmp_path / "docs" / "recipes" / "r.md", tmp_path / "docs" / "index.md"):
        html = _render_commonmark(page.read_text())  # as a Markdown viewer renders it (HTML on)
        for tag in ("<script", "<img", "<b>", "<i>", "<strong>bold", 'href="javascript'):
            assert tag not in html, (page.name, tag)
        assert "&lt;script&gt;" in html and "**bold**" in html  # the text is shown, as text
    page = (tmp_path / "docs" / "recipes" / "r.md").read_text()
    assert "\n\\# not a heading" in page and "\n&gt; not a quote" in page


def _render_commonmark(text: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(text)


@pytest.mark.parametrize(
    "value",
    [
        "<script>x</script>",
        "[a](b)",
        "**b** _i_ `c`",
        "a|b",
        "&amp; &lt;",
        "x_y_z",
        "~~s~~",
        "![i](j)",
        "<http://x>",
        "\\*",
    ],
)
def test_escaped_values_render_as_exactly_their_text(value):
    import html

    rendered = _render_commonmark(markdown(value))
    assert rendered.strip() == f"<p>{html.escape(value, quote=False)}</p>", rendered
    block = _render_commonmark(markdown_block("# h\n" + value))
    assert "<h1>" not in block

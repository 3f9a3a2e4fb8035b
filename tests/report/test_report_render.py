"""Markdown rendering: the seed page's figures, "—" for missing values, run ids on every figure."""

from __future__ import annotations

import re

import pytest
from report_fixtures import BASE, DFLASH, ROOT_CAUSE, record, seed_records, snapshot, utc

from autobench.errors import ReportError
from autobench.report import render
from autobench.report.model import (
    build_index_view,
    build_recipe_view,
    group_by_recipe,
    runs_from_records,
)
from autobench.report.render import cell, code, num, pct, ratio, ref, render_index, render_recipe


def _page(records, name=DFLASH, recipe=None) -> str:
    recipes = {name: recipe} if recipe else None
    return render_recipe(build_recipe_view(name, group_by_recipe(runs_from_records(records)), recipes))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (float("nan"), "—"),
        (0, "0"),
        (0.0, "0"),
        (107.43, "107.43"),
        (85.5, "85.5"),
        (681.0, "681"),
        (67.5, "67.5"),
        (800129, "800,129"),
        (115.6649, "115.66"),
        (0.0004, "0.0004"),  # tiny but measured: never printed as 0
        (True, "yes"),
        ("FLASH_ATTN", "FLASH_ATTN"),
    ],
)
def test_num(value, text):
    assert num(value) == text


def test_small_filters():
    assert pct(0.44) == "44%" and pct(0.4437) == "44.4%" and pct(None) == "—"
    assert ratio(107.43 / 85.5) == "1.26×" and ratio(None) == "—"
    assert ref(3) == "[run 3](#run-3)" and ref(None) == ""
    assert ref(3, "recipes/x.md") == "[run 3](recipes/x.md#run-3)"
    assert cell("a | b\nc") == "a \\| b c" and cell(None) == "—" and cell("  ") == "—"
    assert code("x `y` z") == "`` x `y` z ``" and code("plain") == "`plain`"


def test_seed_dflash_page_states_the_seed_figures():
    page = _page(seed_records())
    result = page.split("## Result", 1)[1].split("##", 1)[0]
    for fact in (
        "prefill 115.66 tok/s",
        "decode 107.43 tok/s",
        "385 completed",
        "0 errors",
        "hit the time cap at 915 s",
        "TTFT median 681 ms",
        "TPOT median 67.5 ms",
    ):
        assert fact in " ".join(result.split()), fact
    assert "**1.26× decode** vs `qwen3-5-122b-a10b-vllm-int4-autoround`: 85.5 → 107.43 tok/s at concurrency 8" in page
    assert "(baseline [run 1](qwen3-5-122b-a10b-vllm-int4-autoround.md#run-1), this recipe [run 3](#run-3))" in page
    # acceptance profile, memory and boot facts
    assert "Mean acceptance length 3.25 of num_speculative_tokens=5" in page
    assert "draft acceptance rate 44%" in page
    assert "| 0.78 | 0.56 | 0.39 | 0.29 | 0.21 |" in page
    for row in (
        "| model weights | 63.71 GiB | [run 3](#run-3) |",
        "| KV cache | 27.72 GiB |",
        "| KV cache tokens | 800,129 tokens |",
        "| max concurrency | 3.05× |",
        "| model load time | 463 s |",
        "| attention block size | 2,144 tokens |",
        "| resolved architecture | DFlashDraftModel |",
        "| linear kernel | MarlinLinearKernel |",
    ):
        assert row in page, row
    # the BLOCKED attempt at bce6f76 with its root cause, and what superseded the recipe
    blocked = next(line for line in page.splitlines() if line.startswith('| <a id="run-2">'))
    assert "BLOCKED" in blocked and "| bce6f76 |" in blocked and ROOT_CAUSE in blocked
    assert "**Superseded by** → `qwen3-6-35b-a3b-vllm-fp8`" in page


def test_every_figure_carries_a_run_id_that_links_to_a_history_row():
    page = _page(seed_records())
    anchors = set(re.findall(r'<a id="(run-\d+)"></a>', page))
    links = set(re.findall(r"\]\(#(run-\d+)\)", page))
    assert anchors == {"run-2", "run-3"}
    assert links <= anchors | {"run-1"}  # run 1 is the baseline's, on the baseline's page
    for section in ("## Result", "## Memory and boot"):
        table = page.split(section, 1)[1].split("\n## ", 1)[0]
        rows = [ln for ln in table.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
        assert rows and all("[run 3](#run-3)" in ln for ln in rows), section


def test_missing_metrics_render_as_dash_never_zero():
    recs = [
        record(
            1,
            BASE,
            "DONE",
            utc(2026, 6, 23),
            metrics={"decode_tok_s": 85.5, "concurrency": 8},
            recipe_snapshot=snapshot(BASE, spec=False),
        )
    ]
    page = _page(recs, BASE)
    assert "prefill — tok/s, decode 85.5 tok/s" in " ".join(page.split())
    assert "— completed, — errors" in " ".join(page.split())
    assert "| prefill |" not in page and "| model weights |" not in page  # no row of "—"
    assert "| decode | 85.5 tok/s | [run 1](#run-1) |" in page
    assert "stated no boot facts" in page
    assert not re.search(r"\| 0(\.0+)? (tok/s|ms|GiB)", page)
    assert "## Speculative acceptance" not in page  # not a speculative recipe


def test_a_recipe_with_no_runs_renders_a_page_that_says_so():
    page = _page(seed_records(), "nothing-yet")
    assert "**No runs recorded.**" in page
    assert "No DONE run yet" in page
    assert "## History" not in page


def test_a_recipe_file_without_runs_shows_its_stack_and_refuses_the_speedup():
    recipe = snapshot(DFLASH, spec=True, baseline=BASE)
    page = _page([], DFLASH, recipe)
    assert "From the recipe file (no run recorded yet)." in page
    assert "**Not computed** vs `qwen3-5-122b-a10b-vllm-int4-autoround`: this recipe has no DONE run." in page


def test_refused_speedup_is_printed_with_its_reason():
    recs = [record(1, BASE, "DONE", utc(2026, 6, 23), metrics={"decode_tok_s": 85.5, "concurrency": 4})]
    recs += seed_records()[1:]
    page = _page(recs)
    assert (f"**Not computed** vs `{BASE}`: baseline {BASE} has DONE runs only at concurrency 4, not at 8.") in page
    assert "This recipe's decode: 107.43 tok/s ([run 3](#run-3))." in page
    assert "×" not in page.split("## Speedup", 1)[1].split("##", 1)[0]


def test_index_lists_both_recipes_with_speedup_and_links():
    index = render_index(build_index_view(group_by_recipe(runs_from_records(seed_records()))))
    rows = [ln for ln in index.splitlines() if ln.startswith("| [")]
    assert len(rows) == 2
    base, dflash = rows
    assert base.startswith(f"| [{BASE}](recipes/{BASE}.md) | DONE | 2026-06-23 | 8 | 85.5 |")
    assert dflash.startswith(
        f"| [{DFLASH}](recipes/{DFLASH}.md) | DONE | 2026-06-24 | 8 | 107.43 | 115.66 | 681 | 67.5 |"
    )
    assert f"1.26× vs {BASE} ([run 1](recipes/{BASE}.md#run-1))" in dflash
    assert dflash.endswith(f"[run 3](recipes/{DFLASH}.md#run-3) |")


def test_index_shows_a_blocked_recipe_with_its_root_cause_in_short():
    index = render_index(build_index_view(group_by_recipe(runs_from_records(seed_records()[:2]))))
    row = next(ln for ln in index.splitlines() if ln.startswith(f"| [{DFLASH}]"))
    assert "| BLOCKED: assertion: AssertionError: page_size_bytes == max_page_size" in row
    assert "…" in row  # in short
    assert row.count("|") - row.count("\\|") == 12  # one row, 11 cells: no stray pipes


def test_rendering_is_deterministic():
    assert _page(seed_records()) == _page(list(reversed(seed_records())))


def test_an_undefined_template_value_is_a_report_error(tmp_path, monkeypatch):
    (tmp_path / "report_recipe.md.j2").write_text("{{ v.no_such_field }}\n")
    monkeypatch.setattr(render, "templates_dir", lambda: tmp_path)
    with pytest.raises(ReportError, match="undefined"):
        _page(seed_records())


def test_one_number_format_for_every_figure_and_parameters_as_written():
    """Issue #31: the page mixed 17,209.4 / 4,779.52 / 822.904 and wrote input_len=1,024."""
    from autobench.report.render import num, plain

    assert [str(num(v)) for v in (17209.4, 4779.52, 822.904, 115.66, 0.5)] == [
        "17,209",
        "4,779.5",
        "822.9",
        "115.66",
        "0.5",
    ]
    assert str(num(17209.4, 1)) == str(num(17209.4))  # the by-cell table's figures: the same format
    assert str(plain(1024)) == "1024" and str(plain(1024.0)) == "1024" and str(plain(None)) == "—"

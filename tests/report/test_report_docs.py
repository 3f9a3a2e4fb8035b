"""The committed pages under docs/ are rendered from the committed ledger.db: fail when stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.report.pages import RecipeFiles, check_outputs, load_runs, plan_outputs

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
BASE = "qwen3-5-122b-a10b-vllm-int4-autoround"
DFLASH = "qwen3-5-122b-a10b-vllm-int4-autoround-dflash"
RERENDER = "autobench report --index --ledger ledger.db -o docs   (from the repository root)"


@pytest.fixture(scope="module")
def outputs():
    runs = load_runs(str(REPO / "ledger.db"))
    return plan_outputs(runs, [], DOCS, index=True, plots=True, recipes=RecipeFiles(REPO / "recipes"))


def test_committed_pages_are_fresh(outputs):
    stale = check_outputs(outputs)
    assert not stale, "stale pages; re-render with:\n  " + RERENDER + "\n" + "\n".join(stale)


def test_the_seed_dflash_page_states_the_seed(outputs):
    page = next(o.text for o in outputs if o.path.name == f"{DFLASH}.md")
    flat = " ".join(page.split())
    for fact in (
        "prefill 115.66 tok/s",
        "decode 107.43 tok/s",
        "385 completed",
        "0 errors",
        "hit the time cap at 915 s",
        "TTFT median 681 ms",
        "TPOT median 67.5 ms",
        f"**1.26× decode** vs `{BASE}`: 85.5 → 107.43 tok/s at concurrency 8",
        "(baseline [run 1](qwen3-5-122b-a10b-vllm-int4-autoround.md#run-1), this recipe [run 3](#run-3))",
        "| 0.78 | 0.56 | 0.39 | 0.29 | 0.21 |",
        "| KV cache tokens | 800,129 tokens |",
        "| model weights | 63.71 GiB |",
        "| attention block size | 2,144 tokens |",
        "| CUDA graph pool | 0.3 GiB |",
        "| KV cache | 27.72 GiB |",
        "| model load time | 463 s |",
    ):
        assert fact in flat, fact
    blocked = next(ln for ln in page.splitlines() if ln.startswith('| <a id="run-2"></a>'))
    assert "| BLOCKED |" in blocked and "| bce6f76 |" in blocked
    assert "page_size_bytes == max_page_size" in blocked


def test_the_index_lists_both_recipes(outputs):
    index = next(o.text for o in outputs if o.path.name == "index.md")
    rows = [ln for ln in index.splitlines() if ln.startswith("| [")]
    assert [r.split("]")[0][3:] for r in rows] == [BASE, DFLASH]
    assert "1.26×" in rows[1]

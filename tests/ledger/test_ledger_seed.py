"""The committed ledger.db is exactly what the seed script builds, states the seed's
facts (and nothing it does not state), and answers ``history --draft`` on a fresh clone."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from autobench.ledger import open_ledger
from autobench.ledger.migrations import LATEST
from autobench.ledger.models import V3_BOOT_KEYS
from autobench.ledger.seed import DRAFT, DRAFT_BAD, DRAFT_GOOD, build

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "ledger.db"


def _rows(path: Path) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT * FROM runs ORDER BY id").fetchall()
    finally:
        con.close()


def test_committed_ledger_equals_the_seed_build(tmp_path):
    built = build(tmp_path / "seed.db")
    assert _rows(COMMITTED) == _rows(built)
    assert len(_rows(built)) == 3
    with open_ledger(COMMITTED, create=False) as book:
        assert book.verify().ok
    con = sqlite3.connect(f"file:{COMMITTED}?mode=ro", uri=True)
    version = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
    con.close()
    assert version == LATEST, "rebuild it: python -m autobench.ledger.seed ledger.db --force"


def test_seed_states_what_the_page_states():
    with open_ledger(COMMITTED, create=False) as book:
        base, blocked, done = book.runs()
    assert (base.recipe_name, base.status) == ("qwen3-5-122b-a10b-vllm-int4-autoround", "DONE")
    assert (base.metrics["decode_tok_s"], base.metrics["concurrency"], base.metrics["errors"]) == (85.5, 8, 0)
    # Not stated by the seed: unknown, never invented.
    assert base.model_sha is None and base.started_at is None and base.image is None
    assert base.metrics["prefill_tok_s"] is None and base.recipe_snapshot is None

    assert (blocked.status, blocked.draft_repo, blocked.draft_sha) == ("BLOCKED", DRAFT, DRAFT_BAD)
    assert blocked.started_at == "2026-06-23" and blocked.root_cause_category == "assertion"
    assert blocked.root_cause_message == (
        "assert page_size_bytes == max_page_size at kv_cache_utils.py:1077 in get_kv_cache_groups"
    )
    assert (blocked.boot["attention_block_size"], blocked.boot["mamba_padding_pct"]) == (2192, 0.55)

    assert (done.status, done.draft_sha, done.started_at, done.supersedes) == ("DONE", DRAFT_GOOD, "2026-06-24", 2)
    m, b = done.metrics, done.boot
    assert (m["prefill_tok_s"], m["decode_tok_s"], m["completed"], m["errors"]) == (115.66, 107.43, 385, 0)
    assert (m["time_cap_hit"], m["duration_s"], m["ttft_median_ms"], m["tpot_median_ms"]) == (True, 915, 681, 67.5)
    assert m["spec_acceptance_length"] == 3.2 and "3.2-3.3" in done.notes
    assert m["spec_per_position"] == [0.78, 0.56, 0.39, 0.29, 0.21] and m["spec_draft_acceptance_rate"] == 0.44
    assert (b["kv_cache_tokens"], b["kv_cache_gib"], b["max_concurrency"], b["max_concurrency_tokens"]) == (
        800129,
        27.72,
        3.05,
        262144,
    )
    assert (b["model_load_gib"], b["model_load_s"], b["attention_block_size"]) == (63.71, 463, 2144)
    assert (b["architecture"], b["attention_backend"], b["linear_kernel"], b["moe_backend"]) == (
        "DFlashDraftModel",
        "FLASH_ATTN",
        "MarlinLinearKernel",
        "MARLIN WNA16",
    )
    assert b["vllm_version"] == "0.23.1" and done.image == "vllm/vllm-openai:nightly-aarch64"
    assert done.model_sha is None and "HF_TOKEN=***" in done.script_snapshot
    assert b["cuda_graph_gib"] == 0.3 and b["mamba_padding_pct"] is None
    # The v3 boot facts the page does not state stay unknown on every run.
    stated = {(2, "mamba_padding_pct"), (3, "cuda_graph_gib")}
    for run in (base, blocked, done):
        for key in V3_BOOT_KEYS:
            if (run.id, key) not in stated:
                assert run.boot[key] is None, (run.id, key)


@pytest.mark.integration
def test_seed_script_refuses_to_overwrite(tmp_path):
    target = tmp_path / "x.db"
    target.write_text("keep me")
    proc = subprocess.run([sys.executable, "-m", "autobench.ledger.seed", str(target)], capture_output=True, text=True)
    assert proc.returncode == 4 and "refusing to overwrite" in proc.stderr
    assert target.read_text() == "keep me"


@pytest.mark.integration
def test_history_draft_answers_on_a_fresh_clone(tmp_path):
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy2(COMMITTED, clone / "ledger.db")  # what a clone has: the committed file alone
    proc = subprocess.run(
        [sys.executable, "-m", "autobench", "history", "--draft", DRAFT],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert DRAFT_BAD in proc.stdout and DRAFT_GOOD in proc.stdout
    assert "page_size_bytes == max_page_size" in proc.stdout
    assert sorted(p.name for p in clone.iterdir()) == ["ledger.db"]  # a query leaves no WAL behind

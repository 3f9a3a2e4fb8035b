"""Every corpus excerpt (real vLLM logs posted publicly, plus the seed's own lines)
parses to exactly the facts its sidecar lists; every other fact stays None."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.logs import CATEGORIES, parse_log
from autobench.logs.facts import BOOT_KEYS

CORPUS = Path(__file__).parent / "corpus"
LOGS = sorted(CORPUS.glob("*.log"))


def _meta(log: Path) -> dict:
    return json.loads(log.with_suffix(".json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_excerpt_states_exactly_its_expected_facts(log: Path) -> None:
    expected = _meta(log)["expected"]
    got = parse_log(log).to_json_dict()
    for key in BOOT_KEYS:
        default = False if key == "ready" else None
        assert got[key] == expected["facts"].get(key, default), key
    assert got["lines"] == expected["lines"]
    assert got["root_cause"] == expected["root_cause"]
    assert got["stats"] == expected["stats"]
    assert got["spec_decode"] == expected["spec_decode"]
    json.dumps(got)  # JSON-safe


def test_corpus_has_30_real_excerpts_with_sources() -> None:
    real = [p for p in LOGS if not p.stem.startswith("9")]
    assert len(real) >= 30
    for log in real:
        meta = _meta(log)
        assert meta["source"].startswith("https://github.com/"), log.name
        assert meta["title"] and meta["vllm"]


def test_corpus_spans_v0_and_v1_and_every_failure_category() -> None:
    generations = " ".join(_meta(p)["vllm"] for p in LOGS)
    assert "V0" in generations and "V1" in generations
    seen = {(_meta(p)["expected"]["root_cause"] or {}).get("category") for p in LOGS}
    assert set(CATEGORIES) <= seen, set(CATEGORIES) - seen


def test_seed_done_boot_facts() -> None:
    r = parse_log(CORPUS / "900_seed-done-qwen35-dflash.log")
    assert (r.kv_cache_tokens, r.max_concurrency, r.max_concurrency_tokens) == (800_129, 3.05, 262_144)
    assert (r.model_load_gib, r.model_load_s) == (63.71, 463.0)
    assert r.attention_block_size == 2144 and r.architecture == "DFlashDraftModel"
    assert (r.linear_kernel, r.moe_backend, r.attention_backend) == ("MarlinLinearKernel", "MARLIN WNA16", "FLASH_ATTN")
    assert r.ready and r.root_cause is None


def test_seed_blocked_root_cause_is_the_assert_not_the_wrapper() -> None:
    r = parse_log(CORPUS / "901_seed-blocked-page-size-assert.log")
    assert not r.ready
    assert r.mamba_padding_pct == 0.55 and r.attention_block_size == 2192
    rc = r.root_cause
    assert rc is not None and rc.category == "assertion"
    assert rc.location == "kv_cache_utils.py:1077"
    assert "page_size_bytes == max_page_size" in rc.message
    assert "EngineCore failed to start" not in rc.message and not rc.generic

"""The KV budget arithmetic against real boot logs of the corpus (tests/logs/corpus).

From the logged "Available KV cache memory: X GiB" (printed to 0.01 GiB, so X +- 0.005 GiB), the
predicted blocks, "GPU KV cache size" tokens and "Maximum concurrency" must bracket what the boot
printed.  The seed's log is the hybrid + draft case; the others are attention-only models whose
excerpts do not name the model: their configs are the geometry the logged figures imply, written
as a Llama-architecture config (layers x KV heads x head dim), and the vLLM version is the one the
corpus entry states.  A mismatch of one block anywhere (page size, group size, rounding, the
tokens formula of the version) fails the test.
"""

from __future__ import annotations

from pathlib import Path

import preflight_configs as c
import pytest

from autobench.logs import parse_log
from autobench.preflight.budget import GIB, estimate, from_logged_memory
from autobench.preflight.geometry import geometry
from autobench.preflight.layout import ServeOptions, plan_layout
from autobench.preflight.versions import parse_version, rules_for

CORPUS = Path(__file__).resolve().parents[1] / "logs" / "corpus"

CASES = [
    # log, target config, draft config, version, serve options beyond max_model_len
    (
        "900_seed-done-qwen35-dflash.log",
        c.qwen35_122b(),
        c.dflash_draft(4, 4, 2048),
        "0.23.1",
        {"enable_prefix_caching": True, "spec_method": "dflash", "num_speculative_tokens": 5},
    ),
    # 57,656 blocks x 16 at 40,000 tokens: 32 layers x 8 KV heads x 128 (Llama-3-8B geometry), bf16.
    ("050_v1-engine0-init.log", c.llama(), None, "0.10.1", {}),
    # 22 layers x 4 KV heads x 64 (TinyLlama-1.1B geometry; the log's weights are 2.05 GiB), bf16.
    ("003_v1-boot-model-loading-memory.log", c.llama(22, 4, 32, 2048, 32000), None, "0.11.0", {}),
    # GLM-4.1V-style text model: 40 layers x 2 KV heads x 128 (65,536-token requests), bf16.
    ("002_v1-boot-graph-capture-glmv.log", c.llama(40, 2, 32, 4096, 151552), None, "0.11.0", {}),
    # 32 layers x 32 KV heads x 128 (Llama-2-7B geometry, multi-head attention), bf16; a 0.21+ build.
    ("001_v1-boot-kv-lmcache.log", c.llama(32, 32, 32, 4096, 32000), None, "0.22.0", {}),
]


@pytest.mark.parametrize(("log", "target", "draft", "version", "serve"), CASES, ids=[x[0][:3] for x in CASES])
def test_logged_kv_memory_gives_the_logged_tokens_and_concurrency(log, target, draft, version, serve) -> None:
    facts = parse_log(CORPUS / log)
    assert facts.kv_cache_gib and facts.kv_cache_tokens and facts.max_concurrency and facts.max_concurrency_tokens
    max_len = facts.max_concurrency_tokens
    layout = plan_layout(
        geometry(target, "target"),
        geometry(draft, "draft") if draft else None,
        ServeOptions(max_model_len=max_len, **serve),
        rules_for(parse_version(version)),
    )
    assert layout.verdict.boots
    (lo, hi), (tok_lo, tok_hi) = from_logged_memory(layout, facts.kv_cache_gib, max_len)
    assert tok_lo <= facts.kv_cache_tokens <= tok_hi
    assert round(layout.concurrency(lo), 2) <= facts.max_concurrency <= round(layout.concurrency(hi), 2)


def test_seed_log_pins_the_block_count_exactly() -> None:
    facts = parse_log(CORPUS / "900_seed-done-qwen35-dflash.log")
    layout = plan_layout(
        geometry(c.qwen35_122b(), "t"),
        geometry(c.dflash_draft(4, 4, 2048), "d"),
        ServeOptions(max_model_len=262144, enable_prefix_caching=True, spec_method="dflash", num_speculative_tokens=5),
        rules_for(parse_version("0.23.1")),
    )
    assert facts.attention_block_size == layout.block_size == 2144
    assert from_logged_memory(layout, 27.72, 262144)[0] == (1694, 1694)


def test_seed_memory_estimate_brackets_the_boot_and_states_its_band() -> None:
    """The full estimate (GPU memory x utilization - weights - allowance) on the seed's GB10: the
    logged 27.72 GiB and 1,694 blocks fall inside the stated range."""
    layout = plan_layout(
        geometry(c.qwen35_122b(), "t"),
        geometry(c.dflash_draft(4, 4, 2048), "d"),
        ServeOptions(max_model_len=262144, enable_prefix_caching=True, spec_method="dflash", num_speculative_tokens=5),
        rules_for(parse_version("0.23.1")),
    )
    weights = 15 * c.BASE_SHARD_BYTES + c.DRAFT_BYTES
    b = estimate(
        layout,
        gpu_memory=119.7,
        utilization=0.85,
        weights_bytes=weights,
        tensor_parallel_size=1,
        max_model_len=262144,
        max_num_batched_tokens=32768,
    )
    assert abs(b.weights_gib - 63.71) < 0.2  # the log: "Model loading took 63.71 GiB"
    assert b.allowance_gib == (1.0, 11.6)
    assert b.available_gib[0] <= 27.72 <= b.available_gib[1]
    assert b.num_blocks[0] <= 1694 <= b.num_blocks[1] and b.fits == "yes"


def test_max_model_len_that_cannot_fit_is_a_predicted_failure() -> None:
    """A 24 GiB card with 16 GiB of weights cannot hold one 1M-token request of Llama-3-8B."""
    layout = plan_layout(
        geometry(c.llama(), "t"), None, ServeOptions(max_model_len=1_048_576), rules_for(parse_version("0.23.1"))
    )
    b = estimate(
        layout,
        gpu_memory=23.6,
        utilization=0.9,
        weights_bytes=int(14.96 * GIB),
        tensor_parallel_size=1,
        max_model_len=1_048_576,
        max_num_batched_tokens=8192,
    )
    assert b.fits == "no" and b.num_blocks[1] < layout.blocks_per_request

"""The layout arithmetic beyond the seed: a Nemotron-H (Mamba2) hybrid, a plain Llama, fp8 KV cache,
tensor parallel > 1, sliding-window draft layers and 0.25's DFlash refusal (pure functions over the
config documents in configs.py; the CLI path is covered by the seed and bad-input tests)."""

from __future__ import annotations

import preflight_configs as c
import pytest

from autobench.errors import PreflightError
from autobench.preflight.geometry import geometry
from autobench.preflight.layout import ServeOptions, plan_layout
from autobench.preflight.versions import parse_version, rules_for


def _plan(target: dict, draft: dict | None = None, version: str = "0.23.1", **serve):
    opts = ServeOptions(**serve)
    d = geometry(draft, "draft") if draft is not None else None
    return plan_layout(geometry(target, "target"), d, opts, rules_for(parse_version(version)))


def test_nemotron_h_mamba2_hybrid() -> None:
    # Mamba2 state: conv (128*64 + 2*8*128) x 3 x 2 B = 61,440; ssm 128 x 64 x 128 x 2 B = 2,097,152.
    lay = _plan(c.nemotron_h_8b(), max_model_len=8192, enable_prefix_caching=False)
    assert lay.layer_counts == {"target mamba": 24, "target full": 4}
    assert lay.mamba_state_bytes == 2_158_592 and lay.attention_page_per_token == 4096
    assert lay.block_size == 528 and round(lay.mamba_padding_pct or 0, 2) == 0.19
    assert lay.verdict.status == "ok" and lay.mamba_cache_mode == "none"
    # 4 full-attention layers and 24 Mamba2 layers: groups of 4 -> 1 + 6 groups; 16 + 6 x 1 blocks.
    assert (len(lay.groups), lay.group_size, lay.blocks_per_request) == (7, 4, 22)


def test_nemotron_h_with_prefix_caching_uses_align_mode() -> None:
    lay = _plan(c.nemotron_h_8b(), max_model_len=8192, enable_prefix_caching=True)
    assert lay.mamba_cache_mode == "align" and lay.blocks_per_request == 16 + 6 * 2


def test_nemotron_h_tensor_parallel_2_halves_heads_and_state() -> None:
    lay = _plan(c.nemotron_h_8b(), max_model_len=8192, tensor_parallel_size=2, enable_prefix_caching=False)
    assert lay.attention_page_per_token == 2048 and lay.mamba_state_bytes == 1_079_296
    assert lay.block_size == 528


def test_plain_llama_is_one_group_and_trivially_fine() -> None:
    lay = _plan(c.llama(), max_model_len=40000)
    assert lay.verdict.status == "ok" and "uniform" in lay.verdict.mirrors
    assert lay.block_size == 16 and not lay.block_size_raised and lay.mamba_padding_pct is None
    assert (len(lay.groups), lay.blocks_per_request, lay.memory_per_block) == (1, 2500, 32 * 16 * 4096)


def test_plain_llama_fp8_kv_cache_halves_the_page() -> None:
    lay = _plan(c.llama(), max_model_len=40000, kv_cache_dtype="fp8")
    assert lay.kv_dtype == "fp8" and lay.memory_per_block == 32 * 16 * 2048


def test_seed_with_fp8_kv_cache_doubles_the_block() -> None:
    # P = 2 x 2 x 256 x 1 = 1,024 B: B = 16 * cdiv(4,390,912, 16,384) = 4288, still no padding.
    lay = _plan(
        c.qwen35_122b(),
        c.dflash_draft(4, 4, 2048),
        max_model_len=262144,
        kv_cache_dtype="fp8_e4m3",
        enable_prefix_caching=True,
        spec_method="dflash",
        num_speculative_tokens=5,
    )
    assert lay.block_size == 4288 and lay.mamba_padding_pct is None and lay.verdict.status == "ok"
    assert lay.blocks_per_request == 3 * 62 + 9 * 7 + 62


def test_sliding_window_draft_layers_are_their_own_groups_before_025() -> None:
    mixed = ["sliding_attention", "full_attention"] * 2
    lay = _plan(
        c.qwen35_122b(),
        c.dflash_draft(4, 4, 2048, layer_types=mixed),
        max_model_len=262144,
        max_num_batched_tokens=32768,
        enable_prefix_caching=True,
        spec_method="dflash",
        num_speculative_tokens=5,
    )
    assert lay.verdict.status == "ok" and lay.group_size == 2
    # sliding: cdiv(2048 - 1 + 32768, 2144) + 1 = 18 blocks; 6 x 123 + 18 x 7 + 123 + 18.
    assert lay.blocks_per_request == 6 * 123 + 18 * 7 + 123 + 18


def test_025_refuses_a_dflash_draft_mixing_sliding_and_full_layers() -> None:
    mixed = ["sliding_attention", "full_attention"] * 2
    lay = _plan(
        c.qwen35_122b(),
        c.dflash_draft(4, 4, 2048, layer_types=mixed),
        version="0.25.0",
        max_model_len=262144,
        enable_prefix_caching=True,
        spec_method="dflash",
        num_speculative_tokens=5,
    )
    assert lay.verdict.status == "refused" and "2 sliding + 2 full" in lay.verdict.message


def test_a_draft_page_that_does_not_divide_is_not_implemented() -> None:
    # 3 KV heads x 128: 1,536 B per token; 2144 x 1,536 does not divide the 4,390,912-byte page.
    lay = _plan(
        c.qwen35_122b(),
        c.dflash_draft(3, 4, 2048),
        max_model_len=262144,
        enable_prefix_caching=True,
        spec_method="dflash",
        num_speculative_tokens=5,
    )
    assert lay.verdict.status == "not_implemented" and "NotImplementedError" in lay.verdict.message


def test_mtp_layers_join_as_full_attention() -> None:
    lay = _plan(
        c.qwen35_122b(), max_model_len=262144, enable_prefix_caching=True, spec_method="mtp", num_speculative_tokens=2
    )
    assert lay.layer_counts["mtp full"] == 1 and lay.verdict.status == "ok"


def test_tensor_parallel_that_does_not_divide_the_heads_cannot_be_predicted() -> None:
    with pytest.raises(PreflightError, match="does not divide by tensor_parallel_size 3"):
        _plan(c.qwen35_122b(), max_model_len=262144, tensor_parallel_size=3)

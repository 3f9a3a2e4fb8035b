"""config.json documents for the preflight tests: fields only (no weights), modelled on the public
configs of the models named below.  Only the fields vLLM's KV-cache layout reads, plus the usual
neighbours, are written; values follow the public configs (and issue 20's summary of them).
"""

from __future__ import annotations

import json
from typing import Any

# Shas: the seed's two DFlash draft commits; the rest are made-up fixed commits of the fake Hub.
DRAFT_REPO = "z-lab/Qwen3.5-122B-A10B-DFlash"
DRAFT_OLD = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
DRAFT_NEW = "bce6f76cef2027552bed4a8a1bc9c449def48f05"
BASE_REPO = "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC"
BASE_SHA = "9e1d0c3b2a4f5e6d7c8b9a0f1e2d3c4b5a697887"
NEMOTRON_REPO = "nvidia/Nemotron-H-8B-Base-8K"
NEMOTRON_SHA = "a1111111111111111111111111111111111111b1"
LLAMA_REPO = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_SHA = "c2222222222222222222222222222222222222d2"
OTHER_VOCAB_DRAFT = "someone/draft-other-vocab"
MIXED_DRAFT = "someone/dflash-mixed-sliding"
UNCOVERED_REPO = "someone/rwkv-model"
NOFIELD_REPO = "someone/qwen35-without-gdn-dims"
FILLER_SHA = "e3333333333333333333333333333333333333f3"

# The seed's weights: 15 shards, ~67 GB (the seed page); the draft 1.55 GB.
BASE_SHARD_BYTES = 4_466_000_000
DRAFT_BYTES = 1_550_000_000


def dump(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def qwen35_122b(**text_overrides: Any) -> dict[str, Any]:
    """Qwen3.5-122B-A10B (int4 AutoRound repack): the text_config fields of the public config."""
    text = {
        "model_type": "qwen3_5_moe_text",
        "attention_bias": False,
        "attn_output_gate": True,
        "dtype": "bfloat16",
        "full_attention_interval": 4,
        "head_dim": 256,
        "hidden_act": "silu",
        "hidden_size": 3072,
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 12,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 64,
        "linear_value_head_dim": 128,
        "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 262144,
        "moe_intermediate_size": 1024,
        "mtp_num_hidden_layers": 1,
        "num_attention_heads": 32,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 48,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06,
        "shared_expert_intermediate_size": 1024,
        "vocab_size": 248320,
    }
    text.update(text_overrides)
    return {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "model_type": "qwen3_5_moe",
        "image_token_id": 248056,
        "quantization_config": {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True},
        "text_config": text,
        "tie_word_embeddings": False,
        "transformers_version": "4.57.0",
        "vision_config": {"depth": 27, "hidden_size": 1152, "model_type": "qwen3_5_moe"},
    }


def dflash_draft(
    kv_heads: int, layers: int, window: int, *, layer_types: list[str] | None = None, vocab: int = 248320
) -> dict[str, Any]:
    """z-lab DFlash drafter (Qwen3-style draft config): 6c7242c = (4, 4, 2048), bce6f76 = (8, 6, 4096)."""
    cfg: dict[str, Any] = {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "attention_bias": False,
        "block_size": 16,
        "dflash_config": {"mask_token_id": 248070, "target_layer_ids": [1, 12, 23, 34, 45]},
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 3072,
        "intermediate_size": 9728,
        "max_position_embeddings": 262144,
        "max_window_layers": layers,
        "num_attention_heads": 32,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
        "num_target_layers": 48,
        "rms_norm_eps": 1e-06,
        "sliding_window": window,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": vocab,
    }
    if layer_types is not None:
        cfg["layer_types"] = layer_types
        cfg["use_sliding_window"] = True
    return cfg


def nemotron_h_8b() -> dict[str, Any]:
    """Nemotron-H-8B-Base-8K: Mamba2 + attention (+ MLP) layers in hybrid_override_pattern."""
    pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
    assert len(pattern) == 52
    return {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "attention_head_dim": 128,
        "chunk_size": 128,
        "conv_kernel": 4,
        "expand": 2,
        "head_dim": 128,
        "hidden_size": 4096,
        "hybrid_override_pattern": pattern,
        "intermediate_size": 21504,
        "mamba_head_dim": 64,
        "mamba_num_heads": 128,
        "max_position_embeddings": 8192,
        "n_groups": 8,
        "num_attention_heads": 32,
        "num_hidden_layers": 52,
        "num_key_value_heads": 8,
        "ssm_state_size": 128,
        "torch_dtype": "bfloat16",
        "vocab_size": 131072,
    }


def llama(
    layers: int = 32, kv_heads: int = 8, heads: int = 32, hidden: int = 4096, vocab: int = 128256
) -> dict[str, Any]:
    """Llama-3.1-8B geometry by default; other Llama-architecture shapes by argument."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_act": "silu",
        "hidden_size": hidden,
        "intermediate_size": 14336,
        "max_position_embeddings": 131072,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
        "rms_norm_eps": 1e-05,
        "torch_dtype": "bfloat16",
        "vocab_size": vocab,
    }


def index(total: int, shards: int) -> dict[str, Any]:
    return {
        "metadata": {"total_size": total},
        "weight_map": {f"layers.{i}": f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)},
    }

"""Architecture fingerprint of a model from its config.json (pure; no I/O).

The fields that decide whether a checkpoint fits an engine's KV-cache layout: architectures,
model_type, layers, attention and KV heads, head dim, hidden size, sliding window, the layer types
of hybrid models (counted, e.g. {"full_attention": 12, "linear_attention": 36}) and the
quantization method and bits.  Multimodal configs keep the language model under ``text_config``
(or ``language_config`` / ``llm_config``); geometry is read there when the top level lacks it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

NESTED_TEXT_KEYS = ("text_config", "language_config", "llm_config")
GEOMETRY_KEYS = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "hidden_size",
    "sliding_window",
    "layer_types",
)


def text_config(config: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    for key in NESTED_TEXT_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict):
            return key, nested
    return None, {}


def _pick(config: dict[str, Any], nested: dict[str, Any], key: str) -> Any:
    value = config.get(key)
    return nested.get(key) if value is None else value


def summarize_layer_types(layer_types: Any) -> dict[str, int] | None:
    if not isinstance(layer_types, list) or not layer_types:
        return None
    return dict(sorted(Counter(str(t) for t in layer_types).items()))


def _bits(q: dict[str, Any]) -> int | None:
    for key in ("bits", "weight_bits", "w_bit", "num_bits"):
        value = q.get(key)
        if isinstance(value, int):
            return value
    groups = q.get("config_groups")  # compressed-tensors
    if isinstance(groups, dict):
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, dict) else None
            bits = weights.get("num_bits") if isinstance(weights, dict) else None
            if isinstance(bits, int):
                return bits
    if str(q.get("quant_method", "")).lower() == "fp8":
        return 8
    return None


def quantization(config: dict[str, Any]) -> dict[str, Any] | None:
    _, nested = text_config(config)
    q = config.get("quantization_config") or nested.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = q.get("quant_method") or q.get("quantization_method") or q.get("method")
    return {"method": str(method) if method is not None else None, "bits": _bits(q)}


def fingerprint(config: dict[str, Any]) -> dict[str, Any]:
    """The architecture fingerprint (a flat, JSON-able dict; absent facts are None)."""
    nested_key, nested = text_config(config)
    fp: dict[str, Any] = {
        "architectures": config.get("architectures") or nested.get("architectures"),
        "model_type": config.get("model_type") or nested.get("model_type"),
        "text_config": nested_key,
    }
    for key in GEOMETRY_KEYS:
        if key != "layer_types":
            fp[key] = _pick(config, nested, key)
    fp["head_dim_source"] = "config" if fp["head_dim"] is not None else None
    heads, hidden = fp["num_attention_heads"], fp["hidden_size"]
    if fp["head_dim"] is None and isinstance(heads, int) and isinstance(hidden, int) and heads > 0:
        fp["head_dim"] = hidden // heads
        fp["head_dim_source"] = "hidden_size/num_attention_heads"
    fp["layer_types"] = summarize_layer_types(_pick(config, nested, "layer_types"))
    fp["quantization"] = quantization(config)
    return fp


def describe(fp: dict[str, Any]) -> str:
    """One line for people: 'DFlashDraftModel qwen3 L4 kv4 hd128 h3072 sw2048'."""
    parts = [",".join(fp.get("architectures") or []) or "?", fp.get("model_type") or "?"]
    for key, tag in (
        ("num_hidden_layers", "L"),
        ("num_key_value_heads", "kv"),
        ("head_dim", "hd"),
        ("hidden_size", "h"),
        ("sliding_window", "sw"),
    ):
        if fp.get(key) is not None:
            parts.append(f"{tag}{fp[key]}")
    if fp.get("layer_types"):
        parts.append("layers[" + " ".join(f"{k}×{v}" for k, v in fp["layer_types"].items()) + "]")
    q = fp.get("quantization")
    if q:
        parts.append(f"{q.get('method')}" + (f"-{q['bits']}bit" if q.get("bits") else ""))
    return " ".join(parts)

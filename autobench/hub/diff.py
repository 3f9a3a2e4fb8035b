"""Field-by-field difference of two config.json files (pure).

Configs are flattened to dotted paths (``text_config.num_key_value_heads``); lists are compared
whole.  A change to attention/KV geometry is BREAKING: an engine sizes its KV cache pages from
these, so a draft or model whose geometry moved can stop fitting (the seed's DFlash failure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autobench.hub.fingerprint import fingerprint, summarize_layer_types

# Leaf key names whose change breaks KV-cache / attention geometry, at any nesting depth.
BREAKING_KEYS = frozenset(
    {
        "num_key_value_heads",
        "num_attention_heads",
        "head_dim",
        "num_hidden_layers",
        "sliding_window",
        "layer_types",
        "use_sliding_window",
        "max_window_layers",
        "sliding_window_pattern",
        "full_attention_interval",
        "layers_block_type",
        "hybrid_override_pattern",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
    }
)
MISSING = "<absent>"


@dataclass(frozen=True)
class Change:
    field: str
    old: Any
    new: Any
    breaking: bool

    def to_json(self) -> dict[str, Any]:
        """JSON form; an absent side is null and listed in "absent" ("old" or "new")."""
        data: dict[str, Any] = {
            "field": self.field,
            "breaking": self.breaking,
            "old": None if self.old is _ABSENT else self.old,
            "new": None if self.new is _ABSENT else self.new,
        }
        absent = [k for k in ("old", "new") if getattr(self, k) is _ABSENT]
        if absent:
            data["absent"] = absent[0]
        return data


class _Absent:
    def __repr__(self) -> str:
        return MISSING


_ABSENT = _Absent()
ABSENT = _ABSENT  # the side of a change that lacks the field


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(config, dict):
        out: dict[str, Any] = {}
        for key, value in config.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        if not config and prefix:
            out[prefix] = {}
        return out
    return {prefix: config}


def is_breaking(path: str) -> bool:
    return path.rsplit(".", 1)[-1] in BREAKING_KEYS


def diff_configs(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Changed, added and removed fields, sorted: breaking first, then by path."""
    a, b = flatten(old), flatten(new)
    changes = [
        Change(path, a.get(path, _ABSENT), b.get(path, _ABSENT), is_breaking(path))
        for path in sorted(set(a) | set(b))
        if a.get(path, _ABSENT) != b.get(path, _ABSENT)
    ]
    # A head dim derived from hidden_size / num_attention_heads can move without a head_dim key.
    fa, fb = fingerprint(old), fingerprint(new)
    if fa["head_dim"] != fb["head_dim"] and not any(c.field.endswith("head_dim") for c in changes):
        changes.append(Change("head_dim (derived)", fa["head_dim"], fb["head_dim"], True))
    return sorted(changes, key=lambda c: (not c.breaking, c.field))


def show(value: Any) -> str:
    if value is _ABSENT:
        return MISSING
    if isinstance(value, list) and len(value) > 6:
        counts = summarize_layer_types(value) or {}
        return f"[{len(value)} items: " + ", ".join(f"{k}×{v}" for k, v in counts.items()) + "]"
    return repr(value) if isinstance(value, str) else str(value)

"""config.json -> the cache geometry of a model: one layer kind per layer and the sizes they need.

Layer kinds, named after the vLLM KV-cache spec each one becomes:

    full      full attention            FullAttentionSpec
    sliding   sliding-window attention  SlidingWindowSpec
    gdn       Gated DeltaNet (Qwen3.5 / Qwen3-Next linear attention)   MambaSpec
    mamba2    Mamba2 mixer (Nemotron-H)                                 MambaSpec

Only fields a rule needs are read, and a missing one is an error naming the field, never a
default guessed on the user's behalf (``PreflightError``).  Multimodal configs keep the language
model under ``text_config``; that is where the geometry is read from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autobench.errors import PreflightError

DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_ds_mla": 1,
    "int8": 1,
}

# Architectures whose layers preflight knows how to map (the rest: "not covered", never a guess).
GDN_ARCHS = {
    "Qwen3NextForCausalLM",
    "Qwen3_5ForCausalLM",
    "Qwen3_5MoeForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
}
MAMBA2_ARCHS = {"NemotronHForCausalLM"}
ATTENTION_ARCHS = {
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Glm4ForCausalLM",
    "Glm4vForConditionalGeneration",
    "DFlashDraftModel",
    "EagleLlamaForCausalLM",
    "Eagle3LlamaForCausalLM",
    "LlamaForCausalLMEagle3",
}
COVERED = GDN_ARCHS | MAMBA2_ARCHS | ATTENTION_ARCHS


@dataclass(frozen=True)
class GdnDims:
    """Gated DeltaNet state dimensions (whole model, before tensor parallelism)."""

    num_k_heads: int
    num_v_heads: int
    k_head_dim: int
    v_head_dim: int
    conv_kernel: int
    ssm_dtype: str  # recurrent state dtype; the conv state uses the model dtype


@dataclass(frozen=True)
class Mamba2Dims:
    num_heads: int
    head_dim: int
    n_groups: int
    state_size: int
    conv_kernel: int
    ssm_dtype: str


@dataclass(frozen=True)
class Geometry:
    """What the KV-cache layout of one model depends on."""

    source: str  # repo@sha or a folder
    architecture: str
    kinds: tuple[str, ...]  # one per layer: full | sliding | gdn | mamba2 (layers without a cache are left out)
    num_kv_heads: int
    head_dim: int
    sliding_window: int | None
    dtype: str
    vocab_size: int | None
    hidden_size: int | None
    gdn: GdnDims | None = None
    mamba2: Mamba2Dims | None = None
    mtp_layers: int = 0

    @property
    def num_layers(self) -> int:
        return len(self.kinds)

    def count(self, kind: str) -> int:
        return sum(k == kind for k in self.kinds)

    @property
    def is_hybrid(self) -> bool:
        return any(k in ("gdn", "mamba2") for k in self.kinds)


def dtype_bytes(name: str, *, what: str) -> int:
    key = name.lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise PreflightError(
            f"cannot predict: {what} {name!r} is not a dtype preflight knows",
            hint=f"use one of {', '.join(sorted(DTYPE_BYTES))}",
        )
    return DTYPE_BYTES[key]


def _text(config: dict[str, Any]) -> dict[str, Any]:
    text = config.get("text_config")
    if isinstance(text, dict):
        merged = {k: v for k, v in config.items() if k != "text_config"}
        merged.update(text)
        return merged
    return config


def _need(cfg: dict[str, Any], source: str, *names: str) -> Any:
    """The first of ``names`` present in cfg, else a PreflightError naming the missing field."""
    for name in names:
        value = cfg.get(name)
        if value is not None:
            return value
    raise PreflightError(
        f"cannot predict: {source} config.json has no {' / '.join(names)}, which the page-size rule needs",
        hint="pin a revision whose config.json states it, or pass a complete config folder",
    )


def _int(cfg: dict[str, Any], source: str, *names: str) -> int:
    value = _need(cfg, source, *names)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise PreflightError(
            f"cannot predict: {source} config.json field {names[0]} = {value!r} is not a positive integer",
            hint="fix the config.json at that revision",
        )
    return value


def _attention_kinds(cfg: dict[str, Any], source: str, n: int) -> tuple[str, ...]:
    """full / sliding per layer, from layer_types or the Qwen/Mistral sliding-window fields."""
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != n:
            raise PreflightError(
                f"cannot predict: {source} config.json lists {len(layer_types)} layer_types for {n} layers",
                hint="fix the config.json at that revision",
            )
        out = []
        for t in layer_types:
            if t == "full_attention":
                out.append("full")
            elif t == "sliding_attention":
                out.append("sliding")
            else:
                raise PreflightError(
                    f"cannot predict: {source} layer type {t!r} is not covered by preflight",
                    hint="preflight covers full_attention, sliding_attention, linear_attention and Mamba2 layers",
                )
        return tuple(out)
    window = cfg.get("sliding_window")
    if window is None or cfg.get("use_sliding_window") is False:
        return ("full",) * n
    # Qwen2/3 style: sliding from max_window_layers on; Mistral style (no such field): all sliding.
    first = cfg.get("max_window_layers", 0) if "use_sliding_window" in cfg else 0
    return tuple("sliding" if i >= first else "full" for i in range(n))


def _gdn_kinds(cfg: dict[str, Any], source: str, n: int) -> tuple[str, ...]:
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        if len(layer_types) != n:
            raise PreflightError(
                f"cannot predict: {source} config.json lists {len(layer_types)} layer_types for {n} layers",
                hint="fix the config.json at that revision",
            )
        kinds = {"linear_attention": "gdn", "full_attention": "full"}
        unknown = sorted({t for t in layer_types if t not in kinds})
        if unknown:
            raise PreflightError(
                f"cannot predict: {source} layer type {unknown[0]!r} is not covered by preflight",
                hint="preflight covers linear_attention and full_attention layers of Qwen3.5 / Qwen3-Next",
            )
        return tuple(kinds[t] for t in layer_types)
    interval = _int(cfg, source, "full_attention_interval")
    return tuple("full" if (i + 1) % interval == 0 else "gdn" for i in range(n))


def geometry(config: dict[str, Any], source: str, *, inherit_dtype: str | None = None) -> Geometry:
    """The cache geometry of the model a config.json describes, or a PreflightError saying why not.

    ``inherit_dtype``: a draft's.  vLLM builds a draft's model config with the target's dtype
    (``SpeculativeConfig.__post_init__``: ``ModelConfig(..., dtype=self.target_model_config.dtype,
    ...)``, vllm/config/speculative.py at vllm-project/vllm@002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443),
    so a draft config.json that states no ``torch_dtype`` is served in the target's."""
    if not isinstance(config, dict):
        raise PreflightError(f"cannot predict: {source} config.json is not a JSON object", hint="fix the file")
    archs = config.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs else None
    if arch is None:
        raise PreflightError(
            f"cannot predict: {source} config.json names no architectures",
            hint="pin a revision with a transformers-style config.json",
        )
    if arch not in COVERED:
        raise PreflightError(
            f"cannot predict: architecture {arch} ({source}) is not covered by preflight's layer rules",
            hint="covered: Qwen3.5 / Qwen3-Next (Gated DeltaNet), Nemotron-H (Mamba2), Llama/Qwen/Mistral-style "
            "attention, DFlash and EAGLE drafts; run without preflight (`run --force`) at your own risk",
        )
    cfg = _text(config)
    n = _int(cfg, source, "num_hidden_layers")
    stated = cfg.get("torch_dtype") or cfg.get("dtype")
    dtype = str(stated or inherit_dtype or _need(cfg, source, "torch_dtype", "dtype"))
    heads = _int(cfg, source, "num_attention_heads")
    kv_heads = _int(cfg, source, "num_key_value_heads") if "num_key_value_heads" in cfg else heads
    hidden = cfg.get("hidden_size")
    head_dim = cfg.get("head_dim")
    if head_dim is None:
        head_dim = _int(cfg, source, "hidden_size") // heads
    vocab = cfg.get("vocab_size")
    window = cfg.get("sliding_window") if isinstance(cfg.get("sliding_window"), int) else None
    gdn = mamba2 = None
    if arch in GDN_ARCHS:
        kinds = _gdn_kinds(cfg, source, n)
        gdn = GdnDims(
            num_k_heads=_int(cfg, source, "linear_num_key_heads"),
            num_v_heads=_int(cfg, source, "linear_num_value_heads"),
            k_head_dim=_int(cfg, source, "linear_key_head_dim"),
            v_head_dim=_int(cfg, source, "linear_value_head_dim"),
            conv_kernel=_int(cfg, source, "linear_conv_kernel_dim"),
            ssm_dtype=str(cfg.get("mamba_ssm_dtype") or dtype),
        )
        mtp = int(cfg.get("mtp_num_hidden_layers") or 0)
    elif arch in MAMBA2_ARCHS:
        pattern = str(_need(cfg, source, "hybrid_override_pattern"))
        if len(pattern) != n:
            raise PreflightError(
                f"cannot predict: {source} hybrid_override_pattern has {len(pattern)} letters for {n} layers",
                hint="fix the config.json at that revision",
            )
        # M = Mamba2 mixer, * = attention, - = MLP, E = MoE (the last two hold no cache).
        kinds = tuple({"M": "mamba2", "*": "full"}[c] for c in pattern if c in "M*")
        mamba2 = Mamba2Dims(
            num_heads=_int(cfg, source, "mamba_num_heads"),
            head_dim=_int(cfg, source, "mamba_head_dim"),
            n_groups=_int(cfg, source, "n_groups"),
            state_size=_int(cfg, source, "ssm_state_size"),
            conv_kernel=_int(cfg, source, "conv_kernel"),
            ssm_dtype=str(cfg.get("mamba_ssm_dtype") or dtype),
        )
        head_dim = cfg.get("attention_head_dim") or head_dim
        mtp = 0
    else:
        kinds = _attention_kinds(cfg, source, n)
        mtp = int(cfg.get("num_nextn_predict_layers") or 0)
    if any(k == "sliding" for k in kinds) and window is None:
        raise PreflightError(
            f"cannot predict: {source} has sliding-window layers but no sliding_window size",
            hint="fix the config.json at that revision",
        )
    return Geometry(
        source=source,
        architecture=arch,
        kinds=kinds,
        num_kv_heads=kv_heads,
        head_dim=int(head_dim),
        sliding_window=window if "sliding" in kinds else None,
        dtype=dtype,
        vocab_size=vocab if isinstance(vocab, int) else None,
        hidden_size=hidden if isinstance(hidden, int) else None,
        gdn=gdn,
        mamba2=mamba2,
        mtp_layers=mtp,
    )

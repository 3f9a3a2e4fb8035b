"""The KV-cache layout vLLM will build: layer specs -> attention block size -> unified pages -> groups.

Pure arithmetic over :class:`~autobench.preflight.geometry.Geometry` and the serve options, in the
order vLLM does it (see ``versions.py`` for the functions each step mirrors):

1. page per token of each attention layer: 2 x KV heads / TP x head dim x KV dtype bytes;
   state bytes of each mamba-like layer (Gated DeltaNet, Mamba2): conv + recurrent state;
2. hybrid models: attention block B = a * cdiv(M, a * P) and the mamba page padded to B * P;
3. one type only (e.g. all full attention): one group; otherwise unify the pages (scale the block
   of smaller pages; a mamba page cannot scale: assertion, NotImplementedError or padding by version);
4. group the layers (group size from the layer counts) and count blocks per request.

A verdict that vLLM raises is returned as data (``Layout.verdict``), never raised: the caller
prints it.  Inputs preflight cannot judge raise ``PreflightError``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from autobench.errors import PreflightError
from autobench.preflight.geometry import Geometry, dtype_bytes
from autobench.preflight.versions import Chosen

DRAFT_METHODS = {"dflash", "eagle", "eagle3", "draft_model"}
DEFAULT_BATCHED_TOKENS = 8192


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class ServeOptions:
    max_model_len: int
    tensor_parallel_size: int = 1
    dtype: str | None = None  # --dtype (None / auto: the config's)
    kv_cache_dtype: str | None = None  # --kv-cache-dtype (None / auto: the model dtype)
    block_size: int | None = None  # --block-size
    enable_prefix_caching: bool | None = None  # None: vLLM's default (on)
    max_num_batched_tokens: int | None = None
    spec_method: str | None = None
    num_speculative_tokens: int = 0


@dataclass(frozen=True)
class Spec:
    """One distinct KV-cache spec (vLLM groups layers whose specs are equal)."""

    kind: str  # full | sliding | mamba
    owner: str  # target | draft | mtp
    kv_heads: int = 0
    head_dim: int = 0
    per_token: int = 0  # attention: bytes per token per layer
    window: int | None = None
    raw_state: int = 0  # mamba: state bytes per layer before padding
    page: int = 0
    block_size: int = 0

    @property
    def label(self) -> str:
        if self.kind == "mamba":
            return f"{self.owner} mamba"
        extra = f", window {self.window}" if self.window else ""
        return f"{self.owner} {self.kind} attention ({self.kv_heads} KV heads x {self.head_dim}{extra})"


@dataclass(frozen=True)
class Group:
    spec: Spec
    layers: int  # real layers in this group (padding layers excluded)
    blocks_per_request: int


@dataclass(frozen=True)
class Verdict:
    status: str  # ok | padded | assertion | not_implemented | refused
    message: str
    mirrors: str  # the vLLM function the verdict mirrors
    fix: str | None = None

    @property
    def boots(self) -> bool:
        return self.status in ("ok", "padded")


@dataclass
class Layout:
    rules: str
    model_dtype: str
    kv_dtype: str
    layer_counts: dict[str, int]  # "target full" -> 12 ...
    attention_page_per_token: int | None  # the target's P
    mamba_state_bytes: int | None  # the largest raw mamba page M
    mamba_cache_mode: str | None
    block_size: int
    block_size_raised: bool
    mamba_padding_pct: float | None  # as vLLM logs it ("Padding mamba page size by x%")
    specs: list[Spec]  # after unification
    verdict: Verdict
    groups: list[Group] = field(default_factory=list)
    group_size: int = 1
    padding_layers: int = 0
    uniform_type: bool = False
    memory_per_block: int = 0  # bytes one block id costs across all layers of a group
    blocks_per_request: int = 0
    unify_waste_pct: float | None = None  # 0.33+: memory lost padding mamba pages to the largest page
    notes: list[str] = field(default_factory=list)
    tokens_formula: str = "concurrency"  # how the "GPU KV cache size" line is computed

    def concurrency(self, num_blocks: int) -> float:
        return num_blocks / self.blocks_per_request

    def kv_tokens(self, num_blocks: int, max_model_len: int) -> int:
        if self.tokens_formula == "blocks":
            return num_blocks // max(1, len(self.groups)) * min(g.spec.block_size for g in self.groups)
        return num_blocks * max_model_len // self.blocks_per_request

    def blocks_for_memory(self, available_bytes: float) -> int:
        return max(0, int(available_bytes // self.memory_per_block))


def _model_dtype(target: Geometry, opts: ServeOptions, notes: list[str]) -> str:
    if opts.dtype and opts.dtype != "auto":
        return {"half": "float16", "float": "float32"}.get(opts.dtype, opts.dtype)
    dtype = target.dtype.lower().removeprefix("torch.")
    if dtype in ("float32", "float"):
        notes.append("config dtype float32 with --dtype auto: vLLM serves it as bfloat16")
        return "bfloat16"
    return dtype


def _attention_spec(g: Geometry, kind: str, owner: str, tp: int, kv_bytes: int) -> Spec:
    heads = max(1, g.num_kv_heads // tp)
    return Spec(
        kind=kind,
        owner=owner,
        kv_heads=heads,
        head_dim=g.head_dim,
        per_token=2 * heads * g.head_dim * kv_bytes,
        window=g.sliding_window if kind == "sliding" else None,
    )


def _split(total: int, tp: int, what: str, source: str) -> int:
    if total % tp:
        raise PreflightError(
            f"cannot predict: {what} = {total} of {source} does not divide by tensor_parallel_size {tp}",
            hint="use a tensor-parallel size that divides the model's heads (vLLM refuses it too)",
        )
    return total // tp


def _mamba_state(g: Geometry, tp: int, model_bytes: int, nspec: int) -> int:
    if g.gdn is not None:
        d = g.gdn
        conv_dim = 2 * d.num_k_heads * d.k_head_dim + d.num_v_heads * d.v_head_dim
        _split(d.num_k_heads, tp, "linear_num_key_heads", g.source)
        v = _split(d.num_v_heads, tp, "linear_num_value_heads", g.source)
        conv = conv_dim // tp * (d.conv_kernel - 1 + nspec) * model_bytes
        ssm = v * d.v_head_dim * d.k_head_dim * dtype_bytes(d.ssm_dtype, what="mamba_ssm_dtype")
        return conv + ssm
    assert g.mamba2 is not None
    m = g.mamba2
    heads = _split(m.num_heads, tp, "mamba_num_heads", g.source)
    groups = _split(m.n_groups, tp, "n_groups", g.source)
    conv_dim = heads * m.head_dim + 2 * groups * m.state_size
    conv = conv_dim * (m.conv_kernel - 1 + nspec) * model_bytes
    ssm = heads * m.head_dim * m.state_size * dtype_bytes(m.ssm_dtype, what="mamba_ssm_dtype")
    return conv + ssm


def _check_pair(target: Geometry, draft: Geometry | None) -> None:
    if draft is None:
        return
    if target.vocab_size and draft.vocab_size and target.vocab_size != draft.vocab_size:
        raise PreflightError(
            f"cannot predict: the draft's vocab_size {draft.vocab_size} ({draft.source}) differs from the "
            f"target's {target.vocab_size} ({target.source}); a draft with another vocabulary is a known "
            "crash class (token ids out of range), not a KV-cache question",
            hint="use a draft trained for this target's tokenizer",
        )


def _check_method(method: str | None, draft: Geometry | None) -> None:
    """A speculative method preflight covers, with the draft's config when it needs one."""
    if method in DRAFT_METHODS and draft is None:
        raise PreflightError(
            f"cannot predict: speculative method {method} needs the draft's config.json",
            hint="set speculative.model and its revision (and lock them)",
        )
    if method and method not in DRAFT_METHODS | {"mtp", "ngram", "suffix"}:
        raise PreflightError(
            f"cannot predict: speculative method {method} is not covered by preflight",
            hint="covered: dflash, eagle, eagle3, draft_model, mtp, ngram, suffix",
        )


def plan_layout(target: Geometry, draft: Geometry | None, opts: ServeOptions, chosen: Chosen) -> Layout:
    """Mirror vLLM's KV-cache layout for the target (+ draft) under one version's rules."""
    rules = chosen.rules
    notes: list[str] = [chosen.note] if chosen.note else []
    _check_pair(target, draft)
    tp = opts.tensor_parallel_size
    method = opts.spec_method
    nspec = opts.num_speculative_tokens if method else 0
    _check_method(method, draft)
    model_dtype = _model_dtype(target, opts, notes)
    model_bytes = dtype_bytes(model_dtype, what="dtype")
    kv_dtype = opts.kv_cache_dtype if opts.kv_cache_dtype and opts.kv_cache_dtype != "auto" else model_dtype
    kv_bytes = dtype_bytes(kv_dtype, what="kv_cache_dtype")

    # 1. One spec per layer, in vLLM's layer order: target, its MTP layers, then the draft.
    layers: list[Spec] = []
    for kind in target.kinds:
        if kind in ("full", "sliding"):
            layers.append(_attention_spec(target, kind, "target", tp, kv_bytes))
        else:
            layers.append(Spec(kind="mamba", owner="target", raw_state=_mamba_state(target, tp, model_bytes, nspec)))
    if method == "mtp":
        if not target.mtp_layers:
            raise PreflightError(
                f"cannot predict: speculative method mtp but {target.source} config.json states no MTP layers "
                "(mtp_num_hidden_layers / num_nextn_predict_layers)",
                hint="use a target with MTP heads, or another method",
            )
        layers += [_attention_spec(target, "full", "mtp", tp, kv_bytes)] * target.mtp_layers
    if method in DRAFT_METHODS and draft is not None:
        if draft.is_hybrid:
            raise PreflightError(
                f"cannot predict: the draft {draft.source} has mamba-like layers; preflight covers attention drafts",
                hint="run without preflight (`run --force`) at your own risk",
            )
        if method == "dflash" and rules.refuse_dflash_mixed and len(set(draft.kinds)) > 1:
            verdict = Verdict(
                "refused",
                f"vLLM {rules.name} refuses a DFlash draft mixing sliding-window and full-attention layers "
                f"({draft.count('sliding')} sliding + {draft.count('full')} full in {draft.source})",
                "DFlash draft config check (vLLM 0.25+)",
                fix="pin a draft revision whose layers are all one kind, or a vLLM before 0.25",
            )
            return Layout(
                rules.name, model_dtype, kv_dtype, _counts(layers), None, None, None, 0, False, None, [], verdict
            )
        layers += [_attention_spec(draft, kind, "draft", tp, kv_bytes) for kind in draft.kinds]
    counts = _counts(layers)

    # 2. The attention block size (hybrid models raise it so an attention page covers a mamba page).
    block = opts.block_size or 16
    raised = False
    padding_pct = None
    attention = [s for s in layers if s.kind != "mamba"]
    mamba = [s for s in layers if s.kind == "mamba"]
    target_attn = next((s for s in layers if s.owner == "target" and s.kind != "mamba"), None)
    P = target_attn.per_token if target_attn else None
    M = max((s.raw_state for s in mamba), default=None)
    mode = None
    if mamba:
        if not rules.hybrid:
            raise PreflightError(
                f"cannot predict: the hybrid (mamba + attention) layout rules of vLLM {rules.name} are not encoded",
                hint="pass --vllm-version 0.22 or later if that is what the image runs",
            )
        prefix = opts.enable_prefix_caching
        if prefix is None:
            notes.append("enable_prefix_caching not set: vLLM's default (on) assumed")
            prefix = True
        mode = "align" if prefix else "none"
        mamba_page = M or 0
        if P:
            a = rules.block_align
            needed = a * cdiv(mamba_page, a * P)
            if block < needed:
                block, raised = needed, True
            if block * P > mamba_page:
                padding_pct = (block * P - mamba_page) / mamba_page * 100
                mamba_page = block * P
        mamba = [_with(s, page=mamba_page, block_size=block) for s in mamba]
    attention = [_with(s, page=block * s.per_token, block_size=block) for s in attention]
    specs_by_layer = _merge_order(layers, attention, mamba)

    layout = Layout(
        rules=rules.name,
        model_dtype=model_dtype,
        kv_dtype=kv_dtype,
        layer_counts=counts,
        attention_page_per_token=P,
        mamba_state_bytes=M,
        mamba_cache_mode=mode,
        block_size=block,
        block_size_raised=raised,
        mamba_padding_pct=padding_pct,
        specs=[],
        verdict=Verdict("ok", "", ""),
        notes=notes,
        tokens_formula="concurrency" if rules.hybrid else "blocks",
    )

    # 3. One type: one group.  Otherwise unify the page sizes.
    kinds = {s.kind for s in specs_by_layer}
    if kinds == {"full"}:
        layout.uniform_type = len(set(specs_by_layer)) > 1
        if layout.uniform_type and not rules.hybrid:
            raise PreflightError(
                f"cannot predict: full-attention layers of unequal page size under vLLM {rules.name} are not encoded",
                hint="pass --vllm-version 0.22 or later if that is what the image runs",
            )
        layout.specs = sorted(set(specs_by_layer), key=specs_by_layer.index)
        layout.memory_per_block = sum(s.page for s in specs_by_layer)
        bpr = cdiv(opts.max_model_len, block)
        layout.groups = [Group(specs_by_layer[0], len(specs_by_layer), bpr)]
        layout.group_size = 1
        layout.blocks_per_request = bpr
        layout.verdict = Verdict(
            "ok",
            "one attention type: every layer shares one block table",
            "kv_cache_utils.py:_get_kv_cache_groups_uniform_type"
            if layout.uniform_type
            else "kv_cache_utils.py:_get_kv_cache_groups_uniform_spec",
        )
        return layout

    unified, verdict, waste = _unify(specs_by_layer, rules.mamba_pad_to_max, rules.unify_source)
    layout.verdict = verdict
    layout.unify_waste_pct = waste
    if not verdict.boots:
        layout.specs = sorted(set(specs_by_layer), key=specs_by_layer.index)
        return layout
    layout.specs = sorted(set(unified), key=unified.index)

    # 4. Groups of equal size, blocks per request.
    by_spec = Counter(unified)
    low, high = min(by_spec.values()), max(by_spec.values())
    group_size = high if high < low * rules.group_slack else low
    groups: list[Group] = []
    padding = 0
    batched = opts.max_num_batched_tokens
    for spec in layout.specs:
        n = by_spec[spec]
        pad = group_size - n % group_size
        padding += 0 if pad == group_size else pad
        per_group = _blocks_per_request(spec, opts, nspec, mode, batched, notes)
        for i in range(cdiv(n, group_size)):
            in_group = min(group_size, n - i * group_size)
            groups.append(Group(spec, in_group, per_group))
    layout.groups = groups
    layout.group_size = group_size
    layout.padding_layers = padding
    layout.memory_per_block = unified[0].page * group_size
    layout.blocks_per_request = sum(g.blocks_per_request for g in groups)
    return layout


def _with(spec: Spec, *, page: int, block_size: int | None = None) -> Spec:
    from dataclasses import replace

    return replace(spec, page=page, block_size=spec.block_size if block_size is None else block_size)


def _counts(layers: list[Spec]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in layers:
        key = f"{s.owner} {s.kind}"
        out[key] = out.get(key, 0) + 1
    return out


def _merge_order(layers: list[Spec], attention: list[Spec], mamba: list[Spec]) -> list[Spec]:
    a, m = iter(attention), iter(mamba)
    return [next(m) if s.kind == "mamba" else next(a) for s in layers]


def _unify(specs: list[Spec], pad_mamba: bool, source: str) -> tuple[list[Spec], Verdict, float | None]:
    """unify_kv_cache_spec_page_size, in layer order: the first layer that cannot unify decides."""
    pages = {s.page for s in specs}
    if len(pages) == 1:
        return specs, Verdict("ok", f"every page is {specs[0].page:,} bytes: nothing to unify", source), None
    top = max(pages)
    out: list[Spec] = []
    padded_raw = 0
    padded_layers = 0
    for s in specs:
        if s.page == top:
            out.append(s)
            continue
        if s.kind == "mamba" and pad_mamba:
            padded_raw += s.raw_state
            padded_layers += 1
            out.append(_with(s, page=top))
            continue
        if top % s.page:
            return (
                specs,
                Verdict(
                    "not_implemented",
                    f"NotImplementedError: the {s.label} page ({s.page:,} bytes) does not divide the largest page "
                    f"({top:,} bytes); vLLM cannot unify by adjusting block_size",
                    source,
                    fix="pin a draft revision whose KV bytes per token equal the target's, or another vLLM version",
                ),
                None,
            )
        if s.kind == "mamba":
            return (
                specs,
                Verdict(
                    "assertion",
                    f"AssertionError: assert new_spec.page_size_bytes == max_page_size: the largest page is "
                    f"{top:,} bytes ({top // s.page}x the {s.page:,}-byte mamba page), and a mamba page does not "
                    "grow with the block size",
                    source,
                    fix="pin the draft's previous revision (KV bytes per token no larger than the target's), "
                    "or a vLLM version that pads mamba pages (0.33+)",
                ),
                None,
            )
        out.append(_with(s, page=top, block_size=s.block_size * (top // s.page)))
    if padded_layers:
        waste = (padded_layers * top - padded_raw) / (padded_layers * top) * 100
        msg = (
            f"pages unify by padding {padded_layers} mamba layer page(s) to {top:,} bytes: "
            f"{waste:.2f}% of their memory is padding"
        )
        return out, Verdict("padded", msg, source), waste
    return out, Verdict("ok", f"pages unify at {top:,} bytes by scaling the smaller pages' block size", source), None


def _blocks_per_request(
    spec: Spec, opts: ServeOptions, nspec: int, mode: str | None, batched: int | None, notes: list[str]
) -> int:
    if spec.kind == "mamba":
        return (2 if mode == "align" else 1) + nspec
    if spec.kind == "sliding":
        if batched is None:
            batched = DEFAULT_BATCHED_TOKENS
            note = f"max_num_batched_tokens not set: {DEFAULT_BATCHED_TOKENS} assumed for sliding-window blocks"
            if note not in notes:
                notes.append(note)
        assert spec.window is not None
        tokens = min(spec.window - 1 + batched, opts.max_model_len)
        return cdiv(tokens, spec.block_size) + 1
    return cdiv(opts.max_model_len, spec.block_size)

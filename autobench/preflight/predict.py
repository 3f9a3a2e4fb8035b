"""One prediction for one recipe: inputs -> layout -> verdict (+ budget), as text and as JSON.

``predict_recipe`` is what ``autobench preflight``, ``validate`` and ``run`` call.  A prediction
either carries a verdict (``ok`` / ``padded`` boot; ``assertion`` / ``not_implemented`` /
``refused`` / ``kv_too_small`` fail) or the call raises ``PreflightError`` saying what cannot be
predicted and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from autobench.errors import PreflightError
from autobench.preflight.budget import GIB, Budget, estimate
from autobench.preflight.geometry import Geometry, geometry
from autobench.preflight.inputs import (
    HubReader,
    Loaded,
    VersionPick,
    read_hub,
    read_local,
    read_model_dir,
    serve_options,
    vllm_version,
)
from autobench.preflight.layout import DRAFT_METHODS, Layout, ServeOptions, plan_layout
from autobench.preflight.versions import fmt, rules_for
from autobench.recipe.facts import is_local_model

if TYPE_CHECKING:
    from autobench.recipe.loader import LoadedRecipe

FAILING = {"assertion", "not_implemented", "refused", "kv_too_small"}


@dataclass
class Options:
    vllm_version: str | None = None
    target_config: str | None = None  # local folder or file instead of the Hub
    draft_config: str | None = None
    kv_blocks: int | None = None
    gpu_memory_gib: float | None = None
    weights_gib: float | None = None  # override the weights' size (whole model, all GPUs)
    allowance_gib: tuple[float, float] | None = None
    offline: bool | None = None
    cache_only: bool = False  # validate: never touch the network; missing configs -> no prediction
    budget_required: bool = False  # the user asked for the budget (a flag): unknown weights are an error


@dataclass
class Prediction:
    recipe: str
    version: VersionPick
    serve: ServeOptions
    target: Geometry
    draft: Geometry | None
    layout: Layout
    kv_blocks: int | None = None
    budget: Budget | None = None
    weights_bytes: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.layout.verdict.boots and self.budget is not None and self.budget.fits == "no":
            return "kv_too_small"
        if self.layout.verdict.boots and self.kv_blocks is not None and self.kv_blocks < self.layout.blocks_per_request:
            return "kv_too_small"
        return self.layout.verdict.status

    @property
    def fails(self) -> bool:
        return self.status in FAILING

    def failure_line(self) -> str:
        """One line: the predicted failure and its fix (validate / run print it)."""
        v = self.layout.verdict
        if self.status == "kv_too_small":
            return (
                f"predicted boot failure on vLLM {fmt(self.version.version)}: max_model_len "
                f"{self.serve.max_model_len:,} needs {self.layout.blocks_per_request:,} blocks per request, more "
                "than the KV cache can hold (ValueError: ... larger than the available KV cache memory)"
            )
        return f"predicted boot failure on vLLM {fmt(self.version.version)}: {v.message} ({v.mirrors.split(' (')[0]})"

    def fix(self) -> str:
        if self.status == "kv_too_small":
            return "lower engine.max_model_len or raise engine.gpu_memory_utilization"
        return self.layout.verdict.fix or "see `autobench preflight`"

    # -- output ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        lay = self.layout
        out: dict[str, Any] = {
            "recipe": self.recipe,
            "vllm_version": fmt(self.version.version),
            "vllm_version_source": self.version.source,
            "rules": lay.rules,
            "status": self.status,
            "boots": not self.fails,
            "verdict": lay.verdict.message,
            "mirrors": lay.verdict.mirrors,
            "fix": None if not self.fails else self.fix(),
            "model_dtype": lay.model_dtype,
            "kv_cache_dtype": lay.kv_dtype,
            "layers": lay.layer_counts,
            "attention_page_per_token": lay.attention_page_per_token,
            "mamba_state_bytes": lay.mamba_state_bytes,
            "mamba_cache_mode": lay.mamba_cache_mode,
            "attention_block_size": lay.block_size if lay.block_size else None,
            "block_size_raised": lay.block_size_raised,
            "mamba_padding_pct": None if lay.mamba_padding_pct is None else round(lay.mamba_padding_pct, 2),
            "unify_waste_pct": None if lay.unify_waste_pct is None else round(lay.unify_waste_pct, 2),
            "pages": [{"spec": s.label, "page_bytes": s.page, "block_size": s.block_size} for s in lay.specs],
            "groups": len(lay.groups),
            "group_size": lay.group_size,
            "padding_layers": lay.padding_layers,
            "blocks_per_request": lay.blocks_per_request or None,
            "memory_per_block": lay.memory_per_block or None,
            "kv_tokens_formula": lay.tokens_formula,
            "max_model_len": self.serve.max_model_len,
            "notes": [*lay.notes, *self.notes],
        }
        if self.kv_blocks is not None and lay.blocks_per_request:
            out["kv_blocks"] = self.kv_blocks
            out["max_concurrency"] = round(lay.concurrency(self.kv_blocks), 2)
            out["kv_tokens"] = lay.kv_tokens(self.kv_blocks, self.serve.max_model_len)
        if self.budget is not None:
            b = self.budget
            out["budget"] = {
                "gpu_memory_gib": b.gpu_memory_gib,
                "utilization": b.utilization,
                "weights_gib_per_gpu": round(b.weights_gib, 2),
                "allowance_gib": [round(x, 2) for x in b.allowance_gib],
                "available_gib": [round(x, 2) for x in b.available_gib],
                "num_blocks": list(b.num_blocks),
                "max_concurrency": [round(x, 2) for x in b.concurrency],
                "kv_tokens": list(b.kv_tokens),
                "max_model_len_fits": b.fits,
            }
        return out

    def render_text(self) -> str:
        lay = self.layout
        d = self.to_dict()
        lines = [
            f"preflight {self.recipe}: vLLM {d['vllm_version']} ({self.version.source}); rules {lay.rules}",
            f"  target  {self.target.source}: {self.target.architecture}, {_kinds(self.target)}",
        ]
        if self.draft is not None:
            lines.append(f"  draft   {self.draft.source}: {self.draft.architecture}, {_kinds(self.draft)}")
        lines.append(
            f"  dtype {lay.model_dtype}, KV cache {lay.kv_dtype}, tensor parallel {self.serve.tensor_parallel_size}"
        )
        if lay.attention_page_per_token:
            lines.append(f"  attention page per token (target): {lay.attention_page_per_token:,} bytes per layer")
        if lay.mamba_state_bytes:
            lines.append(
                f"  mamba state per layer: {lay.mamba_state_bytes:,} bytes "
                f"(cache mode {lay.mamba_cache_mode}, {self.serve.num_speculative_tokens} speculative tokens)"
            )
        if lay.block_size:
            raised = " (raised so an attention page >= the mamba page)" if lay.block_size_raised else ""
            from autobench.preflight.versions import RULE_SETS

            align = next(r.align_source for r in RULE_SETS if r.name == lay.rules)
            mirror = f"  [{align}]" if lay.block_size_raised else ""
            lines.append(f"  attention block size: {lay.block_size:,} tokens{raised}{mirror}")
        if lay.mamba_padding_pct is not None:
            lines.append(f"  mamba page padded by {lay.mamba_padding_pct:.2f}%")
        elif lay.mamba_state_bytes:
            lines.append("  mamba page: no padding (attention page == mamba page)")
        for s in lay.specs:
            lines.append(f"  page  {s.label}: {s.page:,} bytes (block {s.block_size:,})")
        verdict = "BOOTS" if lay.verdict.boots else "FAILS"
        lines.append(f"  unification: {verdict}, {lay.verdict.status}: {lay.verdict.message}  [{lay.verdict.mirrors}]")
        if lay.groups:
            desc = ", ".join(f"{n}x {label} ({bpr} blocks)" for label, n, bpr in _group_summary(lay))
            lines.append(f"  KV groups: {len(lay.groups)} of {lay.group_size} layer(s): {desc}")
            if lay.padding_layers:
                lines.append(f"  padding layers: {lay.padding_layers}")
            lines.append(
                f"  blocks per request at max_model_len {self.serve.max_model_len:,}: {lay.blocks_per_request:,}"
                f"  [kv_cache_utils.py:get_max_concurrency_for_kv_cache_config]"
            )
            lines.append(f"  memory per block: {lay.memory_per_block:,} bytes")
        if "kv_blocks" in d and self.kv_blocks is not None:
            lines.append(
                f"  with {self.kv_blocks:,} KV blocks: max concurrency {lay.concurrency(self.kv_blocks):.2f}x, "
                f"GPU KV cache size {d['kv_tokens']:,} tokens"
            )
        if self.budget is not None:
            b = self.budget
            lines.append(
                f"  KV budget: {b.gpu_memory_gib:g} GiB x {b.utilization:g} - weights {b.weights_gib:.2f} GiB/GPU - "
                f"allowance {b.allowance_gib[0]:.1f}..{b.allowance_gib[1]:.1f} GiB = "
                f"{b.available_gib[0]:.2f}..{b.available_gib[1]:.2f} GiB KV"
            )
            if lay.blocks_per_request:
                lines.append(
                    f"  estimate: {b.num_blocks[0]:,}..{b.num_blocks[1]:,} blocks, concurrency "
                    f"{b.concurrency[0]:.2f}..{b.concurrency[1]:.2f}x, "
                    f"{b.kv_tokens[0]:,}..{b.kv_tokens[1]:,} KV tokens; "
                    f"max_model_len fits: {b.fits}"
                )
        for note in d["notes"]:
            lines.append(f"  note: {note}")
        lines.append(
            f"verdict: {'boots' if not self.fails else 'FAILS'} ({self.status})"
            + ("" if not self.fails else f"; fix: {self.fix()}")
        )
        return "\n".join(lines)


def _kinds(g: Geometry) -> str:
    parts = [f"{g.count(k)} {k}" for k in ("full", "sliding", "gdn", "mamba2") if g.count(k)]
    return f"{g.num_layers} cache layers ({', '.join(parts)}), {g.num_kv_heads} KV heads x {g.head_dim}"


def _group_summary(lay: Layout) -> list[tuple[str, int, int]]:
    out: dict[str, list[int]] = {}
    for g in lay.groups:
        out.setdefault(g.spec.label, [0, g.blocks_per_request])[0] += 1
    return [(label, n, bpr) for label, (n, bpr) in out.items()]


def _states_dtype(config: object) -> bool:
    if not isinstance(config, dict):
        return False
    text = config.get("text_config")
    inner = text if isinstance(text, dict) else {}
    return any(c.get(k) for c in (config, inner) for k in ("torch_dtype", "dtype"))


def predict(
    name: str,
    target_cfg: Loaded,
    draft_cfg: Loaded | None,
    serve: ServeOptions,
    version: VersionPick,
    opts: Options,
    *,
    utilization: float | None = None,
) -> Prediction:
    target = geometry(target_cfg.config, target_cfg.source)
    # A draft is served in the target's dtype, as vLLM builds it (geometry's inherit_dtype).
    draft = geometry(draft_cfg.config, draft_cfg.source, inherit_dtype=target.dtype) if draft_cfg is not None else None
    layout = plan_layout(target, draft, serve, rules_for(version.version))
    pred = Prediction(name, version, serve, target, draft, layout, kv_blocks=opts.kv_blocks)
    if draft_cfg is not None and not _states_dtype(draft_cfg.config):
        pred.notes.append(
            f"the draft's config.json states no torch_dtype: vLLM builds the draft with the target's dtype "
            f"({target.dtype}; vllm/config/speculative.py)"
        )
    if opts.gpu_memory_gib is not None and layout.verdict.boots and layout.blocks_per_request:
        if opts.weights_gib is not None:
            weights = int(opts.weights_gib * GIB)
        elif target_cfg.weights_bytes is None or (draft_cfg is not None and draft_cfg.weights_bytes is None):
            reason = "the weights' size is unknown (no safetensors index or file sizes)"
            if not opts.budget_required:  # the GPU came from the recipe: say so, keep the layout
                pred.notes.append(f"KV budget not estimated: {reason}; run `autobench preflight` online")
                return pred
            raise PreflightError(
                f"cannot estimate the KV budget: {reason}",
                hint="pass --weights-gib, or run online so the Hub lists the file sizes",
            )
        else:
            draft_weights = draft_cfg.weights_bytes if draft_cfg is not None else None
            weights = target_cfg.weights_bytes + (draft_weights or 0)
        pred.weights_bytes = weights
        pred.budget = estimate(
            layout,
            gpu_memory=opts.gpu_memory_gib,
            utilization=utilization if utilization is not None else 0.9,
            weights_bytes=weights,
            tensor_parallel_size=serve.tensor_parallel_size,
            max_model_len=serve.max_model_len,
            max_num_batched_tokens=serve.max_num_batched_tokens,
            allowance=opts.allowance_gib,
        )
        if utilization is None:
            pred.notes.append("gpu_memory_utilization not set: vLLM's default 0.9 assumed")
    return pred


@dataclass(frozen=True)
class RecipeInputs:
    """Everything a recipe's prediction is computed from (``predict_recipe`` = ``predict`` of
    these): two recipes with equal inputs have the same prediction (``key``)."""

    name: str
    target: Loaded
    draft: Loaded | None
    serve: ServeOptions
    version: VersionPick
    opts: Options
    utilization: float | None

    def key(self) -> tuple[object, ...]:
        """A hashable key of the inputs: each config by identity (a reader that returns the same
        dict for the same repo and sha, as an experiment's memo does, makes equal configs equal
        keys; the caller keeps the inputs alive while it keys on them), the rest by value."""

        def loaded(cfg: Loaded | None) -> tuple[object, ...] | None:
            return None if cfg is None else (id(cfg.config), cfg.source, cfg.weights_bytes)

        o = self.opts
        opts = tuple(getattr(o, f) for f in Options.__dataclass_fields__)
        return (self.name, loaded(self.target), loaded(self.draft), self.serve, self.version, opts, self.utilization)


def recipe_inputs(loaded: LoadedRecipe, opts: Options, resolver: HubReader | None = None) -> RecipeInputs:
    """The inputs of a loaded recipe's prediction: its serve options, vLLM version, GPU and the
    target's (and draft's) config, read from the Hub, the HF cache or a local folder."""
    recipe = loaded.recipe
    serve = serve_options(recipe)
    from autobench.image.pins import tagged_image  # a locked image keeps its tag in `# frozen:`

    version = vllm_version(tagged_image(loaded), opts.vllm_version or recipe.container.vllm_version)
    if version.source == "--vllm-version" and not opts.vllm_version:
        version = VersionPick(version.version, "container.vllm_version")
    if opts.gpu_memory_gib is None:
        topo = recipe.topology
        if topo.gpu_memory_gib is not None:
            opts = replace(opts, gpu_memory_gib=topo.gpu_memory_gib)
        elif topo.gpu:
            from autobench.preflight.budget import gpu_memory_gib

            opts = replace(opts, gpu_memory_gib=gpu_memory_gib(topo.gpu))
    spec = recipe.speculative
    needs_draft = spec is not None and spec.method in DRAFT_METHODS
    want_weights = opts.gpu_memory_gib is not None and opts.weights_gib is None
    if opts.target_config:
        target_cfg = read_local(opts.target_config)
    elif is_local_model(recipe.model.repo):  # a local model directory: its own config.json, no Hub
        target_cfg = read_model_dir(recipe.model.repo, "model.repo")
    else:
        target_cfg = read_hub(_resolver(resolver, opts), recipe.model.repo, recipe.model.revision, weights=want_weights)
    draft_cfg = None
    if needs_draft and spec is not None:
        if opts.draft_config:
            draft_cfg = read_local(opts.draft_config)
        elif spec.model and is_local_model(spec.model):
            draft_cfg = read_model_dir(spec.model, "speculative.model")
        elif spec.model:
            draft_cfg = read_hub(_resolver(resolver, opts), spec.model, spec.revision, weights=want_weights)
    return RecipeInputs(recipe.name, target_cfg, draft_cfg, serve, version, opts, recipe.engine.gpu_memory_utilization)


def predict_inputs(inputs: RecipeInputs) -> Prediction:
    i = inputs
    return predict(i.name, i.target, i.draft, i.serve, i.version, i.opts, utilization=i.utilization)


def predict_recipe(loaded: LoadedRecipe, opts: Options, resolver: HubReader | None = None) -> Prediction:
    """Predict the boot of a loaded recipe (``autobench.recipe.loader.LoadedRecipe``)."""
    return predict_inputs(recipe_inputs(loaded, opts, resolver))


def _resolver(resolver: HubReader | None, opts: Options) -> HubReader:
    if resolver is not None:
        return resolver
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import Resolver

    return Resolver(HubSettings.from_env(offline=True if opts.cache_only else opts.offline))

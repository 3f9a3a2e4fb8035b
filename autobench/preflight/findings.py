"""The preflight prediction as ``validate`` findings: AB070 (a predicted boot failure) and AB071
(configs at hand, but the boot cannot be predicted).

Runs only when every config is already in the local HF cache (or the recipe's ``.lock.json``
siblings are cached): it reads files, never the network, so ``validate`` stays fast.  Recipes
whose configs are not cached get no preflight finding.
"""

from __future__ import annotations

from typing import Any

from autobench.digits import load_json
from autobench.errors import AutobenchError
from autobench.files import read_regular
from autobench.preflight.inputs import MAX_CONFIG_BYTES, Loaded
from autobench.preflight.layout import DRAFT_METHODS
from autobench.recipe.loader import LoadedRecipe, format_path
from autobench.recipe.rules import RULES, Finding


def _cached_config(repo: str, revision: str | None) -> Loaded | None:
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import cached_sha, repo_folder

    settings = HubSettings.from_env(offline=True)
    sha = cached_sha(settings, repo, revision or "main")
    if sha is None:
        return None
    path = repo_folder(settings, repo) / "snapshots" / sha / "config.json"
    try:
        config = load_json(read_regular(path, what="model config", limit=MAX_CONFIG_BYTES))
    except (AutobenchError, ValueError):
        return None
    return Loaded(config, f"{repo}@{sha[:7]}", None)


def _finding(loaded: LoadedRecipe, code: str, keys: tuple[Any, ...], message: str, hint: str, strict: bool) -> Finding:
    severity = RULES[code].severity
    if strict and severity == "warning":
        severity = "error"
    return Finding(code, severity, message, hint, loaded.value_position(*keys), format_path(keys))


def check(loaded: LoadedRecipe, strict: bool = False) -> list[Finding]:
    from autobench.image.pins import tagged_image  # a locked image keeps its tag in `# frozen:`
    from autobench.preflight.inputs import serve_options, vllm_version
    from autobench.preflight.predict import Options, predict

    recipe = loaded.recipe
    spec = recipe.speculative
    target = _cached_config(recipe.model.repo, recipe.model.revision)
    if target is None:
        return []
    draft = None
    keys: tuple[Any, ...] = ("model", "revision")
    if spec is not None and spec.method in DRAFT_METHODS:
        if not spec.model:
            return []
        draft = _cached_config(spec.model, spec.revision)
        if draft is None:
            return []
        keys = ("speculative", "revision") if spec.revision else ("speculative", "model")
    try:
        pred = predict(
            recipe.name,
            target,
            draft,
            serve_options(recipe),
            vllm_version(tagged_image(loaded), recipe.container.vllm_version),
            Options(cache_only=True),
            utilization=recipe.engine.gpu_memory_utilization,
        )
    except AutobenchError as exc:
        return [_finding(loaded, "AB071", ("model", "repo"), exc.message, exc.hint or RULES["AB071"].hint, strict)]
    if not pred.fails:
        return []
    return [_finding(loaded, "AB070", keys, pred.failure_line(), pred.fix(), strict)]

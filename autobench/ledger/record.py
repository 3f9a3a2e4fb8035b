"""Build a ``NewRun`` from a recipe file plus what the user states (``autobench record``).

The recipe gives the name, digest, resolved snapshot, compiled script, model and
draft repos, and the shas when they are pinned to full commits.  ``--metrics`` is
read by ``autobench.bench.result.load_result_json`` (our result JSON or ``vllm bench
serve``'s), ``--log`` by ``autobench.logs.parse_log`` (boot facts, root cause).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.errors import LedgerError, UsageError
from autobench.ledger.models import BOOT_KEYS, METRIC_KEYS, STATUSES, NewRun


@dataclass
class RecordInput:
    recipe_path: str
    status: str
    root_cause: str | None = None  # "CATEGORY:MESSAGE"
    root_cause_category: str | None = None
    root_cause_message: str | None = None
    metrics_file: str | None = None
    log_file: str | None = None
    notes: list[str] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    model_sha: str | None = None
    draft_sha: str | None = None
    corrects: int | None = None
    supersedes: int | None = None


def split_root_cause(text: str) -> tuple[str, str]:
    category, sep, message = text.partition(":")
    if not sep or not category.strip() or not message.strip():
        raise UsageError(
            f"--root-cause {text!r} is not CATEGORY:MESSAGE",
            hint="e.g. --root-cause 'assertion:assert page_size_bytes == max_page_size'",
        )
    return category.strip(), message.strip()


def read_metrics(path: str) -> dict[str, Any]:
    """Normalized metrics from a result file; only the keys the ledger has columns for."""
    from autobench.bench.result import load_result_json

    normalized = load_result_json(path)
    return {k: normalized[k] for k in METRIC_KEYS if normalized.get(k) is not None}


def read_log(path: str, secret_names: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The log's facts, with secret values (the recipe's secrets, secret-like environment
    variables, any ``hf_`` token) redacted from every string it quotes."""
    from autobench.logs import parse_log
    from autobench.redaction import environment_secrets, redact_tree

    return redact_tree(parse_log(Path(path)).to_json_dict(), environment_secrets(secret_names))


def log_root_cause(doc: dict[str, Any]) -> tuple[str | None, str | None]:
    cause = doc.get("root_cause") or {}
    if not cause:
        return None, None
    message = str(cause.get("message") or "")
    where = cause.get("location")
    if where and str(where) not in message:
        message += f" at {where}"
        if cause.get("function"):
            message += f" in {cause['function']}"
    return cause.get("category"), message or None


def compiled_script(loaded: Any) -> str:
    from autobench.compile import compile_recipe

    # check=False: record what was run even if a style rule fails; unsafe findings still refuse.
    return compile_recipe(loaded, check=False)


def _pick_sha(given: str | None, recipe_sha: str | None, what: str) -> str | None:
    if given is None:
        return recipe_sha
    given = given.strip().lower()
    if recipe_sha is not None and given != recipe_sha:
        raise LedgerError(
            f"--{what}-sha {given} contradicts the recipe's pinned {what} revision {recipe_sha}",
            hint=f"record against a recipe pinned to {given}, or drop --{what}-sha",
        )
    return given


def build_new_run(spec: RecordInput) -> NewRun:
    from autobench.recipe import load_recipe
    from autobench.recipe.facts import pinned_sha

    if spec.status.strip().upper() not in STATUSES:
        raise LedgerError(f"unknown status {spec.status!r}", hint=f"use one of {', '.join(STATUSES)}")
    loaded = load_recipe(spec.recipe_path)
    recipe = loaded.recipe
    category, message = spec.root_cause_category, spec.root_cause_message
    if spec.root_cause:
        if category or message:
            raise UsageError("give --root-cause or --root-cause-category/--root-cause-message, not both")
        category, message = split_root_cause(spec.root_cause)
    metrics = read_metrics(spec.metrics_file) if spec.metrics_file else {}
    boot: dict[str, Any] = {}
    engine_version = None
    detail = None
    if spec.log_file:
        doc = read_log(spec.log_file, recipe.secrets)
        boot = {k: doc[k] for k in BOOT_KEYS if doc.get(k) is not None}
        engine_version = boot.get("vllm_version")
        if not (category or message):
            category, message = log_root_cause(doc)
            detail = (doc.get("root_cause") or {}).get("detail")
    draft = recipe.speculative
    if spec.draft_sha and (draft is None or not draft.model):
        raise UsageError("--draft-sha given but the recipe has no speculative draft model")
    image = recipe.container.image
    return NewRun(
        recipe_name=recipe.name,
        model_repo=recipe.model.repo,
        status=spec.status,
        recipe_digest=loaded.digest,
        recipe_snapshot=loaded.data,
        script_snapshot=compiled_script(loaded),
        model_sha=_pick_sha(spec.model_sha, pinned_sha(recipe, "model"), "model"),
        draft_repo=draft.model if draft else None,
        draft_sha=_pick_sha(spec.draft_sha, pinned_sha(recipe, "draft"), "draft") if draft and draft.model else None,
        image=image,
        image_digest=image.split("@", 1)[1] if "@sha256:" in image else None,
        engine_version=engine_version,
        root_cause_category=category,
        root_cause_message=message,
        root_cause_detail=detail,
        started_at=spec.started_at,
        ended_at=spec.ended_at,
        notes="\n".join(spec.notes) or None,
        corrects=spec.corrects,
        supersedes=spec.supersedes,
        source="manual",
        metrics=metrics,
        boot=boot,
    )

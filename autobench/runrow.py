"""One place that turns a run into a ledger row: ``new_run(loaded, script, RunFacts(...))``.

``autobench run`` (every runtime) and ``autobench record`` both end here, and so should any
later path (sweeps, imports).  What a run produced goes in as it is:

* ``metrics``: the bench result's normalized keys (``BenchResult.normalized()`` in memory,
  or ``load_result_json`` of a result file); only the ledger's metric columns are kept;
* ``log``: the ``LogReport.to_json_dict()`` of the server log (boot facts, the root cause);
* ``root_cause``: an explicit cause (``record --root-cause``, a readiness timeout, an
  interrupt); else the log's, in the one text form :func:`root_cause_text` writes;
* ``notes``, times, the image digest, host facts, and ``record``'s stated shas;
* ``tokenizer``: what measured the bench's prompt lengths (the result's ``tokenizer_id``);
* ``cells``: a multi-cell run's cells (``autobench.ledger.models.NewCell``; the row's metric
  columns are then, unless ``metrics`` are given, the headline cell's:
  ``autobench.ledger.cells.headline_metrics``); or, for a single-cell run, ``samples`` (the
  ``BenchResult.samples`` of its bench) and ``cell_params``: the run is stored with ONE cell
  holding its metrics and raw samples.  Without samples (a result file given to ``record``)
  the run has no cell, as before schema v8;
* ``replay_of``: the id of the run this one replays.

Every string that reaches the row is redacted here (``autobench.redaction``, with the
recipe's secrets and secret-named variables of ``env``).  The ledger itself imports
nothing above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autobench.errors import LedgerError, UsageError
from autobench.ledger.models import BOOT_KEYS, METRIC_KEYS, NewCell, NewRun
from autobench.recipe import LoadedRecipe
from autobench.recipe.facts import passed_secrets, pinned_sha
from autobench.recipe.schema import Recipe
from autobench.redaction import environment_secrets, redact, redact_tree
from autobench.samples import Samples


@dataclass(frozen=True)
class RootCause:
    category: str | None
    message: str | None
    detail: str | None = None


@dataclass
class RunFacts:
    """What happened in one run, as its producers state it (see the module doc)."""

    status: str
    source: str  # "run" | "manual" | ...
    metrics: Mapping[str, Any] = field(default_factory=dict)
    log: Mapping[str, Any] | None = None
    root_cause: RootCause | None = None
    notes: Sequence[str] = ()
    started_at: str | None = None
    ended_at: str | None = None
    image: str | None = None  # None: the server did not run from a container image
    image_digest: str | None = None
    engine_version: str | None = None  # default: the log's vLLM version
    host_facts: Mapping[str, Any] | None = None
    model_sha: str | None = None  # stated by the user; must agree with the recipe's pin
    draft_sha: str | None = None
    corrects: int | None = None
    supersedes: int | None = None
    preflight: Mapping[str, Any] | None = None  # the preflight prediction made before the run
    #: What measured the bench's prompt lengths (the result's tokenizer_id); default: the
    #: ``tokenizer`` key of ``metrics`` when they are a whole normalized result.
    tokenizer: str | None = None
    #: The bench's dataset file and its sha256 (``BenchResult.dataset_id``); default: the
    #: ``dataset_file`` key of ``metrics`` when they are a whole normalized result.
    dataset: str | None = None
    #: A multi-cell run's cells (a sweep); they win over ``samples``.
    cells: Sequence[NewCell] = ()
    #: A single-cell run's raw samples (``BenchResult.samples``) and its cell's parameters
    #: (default: the concurrency of ``metrics``, repeat 1).
    samples: Samples | None = None
    cell_params: Mapping[str, Any] | None = None
    replay_of: int | None = None  # the run this one replays (autobench replay RUN --run)
    notes_sep: str = "; "


def metric_columns(normalized: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger's metric columns of a normalized bench result (unknown keys dropped)."""
    return {k: normalized[k] for k in METRIC_KEYS if normalized.get(k) is not None}


def boot_columns(log: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ledger's boot-fact columns of a ``LogReport.to_json_dict()``."""
    if not log:
        return {}
    return {k: log[k] for k in BOOT_KEYS if log.get(k) is not None}


def root_cause_text(cause: Mapping[str, Any]) -> str | None:
    """The one text of a log's root cause: ``message at LOCATION in FUNCTION``."""
    message = str(cause.get("message") or "")
    where = cause.get("location")
    if where and str(where) not in message:
        message += f" at {where}"
        if cause.get("function"):
            message += f" in {cause['function']}"
    return message or None


def log_root_cause(log: Mapping[str, Any] | None) -> RootCause | None:
    """The root cause a server log states, or None."""
    cause = (log or {}).get("root_cause") or {}
    if not cause:
        return None
    return RootCause(cause.get("category"), root_cause_text(cause), cause.get("detail"))


def _tokenizer(facts: RunFacts) -> str | None:
    tok = facts.tokenizer if facts.tokenizer is not None else facts.metrics.get("tokenizer")
    return tok if isinstance(tok, str) else None


def _cells(facts: RunFacts, metrics: Mapping[str, Any], secrets: Mapping[str, str]) -> tuple[NewCell, ...]:
    """The run's cells: ``facts.cells``, or one cell of a single bench with samples."""
    if facts.cells:
        return tuple(
            NewCell(redact_tree(dict(c.params), secrets), redact_tree(dict(c.metrics), secrets), c.samples)
            for c in facts.cells
        )
    if facts.samples is None:
        return ()
    params = dict(facts.cell_params) if facts.cell_params is not None else {"concurrency": metrics.get("concurrency")}
    params.setdefault("repeat", 1)
    params = {k: v for k, v in params.items() if v is not None}
    return (NewCell(redact_tree(params, secrets), dict(metrics), facts.samples),)


def _stream_interval(recipe: Recipe) -> str | None:
    """The server's stream interval as the recipe sets it (vLLM's ``--stream-interval``: tokens
    per streamed chunk, default 1, vllm/v1/engine/output_processor.py), or None."""
    args = list(recipe.engine.extra_args)
    for i, arg in enumerate(args):
        if arg.startswith("--stream-interval="):
            return arg.split("=", 1)[1]
        if arg == "--stream-interval" and i + 1 < len(args):
            return args[i + 1]
    return None


def with_recipe_flags(metrics: Mapping[str, Any], recipe: Recipe) -> dict[str, Any]:
    """``metrics`` with the quality flags only the recipe can tell: ``no_drafts`` (speculative
    decoding configured, requests completed, no draft counted) and, on ``burst_stream``, the
    server's stream interval when the recipe sets it."""
    out = dict(metrics)
    flags = dict(out.get("flags") or {})
    spec = recipe.speculative
    if spec is not None and out.get("completed") and out.get("spec_acceptance_length") is None:
        flags["no_drafts"] = (
            f"speculative.method {spec.method} configured; the server's /metrics counted no draft (or were not read)"
        )
    if "burst_stream" in flags and "stream interval" not in flags["burst_stream"]:
        interval = _stream_interval(recipe)
        known = f"server stream interval {interval}" if interval else "server stream interval not set (vLLM: 1)"
        if spec is not None:  # a verify step streams the tokens it accepted together: allowed for
            known += f"; speculative decoding ({spec.method}): the limit is 1.5 x the acceptance length"
        flags["burst_stream"] = f"{flags['burst_stream']}; {known}"
    if flags:
        out["flags"] = flags
    return out


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


def new_run(loaded: LoadedRecipe, script: str, facts: RunFacts, *, env: Mapping[str, str] | None = None) -> NewRun:
    """The ledger row of a run of ``loaded`` (compiled to ``script``).  ``env`` (default
    ``os.environ``) decides which secret values are redacted besides token shapes."""
    recipe = loaded.recipe
    secrets = environment_secrets(passed_secrets(recipe), env)
    draft = recipe.speculative
    has_draft = draft is not None and bool(draft.model)
    if facts.draft_sha and not has_draft:
        raise UsageError("--draft-sha given but the recipe has no speculative draft model")
    cause = facts.root_cause or log_root_cause(facts.log) or RootCause(None, None)
    boot = boot_columns(facts.log)
    notes = facts.notes_sep.join(n for n in facts.notes if n) or None

    def clean(text: str | None) -> str | None:
        return redact(text, secrets) if text else text

    metrics = redact_tree(metric_columns(facts.metrics), secrets)
    if metrics:
        metrics = with_recipe_flags(metrics, recipe)
    cells = tuple(
        NewCell(c.params, with_recipe_flags(c.metrics, recipe), c.samples) for c in _cells(facts, metrics, secrets)
    )

    return NewRun(
        recipe_name=recipe.name,
        model_repo=recipe.model.repo,
        status=facts.status,
        recipe_digest=loaded.digest,
        recipe_snapshot=loaded.data,
        script_snapshot=script,
        model_sha=_pick_sha(facts.model_sha, pinned_sha(recipe, "model"), "model"),
        draft_repo=draft.model if draft is not None else None,
        draft_sha=_pick_sha(facts.draft_sha, pinned_sha(recipe, "draft"), "draft") if has_draft else None,
        image=facts.image,
        image_digest=facts.image_digest,
        engine_version=facts.engine_version or boot.get("vllm_version"),
        host_facts=dict(facts.host_facts) if facts.host_facts is not None else None,
        root_cause_category=cause.category,
        root_cause_message=clean(cause.message),
        root_cause_detail=clean(cause.detail),
        started_at=facts.started_at,
        ended_at=facts.ended_at,
        notes=clean(notes),
        corrects=facts.corrects,
        supersedes=facts.supersedes,
        source=facts.source,
        preflight=dict(facts.preflight) if facts.preflight is not None else None,
        tokenizer=clean(_tokenizer(facts)),
        dataset=clean(facts.dataset),
        metrics=metrics,
        boot=redact_tree(boot, secrets),
        cells=cells,
        replay_of=facts.replay_of,
    )


__all__ = [
    "RootCause",
    "RunFacts",
    "boot_columns",
    "log_root_cause",
    "metric_columns",
    "new_run",
    "root_cause_text",
    "with_recipe_flags",
]

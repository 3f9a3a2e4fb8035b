"""``autobench run RECIPE``: the one run pipeline every runtime goes through.

    load_recipe (once) -> the runtime from RUNTIMES -> rules -> pins -> preflight -> compile + plan
    (dry run: the plan)  -> the runtime's own refusals (image, tools) -> open the ledger
    claim the run folder, write plan/script/recipe -> the outcome's start (time, notes)
    runtime.execute: start -> wait ready -> bench cells -> collect logs -> teardown
    the outcome's end (time, redaction) -> the ledger row -> outcome.json

Like cibuildwheel's platforms (``cibuildwheel/platforms/__init__.py``: one ``PlatformModule``
protocol, one ``ALL_PLATFORM_MODULES`` table), each runtime is a class in :data:`RUNTIMES` that
implements only what differs (:class:`Runtime`); the start and the end of a run are written here
once.  Status: DONE when the bench completed, BLOCKED when the server never became ready, FAILED
when the bench could not complete, ABORTED when a signal (SIGINT, SIGTERM, SIGHUP) interrupted
the run.  Errors before anything starts (bad recipe, unpinned revisions, a missing tool, a
refused image) record nothing: nothing ran.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.errors import RecipeError, RunError
from autobench.recipe import LoadedRecipe, load_recipe
from autobench.redaction import environment_secrets
from autobench.run import plan as P
from autobench.run.cluster import ClusterRuntime
from autobench.run.folder import claim_run_dir, write_run_files
from autobench.run.local import LocalRuntime
from autobench.run.outcome import Echo, RowFacts, RunOptions, RunOutcome, now, record_run, redact_outcome, write_text
from autobench.run.plan import RunPlan, unpinned_refs
from autobench.run.protocol import Compiled, Run, Runtime
from autobench.run.signals import RunInterrupted, SignalGuard
from autobench.run.slurm import SlurmRuntime

if TYPE_CHECKING:
    from autobench.ledger.store import Ledger

PIN_CODES = frozenset({"AB010", "AB011", "AB012"})


def runtime_name(loaded: LoadedRecipe, options: RunOptions) -> str:
    """The runtime of the run: ``--runtime``, except that a multi-node recipe runs through its
    compiled driver (``cluster``) unless Slurm runs its nodes."""
    if loaded.recipe.topology.nodes > 1 and options.runtime != "slurm":
        return "cluster"
    return options.runtime


#: The runtimes, by name: the one table dispatch reads (``--runtime``; ``cluster`` is chosen
#: by topology.nodes > 1).  Each is built as ``Runtime(name, options, echo, env)`` for one run.
RUNTIMES: dict[str, Callable[[str, RunOptions, Echo, Mapping[str, str]], Runtime]] = {
    "docker": LocalRuntime,
    "process": LocalRuntime,
    "slurm": SlurmRuntime,
    "cluster": ClusterRuntime,
}


def runtime_for(loaded: LoadedRecipe, options: RunOptions, echo: Echo, env: Mapping[str, str]) -> Runtime:
    name = runtime_name(loaded, options)
    if name not in RUNTIMES:
        raise RunError(f"unknown runtime {name!r}", hint="use one of " + ", ".join(RUNTIMES))
    return RUNTIMES[name](name, options, echo, env)


# ---------------------------------------------------------------- checks
def check_recipe(
    loaded: LoadedRecipe, echo: Echo, env: Mapping[str, str] | None = None, runtime: str = "docker"
) -> None:
    """Run the recipe rules: the first error stops the run, warnings are printed.

    The pin rules (AB010-AB012) are left to :func:`require_pinned`, which honours
    ``--allow-unpinned``.  ``env``: secret values that must not be in the recipe (AB030).
    """
    from autobench.recipe.rules import check

    findings = [f for f in check(loaded, env=env, runtime=runtime) if f.code not in PIN_CODES]
    errors = [f for f in findings if f.severity == "error"]
    for f in findings:
        if f.severity == "warning":
            echo(f.text())  # "file:line:col: CODE warning: ..."
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more; see `autobench validate`)" if len(errors) > 1 else ""
        key = f"{first.key}: " if first.key else ""
        raise RecipeError(
            f"{first.code} {key}{first.message}{more}",
            hint=first.hint,
            location=str(first.location or loaded.path),
        )


def require_pinned(loaded: LoadedRecipe, allow_unpinned: bool) -> list[str]:
    refs = unpinned_refs(loaded)
    if refs and not allow_unpinned:
        raise RunError(
            "unpinned Hub revisions: " + ", ".join(refs),
            hint=f"run `autobench lock {loaded.path}` or pass --allow-unpinned",
            location=str(loaded.path),
        )
    return refs


def _checked(loaded: LoadedRecipe, options: RunOptions, echo: Echo, env: Mapping[str, str]) -> tuple[Runtime, Compiled]:
    runtime = runtime_for(loaded, options, echo, env)
    check_recipe(loaded, echo, env, runtime.rules)
    require_pinned(loaded, options.allow_unpinned or options.dry_run)  # a dry run shows them
    return runtime, runtime.compile(loaded)


def prepare(
    path: str | Path,
    options: RunOptions,
    echo: Echo = lambda s: None,
    env: Mapping[str, str] | None = None,
) -> tuple[LoadedRecipe, RunPlan, str]:
    """Everything before anything runs: load, validate, pin check, compile, plan."""
    loaded = load_recipe(path, profile=options.profile)
    _, compiled = _checked(loaded, options, echo, os.environ if env is None else env)
    return loaded, compiled.plan, compiled.script


# ---------------------------------------------------------------- the run
def run_recipe(
    path: str | Path,
    options: RunOptions | None = None,
    *,
    echo: Echo = print,
    env: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run a recipe end to end on its runtime and record it (``dry_run``: only plan it)."""
    options = options or RunOptions()
    base_env = dict(os.environ if env is None else env)
    loaded = load_recipe(path, profile=options.profile)
    runtime, compiled = _checked(loaded, options, echo, base_env)
    prediction, preflight_note = None, None
    if runtime.preflight:
        from autobench.run.preflight_gate import gate

        # A predicted boot failure refuses the run here, before anything starts or is recorded.
        prediction, preflight_note = gate(
            loaded, force=options.force or options.dry_run, vllm_version=options.vllm_version, echo=echo
        )
    plan, script = compiled.plan, compiled.script
    if options.dry_run:
        notes = list(plan.unpinned) + ([preflight_note] if preflight_note else [])
        return RunOutcome(status="PLANNED", plan=plan, script=script, notes=notes, preflight=prediction)
    notes = runtime.check(loaded, compiled)
    fetch_dataset(loaded)  # a Hub dataset that cannot be had (or does not verify) refuses the run here
    check_categories(loaded, plan)  # a category with too few prompts refuses the run here

    from autobench.ledger import open_ledger

    ledger = open_ledger(options.ledger)  # before anything starts: an unusable ledger fails now
    try:
        plan = runtime.place(claim_run_dir(plan))
        for name, text in compiled.files.items():
            plan.path(name).write_text(text, encoding="utf-8")
            plan.path(name).chmod(0o755)
        write_run_files(plan, script, loaded.data)
        notes = [*([preflight_note] if preflight_note else []), *notes]
        outcome = _start(loaded, plan, script, base_env, prediction, notes)
        secrets = environment_secrets(plan.secret_names, base_env)
        guard = SignalGuard()
        with guard:
            run = Run(loaded, options, plan, script, base_env, secrets, outcome, guard, echo)
            try:
                row = runtime.execute(run)
            except RunInterrupted as exc:  # before the runtime could take it: nothing ran yet
                guard.disarm()
                outcome.status, outcome.signal = "ABORTED", exc.signame
                outcome.root_cause_category = "interrupted"
                outcome.root_cause_message = f"interrupted by {exc.signame} before the start"
                row = RowFacts(host_facts={"runtime": runtime_name(loaded, options)})
            guard.disarm()
            _end(ledger, run, row)
        if guard.received and outcome.status != "ABORTED":
            outcome.notes.append(f"{guard.first_signal} received during teardown/recording")
        return outcome
    finally:
        close = getattr(ledger, "close", None)
        if close is not None:
            close()


def fetch_dataset(loaded: LoadedRecipe) -> None:
    """Fetch and verify the recipe's Hub dataset before anything starts (the bench reads it from
    the HF cache later, with no network call for a pinned sha).  Every cell reads one file."""
    from autobench.bench.source import hub_file
    from autobench.errors import HubError
    from autobench.run.local import dataset_options

    options = dataset_options(loaded, loaded.recipe)
    if "dataset_repo" in options and "dataset_file" in options:
        try:
            hub_file(
                options["dataset_repo"],
                options["dataset_file"],
                options.get("dataset_revision"),
                options.get("dataset_sha256"),
                options.get("dataset_sha256_from", "bench.dataset.sha256"),
            )
        except HubError as exc:  # located where the recipe names what failed, as `lock` does
            key = "sha256" if getattr(exc, "expected_from", None) == "bench.dataset.sha256" else "revision"
            where = loaded.position("bench", "dataset", key) or loaded.position("bench", "dataset", "repo")
            exc.location = exc.location or (str(where) if where else str(loaded.path))
            raise


def check_categories(loaded: LoadedRecipe, plan: RunPlan) -> None:
    """Load each category cell's prompts before anything starts, as its bench will: a category
    with fewer usable prompts than the cell asks for is one located line and nothing is benched
    (found at its own cell, the categories before it would have been benched on a booted server)."""
    if loaded.recipe.bench.dataset.category is None or loaded.recipe.bench.client != "autobench":
        return
    from autobench.bench.client import prepare_dataset
    from autobench.recipe.grid import cells
    from autobench.run.local import bench_config

    seen: set[tuple[object, ...]] = set()
    for cell in cells(loaded.recipe):
        cfg = bench_config(loaded, plan, cell)
        key = (cfg.category, cfg.num_prompts, cfg.warmup, cfg.min_prompt_tokens, cfg.max_prompt_tokens)
        if key not in seen:
            seen.add(key)
            prepare_dataset(cfg)


def _start(
    loaded: LoadedRecipe,
    plan: RunPlan,
    script: str,
    env: Mapping[str, str],
    prediction: dict[str, object] | None,
    notes: list[str],
) -> RunOutcome:
    outcome = RunOutcome(status="FAILED", plan=plan, script=script, preflight=prediction)
    outcome.started_at = now().isoformat()
    outcome.notes.extend(notes)
    if plan.unpinned:
        outcome.notes.append("unpinned: " + ", ".join(plan.unpinned))
    from autobench.recipe.facts import is_local_model

    if is_local_model(loaded.recipe.model.repo):  # pinned by content instead of a Hub sha
        from autobench.recipe.loader import local_model_digest

        content = local_model_digest(loaded.recipe.model.repo)
        outcome.notes.append(f"local model {loaded.recipe.model.repo}: content {content or 'not found here'}")
    missing = [n for n in plan.secret_names if not env.get(n)]
    if missing:
        outcome.notes.append("secrets not set in the environment: " + ", ".join(missing))
    return outcome


def _end(ledger: Ledger, run: Run, row: RowFacts) -> None:
    outcome = run.outcome
    outcome.ended_at = now().isoformat()
    if outcome.metrics:  # the quality flags only the recipe can tell (no_drafts, ...)
        from autobench.runrow import with_recipe_flags

        outcome.metrics = with_recipe_flags(outcome.metrics, run.loaded.recipe)
    redact_outcome(outcome, run.redact)  # before it is recorded, written or printed
    record_run(ledger, run.loaded, outcome, run.script, run.env, row, replay_of=run.options.replay_of)
    write_text(run.plan.path(P.OUTCOME_JSON), json.dumps(outcome.to_json_dict(), indent=2) + "\n")


__all__ = ["RUNTIMES", "check_recipe", "prepare", "require_pinned", "run_recipe"]

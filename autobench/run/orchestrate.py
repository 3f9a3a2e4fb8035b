"""``autobench run RECIPE``: validate, pin check, compile, start, wait, bench, tear down, record.

The one function :func:`run_recipe` drives a run::

    load + validate -> require pinned revisions -> compile -> plan
    open the ledger (fail before a 10-minute boot, not after)
    start the server (runtime) -> server.log (secret values redacted as written)
    wait ready (/health + /v1/models, boot timeout, fail fast on exit)
    bench (autobench.bench) -> scrape /metrics
    teardown (ALWAYS: also on an error, SIGINT or SIGTERM)
    parse server.log -> append the run to the ledger: DONE | BLOCKED | FAILED | ABORTED

Status: DONE when the bench completed (at least one request, no server exit during
it); BLOCKED when the server never became ready (exited or boot timeout; the root
cause comes from its log); FAILED when the bench could not complete (the bench
raised, no request completed, or the server died during it); ABORTED when a
signal interrupted the run.  Errors before the server starts (bad recipe, unpinned
revisions, missing executable) record nothing: nothing ran.
"""

from __future__ import annotations

import json
import os
import platform
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autobench.compile.quoting import shell_join
from autobench.errors import AutobenchError, RecipeError, RunError
from autobench.recipe import LoadedRecipe, load_recipe
from autobench.recipe.facts import output_tokens
from autobench.redaction import environment_secrets
from autobench.run import plan as P
from autobench.run.folder import claim_run_dir, write_run_files
from autobench.run.plan import RunPlan, build_plan, unpinned_refs
from autobench.run.readiness import Readiness, http_get, wait_ready
from autobench.run.signals import RunInterrupted, SignalGuard

Echo = Callable[[str], None]

PIN_CODES = frozenset({"AB010", "AB011", "AB012"})


@dataclass
class RunOptions:
    runtime: str = "docker"
    runs_dir: str | Path = "runs"
    ledger: str | None = None
    allow_unpinned: bool = False
    vllm_exec: str | None = None
    ready_timeout_s: float | None = None
    grace_s: float = 10.0
    dry_run: bool = False
    pull: bool = False  # docker runtime: pull the pinned image digest when docker lacks it
    # slurm runtime (autobench.run.slurm): sbatch resources and how the node runs the server
    partition: str | None = None
    gpus_per_node: int | None = None  # None: the recipe's topology.gpus_per_node; 0: request none
    account: str | None = None
    time_limit: str | None = None
    container: str = "none"
    force: bool = False  # run even when preflight predicts a boot failure
    vllm_version: str | None = None  # for preflight when the image tag does not say it
    hosts: tuple[str, ...] = ()  # multi-node: head first (overrides topology.hosts)
    remote: str | None = None  # multi-node: how the driver reaches a host (default ssh)
    profile: str | Path | None = None  # a bench profile file merged onto the recipe's bench:
    live: bool | None = None  # progress: a live display (True), plain lines (False), None: on a terminal
    replay_of: int | None = None  # the run this one replays (autobench replay RUN --run)


@dataclass
class RunOutcome:
    status: str  # DONE | BLOCKED | FAILED | ABORTED | PLANNED (dry run)
    plan: RunPlan
    run_id: int | None = None
    display_id: str | None = None
    root_cause_category: str | None = None
    root_cause_message: str | None = None
    root_cause_detail: str | None = None  # the line that says what is wrong (a ValidationError's detail)
    metrics: dict[str, Any] = field(default_factory=dict)
    boot: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    script: str | None = None
    signal: str | None = None
    image_digest: str | None = None  # docker runtime: the registry digest of the image that ran
    preflight: dict[str, Any] | None = None  # the preflight prediction (autobench.preflight)
    tokenizer: str | None = None  # the bench result's tokenizer_id (repo@sha, a file, "estimated")
    #: Every cell benched to its end, in run order: (autobench.recipe.grid.Cell, BenchResult).
    cells: list[tuple[Any, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return {"DONE": 0, "PLANNED": 0, "ABORTED": 130}.get(self.status, RunError.exit_code)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "run_id": self.run_id,
            "display_id": self.display_id,
            "recipe": self.plan.recipe_name,
            "run_dir": str(self.plan.run_dir),
            "root_cause": (
                {
                    "category": self.root_cause_category,
                    "message": self.root_cause_message,
                    "detail": self.root_cause_detail,
                }
                if self.root_cause_category or self.root_cause_message
                else None
            ),
            "metrics": self.metrics,
            "boot": self.boot,
            "notes": self.notes,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "signal": self.signal,
            "image_digest": self.image_digest,
            "tokenizer": self.tokenizer,
            "cells": [
                {"index": c.index, "params": c.params, "repeat": c.repeat, "metrics": cell_metrics(r)}
                for c, r in self.cells
            ],
            "plan": self.plan.to_json_dict(),
        }


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


def prepare(
    path: str | Path,
    options: RunOptions,
    echo: Echo = lambda s: None,
    env: Mapping[str, str] | None = None,
) -> tuple[LoadedRecipe, RunPlan, str]:
    """Everything before anything runs: load, validate, pin check, compile, plan."""
    from autobench.compile import compile_recipe

    loaded = load_recipe(path, profile=options.profile)
    check_recipe(loaded, echo, env, options.runtime)
    require_pinned(loaded, options.allow_unpinned or options.dry_run)  # a dry run shows them
    plan = build_plan(
        loaded,
        runtime=options.runtime,
        runs_dir=options.runs_dir,
        vllm_exec=options.vllm_exec,
        ready_timeout_s=options.ready_timeout_s,
        grace_s=options.grace_s,
    )
    # The stored script is what this run executes: the compiled docker script, or for the
    # process runtime the command itself (the docker script would not be what ran).
    script = compile_recipe(loaded, target="full") if plan.runtime == "docker" else process_script(loaded, plan)
    return loaded, plan, script


def process_script(loaded: LoadedRecipe, plan: RunPlan) -> str:
    """The process runtime's command as a script: env, then exec the server argv."""
    from autobench.compile.quoting import comment_text, shell_word

    lines = [
        "#!/usr/bin/env bash",
        f"# autobench run --runtime process: recipe {comment_text(loaded.recipe.name)}, digest {loaded.digest}",
        "# The server command this run executed (secrets come from the environment by name).",
        "set -euo pipefail",
    ]
    from autobench.compile import bench_argv
    from autobench.recipe.grid import cell_recipe, cells

    all_cells = cells(loaded.recipe)
    if len(all_cells) == 1:
        lines.append("# The bench autobench runs in-process against it, as the equivalent command:")
    else:
        lines.append(
            f"# The {len(all_cells)} benches autobench runs in-process against it, one per cell in this order, "
            "as the equivalent commands:"
        )
    for cell in all_cells:
        bench = bench_argv(cell_recipe(loaded.recipe, cell))
        if "--base-url" in bench:
            bench[bench.index("--base-url") + 1] = plan.base_url
        lines.append("#   " + " ".join(shell_word(w) for w in bench))
    lines += [f"export {k}={shell_word(v)}" for k, v in plan.env.items()]
    lines.append("exec " + " ".join(shell_word(w) for w in plan.server_argv))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- bench
def bench_config(loaded: LoadedRecipe, plan: RunPlan, cell: Any = None) -> Any:
    """The bench client's configuration for ``cell`` of the grid (default: the first)."""
    from autobench.bench.client import BenchConfig
    from autobench.compile import bench_api_key_env, bench_tokenizer
    from autobench.recipe.grid import cell_recipe, cells, only

    recipe = cell_recipe(loaded.recipe, cell if cell is not None else cells(loaded.recipe)[0])
    b = recipe.bench
    s = b.sampler
    extra: dict[str, Any] = {}
    if s is not None:
        for key in ("min_p", "frequency_penalty", "repetition_penalty"):
            value = getattr(s, key)
            if value is not None:
                extra[key] = value
    tokenizer, tokenizer_revision = bench_tokenizer(recipe)  # the served model's own
    cfg = BenchConfig(
        base_url=plan.base_url,
        model=plan.bench_model,
        endpoint=b.endpoint,
        dataset_kind=b.dataset.kind,
        dataset=b.dataset.path,
        num_prompts=b.num_prompts,
        max_seconds=b.max_seconds,
        concurrency=only(b.concurrency),
        max_tokens=output_tokens(recipe),
        temperature=s.temperature if s else None,
        top_p=s.top_p if s else None,
        top_k=s.top_k if s else None,
        presence_penalty=s.presence_penalty if s else None,
        ignore_eos=b.ignore_eos,
        seed=b.seed,
        warmup=b.warmup,
        request_rate=only(b.request_rate),
        label=loaded.recipe.name,
        extra_body=extra,
        slo=b.slo.limits() if b.slo is not None else None,
        tokenizer=tokenizer,
        tokenizer_revision=tokenizer_revision,
    )
    key_env = bench_api_key_env(recipe)
    if key_env is not None:  # the server demands the key it was given: the bench sends it by name
        cfg = replace(cfg, api_key_env=key_env)  # sent when set (a server started without it is open)
    input_len = only(b.dataset.input_len)
    if input_len is not None:
        cfg = replace(cfg, random_input_len=input_len)
    return cfg


def normalized_metrics(result: Any, plan: RunPlan, name: str = P.BENCH_JSON) -> dict[str, Any]:
    """The bench result's ledger metric columns, from the result in memory; ``name`` (bench.json,
    or bench.cell-N.json of a grid) is written for the run folder only (JSON at the edge, never
    read back)."""
    path = plan.path(name)
    path.write_text(json.dumps(result.to_json_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return cell_metrics(result)


#: A cell's metrics beyond the run columns: SLO goodput and the client self-check (docs/bench.md).
CELL_ONLY = ("goodput", "good_requests", "client_bound")


def cell_metrics(result: Any) -> dict[str, Any]:
    """One bench result's ledger metric columns, and :data:`CELL_ONLY`."""
    from autobench.runrow import metric_columns

    normalized = result.normalized()
    extra = {k: normalized[k] for k in CELL_ONLY if normalized.get(k) is not None}
    return {**metric_columns(normalized), **extra}


#: Metrics that add up over the cells of a grid run (the run's own row; each cell keeps its own).


def sweep_metrics(benched: list[tuple[Any, Any]]) -> dict[str, Any]:
    """A run's row metrics from its benched (grid cell, BenchResult) pairs: one cell's own;
    for a grid, the headline cell (highest concurrency, then request rate) merged over its
    repeats from the raw samples (``autobench.ledger.cells.headline_metrics``), so
    ``history`` and every query over run columns keep a figure for sweeps."""
    if len(benched) == 1:
        return cell_metrics(benched[0][1])
    from autobench.ledger.cells import headline_metrics

    return headline_metrics(ledger_cells(benched))


def ledger_cells(benched: list[tuple[Any, Any]]) -> list[Any]:
    """The run's cells for the ledger: each benched (grid cell, BenchResult) with its
    parameters (``repeat`` 1-based, as the grid numbers it), its metric columns and the raw
    per-request samples of its bench (schema v8: ``autobench.ledger.models.NewCell``)."""
    from autobench.ledger.models import NewCell

    return [
        NewCell({**cell.params, "repeat": cell.repeat}, cell_metrics(result), getattr(result, "samples", None))
        for cell, result in benched
    ]


# ---------------------------------------------------------------- the run
def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _host_facts(plan: RunPlan) -> dict[str, Any]:
    return {
        "runtime": plan.runtime,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }


def run_recipe(
    path: str | Path,
    options: RunOptions | None = None,
    *,
    echo: Echo = print,
    env: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run a recipe end to end and record it (or, with ``dry_run``, only plan it)."""
    options = options or RunOptions()
    first = load_recipe(path, profile=options.profile)
    if first.recipe.topology.nodes > 1:  # node scripts + a driver (autobench.run.cluster)
        from autobench.run.cluster import run_cluster

        return run_cluster(first, options, echo=echo, env=env)
    loaded, plan, script = prepare(path, options, echo, os.environ if env is None else env)
    from autobench.run.preflight_gate import gate

    # A predicted boot failure refuses the run here, before anything starts or is recorded.
    prediction, preflight_note = gate(
        loaded, force=options.force or options.dry_run, vllm_version=options.vllm_version, echo=echo
    )
    if options.dry_run:
        notes = list(plan.unpinned) + ([preflight_note] if preflight_note else [])
        return RunOutcome(status="PLANNED", plan=plan, script=script, notes=notes, preflight=prediction)

    from autobench.ledger import open_ledger

    base_env = dict(os.environ if env is None else env)
    image = None
    if plan.runtime == "docker":  # the local image must be the pinned one (refused before anything runs)
        from autobench.run.image_check import check_local_image

        image = check_local_image(
            loaded.recipe.container.image,
            docker=plan.server_argv[0],
            env={**base_env, **plan.env},
            pull=options.pull,
            echo=echo,
        )
    ledger = open_ledger(options.ledger)
    secrets = environment_secrets(plan.secret_names, base_env)
    child_env = {**base_env, **plan.env}

    plan = claim_run_dir(plan)
    run_dir = plan.run_dir
    write_run_files(plan, script, loaded.data)

    from autobench.run.runtimes import LogFile, ServerStartTimeout, start_server

    outcome = RunOutcome(status="FAILED", plan=plan, script=script, preflight=prediction)
    outcome.started_at = _now().isoformat()
    if preflight_note:
        outcome.notes.append(preflight_note)
    if image is not None:
        outcome.image_digest = image.digest
        if image.note:
            outcome.notes.append(image.note)
    if plan.unpinned:
        outcome.notes.append("unpinned: " + ", ".join(plan.unpinned))
    from autobench.recipe.facts import is_local_model

    if is_local_model(loaded.recipe.model.repo):  # pinned by content instead of a Hub sha
        from autobench.recipe.loader import local_model_digest

        content = local_model_digest(loaded.recipe.model.repo)
        outcome.notes.append(f"local model {loaded.recipe.model.repo}: content {content or 'not found here'}")
    missing = [n for n in plan.secret_names if not base_env.get(n)]
    if missing:
        outcome.notes.append("secrets not set in the environment: " + ", ".join(missing))
    log = LogFile(plan.path(P.SERVER_LOG), secrets)
    redact = log.redact
    readiness: Readiness | None = None
    server = None
    phase = "start"
    guard = SignalGuard()
    bench_threads: list[BenchThread] = []  # this run's bench, joined after teardown
    bench_error: str | None = None
    teardown_line: int | None = None
    start_error: str | None = None
    try:
        with guard:
            try:
                echo(f"run {plan.recipe_name}: {plan.runtime} runtime, folder {run_dir}")
                echo(f"start: {redact(shell_join(plan.server_argv))}")
                with guard.deferred():  # spawning only: the server object exists before any wait
                    server = start_server(plan.runtime, plan.server_argv, child_env, log, plan.grace_s)
                server.wait_started(plan.ready_timeout_s)  # armed: a signal interrupts a hung start
                phase = "boot"
                readiness = wait_ready(
                    plan.health_url,
                    plan.models_url,
                    plan.served_model,
                    timeout_s=plan.ready_timeout_s,
                    exited=server.exit_code,
                    # the server's API key, when the recipe gives it one (by name)
                    headers=bench_config(loaded, plan).auth_headers(base_env) or None,
                )
                log.note(f"readiness: {readiness.describe()}")
                echo(readiness.describe())
                if readiness.ready:
                    phase = "bench"
                    live = options.live if options.live is not None else _on_terminal()
                    outcome.status, bench_error = _bench(loaded, plan, server, outcome, echo, bench_threads, live)
                    phase = "metrics"
                    _scrape(plan, redact)
                else:
                    outcome.status = "BLOCKED"
            except ServerStartTimeout as exc:
                outcome.status = "FAILED"
                start_error = exc.message
                echo(f"{exc.message}; tearing down")
            except RunInterrupted as exc:
                outcome.status = "ABORTED"
                outcome.signal = exc.signame
                outcome.notes.append(f"interrupted by {exc.signame} during {phase}")
                echo(f"interrupted by {exc.signame} during {phase}; tearing down")
            finally:
                guard.disarm()
                if server is not None:
                    echo(f"teardown: {plan.teardown}")
                    teardown_line = log.teardown_mark()
                    server.stop()
                    log.note("server torn down")
                while bench_threads:  # an interrupted bench ends once its server is gone
                    bench_threads.pop().join(timeout=10)
                log.close()
            _finish(loaded, plan, outcome, readiness, bench_error, guard, teardown_line)
            if start_error is not None:
                outcome.root_cause_category, outcome.root_cause_message = "start_timeout", start_error
            if image is not None and outcome.image_digest is None:  # `docker run` may have pulled it
                from autobench.run.image_check import local_digest

                outcome.image_digest = local_digest(
                    loaded.recipe.container.image, docker=plan.server_argv[0], env=child_env
                )
            outcome.ended_at = _now().isoformat()
            _redact_outcome(outcome, redact)  # before it is recorded, written or printed
            _record(ledger, loaded, plan, outcome, script, base_env, replay_of=options.replay_of)
            _write(plan.path(P.OUTCOME_JSON), json.dumps(outcome.to_json_dict(), indent=2) + "\n")
    finally:
        close = getattr(ledger, "close", None)
        if close is not None:
            close()
    if guard.received and outcome.status != "ABORTED":
        outcome.notes.append(f"{guard.first_signal} received during teardown/recording")
    return outcome


def _on_terminal() -> bool:
    import sys

    return sys.stderr.isatty()


def _redact_outcome(outcome: RunOutcome, redact: Callable[[str], str]) -> None:
    """Secrets out of everything in the outcome that came from the server or the bench: the root
    cause, the notes (bench errors quote response bodies) and any text metric."""
    if outcome.root_cause_message:
        outcome.root_cause_message = redact(outcome.root_cause_message)
    if outcome.root_cause_detail:
        outcome.root_cause_detail = redact(outcome.root_cause_detail)
    outcome.notes = [redact(n) for n in outcome.notes]
    outcome.metrics = {k: redact(v) if isinstance(v, str) else v for k, v in outcome.metrics.items()}


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


class BenchThread:
    """The bench on its own thread (and its own event loop).

    The main thread only waits, so SIGINT/SIGTERM interrupt the wait -- never code
    inside the bench's event loop, where an exception raised at an arbitrary point
    could leave asyncio's shutdown waiting on a task forever.  After an interrupt the
    server is torn down, the bench's requests fail, and the thread ends by itself.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any):
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(fn, *args), kwargs=kwargs, name="autobench-bench", daemon=True
        )
        self._thread.start()

    def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        try:
            self.result = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the main thread
            self.error = exc

    def wait(self, tick: Callable[[], None] | None = None) -> None:
        """Until the bench ends; ``tick`` (progress) runs on this thread between the waits."""
        while self._thread.is_alive():
            self._thread.join(0.2)
            if tick is not None:
                tick()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


def _bench(
    loaded: LoadedRecipe,
    plan: RunPlan,
    server: Any,
    outcome: RunOutcome,
    echo: Echo,
    threads: list[BenchThread],
    live: bool = False,
) -> tuple[str, str | None]:
    """Bench every cell of the grid, in run order, on the one server.  Each finished cell goes
    into ``outcome.cells`` as soon as it ends, so an interrupt keeps it; the first cell that
    fails (bench error, no request completed, server gone) ends the sweep: FAILED."""
    from autobench.bench.client import run_bench
    from autobench.recipe.grid import cells
    from autobench.run.progress import SweepProgress

    all_cells = cells(loaded.recipe)
    many = len(all_cells) > 1
    first = bench_config(loaded, plan, all_cells[0])
    progress = SweepProgress(len(all_cells), first.num_prompts, echo, live=live and many)
    try:
        for cell in all_cells:
            cfg = bench_config(loaded, plan, cell)
            echo(
                f"bench: {plan.bench_model} @ {plan.base_url}, {cfg.num_prompts} prompts, concurrency "
                f"{cfg.concurrency}, max_tokens {cfg.max_tokens}"
                + (f" (cell {cell.index + 1}/{len(all_cells)}: {cell.label()})" if many else "")
            )
            if many:
                progress.start_cell(cell.index, cell.label())
            worker = BenchThread(run_bench, cfg, progress=progress.update if many else None)
            threads.append(worker)  # joined by run_recipe after teardown
            worker.wait(progress.tick if many else None)  # a signal interrupts this wait, never the bench's loop
            if isinstance(worker.error, AutobenchError):
                return "FAILED", f"bench failed{_in(cell, many)}: {worker.error}"
            if worker.error is not None:  # a bug in the client must not lose the run: record it as FAILED
                exc = worker.error
                return "FAILED", f"bench crashed (a bug in autobench){_in(cell, many)}: {type(exc).__name__}: {exc}"
            result = worker.result
            metrics = normalized_metrics(result, plan, f"bench.cell-{cell.index + 1}.json" if many else P.BENCH_JSON)
            if outcome.tokenizer is None:
                outcome.tokenizer = result.to_json_dict().get("tokenizer_id")
            if not many:
                outcome.metrics = metrics  # a one-cell run's row holds its bench, finished or not
            died = _server_gone(server, plan)
            if died:
                return "FAILED", died + _in(cell, many)
            if not metrics.get("completed"):
                return "FAILED", "no request completed" + _in(cell, many)
            outcome.cells.append((cell, result))
            if metrics.get("client_bound"):
                outcome.notes.append(
                    f"client-bound{_in(cell, many)}: the bench client was the bottleneck (docs/bench.md)"
                )
            outcome.metrics = sweep_metrics(outcome.cells)
            if many:
                progress.end_cell(_summary(metrics))
        return "DONE", None
    finally:
        progress.close()
        if outcome.cells:
            outcome.metrics = sweep_metrics(outcome.cells)


def _in(cell: Any, many: bool) -> str:
    return f" in cell {cell.index + 1} ({cell.label()})" if many else ""


def _summary(m: dict[str, Any]) -> str:
    parts = [f"{m.get('completed', 0)} completed", f"{m.get('errors', 0)} errors"]
    if m.get("total_tok_s") is not None:
        parts.append(f"{m['total_tok_s']:.1f} tok/s")
    if m.get("ttft_median_ms") is not None:
        parts.append(f"TTFT median {m['ttft_median_ms']:.1f} ms")
    return ", ".join(parts)


def _server_gone(server: Any, plan: RunPlan, settle_s: float = 3.0) -> str | None:
    """Why the server is gone after the bench, or None if it still runs and answers.

    A process that died closes its sockets a moment before it can be reaped, so a
    bench that saw connections refused may finish first: when /health does not
    answer, wait up to ``settle_s`` for the exit code.
    """
    code = server.exit_code()
    if code is None:
        try:
            http_get(plan.health_url, timeout=5)
            return None
        except OSError:
            deadline = time.monotonic() + settle_s
            while code is None and time.monotonic() < deadline:
                time.sleep(0.05)
                code = server.exit_code()
            if code is None:
                return "server stopped answering during the bench"
    return f"server exited with code {code} during the bench"


def _scrape(plan: RunPlan, redact: Callable[[str], str]) -> None:
    """Keep the server's final /metrics text in the run folder (best effort), secrets redacted
    (a proxy may echo the Authorization header into a label)."""
    try:
        status, body = http_get(plan.metrics_url, timeout=10)
    except OSError:
        return
    if status == 200:
        _write(plan.path(P.METRICS_TXT), redact(body.decode("utf-8", errors="replace")))


def _finish(
    loaded: LoadedRecipe,
    plan: RunPlan,
    outcome: RunOutcome,
    readiness: Readiness | None,
    bench_error: str | None,
    guard: SignalGuard,
    teardown_line: int | None = None,
) -> None:
    """Parse the stored log; fill boot facts and the root cause.  What the server
    logged after ``teardown_line`` (its shutdown, which autobench caused) is no cause."""
    from autobench.logs import parse_log
    from autobench.runrow import boot_columns, log_root_cause

    report = None
    try:
        report = parse_log(plan.path(P.SERVER_LOG), teardown_line=teardown_line)
    except AutobenchError as exc:
        outcome.notes.append(f"log not parsed: {exc}")
    rc = None
    if report is not None:
        doc = report.to_json_dict()
        _write(plan.path(P.LOG_JSON), json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
        outcome.boot = boot_columns(doc)
        rc = log_root_cause(doc)  # the same text `record --log` writes
    if outcome.status == "BLOCKED":
        why = readiness.describe() if readiness is not None else "the server never became ready"
        if rc:
            outcome.root_cause_category, outcome.root_cause_message = rc.category, rc.message
            outcome.root_cause_detail = rc.detail
            outcome.notes.append(why)
        else:
            outcome.root_cause_category = "not_ready"
            outcome.root_cause_message = why
    elif outcome.status == "FAILED":
        if rc:
            outcome.root_cause_category, outcome.root_cause_message = rc.category, rc.message
            outcome.root_cause_detail = rc.detail
            if bench_error:
                outcome.notes.append(bench_error)
        else:
            outcome.root_cause_category = "bench_failed"
            outcome.root_cause_message = bench_error or "the bench did not complete"
    elif outcome.status == "ABORTED":
        outcome.root_cause_category = "interrupted"
        outcome.root_cause_message = outcome.notes[-1] if outcome.notes else "interrupted"
    errors = (
        sum(cell_metrics(r).get("errors") or 0 for _, r in outcome.cells)
        if len(outcome.cells) > 1
        else outcome.metrics.get("errors")
    )
    if outcome.status == "DONE" and errors:
        outcome.notes.append(f"{errors} request error(s) during the bench")


def _record(
    ledger: Any,
    loaded: LoadedRecipe,
    plan: RunPlan,
    outcome: RunOutcome,
    script: str,
    env: Mapping[str, str],
    host_facts: dict[str, Any] | None = None,
    *,
    replay_of: int | None = None,
) -> None:
    """Append the run's row (``autobench.runrow.new_run``: the path ``record`` takes too)."""
    from autobench.runrow import RootCause, RunFacts, new_run

    docker = plan.runtime == "docker"
    facts = RunFacts(
        status=outcome.status,
        source="run",
        metrics=outcome.metrics,
        root_cause=RootCause(outcome.root_cause_category, outcome.root_cause_message, outcome.root_cause_detail),
        notes=[f"run folder {plan.run_dir}", *outcome.notes],
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
        # the image ran under docker, or in a Slurm job's container (host_facts "container")
        image=loaded.recipe.container.image
        if docker or (host_facts or {}).get("container", "none") != "none"
        else None,
        image_digest=outcome.image_digest if docker else None,
        engine_version=outcome.boot.get("vllm_version"),
        host_facts=host_facts if host_facts is not None else _host_facts(plan),
        log={**outcome.boot},
        preflight=outcome.preflight,
        tokenizer=outcome.tokenizer,
        replay_of=replay_of,
        cells=ledger_cells(outcome.cells),
    )
    rec = ledger.append(new_run(loaded, script, facts, env=env))
    outcome.run_id = getattr(rec, "id", None)
    outcome.display_id = getattr(rec, "display_id", None)


__all__ = ["RunOptions", "RunOutcome", "prepare", "run_recipe"]

"""The ``docker`` and ``process`` runtimes: the server on this machine, the bench in-process.

    compile -> the docker script (docker) or the server command as a script (process)
    check   -> the local image must be the pinned one (docker; refused before anything runs)
    execute -> start the server (autobench.run.runtimes) -> server.log (secret values redacted
               as written) -> wait ready (/health + /v1/models, boot timeout, fail fast on
               exit) -> bench every cell of the grid on the one server -> scrape /metrics ->
               teardown (ALWAYS: also on an error or a signal) -> parse server.log

Status: DONE when the bench completed (at least one request, no server exit during it);
BLOCKED when the server never became ready (exited or boot timeout; the root cause comes from
its log); FAILED when the bench could not complete (the bench raised, no request completed, or
the server died during it); ABORTED when a signal interrupted the run.  The start and the end
of the run (folder, ledger row) are autobench.run.pipeline's.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypedDict

from autobench.compile.quoting import shell_join
from autobench.errors import AutobenchError
from autobench.recipe import LoadedRecipe
from autobench.recipe.facts import container_image, output_tokens
from autobench.run import plan as P
from autobench.run.outcome import (
    Echo,
    RowFacts,
    RunOptions,
    RunOutcome,
    cell_metrics,
    sweep_metrics,
    write_text,
)
from autobench.run.plan import RunPlan, build_plan
from autobench.run.progress import BootProgress
from autobench.run.protocol import Compiled, Run, RuntimeBase
from autobench.run.readiness import Readiness, http_get, wait_ready
from autobench.run.signals import RunInterrupted

if TYPE_CHECKING:
    from autobench.bench.client import BenchConfig
    from autobench.bench.records import FieldMap
    from autobench.bench.result import BenchResult
    from autobench.recipe.grid import Cell
    from autobench.recipe.schema import Recipe
    from autobench.run.image_check import ImageCheck

Params = ParamSpec("Params")


class Exits(Protocol):
    """What the bench loop asks of the server after each cell: a started server
    (``autobench.run.runtimes``), or a multi-node run's watch of its nodes."""

    def exit_code(self) -> int | None: ...


_write = write_text


class LocalRuntime(RuntimeBase):
    """``docker`` (the compiled ``docker run``) or ``process`` (``vllm serve`` as a child)."""

    def __init__(self, name: str, options: RunOptions, echo: Echo, env: Mapping[str, str]):
        super().__init__(name, options, echo, env)
        self.rules = name
        self.image: ImageCheck | None = None  # the local image check's result (docker)

    def compile(self, loaded: LoadedRecipe) -> Compiled:
        from autobench.compile import compile_recipe

        o = self.options
        plan = build_plan(
            loaded,
            runtime=self.name,
            runs_dir=o.runs_dir,
            vllm_exec=o.vllm_exec,
            ready_timeout_s=o.ready_timeout_s,
            grace_s=o.grace_s,
            require_tokenizer=o.require_tokenizer,
            remote=self.remote,
        )
        # The stored script is what this run executes: the compiled docker script, or for the
        # process runtime the command itself (the docker script would not be what ran).
        script = compile_recipe(loaded, target="full") if plan.runtime == "docker" else process_script(loaded, plan)
        return Compiled(plan, script)

    def check(self, loaded: LoadedRecipe, compiled: Compiled) -> list[str]:
        if compiled.plan.runtime != "docker":
            return []
        from autobench.run.image_check import check_local_image

        # the local image must be the pinned one (refused before anything runs)
        plan = compiled.plan
        self.image = check_local_image(
            container_image(loaded.recipe),
            docker=plan.server_argv[0],
            env={**self.env, **plan.env},
            pull=self.options.pull,
            echo=self.echo,
        )
        return [self.image.note] if self.image.note else []

    def execute(self, run: Run) -> RowFacts:
        if self.image is not None:
            run.outcome.image_digest = self.image.digest
        execute_local(run, self.image is not None)
        plan, outcome = run.plan, run.outcome
        docker = plan.runtime == "docker"
        return RowFacts(
            host_facts={
                "runtime": plan.runtime,
                "platform": platform.platform(),
                "machine": platform.machine(),
                "cpu_count": os.cpu_count(),
                "python": platform.python_version(),
            },
            image=run.loaded.recipe.container.image if docker else None,
            image_digest=outcome.image_digest if docker else None,
        )


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
    from autobench.compile.server_env import export_lines
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
    lines += export_lines(plan.env)  # the Slurm job's serve_env writes the same lines
    lines.append("exec " + " ".join(shell_word(w) for w in plan.server_argv))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- bench
def bench_config(loaded: LoadedRecipe, plan: RunPlan, cell: Cell | None = None) -> BenchConfig:
    """The bench client's configuration for ``cell`` of the grid (default: the first)."""
    from autobench.bench.client import BenchConfig
    from autobench.compile import bench_api_key_env, bench_tokenizer
    from autobench.recipe.grid import cell_recipe, cells, only
    from autobench.recipe.workerhosts import follow_hosts

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
        workers=follow_hosts(b.workers, len(plan.worker_hosts)),  # one on each host (the CLI's rule)
        worker_hosts=plan.worker_hosts,
        remote=plan.remote,
        worker_python=b.worker_python,
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
        require_tokenizer=plan.require_tokenizer,
    )
    key_env = bench_api_key_env(recipe)
    if key_env is not None:  # the server demands the key it was given: the bench sends it by name
        cfg = replace(cfg, api_key_env=key_env)  # sent when set (a server started without it is open)
    input_len = only(b.dataset.input_len)
    if input_len is not None:
        cfg = replace(cfg, random_input_len=input_len)
    cfg = replace(cfg, **dataset_options(loaded, recipe))
    d = b.dataset
    if d.depth is not None or d.shared_prefix is not None or d.category is not None or d.multi_turn:
        from autobench.bench.workload import SharedPrefix

        sp = d.shared_prefix
        cfg = replace(
            cfg,
            depth=only(d.depth) or 0,
            shared_prefix=SharedPrefix(sp.prompts, sp.length) if sp is not None else None,
            category=only(d.category),
            multi_turn=d.multi_turn,
        )
    return cfg


class DatasetOptions(TypedDict, total=False):
    """BenchConfig's dataset-source fields a recipe sets (autobench.bench.client.BenchConfig)."""

    dataset_repo: str
    dataset_file: str
    dataset_revision: str | None
    dataset_sha256: str | None
    dataset_sha256_from: str
    dataset_fields: FieldMap


def dataset_options(loaded: LoadedRecipe, recipe: Recipe) -> DatasetOptions:
    """The bench's dataset source beyond a local path: a Hub dataset's repo, file and revision,
    the sha256 to check (the recipe's, else the lock file's for that commit and file), the field
    mapping (autobench.bench.source, docs/datasets.md)."""
    from autobench.bench.records import FieldMap
    from autobench.hub.lockfile import locked_dataset_sha256

    d = recipe.bench.dataset
    out: DatasetOptions = {"dataset_sha256": d.sha256}
    if d.fields is not None:
        out["dataset_fields"] = FieldMap(**d.fields.model_dump())
    if d.repo is not None and d.file is not None:
        out["dataset_repo"], out["dataset_file"], out["dataset_revision"] = d.repo, d.file, d.revision
        if d.sha256 is None:
            locked = locked_dataset_sha256(Path(loaded.path), d.repo, d.revision, d.file)
            if locked is not None:
                out["dataset_sha256"] = locked
                out["dataset_sha256_from"] = "the lock file's sha256 for this commit"
    return out


def normalized_metrics(result: BenchResult, plan: RunPlan, name: str = P.BENCH_JSON) -> dict[str, object]:
    """The bench result's ledger metric columns, from the result in memory; ``name`` (bench.json,
    or bench.cell-N.json of a grid) is written for the run folder only (JSON at the edge, never
    read back)."""
    path = plan.path(name)
    path.write_text(json.dumps(result.to_json_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return cell_metrics(result)


#: A cell's metrics beyond the run columns: SLO goodput and the client self-check (docs/bench.md).


# ---------------------------------------------------------------- the run
def execute_local(run: Run, docker_checked: bool) -> None:
    """start -> ready -> bench cells -> metrics -> teardown -> parse the log, into ``run.outcome``."""
    from autobench.recipe.grid import cells
    from autobench.run.runtimes import LogFile, ServerStartTimeout, start_server

    loaded, plan, outcome, echo, guard = run.loaded, run.plan, run.outcome, run.echo, run.guard
    child_env = {**run.env, **plan.env}
    # Every cell's bench configuration, built once from the recipe: execution reads these.
    configs = [(cell, bench_config(loaded, plan, cell)) for cell in cells(loaded.recipe)]
    log = LogFile(plan.path(P.SERVER_LOG), run.secrets)
    redact = log.redact
    readiness: Readiness | None = None
    server = None
    phase = "start"
    bench_threads: list[BenchThread] = []  # this run's bench, joined after teardown
    bench_error: str | None = None
    teardown_line: int | None = None
    start_error: str | None = None
    try:
        echo(f"run {plan.recipe_name}: {plan.runtime} runtime, folder {plan.run_dir}")
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
            headers=configs[0][1].auth_headers(run.env) or None,
            progress=BootProgress(echo, log.last_meaningful_line),
        )
        log.note(f"readiness: {readiness.describe()}")
        echo(readiness.describe())
        if readiness.ready:
            phase = "bench"
            live = run.options.live if run.options.live is not None else _on_terminal()
            outcome.status, bench_error = _bench(configs, plan, server, outcome, echo, bench_threads, live)
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
        teardown_error = None
        if server is not None:
            echo(f"teardown: {plan.teardown}")
            # What a server that exited on its own wrote is no shutdown noise: it is in the log
            # before the mark, however far the log's pump lagged the exit.
            server.settle_log()
            teardown_line = log.teardown_mark()
            before = len(guard.received)  # a signal from here on stops a teardown step that hangs
            server.stop(
                interrupted=lambda: (
                    signal.Signals(guard.received[before]).name if len(guard.received) > before else None
                )
            )
            teardown_error = server.teardown_error
            log.note("server torn down" if teardown_error is None else f"teardown incomplete: {teardown_error}")
        while bench_threads:  # an interrupted bench ends once its server is gone
            bench_threads.pop().join(timeout=10)
        log.close()
    _finish(plan, outcome, readiness, bench_error, teardown_line)
    if start_error is not None:
        outcome.root_cause_category, outcome.root_cause_message = "start_timeout", start_error
    if teardown_error is not None:  # a teardown that could not finish is said, and never DONE
        _teardown_failed(outcome, teardown_error, guard.received)
    if docker_checked and outcome.image_digest is None:  # `docker run` may have pulled it
        from autobench.run.image_check import local_digest

        outcome.image_digest = local_digest(container_image(loaded.recipe), docker=plan.server_argv[0], env=child_env)


def _teardown_failed(outcome: RunOutcome, error: str, received: list[int]) -> None:
    outcome.notes.append(f"teardown: {error}")
    if "stopped by SIG" in error and outcome.status != "ABORTED":
        outcome.status = "ABORTED"
        outcome.signal = signal.Signals(received[-1]).name if received else None
        outcome.root_cause_category, outcome.root_cause_message = "interrupted", f"teardown: {error}"
    elif outcome.status == "DONE":
        outcome.status = "FAILED"
        outcome.root_cause_category, outcome.root_cause_message = "teardown_failed", error


def _on_terminal() -> bool:
    import sys

    return sys.stderr.isatty()


class BenchThread:
    """The bench on its own thread (and its own event loop).

    The main thread only waits, so SIGINT/SIGTERM interrupt the wait -- never code
    inside the bench's event loop, where an exception raised at an arbitrary point
    could leave asyncio's shutdown waiting on a task forever.  After an interrupt the
    server is torn down, the bench's requests fail, and the thread ends by itself.
    """

    def __init__(self, fn: Callable[Params, BenchResult], *args: Params.args, **kwargs: Params.kwargs):
        self.result: BenchResult | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(fn, *args), kwargs=kwargs, name="autobench-bench", daemon=True
        )
        self._thread.start()

    def _run(self, fn: Callable[Params, BenchResult], *args: Params.args, **kwargs: Params.kwargs) -> None:
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
    configs: list[tuple[Cell, BenchConfig]],
    plan: RunPlan,
    server: Exits,
    outcome: RunOutcome,
    echo: Echo,
    threads: list[BenchThread],
    live: bool = False,
    watch: Callable[[], None] | None = None,
) -> tuple[str, str | None]:
    """Bench every cell of the grid, in run order, on the one server.  Each finished cell goes
    into ``outcome.cells`` as soon as it ends, so an interrupt keeps it; the first cell that
    fails (bench error, no request completed, server gone) ends the sweep: FAILED."""
    from autobench.bench.client import run_bench
    from autobench.run.progress import SweepProgress

    many = len(configs) > 1
    progress = SweepProgress(len(configs), configs[0][1].num_prompts, echo, live=live and many)
    try:
        for cell, cfg in configs:
            echo(
                f"bench: {plan.bench_model} @ {plan.base_url}, {cfg.num_prompts} prompts, concurrency "
                f"{cfg.concurrency}, max_tokens {cfg.max_tokens}"
                + (f", a load generator on each of {', '.join(cfg.worker_hosts)}" if cfg.worker_hosts else "")
                + (f" (cell {cell.index + 1}/{len(configs)}: {cell.label()})" if many else "")
            )
            if many:
                progress.start_cell(cell.index, cell.label())
            worker = BenchThread(run_bench, cfg, progress=progress.update if many else None)
            threads.append(worker)  # joined by execute_local after teardown
            # A signal interrupts this wait, never the bench's loop; ``watch`` (a multi-node run's
            # node watch) raises out of it when a node is lost.
            worker.wait(_ticks(progress.tick if many else None, watch))
            if watch is not None:
                watch()
            if isinstance(worker.error, AutobenchError):
                return "FAILED", f"bench failed{_in(cell, many)}: {worker.error}"
            if worker.error is not None:  # a bug in the client must not lose the run: record it as FAILED
                exc = worker.error
                return "FAILED", f"bench crashed (a bug in autobench){_in(cell, many)}: {type(exc).__name__}: {exc}"
            result = worker.result
            assert result is not None  # the bench ended without an error: it returned its result
            metrics = normalized_metrics(result, plan, f"bench.cell-{cell.index + 1}.json" if many else P.BENCH_JSON)
            if outcome.tokenizer is None:
                outcome.tokenizer = result.tokenizer_id
            if outcome.dataset is None:
                outcome.dataset = result.dataset_id
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


def _ticks(*ticks: Callable[[], None] | None) -> Callable[[], None] | None:
    chosen = [t for t in ticks if t is not None]
    if not chosen:
        return None

    def tick() -> None:
        for t in chosen:
            t()

    return tick


def _in(cell: Cell, many: bool) -> str:
    return f" in cell {cell.index + 1} ({cell.label()})" if many else ""


def _summary(m: Mapping[str, object]) -> str:
    parts = [f"{m.get('completed', 0)} completed", f"{m.get('errors', 0)} errors"]
    if m.get("total_tok_s") is not None:
        parts.append(f"{m['total_tok_s']:.1f} tok/s")
    if m.get("ttft_median_ms") is not None:
        parts.append(f"TTFT median {m['ttft_median_ms']:.1f} ms")
    return ", ".join(parts)


def _server_gone(server: Exits, plan: RunPlan, settle_s: float = 3.0) -> str | None:
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
    plan: RunPlan,
    outcome: RunOutcome,
    readiness: Readiness | None,
    bench_error: str | None,
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
        sum(_count(cell_metrics(r).get("errors")) for _, r in outcome.cells)
        if len(outcome.cells) > 1
        else outcome.metrics.get("errors")
    )
    if outcome.status == "DONE" and errors:
        outcome.notes.append(f"{errors} request error(s) during the bench")


def _count(value: object) -> int | float:
    return value if isinstance(value, int | float) else 0


__all__ = ["LocalRuntime", "bench_config", "process_script"]

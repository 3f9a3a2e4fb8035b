"""``autobench run --runtime slurm``: submit the compiled sbatch script, follow the job,
record the outcome with the Slurm job id, its state and the node names.

    load + validate -> pin check -> compile --target slurm -> open the ledger
    sbatch --parsable --chdir RUN_DIR script.sh          (a refusal records nothing: nothing ran)
    follow the job: scontrol show job (sacct when the controller has forgotten it); during its
        boot, every 10 s the time elapsed and the last line of RUN_DIR/server.log
    SIGINT / SIGTERM -> scancel the job, wait for it to end -> ABORTED
    parse RUN_DIR/server.log and bench.json -> append DONE | BLOCKED | FAILED | ABORTED

The job itself writes ``phase`` (boot, bench, done, blocked, failed) and exits 2 when it
cannot run (``autobench`` not on its PATH, a secret not set: found before the boot), 3 when
the server never became ready and 4 when the bench failed or a node's step ended during it;
``cause`` says why for 2 and 4 (templates/slurm.sh.j2).
Job states map to outcomes: COMPLETED -> DONE (a request completed), exit 3 -> BLOCKED,
exit 4 -> FAILED, CANCELLED -> ABORTED (cause ``slurm_cancelled``), TIMEOUT -> FAILED
(``slurm_timeout``), any other end state -> FAILED (``slurm_<state>``).

``--in-allocation`` (``RunOptions.in_allocation``): the run is already inside a Slurm job that
holds the nodes the recipe needs (an experiment's array task, ``autobench.experiment.array``),
so the same script runs there with ``bash`` instead of ``sbatch``: its ``srun`` steps land on
the allocation's nodes, and its exit status stands for the job's end state (0 COMPLETED, 143
or a signal CANCELLED, any other FAILED with that exit code).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autobench.digits import is_digits
from autobench.errors import RunError
from autobench.recipe import LoadedRecipe
from autobench.run import plan as P
from autobench.run.collect import log_cause, log_facts, redact_files
from autobench.run.outcome import Echo, RowFacts, RunOptions, RunOutcome, sweep_metrics
from autobench.run.plan import RunPlan
from autobench.run.protocol import Compiled, Run, RuntimeBase
from autobench.run.signals import RunInterrupted, SignalGuard

#: Job states after which nothing more happens to the job.
TERMINAL = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "SPECIAL_EXIT",
        "REVOKED",
    }
)
POLL_S = 1.0
COMMAND_TIMEOUT_S = 30
_FIELD = re.compile(r"(\w[\w/:]*)=(\S*)")


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str  # e.g. COMPLETED, CANCELLED (the first word of JobState)
    exit_code: int | None  # the batch script's exit status
    signal: int | None
    nodes: str | None
    reason: str | None
    partition: str | None
    time_limit: str | None

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    def to_json_dict(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "state": self.state,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "nodes": self.nodes,
            "reason": self.reason,
            "partition": self.partition,
            "time_limit": self.time_limit,
        }


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RunError(
            f"{name} is not installed (or not on PATH): the Slurm runtime needs the Slurm client commands",
            hint="run on a Slurm login node, or install slurm-client; --runtime process runs on this machine",
        )
    return path


def _run(argv: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, env=dict(env), stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise RunError(f"{Path(argv[0]).name} did not answer within {COMMAND_TIMEOUT_S} s") from exc


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def parse_exit(value: str | None) -> tuple[int | None, int | None]:
    """``ExitCode=3:0`` -> (3, 0)."""
    if not value or ":" not in value:
        return None, None
    code, _, sig = value.partition(":")
    return (int(code) if is_digits(code) else None), (int(sig) if is_digits(sig) else None)


def parse_scontrol(job_id: str, text: str) -> JobInfo | None:
    """One ``scontrol show job -o`` line -> JobInfo (None if the job is unknown)."""
    fields = dict(_FIELD.findall(text))
    if "JobState" not in fields:
        return None
    code, sig = parse_exit(fields.get("ExitCode"))
    nodes = fields.get("NodeList")
    return JobInfo(
        job_id=job_id,
        state=fields["JobState"].split()[0],
        exit_code=code,
        signal=sig,
        nodes=None if nodes in (None, "", "(null)") else nodes,
        reason=None if fields.get("Reason") in (None, "None", "(null)") else fields.get("Reason"),
        partition=fields.get("Partition"),
        time_limit=fields.get("TimeLimit"),
    )


def job_info(job_id: str, env: Mapping[str, str]) -> JobInfo | None:
    proc = _run([_tool("scontrol"), "show", "job", "-o", job_id], env)
    info = parse_scontrol(job_id, proc.stdout) if proc.returncode == 0 else None
    if info is not None:
        return info
    sacct = shutil.which("sacct")  # the controller forgets finished jobs after MinJobAge
    if sacct is None:
        return None
    proc = _run([sacct, "-n", "-P", "-X", "-j", job_id, "-o", "State,ExitCode,NodeList,Partition,Timelimit"], env)
    line = _first_line(proc.stdout)
    if proc.returncode != 0 or not line:
        return None
    state, exit_code, nodes, partition, limit = ([*line.split("|"), "", "", "", "", ""])[:5]
    code, sig = parse_exit(exit_code)
    return JobInfo(job_id, state.split()[0], code, sig, nodes or None, None, partition or None, limit or None)


def allocation(env: Mapping[str, str]) -> tuple[str, str | None]:
    """(job id, node list) of the Slurm job this process runs in (an array task is named
    ``ARRAYJOB_TASK``); RunError when there is none."""
    job = env.get("SLURM_JOB_ID")
    if not job:
        raise RunError(
            "--in-allocation: not inside a Slurm job (SLURM_JOB_ID is not set)",
            hint="run it from an sbatch script or salloc, or leave --in-allocation out to submit a job",
        )
    array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    return (f"{array}_{task}" if array and task else job), env.get("SLURM_JOB_NODELIST") or None


def run_here(
    script: Path, run_dir: Path, env: Mapping[str, str], guard: SignalGuard, echo: Echo
) -> tuple[JobInfo, str | None]:
    """Run the job's script in this allocation (``bash``, its own process group, from the run
    folder); its end as a JobInfo, and the signal that interrupted it (SIGTERM to the script,
    whose trap tears the server down)."""
    import os
    import signal

    job, nodes = allocation(env)
    with guard.deferred(), (run_dir / f"slurm-{job}.out").open("ab") as out:  # a script started is one to stop
        proc = subprocess.Popen(
            ["bash", str(script)],
            cwd=run_dir,
            env={**env, "AUTOBENCH_RUN_DIR": str(run_dir)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    echo(f"slurm job {job}: the script runs in this allocation" + (f" on {nodes}" if nodes else ""))
    interrupted: str | None = None
    try:
        rc = proc.wait()
    except RunInterrupted as exc:
        interrupted = exc.signame
        guard.disarm()
        echo(f"interrupted by {exc.signame}: SIGTERM to the job's script")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait()
    state = "COMPLETED" if rc == 0 else "CANCELLED" if rc in (143, -signal.SIGTERM) or interrupted else "FAILED"
    code, sig = (None, -rc) if rc < 0 else (rc, 0)
    return JobInfo(job, state, code, sig, nodes, None, env.get("SLURM_JOB_PARTITION"), None), interrupted


def submit(script: Path, run_dir: Path, env: Mapping[str, str]) -> str:
    """``sbatch`` the script from the run folder; the job id, or RunError with sbatch's reason."""
    proc = _run(
        [
            _tool("sbatch"),
            "--parsable",
            "--chdir",
            str(run_dir),
            f"--export=ALL,AUTOBENCH_RUN_DIR={run_dir}",
            str(script),
        ],
        env,
    )
    job = proc.stdout.strip().split(";")[0]
    if proc.returncode != 0 or not is_digits(job):
        why = _first_line(proc.stderr) or _first_line(proc.stdout) or f"exit {proc.returncode}"
        raise RunError(
            f"sbatch refused the job: {why}",
            hint="check --partition / --account and the cluster's limits (sinfo); nothing ran, nothing was recorded",
        )
    return job


def cancel(job_id: str, env: Mapping[str, str]) -> None:
    _run([_tool("scancel"), job_id], env)


def follow(
    job_id: str,
    env: Mapping[str, str],
    echo: Echo,
    *,
    poll_s: float = POLL_S,
    tick: Callable[[JobInfo], None] | None = None,
) -> JobInfo:
    """Wait until the job ends (a signal raises RunInterrupted out of the wait); ``tick`` is
    called with the job's state after every poll that finds it still going."""
    last = None
    missing_since: float | None = None
    while True:
        info = job_info(job_id, env)
        if info is None:
            missing_since = missing_since or time.monotonic()
            if time.monotonic() - missing_since > 30:
                raise RunError(f"Slurm job {job_id} disappeared (neither scontrol nor sacct knows it)")
        else:
            missing_since = None
            if info.state != last:
                echo(f"slurm job {job_id}: {info.state}" + (f" on {info.nodes}" if info.nodes else ""))
                last = info.state
            if info.done:
                return info
            if tick is not None:
                tick(info)
        time.sleep(poll_s)


def wait_end(job_id: str, env: Mapping[str, str], timeout_s: float = 120) -> JobInfo | None:
    deadline = time.monotonic() + timeout_s
    info = job_info(job_id, env)
    while (info is None or not info.done) and time.monotonic() < deadline:
        time.sleep(POLL_S)
        info = job_info(job_id, env)
    return info


class BootWatch:
    """The job's boot seen from here: while the job runs and its ``phase`` file says boot, a
    progress line every 10 s of the boot (:class:`autobench.run.progress.BootProgress`) with the
    server's last meaningful line, read from the end of RUN_DIR/server.log (the run folder is on
    the filesystem the nodes share), redacted."""

    def __init__(
        self,
        run_dir: Path,
        echo: Echo,
        redact: Callable[[str], str],
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        from autobench.run.progress import BootProgress

        self.run_dir = run_dir
        self.redact = redact
        self.clock = clock
        self.progress = BootProgress(echo, self.server_line)
        self._since: float | None = None

    def __call__(self, info: JobInfo) -> None:
        if info.state != "RUNNING" or _phase(self.run_dir) != "boot":
            return
        now = self.clock()
        if self._since is None:
            self._since = now
        self.progress(now - self._since)

    def server_line(self) -> str | None:
        from autobench.run.progress import last_meaningful_line, log_tail

        line = last_meaningful_line(log_tail(self.run_dir / P.SERVER_LOG))
        return self.redact(line) if line else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()[:1000] or None
    except OSError:
        return None


def _phase(run_dir: Path) -> str:
    try:
        return (run_dir / "phase").read_text(encoding="utf-8").strip() or "queued"
    except OSError:
        return "queued"


def classify(
    info: JobInfo, phase: str, outcome: RunOutcome, cause: str | None = None
) -> tuple[str, str | None, str | None]:
    """(status, root cause category, message) from the job's end state and the ``cause`` file
    the job writes when it gives up (exit 2 or 4); the log's root cause replaces the
    category/message of BLOCKED and FAILED runs when it states one."""
    job = f"Slurm job {info.job_id}"
    if info.state == "FAILED" and info.exit_code == 2 and cause:
        return "FAILED", "job_setup", cause
    if info.state == "FAILED" and info.exit_code == 4 and cause:
        return "FAILED", "node_lost" if " stopped " in f" {cause} " else "bench_failed", cause
    if info.state == "COMPLETED":
        if outcome.metrics.get("completed"):
            return "DONE", None, None
        return "FAILED", "bench_failed", "no request completed"
    if info.state == "CANCELLED":
        return "ABORTED", "slurm_cancelled", f"{job} was cancelled (scancel) during {phase}"
    if info.state == "TIMEOUT":
        return "FAILED", "slurm_timeout", f"{job} reached its time limit ({info.time_limit}) during {phase}"
    if info.state == "FAILED" and info.exit_code == 3:
        return "BLOCKED", "not_ready", "the server never became ready (see server.log)"
    if info.state == "FAILED" and info.exit_code == 4:
        return "FAILED", "bench_failed", "the bench failed (see slurm-*.out)"
    code = f" (exit {info.exit_code})" if info.exit_code is not None else ""
    return "FAILED", f"slurm_{info.state.lower()}", f"{job} ended {info.state}{code} during {phase}"


def _grid(run_dir: Path, loaded: LoadedRecipe, outcome: RunOutcome) -> None:
    """A grid's cells from the job's bench.cell-N.json files, in run order, up to the first
    missing one (the job stops at the first cell that fails); the row's metrics from them."""
    from autobench.bench.result import BenchResult
    from autobench.digits import load_json
    from autobench.recipe.grid import cells

    for cell in cells(loaded.recipe):
        path = run_dir / f"bench.cell-{cell.index + 1}.json"  # written by the job: read at this edge
        try:
            data = load_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            break
        if not isinstance(data, dict):
            break
        outcome.cells.append((cell, BenchResult(data)))
    if outcome.cells:
        outcome.metrics = sweep_metrics(outcome.cells)
        tokenizer = outcome.cells[0][1].data.get("tokenizer_id")
        outcome.tokenizer = tokenizer if isinstance(tokenizer, str) else None


def _metrics(run_dir: Path) -> tuple[dict[str, Any], str | None]:
    """(ledger metrics, the tokenizer that measured the prompts) of the job's bench.json."""
    from autobench.bench.result import load_result_json
    from autobench.errors import AutobenchError
    from autobench.runrow import metric_columns

    path = run_dir / P.BENCH_JSON  # written by the job on the node: read at this edge
    if not path.is_file():
        return {}, None
    try:
        norm = load_result_json(path)
    except AutobenchError:
        return {}, None
    tokenizer = norm.get("tokenizer")
    return metric_columns(norm), tokenizer if isinstance(tokenizer, str) else None


class SlurmRuntime(RuntimeBase):
    """``--runtime slurm``: the compiled sbatch script, submitted and followed (the module doc)."""

    def __init__(self, name: str, options: RunOptions, echo: Echo, env: Mapping[str, str]):
        super().__init__(name, options, echo, env)
        # A server in a Docker container publishes its port (AB022); on the node itself, in
        # pyxis or Apptainer it listens on the node's network: the container rules do not apply.
        self.rules = "docker" if options.container == "docker" else "slurm"

    def compile(self, loaded: LoadedRecipe) -> Compiled:
        from autobench.compile.slurm import compile_slurm
        from autobench.run.plan import build_plan

        o = self.options
        plan = build_plan(loaded, runtime="process", runs_dir=o.runs_dir, ready_timeout_s=o.ready_timeout_s)
        plan = replace(plan, runtime="slurm", teardown="scancel JOBID (the job's own trap stops the server)")  # type: ignore[arg-type]
        gpus, part = o.gpus_per_node, o.partition
        job = compile_slurm(
            loaded,
            partition=part,
            account=o.account,
            time_limit=o.time_limit,
            gpus_per_node=gpus,
            gpu_request=o.gpu_request,
            container=o.container,
        )
        return Compiled(plan, job)

    def check(self, loaded: LoadedRecipe, compiled: Compiled) -> list[str]:
        if self.options.in_allocation:
            allocation(self.env)
            _tool("srun")
        else:
            _tool("sbatch")
        return []

    def place(self, plan: RunPlan) -> RunPlan:
        return replace(plan, run_dir=plan.run_dir.resolve())  # sbatch runs it from elsewhere

    def execute(self, run: Run) -> RowFacts:
        plan, outcome, echo, env = run.plan, run.outcome, run.echo, run.env
        run_dir = plan.run_dir
        interrupted: str | None = None
        if self.options.in_allocation:
            try:
                info, interrupted = run_here(plan.path(P.SCRIPT), run_dir, env, run.guard, echo)
            finally:
                run.guard.disarm()
            job_id = info.job_id
        else:
            with run.guard.deferred():  # a job submitted is a job to cancel: its id first
                job_id = submit(plan.path(P.SCRIPT), run_dir, env)
            echo(f"run {plan.recipe_name}: slurm job {job_id}, folder {run_dir}")
            try:
                info = follow(job_id, env, echo, tick=BootWatch(run_dir, echo, run.redact))
            except RunInterrupted as exc:
                interrupted = exc.signame
                echo(f"interrupted by {exc.signame}: scancel {job_id}")
                run.guard.disarm()
                cancel(job_id, env)
                info = wait_end(job_id, env) or JobInfo(job_id, "CANCELLED", None, None, None, None, None, None)
            finally:
                run.guard.disarm()
        redact_files([run_dir / P.SERVER_LOG, *sorted(run_dir.glob("slurm-*.out"))], run.secrets)
        phase = _phase(run_dir)
        from autobench.recipe.grid import cells

        if len(cells(run.loaded.recipe)) > 1:
            _grid(run_dir, run.loaded, outcome)
        else:
            outcome.metrics, outcome.tokenizer = _metrics(run_dir)
        rc = log_facts(run_dir, outcome)
        status, category, message = classify(info, phase, outcome, _read(run_dir / "cause"))
        if interrupted:
            outcome.signal = interrupted
            message = f"interrupted by {interrupted} during {phase}; {message}"
        outcome.status = status
        outcome.root_cause_category, outcome.root_cause_message = category, message
        log_cause(outcome, rc, ("not_ready", "bench_failed"))
        outcome.notes.insert(0, f"slurm job {job_id} on {info.nodes or '?'}: {info.state}")
        container = self.options.container
        facts: dict[str, object] = {"runtime": "slurm", "slurm": info.to_json_dict(), "phase": phase}
        facts["container"] = container
        if self.options.in_allocation:
            facts["in_allocation"] = True
        return RowFacts(
            host_facts=facts,
            # the image ran in the job's container
            image=run.loaded.recipe.container.image if container != "none" else None,
        )


__all__ = ["JobInfo", "SlurmRuntime", "classify", "parse_scontrol"]

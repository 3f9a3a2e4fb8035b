"""``autobench experiment run --runtime slurm``: the treatments fan out as one Slurm job array.

    the treatments to boot (not pruned, no DONE run of their digest)  -> recipe files
    compile_array: #SBATCH --array=0-(n-1)%N, task K = `autobench run TREATMENT_K` on its node
    sbatch --parsable --chdir FOLDER --export=ALL script        (AUTOBENCH_LEDGER in the environment)
    follow every task with `scontrol show job -o ARRAY_JOB_ID` (one line per started task)
    SIGINT / SIGTERM / SIGHUP -> scancel the array, wait for its end
    each task's run, read back from the ledger by digest -> the experiment's outcomes

Slurm's job arrays (https://slurm.schedmd.com/job_array.html): the tasks share the job's options,
each gets ``SLURM_ARRAY_TASK_ID``, the ``%`` of ``--array`` bounds how many run at once, and
``scancel ARRAY_JOB_ID`` cancels every task.  Each task records its own run (the node's
``autobench run``), into a file ledger the nodes share or the team's PostgreSQL: the controller
only reads the ledger, so a run lands even if the controller is gone.  Pending tasks of a
cancelled array never started: they are the experiment's "left" treatments, run by the next
``experiment run`` (the DONE ones are skipped by digest).

A multi-node treatment (``topology.nodes`` K > 1) is a task of K nodes.  The tasks of one array
share their options (``--nodes`` among them), so the treatments are grouped by node count, one
array per group, submitted one after another (each bounded by ``--max-parallel``).  A K-node task
runs ``autobench run --runtime slurm --in-allocation``: the treatment's own multi-node job script
(``compile --target slurm``: one ``srun`` step per node, the head the task's first node) runs in
the task's allocation, so its nodes are the ones Slurm gave the task.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from autobench.digits import is_digits
from autobench.errors import RecipeError, RunError
from autobench.experiment.execute import Booted, materialize, said
from autobench.experiment.plan import ExperimentPlan, PlannedTreatment
from autobench.recipe.loader import LoadedRecipe
from autobench.run.outcome import Echo, RunOptions
from autobench.run.signals import RunInterrupted, SignalGuard
from autobench.run.slurm import _FIELD, TERMINAL, _first_line, _run, _tool, cancel, parse_exit

POLL_S = 1.0
#: How the nodes boot each treatment, by ``--container``: on the node itself or in Docker.
NODE_RUNTIMES = {"none": "process", "docker": "docker"}


@dataclass(frozen=True)
class TaskState:
    index: int
    state: str  # RUNNING, COMPLETED, CANCELLED, ... (the first word of JobState)
    nodes: str | None
    exit_code: int | None


def parse_tasks(text: str) -> tuple[dict[int, TaskState], bool]:
    """``scontrol show job -o ARRAY_JOB_ID``: one line per task that started (``ArrayTaskId=K``)
    and one for the tasks still pending (``ArrayTaskId=2-3%2``).  Each started task's state by
    index, and whether every line is in an end state (False when there is none)."""
    tasks: dict[int, TaskState] = {}
    lines = [dict(_FIELD.findall(line)) for line in text.splitlines()]
    lines = [f for f in lines if "JobState" in f]
    for fields in lines:
        index = fields.get("ArrayTaskId", "")
        if is_digits(index):
            code, _ = parse_exit(fields.get("ExitCode"))
            nodes = fields.get("NodeList")
            state = fields["JobState"].split()[0]
            tasks[int(index)] = TaskState(int(index), state, None if nodes in (None, "", "(null)") else nodes, code)
    ended = bool(lines) and all(f["JobState"].split()[0] in TERMINAL for f in lines)
    return tasks, ended


def task_rules(options: RunOptions) -> Callable[[LoadedRecipe], str]:
    """The runtime whose rules each treatment is validated for in an array: a single-node
    treatment's task runs it on the node (process, or docker with ``--container docker``), a
    multi-node one's the Slurm job script in the task's allocation."""
    from dataclasses import replace

    from autobench.experiment.execute import rules_runtime

    on_node = rules_runtime(replace(options, runtime=NODE_RUNTIMES.get(options.container, "process")))
    in_job = rules_runtime(replace(options, runtime="slurm"))
    return lambda loaded: in_job(loaded) if loaded.recipe.topology.nodes > 1 else on_node(loaded)


def job_ledger(ledger: str | None) -> str:
    """The ledger the tasks record into, as the nodes must name it: a file's absolute path
    (the folder must be shared with the nodes), a database URL as given."""
    from autobench.ledger.store import resolve_location

    url, path = resolve_location(ledger)
    return str(path.resolve()) if path is not None else url.render_as_string(hide_password=False)


def run_args(options: RunOptions, nodes: int = 1, gpus: int | None = None) -> list[str]:
    """The words after ``autobench run FILE --ledger "$AUTOBENCH_LEDGER"`` in every task of an
    array of ``nodes``-node treatments: one node, the node's runtime; several, the treatment's
    Slurm job script in the task's allocation (``gpus`` per node asked by its steps)."""
    node = NODE_RUNTIMES.get(options.container)
    if node is None:
        raise RecipeError(
            f"--container {options.container}: an experiment's array tasks run `autobench run` on the node, "
            "itself or in Docker",
            hint="use --container none or docker",
        )
    where = ["--runtime", node]
    if nodes > 1:
        where = ["--runtime", "slurm", "--in-allocation", "--container", options.container]
        where += ["--gpus-per-node", str(gpus or 0), "--gpu-request", options.gpu_request]
    args = [*where, "--runs-dir", str(Path(options.runs_dir).resolve()), "--no-live"]
    if options.vllm_exec:
        args += ["--vllm-exec", options.vllm_exec]
    if options.ready_timeout_s is not None:
        args += ["--ready-timeout", repr(options.ready_timeout_s)]
    if options.vllm_version:
        args += ["--vllm-version", options.vllm_version]
    if options.grace_s != RunOptions.grace_s:  # the default goes without saying
        args += ["--grace", repr(options.grace_s)]
    if options.profile is not None:
        args += ["--profile", str(Path(options.profile).resolve())]
    for flag, on in (
        ("--allow-unpinned", options.allow_unpinned),
        ("--force", options.force),
        ("--pull", options.pull),
        ("--require-tokenizer", options.require_tokenizer),
    ):
        if on:
            args.append(flag)
    return args


def array_script(
    plan: ExperimentPlan,
    todo: Sequence[PlannedTreatment],
    files: Sequence[Path],
    options: RunOptions,
    max_parallel: int,
) -> str:
    """The array's sbatch script: one task per treatment of ``todo`` (written as ``files``; all
    of one node count), asking for what the largest treatment needs (a job array's tasks share
    their options)."""
    from autobench.compile.slurm import default_time_limit
    from autobench.compile.slurm_array import ArrayTask, compile_array
    from autobench.recipe.facts import node_gpus

    counts = sorted({p.loaded.recipe.topology.nodes for p in todo})
    if len(counts) > 1:
        raise RecipeError(f"one job array per node count, not {counts}", hint="a bug: report it with the experiment")
    nodes = counts[0] if counts else 1
    if nodes > 1 and options.container == "docker":
        first = todo[0]
        raise RecipeError(
            f"treatment {first.treatment.id} ({first.treatment.label()}) runs on {nodes} nodes: a multi-node "
            "task runs its nodes' servers as srun steps, which --container docker cannot",
            location=str(plan.experiment.path),
            hint="use --container none (the server on the nodes), or --runtime docker (the multi-node driver)",
        )
    gpus = options.gpus_per_node
    if gpus is None:
        gpus = max(node_gpus(p.loaded.recipe) for p in todo)
    limit = options.time_limit or max((default_time_limit(p.loaded.recipe) for p in todo), key=int)
    pairs = zip(todo, files, strict=True)
    tasks = [ArrayTask(str(path.resolve()), p.treatment.id, p.treatment.label(), p.digest) for p, path in pairs]
    return compile_array(
        name=plan.experiment.name,
        plan_digest=plan.digest,
        tasks=tasks,
        run_args=run_args(options, nodes, gpus),
        nodes=nodes,
        max_parallel=max_parallel,
        time_limit=limit,
        gpus_per_node=gpus,
        gpu_request=options.gpu_request,
        partition=options.partition,
        account=options.account,
    )


def submit_array(script: Path, folder: Path, env: Mapping[str, str]) -> str:
    """``sbatch`` the array from ``folder``; its job id, or RunError with sbatch's reason."""
    proc = _run([_tool("sbatch"), "--parsable", "--chdir", str(folder), "--export=ALL", str(script)], env)
    job = proc.stdout.strip().split(";")[0]
    if proc.returncode != 0 or not is_digits(job):
        why = _first_line(proc.stderr) or _first_line(proc.stdout) or f"exit {proc.returncode}"
        raise RunError(
            f"sbatch refused the experiment's job array: {why}",
            hint="check --partition / --account and the cluster's limits (sinfo, MaxArraySize); nothing ran",
            location=str(script),
        )
    return job


def array_state(job: str, env: Mapping[str, str]) -> tuple[dict[int, TaskState], bool | None]:
    """Every started task's state, and whether the array has ended: True once the controller no
    longer knows the job (``Invalid job id``: forgotten after MinJobAge; the ledger holds what the
    tasks did), None when ``scontrol`` could not say (a busy controller): ask again."""
    try:
        proc = _run([_tool("scontrol"), "show", "job", "-o", job], env)
    except RunError:  # no answer within the command timeout
        return {}, None
    if proc.returncode != 0:
        return {}, True if "invalid job id" in proc.stderr.lower() else None
    return parse_tasks(proc.stdout)


def _claim(folder: Path, stem: str) -> Path:
    """A new script file ``STEM.sh`` (else ``STEM-2.sh``, ...): a resubmission never overwrites
    the script an earlier array ran."""
    n = 1
    while True:
        path = folder / (f"{stem}.sh" if n == 1 else f"{stem}-{n}.sh")
        try:
            with path.open("x", encoding="utf-8"):
                return path
        except FileExistsError:
            n += 1


class SlurmArray:
    """``boot_all`` for :func:`autobench.experiment.execute.fan_out`: the treatments as one array."""

    def __init__(
        self,
        plan: ExperimentPlan,
        folder: Path,
        options: RunOptions,
        max_parallel: int,
        echo: Echo,
        env: Mapping[str, str] | None = None,
        poll_s: float = POLL_S,
    ):
        self.plan, self.folder, self.options, self.max_parallel = plan, folder.resolve(), options, max_parallel
        self.echo = echo
        self.env = {**(os.environ if env is None else env), "AUTOBENCH_LEDGER": job_ledger(options.ledger)}
        self.poll_s = poll_s
        self.job: str | None = None
        self.script: Path | None = None
        self.seen: dict[int, str] = {}  # each task's last state said
        self.tasks: dict[int, TaskState] = {}  # each started task's last known state

    def __call__(self, todo: Sequence[PlannedTreatment]) -> dict[str, Booted]:
        """Every treatment of ``todo`` booted: one array per node count (fewest nodes first),
        one after another; after an interrupted array the later ones are not submitted."""
        out: dict[str, Booted] = {}
        for nodes in sorted({p.loaded.recipe.topology.nodes for p in todo}):
            group = [p for p in todo if p.loaded.recipe.topology.nodes == nodes]
            got, interrupted = self._array(group)
            out.update(got)
            if interrupted:
                break
        return out

    def _array(self, todo: Sequence[PlannedTreatment]) -> tuple[dict[str, Booted], bool]:
        """``todo`` (one node count) as one array: what each task did, and whether a signal
        cancelled it."""
        from autobench.ledger import open_ledger

        files = [materialize(self.plan, p, self.folder) for p in todo]
        text = array_script(self.plan, todo, files, self.options, self.max_parallel)
        self.script = _claim(self.folder, "array-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        self.script.write_text(text, encoding="utf-8")
        with open_ledger(self.options.ledger) as book:  # the runs the tasks append come after it
            start = book.head()[0]
        tasks: dict[int, TaskState] = {}
        reported: dict[int, Booted] = {}
        self.seen, self.tasks = {}, {}
        interrupted = False
        with SignalGuard() as guard:
            with guard.deferred():  # an array submitted is an array to cancel: its id first
                self.job = job = submit_array(self.script, self.folder, self.env)
            self.echo(
                f"experiment {self.plan.experiment.name}: slurm array job {job}, {len(todo)} tasks, "
                f"at most {self.max_parallel} at once; script {self.script}"
            )
            try:
                tasks = self._follow(job, todo, start, reported)
            except RunInterrupted as exc:
                interrupted = True
                guard.disarm()
                self.echo(f"interrupted by {exc.signame}: scancel {job} (the tasks not started are left)")
                cancel(job, self.env)
                tasks = self._follow(job, todo, start, reported, timeout_s=120)
        got = {todo[i].treatment.id: reported.get(i) or self._booted(job, todo, i, tasks[i], start) for i in tasks}
        return got, interrupted

    def _follow(
        self,
        job: str,
        todo: Sequence[PlannedTreatment],
        start: int,
        reported: dict[int, Booted],
        timeout_s: float | None = None,
    ) -> dict[int, TaskState]:
        """Poll the array until it ended, saying each task's changes; each ended task's run."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        seen = self.seen
        positions = {p.treatment.id: n for n, p in enumerate(self.plan.treatments, 1)}
        total = len(self.plan.treatments)
        tasks = self.tasks
        while True:
            now, ended = array_state(job, self.env)
            tasks.update(now)  # a forgotten job's tasks keep their last known state
            for i, task in sorted(now.items()):
                if i >= len(todo) or seen.get(i) == task.state:
                    continue
                seen[i] = task.state
                t = todo[i].treatment
                head = f"[{positions[t.id]}/{total}] {t.id} {t.label()}"
                where = f" on {task.nodes}" if task.nodes else ""
                self.echo(f"{head}: slurm task {job}_{i} {task.state}{where}")
                if task.state in TERMINAL and i not in reported:
                    reported[i] = self._booted(job, todo, i, task, start)
                    self.echo(f"{head}: {said(reported[i])}")
            if ended or (deadline is not None and time.monotonic() > deadline):
                return {i: t for i, t in tasks.items() if i < len(todo)}
            time.sleep(self.poll_s)

    def _booted(self, job: str, todo: Sequence[PlannedTreatment], i: int, task: TaskState, start: int) -> Booted:
        """Task ``i``'s run: the newest run of its digest appended since the array was submitted."""
        from autobench.ledger import open_ledger

        with open_ledger(self.options.ledger, create=False) as book:
            runs = book.runs(digest=todo[i].digest, limit=1, newest_first=True)
        if runs and runs[0].id > start:
            return Booted(runs[0].status, runs[0].display_id, runs[0].stable_id)
        code = f" (exit {task.exit_code})" if task.exit_code is not None else ""
        out = self.folder / f"slurm-{job}_{i}.out"
        status = "ABORTED" if task.state == "CANCELLED" else "FAILED"
        return Booted(
            status, cause=f"slurm task {job}_{i} ended {task.state}{code} without a run in the ledger; see {out}"
        )


__all__ = ["SlurmArray", "TaskState", "array_script", "job_ledger", "parse_tasks", "run_args", "task_rules"]

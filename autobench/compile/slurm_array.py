"""An experiment's Slurm job array: one ``sbatch`` script, one array task per treatment.

``#SBATCH --array=0-(n-1)%N`` (Slurm's job arrays, https://slurm.schedmd.com/job_array.html:
every task gets ``SLURM_ARRAY_TASK_ID``; the ``%`` separator limits how many run at once).  Task
K runs ``autobench run`` on treatment K's recipe file on its node, so every task boots, benches
and records its own run -- in the ledger ``$AUTOBENCH_LEDGER`` names, exported from the
submitting environment and never written into the script.  All tasks of an array share one set
of options (job_array.html: "All jobs must have the same initial options"), so the job asks for
what the largest treatment needs, and ``nodes`` (every treatment of one array has the same node
count: ``autobench.experiment.array`` submits one array per count).  Pure: no I/O besides reading the template.
"""

from __future__ import annotations

from dataclasses import dataclass

from autobench.compile.slurm import _TIME, GPU_REQUESTS, _check_name
from autobench.errors import RecipeError

#: Most tasks one experiment array holds (Slurm's own default MaxArraySize is 1001).
MAX_TASKS = 1000


@dataclass(frozen=True)
class ArrayTask:
    file: str  # the treatment's recipe file, absolute
    id: str
    label: str
    digest: str


def array_spec(count: int, max_parallel: int) -> str:
    """``0-(count-1)%max_parallel`` (``0`` for one task; no ``%`` when all may run at once)."""
    if not 1 <= count <= MAX_TASKS:
        raise RecipeError(
            f"a job array of {count} tasks: an experiment array holds 1 to {MAX_TASKS}",
            hint="split the experiment (max_treatments) or run it with --runtime docker|process",
        )
    if max_parallel < 1:
        raise RecipeError(f"--max-parallel {max_parallel}: at least 1 task must run", hint="e.g. --max-parallel 2")
    indices = "0" if count == 1 else f"0-{count - 1}"
    return indices if max_parallel >= count else f"{indices}%{max_parallel}"


def compile_array(
    *,
    name: str,
    plan_digest: str,
    tasks: list[ArrayTask],
    run_args: list[str],
    max_parallel: int,
    time_limit: str,
    gpus_per_node: int | None,
    gpu_request: str = "gpus-per-node",
    partition: str | None = None,
    account: str | None = None,
    nodes: int = 1,
) -> str:
    """The array's sbatch script (see the module doc).  ``run_args``: the words after
    ``autobench run FILE --ledger "$AUTOBENCH_LEDGER"`` (runtime, runs folder, ...)."""
    from autobench import __version__
    from autobench.compile.render import environment

    if gpu_request not in GPU_REQUESTS:
        raise RecipeError(f"unknown --gpu-request {gpu_request!r}", hint="use one of " + ", ".join(GPU_REQUESTS))
    _check_name(partition, "partition")
    _check_name(account, "account")
    if not _TIME.fullmatch(time_limit):
        raise RecipeError(
            f"--time {time_limit[:40]!r} is not a Slurm time", hint="minutes, MM:SS, HH:MM:SS or D-HH:MM:SS"
        )
    gpu_option = ""
    if gpus_per_node:
        gpu_option = f"--gres=gpu:{gpus_per_node}" if gpu_request == "gres" else f"--gpus-per-node={gpus_per_node}"
    try:
        return (
            environment()
            .get_template("slurm_array.sh.j2")
            .render(
                version=__version__,
                name=name,
                plan=plan_digest,
                job_name=f"autobench-exp-{name}"[:64],
                array=array_spec(len(tasks), max_parallel),
                nodes=nodes,
                gpu_option=gpu_option,
                time_limit=time_limit,
                partition=partition,
                account=account,
                treatments=tasks,
                run_args=run_args,
            )
        )
    except ValueError as exc:  # a NUL byte reached the quoting path
        raise RecipeError(f"cannot compile the experiment's job array: {exc}") from exc

"""The options of a run, declared once for ``autobench run`` and ``autobench experiment run``.

    @run_options()                      # every option below, as ``options: RunOptions``
    def run(..., options: RunOptions): ...

Each option's parameter name is the :class:`autobench.run.RunOptions` field it fills, so a new
run option is one :class:`Spec` here (and the field): both commands take it and pass it on.
What only one command has (``run --dry-run/--live``, ``experiment run --rerun``) stays there;
``replay --run`` takes those of them a replay can change (``run_options(only=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

import click

from autobench.cli.option_group import Spec, option_group
from autobench.cli.options import GPU_REQUEST, LEDGER
from autobench.cli.params import Finite

if TYPE_CHECKING:
    from autobench.run.outcome import RunOptions

F = TypeVar("F", bound=Callable[..., Any])


def _hosts(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    """``HEAD,WORKER,...`` -> ("HEAD", "WORKER", ...); nothing given: ()."""
    return tuple(h.strip() for h in value.split(",")) if value else ()


SPECS: tuple[Spec, ...] = (
    Spec(
        ("--runtime",),
        {
            "type": click.Choice(["docker", "process", "slurm"]),
            "default": "docker",
            "show_default": True,
            "help": "docker: the compiled `docker run` command; process: `vllm serve ...` as a child process; "
            "slurm: sbatch the compiled job script and follow it (docs/slurm.md).",
        },
    ),
    Spec(("--partition",), {"default": None, "help": "slurm: the partition to submit to."}),
    Spec(
        ("--gpus-per-node",),
        {
            "type": click.IntRange(min=0),
            "default": None,
            "help": "slurm: GPUs per node (default: topology.gpus_per_node, else TP x PP x DP over the nodes; "
            "0: request none).",
        },
    ),
    GPU_REQUEST,
    Spec(("--account",), {"default": None, "help": "slurm: the account to charge."}),
    Spec(
        ("--time", "time_limit"),
        {"default": None, "help": "slurm: the job's time limit (default: boot + bench cap + 5 min)."},
    ),
    Spec(
        ("--container",),
        {
            "type": click.Choice(["none", "docker", "pyxis", "apptainer"]),
            "default": "none",
            "show_default": True,
            "help": "slurm: how the node runs the server.",
        },
    ),
    Spec(
        ("--vllm-exec",),
        {
            "default": None,
            "metavar": "CMD",
            "help": 'process runtime: the command that replaces `vllm` (shell words), e.g. "/opt/vllm/bin/vllm".',
        },
    ),
    LEDGER,
    Spec(
        ("--runs-dir",),
        {
            "default": "runs",
            "show_default": True,
            "type": click.Path(file_okay=False),
            "help": "Run folders go here: <runs-dir>/<UTC timestamp>-<recipe>/.",
        },
    ),
    Spec(
        ("--allow-unpinned",),
        {
            "is_flag": True,
            "help": "Run even if Hub revisions are not pinned to a commit sha (noted in the ledger).",
        },
    ),
    Spec(
        ("--ready-timeout", "ready_timeout_s"),
        {
            "type": Finite(min=0, min_open=True),
            "default": None,
            "help": "Boot timeout in seconds (default: the recipe's bench.ready_timeout_s).",
        },
    ),
    Spec(
        ("--grace", "grace_s"),
        {
            "type": Finite(min=0),
            "default": 10.0,
            "show_default": True,
            "help": "process runtime: seconds between SIGTERM and SIGKILL at teardown.",
        },
    ),
    Spec(
        ("--pull",),
        {
            "is_flag": True,
            "help": "docker runtime: `docker pull` the pinned image digest when the local image lacks it "
            "(without it, a missing or different local image is refused).",
        },
    ),
    Spec(("--force",), {"is_flag": True, "help": "Run even when preflight predicts a boot failure."}),
    Spec(
        ("--vllm-version",),
        {
            "default": None,
            "metavar": "X.Y.Z",
            "help": "vLLM version for preflight when the image tag does not say it.",
        },
    ),
    Spec(
        ("--hosts",),
        {
            "default": None,
            "callback": _hosts,
            "metavar": "HEAD,WORKER,...",
            "help": "Multi-node recipes: the hosts, head first (overrides topology.hosts).",
        },
    ),
    Spec(
        ("--remote",),
        {
            "default": None,
            "metavar": "CMD",
            "help": "How hosts are reached: a multi-node recipe's nodes (by the driver) and bench.worker_hosts "
            "(the load generators) [env AUTOBENCH_REMOTE; default ssh -o BatchMode=yes].",
        },
    ),
    Spec(
        ("--profile",),
        {
            "type": click.Path(dir_okay=False),
            "default": None,
            "help": "A bench profile (YAML of bench keys: concurrency: [1, 4, 16], repeat: 2, schedule: ...) "
            "merged onto the recipe's bench (docs/recipes.md).",
        },
    ),
    Spec(
        ("--require-tokenizer",),
        {
            "is_flag": True,
            "help": "Refuse to estimate prompt lengths: a model without a tokenizer fails the bench instead of "
            "recording figures flagged prompts_estimated.",
        },
    ),
)


def build(values: dict[str, Any]) -> RunOptions:
    """The :class:`RunOptions` of the group's values (each named as the field it fills) and the
    command's ``--ledger`` (``ledger_url``)."""
    from autobench.run.outcome import RunOptions

    ledger = values.pop("ledger_url")  # named as every command's --ledger (autobench.cli.options)
    return RunOptions(ledger=ledger, **values)


def run_options(*, only: Collection[str] | None = None, **helps: str) -> Callable[[F], F]:
    """Every run option on the command (``only``: those named), handed to it as ``options:
    RunOptions`` (the others at their defaults).  ``helps`` rewords an option's help for this
    command (by parameter name)."""
    specs = SPECS if only is None else tuple(spec for spec in SPECS if spec.name in only)
    if only is not None and len(specs) != len(set(only)):
        raise ValueError(f"not run options: {sorted(set(only) - {spec.name for spec in specs})}")
    return option_group(specs, "options", build, helps=helps)


__all__ = ["SPECS", "build", "run_options"]

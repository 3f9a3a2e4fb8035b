"""``autobench run RECIPE``: parse options, call :func:`autobench.run.run_recipe`, print."""

from __future__ import annotations

import shlex
from typing import Any

import click

from autobench.cli.options import gpu_request_option, json_option, ledger_option, print_json
from autobench.cli.params import Finite


def _echo_err(text: str) -> None:
    from autobench.escape import human

    click.echo(human(text, newlines=True), err=True)


@click.command("run")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option(
    "--runtime",
    type=click.Choice(["docker", "process", "slurm"]),
    default="docker",
    show_default=True,
    help="docker: the compiled `docker run` command; process: `vllm serve ...` as a child process; "
    "slurm: sbatch the compiled job script and follow it (docs/slurm.md).",
)
@click.option("--partition", default=None, help="slurm: the partition to submit to.")
@click.option(
    "--gpus-per-node",
    type=click.IntRange(min=0),
    default=None,
    help="slurm: GPUs per node (default: topology.gpus_per_node, else TP x PP x DP over the nodes; 0: request none).",
)
@gpu_request_option
@click.option("--account", default=None, help="slurm: the account to charge.")
@click.option(
    "--time", "time_limit", default=None, help="slurm: the job's time limit (default: boot + bench cap + 5 min)."
)
@click.option(
    "--container",
    type=click.Choice(["none", "docker", "pyxis", "apptainer"]),
    default="none",
    show_default=True,
    help="slurm: how the node runs the server.",
)
@click.option(
    "--vllm-exec",
    default=None,
    metavar="CMD",
    help='process runtime: the command that replaces `vllm` (shell words), e.g. "/opt/vllm/bin/vllm".',
)
@ledger_option
@click.option(
    "--runs-dir",
    default="runs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Run folders go here: <runs-dir>/<UTC timestamp>-<recipe>/.",
)
@click.option(
    "--allow-unpinned",
    is_flag=True,
    help="Run even if Hub revisions are not pinned to a commit sha (noted in the ledger).",
)
@click.option(
    "--ready-timeout",
    type=Finite(min=0, min_open=True),
    default=None,
    help="Boot timeout in seconds (default: the recipe's bench.ready_timeout_s).",
)
@click.option(
    "--grace",
    type=Finite(min=0),
    default=10.0,
    show_default=True,
    help="process runtime: seconds between SIGTERM and SIGKILL at teardown.",
)
@click.option(
    "--pull",
    is_flag=True,
    help="docker runtime: `docker pull` the pinned image digest when the local image lacks it "
    "(without it, a missing or different local image is refused).",
)
@click.option("--force", is_flag=True, help="Run even when preflight predicts a boot failure.")
@click.option(
    "--vllm-version",
    default=None,
    metavar="X.Y.Z",
    help="vLLM version for preflight when the image tag does not say it.",
)
@click.option(
    "--hosts",
    default=None,
    metavar="HEAD,WORKER,...",
    help="Multi-node recipes: the hosts, head first (overrides topology.hosts).",
)
@click.option(
    "--remote",
    default=None,
    metavar="CMD",
    help="Multi-node recipes: how the driver reaches a host [env AUTOBENCH_REMOTE; default ssh -o BatchMode=yes].",
)
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="A bench profile (YAML of bench keys: concurrency: [1, 4, 16], repeat: 2, schedule: ...) "
    "merged onto the recipe's bench (docs/recipes.md).",
)
@click.option(
    "--live/--no-live",
    default=None,
    help="Progress as a live display (default: when stderr is a terminal) or plain lines.",
)
@click.option(
    "--require-tokenizer",
    is_flag=True,
    help="Refuse to estimate prompt lengths: a model without a tokenizer fails the bench instead of "
    "recording figures flagged prompts_estimated.",
)
@click.option("--dry-run", is_flag=True, help="Show the plan and commands; run nothing.")
@json_option("Print the outcome (or the plan) as JSON on stdout.")
@click.pass_context
def run(
    ctx: click.Context,
    recipe: str,
    runtime: str,
    vllm_exec: str | None,
    ledger_url: str | None,
    runs_dir: str,
    allow_unpinned: bool,
    ready_timeout: float | None,
    grace: float,
    pull: bool,
    force: bool,
    vllm_version: str | None,
    dry_run: bool,
    as_json: bool,
    partition: str | None,
    gpus_per_node: int | None,
    gpu_request: str,
    account: str | None,
    time_limit: str | None,
    container: str,
    hosts: str | None = None,
    remote: str | None = None,
    profile: str | None = None,
    live: bool | None = None,
    require_tokenizer: bool = False,
) -> None:
    """Run a recipe end to end and record the outcome in the ledger.

    validate -> require pinned revisions -> preflight (a predicted boot failure
    refuses the run, nothing recorded, unless --force) -> compile -> start the server -> wait
    until ready -> bench -> scrape metrics -> tear down (always, also on Ctrl-C
    and SIGTERM) -> parse the log -> append DONE / BLOCKED / FAILED / ABORTED.
    Exit status: 0 DONE, 6 BLOCKED or FAILED, 130 ABORTED.
    """
    from autobench.run import RunOptions, run_recipe

    options = RunOptions(
        runtime=runtime,
        runs_dir=runs_dir,
        ledger=ledger_url,
        allow_unpinned=allow_unpinned,
        vllm_exec=vllm_exec,
        ready_timeout_s=ready_timeout,
        grace_s=grace,
        dry_run=dry_run,
        pull=pull,
        partition=partition,
        gpus_per_node=gpus_per_node,
        gpu_request=gpu_request,
        account=account,
        time_limit=time_limit,
        container=container,
        force=force,
        vllm_version=vllm_version,
        hosts=tuple(h.strip() for h in hosts.split(",")) if hosts else (),
        remote=remote,
        profile=profile,
        live=live,
        require_tokenizer=require_tokenizer,
    )
    outcome = run_recipe(recipe, options, echo=_echo_err)
    if as_json:
        doc: dict[str, Any] = outcome.plan.to_json_dict() if dry_run else outcome.to_json_dict()
        if dry_run:
            doc["script"] = outcome.script
        print_json(doc)
    elif dry_run:
        click.echo(outcome.plan.render_text())
        click.echo("\n# compiled script (stored with the run in the ledger)\n" + (outcome.script or ""))
    else:
        _print_outcome(outcome)
    ctx.exit(outcome.exit_code)


def _print_outcome(outcome: Any) -> None:
    from autobench.escape import human

    lines: list[str] = []
    _outcome_lines(outcome, lines.append)
    for line in lines:  # server words (root cause, notes) may hold control characters
        click.echo(human(line))


def _sweep(outcome: Any) -> Any:
    """The outcome's sweep summary (``autobench.ledger.cells.sweep_summary``), None for one cell."""
    cells = getattr(outcome, "cells", None) or []
    if len(cells) < 2:
        return None
    from autobench.ledger.cells import sweep_summary
    from autobench.run.outcome import ledger_cells

    return sweep_summary(ledger_cells(cells))


def _outcome_lines(outcome: Any, out: Any) -> None:
    from autobench.metric_catalogue import flags_text

    head = f"{outcome.status} {outcome.plan.recipe_name}"
    if outcome.display_id:
        head += f"  ledger {outcome.display_id}"
    out(head)
    if outcome.root_cause_category or outcome.root_cause_message:
        out(f"  root cause: {outcome.root_cause_category}: {outcome.root_cause_message}")
        if outcome.root_cause_detail:
            out(f"  detail: {outcome.root_cause_detail}")
    m = outcome.metrics
    if m:
        parts = [
            f"{k}={m[k]:.2f}" if isinstance(m[k], float) else f"{k}={m[k]}"
            for k in (
                "prefill_tok_s",
                "decode_tok_s",
                "completed",
                "errors",
                "ttft_median_ms",
                "tpot_median_ms",
                "spec_acceptance_length",
            )
            if m.get(k) is not None
        ]
        sweep = _sweep(outcome)
        if sweep is not None:  # a sweep's figures are its headline cell's: say which, and the totals
            out(f"  {sweep.headline_text()}: " + " ".join(parts))
            out(f"  {sweep.totals_text()}")
        else:
            out("  " + " ".join(parts))
        flags = m.get("flags") or {}
        for name, why in flags.items():
            out(f"  FLAG {flags_text({name: why}, meaning=True)}")
    for note in outcome.notes:
        out(f"  note: {note}")
    out(f"  folder: {shlex.quote(str(outcome.plan.run_dir))}")

"""``autobench run RECIPE``: parse options, call :func:`autobench.run.run_recipe`, print."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import click

from autobench.cli.options import json_option, print_json
from autobench.cli.run_options import run_options

if TYPE_CHECKING:
    from autobench.run.outcome import RunOptions


def _echo_err(text: str) -> None:
    from autobench.escape import human

    click.echo(human(text, newlines=True), err=True)


@click.command("run")
@click.argument("recipe", type=click.Path(dir_okay=False))
@run_options()
@click.option(
    "--live/--no-live",
    default=None,
    help="Progress as a live display (default: when stderr is a terminal) or plain lines.",
)
@click.option("--dry-run", is_flag=True, help="Show the plan and commands; run nothing.")
@click.option(
    "--in-allocation",
    is_flag=True,
    help="slurm: run the job script inside the Slurm job this runs in (an experiment's array task), "
    "on its nodes, instead of submitting it with sbatch.",
)
@json_option("Print the outcome (or the plan) as JSON on stdout.")
@click.pass_context
def run(
    ctx: click.Context,
    recipe: str,
    options: RunOptions,
    live: bool | None,
    dry_run: bool,
    in_allocation: bool,
    as_json: bool,
) -> None:
    """Run a recipe end to end and record the outcome in the ledger.

    validate -> require pinned revisions -> preflight (a predicted boot failure
    refuses the run, nothing recorded, unless --force) -> compile -> start the server -> wait
    until ready -> bench -> scrape metrics -> tear down (always, also on Ctrl-C
    and SIGTERM) -> parse the log -> append DONE / BLOCKED / FAILED / ABORTED.
    Exit status: 0 DONE, 6 BLOCKED or FAILED, 130 ABORTED.
    """
    from dataclasses import replace

    from autobench.run import run_recipe

    if in_allocation and options.runtime != "slurm":
        from autobench.errors import UsageError

        raise UsageError(f"--in-allocation is for --runtime slurm, not {options.runtime}", hint="add --runtime slurm")
    options = replace(options, live=live, dry_run=dry_run, in_allocation=in_allocation)
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

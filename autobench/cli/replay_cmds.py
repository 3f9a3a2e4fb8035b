"""``autobench replay RUN [--run]``: print the exact script a recorded run ran, or run it again.

The script is the run's ``script_snapshot`` (stored at record time: what ``autobench
compile`` gave for the recipe then; for a multi-node run, the driver followed by each node
script).  It is printed byte for byte, never recompiled, so a later change to autobench or
to the recipe file cannot change what ``replay`` shows.  ``--run`` runs the run's recipe
snapshot again as ``autobench run`` does (``autobench.run.replay``), records the new run
with ``replay_of`` pointing back, and prints ``compare`` of the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from autobench.cli.options import json_option, print_json
from autobench.cli.run_options import run_options
from autobench.escape import terminal

if TYPE_CHECKING:
    from autobench.run.outcome import RunOptions


@click.command("replay")
@click.argument("run")
@click.option("--run", "again", is_flag=True, help="Run it again, record the new run linked to RUN, compare the two.")
@click.option(
    "--runtime",
    type=click.Choice(["docker", "process"]),
    default=None,
    help="--run: the runtime (default: the one RUN used).",
)
@run_options(
    only=("vllm_exec", "ledger_url", "runs_dir", "ready_timeout_s", "grace_s", "pull", "force"),
    vllm_exec="--run, process runtime: the command for `vllm`.",
    runs_dir="--run: run folders.",
    ready_timeout_s="--run: boot timeout (s).",
    grace_s="--run: SIGTERM to SIGKILL (s).",
    pull="--run, docker runtime: pull the pinned image digest when missing.",
    force="--run: run even when preflight predicts a boot failure.",
)
@click.option("--anyway", is_flag=True, help="--run: run even when the recipe compiles to another script now.")
@click.option("--threshold", default="5%", show_default=True, metavar="PCT", help="--run: the comparison's threshold.")
@click.option("--seed", default=0, show_default=True, type=int, help="--run: seed of the comparison's noise band.")
@json_option("--run: the new run's outcome and the comparison as JSON.")
@click.pass_context
def replay(
    ctx: click.Context,
    run: str,
    again: bool,
    runtime: str | None,
    options: RunOptions,
    anyway: bool,
    threshold: str,
    seed: int,
    as_json: bool,
) -> None:
    """Print the exact script RUN ran (an id, #id or a row-hash prefix), from the ledger's snapshot.

    A run recorded by hand (`autobench record`) stored its recipe compiled at that moment:
    the output says so, as no script of it is known to have run.

    With --run: run RUN's recipe snapshot again the way `autobench run` does, record the new
    run with replay_of = RUN, then print the comparison of RUN and the new run."""
    from autobench.ledger import open_ledger
    from autobench.ledger.snapshot import stored_script

    with open_ledger(options.ledger, create=False) as book:
        rec = book.get(book.resolve(run))
    if not again:
        # A compiled script never holds a raw control character (compile writes them as $'\x1b'),
        # so this is the stored script byte for byte; one that does came from a forged row, and its
        # ESC/OSC sequences are shown as escapes rather than sent to the terminal.
        script = stored_script(rec)
        if rec.source != "run":  # recorded by hand (or seeded): autobench never saw this script run
            click.echo(
                f"note: run {rec.display_id} was recorded by hand ({rec.source}), not run by autobench: "
                "this is its recipe compiled when it was recorded, not a script that is known to have run",
                err=True,
            )
        click.echo(terminal(script, newlines=True), nl=False)
        return
    from autobench.cli.ledger_cmds import show_comparison
    from autobench.cli.run_cmds import _echo_err, _print_outcome
    from autobench.ledger.regress import parse_threshold
    from autobench.run.replay import options_for, replay_run

    limit = parse_threshold(threshold)
    outcome = replay_run(rec, options_for(rec, runtime, options), anyway=anyway, echo=_echo_err)
    if not as_json:
        _print_outcome(outcome)
    elif outcome.run_id is None:
        print_json({"replay_of": rec.id, "outcome": outcome.to_json_dict()})
    if outcome.run_id is not None:
        if not as_json:
            click.echo(f"\ncompare {rec.display_id} (A) with its replay {outcome.display_id} (B):")
        show_comparison(
            options.ledger,
            str(rec.id),
            str(outcome.run_id),
            anyway=True,  # a replay may differ (engine version, --anyway): the difference heads the output
            threshold=limit,
            seed=seed,
            as_json=as_json,
            head={"replay_of": rec.id, "outcome": outcome.to_json_dict()} if as_json else None,
        )
    ctx.exit(outcome.exit_code)

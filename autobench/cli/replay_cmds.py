"""``autobench replay RUN [--run]``: print the exact script a recorded run ran, or run it again.

The script is the run's ``script_snapshot`` (stored at record time: what ``autobench
compile`` gave for the recipe then; for a multi-node run, the driver followed by each node
script).  It is printed byte for byte, never recompiled, so a later change to autobench or
to the recipe file cannot change what ``replay`` shows.  ``--run`` runs the run's recipe
snapshot again as ``autobench run`` does (``autobench.run.replay``), records the new run
with ``replay_of`` pointing back, and prints ``compare`` of the two.
"""

from __future__ import annotations

import click

from autobench.cli.options import json_option, ledger_option, print_json
from autobench.cli.params import Finite
from autobench.escape import terminal


@click.command("replay")
@click.argument("run")
@click.option("--run", "again", is_flag=True, help="Run it again, record the new run linked to RUN, compare the two.")
@click.option(
    "--runtime",
    type=click.Choice(["docker", "process"]),
    default=None,
    help="--run: the runtime (default: the one RUN used).",
)
@click.option("--vllm-exec", default=None, metavar="CMD", help="--run, process runtime: the command for `vllm`.")
@click.option(
    "--runs-dir", default="runs", show_default=True, type=click.Path(file_okay=False), help="--run: run folders."
)
@click.option("--ready-timeout", type=Finite(min=0, min_open=True), default=None, help="--run: boot timeout (s).")
@click.option("--grace", type=Finite(min=0), default=10.0, show_default=True, help="--run: SIGTERM to SIGKILL (s).")
@click.option("--pull", is_flag=True, help="--run, docker runtime: pull the pinned image digest when missing.")
@click.option("--force", is_flag=True, help="--run: run even when preflight predicts a boot failure.")
@click.option("--anyway", is_flag=True, help="--run: run even when the recipe compiles to another script now.")
@click.option("--threshold", default="5%", show_default=True, metavar="PCT", help="--run: the comparison's threshold.")
@click.option("--seed", default=0, show_default=True, type=int, help="--run: seed of the comparison's noise band.")
@ledger_option
@json_option("--run: the new run's outcome and the comparison as JSON.")
@click.pass_context
def replay(
    ctx: click.Context,
    run: str,
    again: bool,
    runtime: str | None,
    vllm_exec: str | None,
    runs_dir: str,
    ready_timeout: float | None,
    grace: float,
    pull: bool,
    force: bool,
    anyway: bool,
    threshold: str,
    seed: int,
    ledger_url: str | None,
    as_json: bool,
) -> None:
    """Print the exact script RUN ran (an id, #id or a row-hash prefix), from the ledger's snapshot.

    A run recorded by hand (`autobench record`) stored its recipe compiled at that moment:
    the output says so, as no script of it is known to have run.

    With --run: run RUN's recipe snapshot again the way `autobench run` does, record the new
    run with replay_of = RUN, then print the comparison of RUN and the new run."""
    from autobench.ledger import open_ledger
    from autobench.ledger.snapshot import stored_script

    with open_ledger(ledger_url, create=False) as book:
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
    options = options_for(
        rec,
        runtime,
        runs_dir=runs_dir,
        ledger=ledger_url,
        vllm_exec=vllm_exec,
        ready_timeout_s=ready_timeout,
        grace_s=grace,
        pull=pull,
        force=force,
    )
    outcome = replay_run(rec, options, anyway=anyway, echo=_echo_err)
    if not as_json:
        _print_outcome(outcome)
    elif outcome.run_id is None:
        print_json({"replay_of": rec.id, "outcome": outcome.to_json_dict()})
    if outcome.run_id is not None:
        if not as_json:
            click.echo(f"\ncompare {rec.display_id} (A) with its replay {outcome.display_id} (B):")
        show_comparison(
            ledger_url,
            str(rec.id),
            str(outcome.run_id),
            anyway=True,  # a replay may differ (engine version, --anyway): the difference heads the output
            threshold=limit,
            seed=seed,
            as_json=as_json,
            head={"replay_of": rec.id, "outcome": outcome.to_json_dict()} if as_json else None,
        )
    ctx.exit(outcome.exit_code)

"""``autobench ledger push --to URL`` and ``ledger pull --from URL``: copy runs between
ledgers (a box's SQLite file and the team's PostgreSQL ledger).  See autobench.ledger.sync."""

from __future__ import annotations

import click

from autobench.cli.options import json_option, ledger_option, print_json
from autobench.cli.output import say


def _sync(
    source_url: str | None,
    dest_url: str | None,
    batch: int,
    as_json: bool,
    verb: str,
    *,
    source_head: str | None = None,
    dest_head: str | None = None,
) -> None:
    from autobench.ledger import open_ledger
    from autobench.ledger.sync import copy_runs, verified_source

    with open_ledger(source_url, create=False) as source:
        checked = verified_source(source, source_head)  # before the destination is even opened (or created)
        with open_ledger(dest_url, create=True) as destination:
            result = copy_runs(source, destination, batch=batch, checked=checked, destination_head=dest_head)
    if as_json:
        print_json(result.to_json_dict())
        return
    head_id, head_hash = result.head
    records = ""
    if result.experiments:
        there = result.experiments - result.experiments_copied
        records = f"; {result.experiments_copied} experiment records ({there} already there)"
    say(
        f"{verb} {result.copied} runs from {result.source} to {result.destination} "
        f"({result.present} already there); head #{head_id}-{head_hash[:8]}{records}"
    )


_head_option = click.option(
    "--head",
    "head",
    default=None,
    metavar="HASH",
    help=(
        "A head hash of the team's ledger (--to of a push, --from of a pull) kept earlier "
        "(ledger verify prints it): that ledger's chain must still contain it, or nothing is copied."
    ),
)

_batch_option = click.option(
    "--batch",
    type=click.IntRange(1, 10_000),
    default=200,
    show_default=True,
    help="Runs per transaction in the destination.",
)


@click.command("push")
@click.option("--to", "to_url", required=True, metavar="PATH|URL", help="The ledger to copy the runs into.")
@_head_option
@_batch_option
@ledger_option
@json_option
def push(to_url: str, head: str | None, batch: int, ledger_url: str | None, as_json: bool) -> None:
    """Copy this ledger's runs and experiment records into another (e.g. the team's PostgreSQL ledger).

    Runs already there are skipped (each run has a stable id) after their content is
    compared, so pushing again is safe and an interrupted push completes when run again.
    Experiment records follow their runs, naming each by its run_uid; one already there is skipped.
    A source or destination that fails verify, a run whose copy there differs, and a record
    naming a run the source does not have are refused.
    """
    _sync(ledger_url, to_url, batch, as_json, "pushed", dest_head=head)


@click.command("pull")
@click.option("--from", "from_url", required=True, metavar="PATH|URL", help="The ledger to copy the runs from.")
@_head_option
@_batch_option
@ledger_option
@json_option
def pull(from_url: str, head: str | None, batch: int, ledger_url: str | None, as_json: bool) -> None:
    """Copy another ledger's runs and experiment records into this one (the reverse of push)."""
    _sync(from_url, ledger_url, batch, as_json, "pulled", source_head=head)

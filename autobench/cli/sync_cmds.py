"""``autobench ledger push --to URL`` and ``ledger pull --from URL``: copy runs between
ledgers (a box's SQLite file and the team's PostgreSQL ledger).  See autobench.ledger.sync."""

from __future__ import annotations

import click

from autobench.cli.options import json_option, ledger_option, print_json
from autobench.cli.output import say


def _sync(source_url: str | None, dest_url: str | None, batch: int, as_json: bool, verb: str) -> None:
    from autobench.ledger import open_ledger
    from autobench.ledger.sync import copy_runs, verified_source

    with open_ledger(source_url, create=False) as source:
        checked = verified_source(source)  # before the destination is even opened (or created)
        with open_ledger(dest_url, create=True) as destination:
            result = copy_runs(source, destination, batch=batch, checked=checked)
    if as_json:
        print_json(result.to_json_dict())
        return
    head_id, head_hash = result.head
    say(
        f"{verb} {result.copied} runs from {result.source} to {result.destination} "
        f"({result.present} already there); head #{head_id}-{head_hash[:8]}"
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
@_batch_option
@ledger_option
@json_option
def push(to_url: str, batch: int, ledger_url: str | None, as_json: bool) -> None:
    """Copy this ledger's runs into another (e.g. the team's PostgreSQL ledger).

    Runs already there are skipped (each run has a stable id), so pushing again is safe
    and an interrupted push completes when run again.  A source that fails verify is refused.
    """
    _sync(ledger_url, to_url, batch, as_json, "pushed")


@click.command("pull")
@click.option("--from", "from_url", required=True, metavar="PATH|URL", help="The ledger to copy the runs from.")
@_batch_option
@ledger_option
@json_option
def pull(from_url: str, batch: int, ledger_url: str | None, as_json: bool) -> None:
    """Copy another ledger's runs into this one (the reverse of push)."""
    _sync(from_url, ledger_url, batch, as_json, "pulled")

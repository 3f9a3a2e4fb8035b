"""``autobench replay RUN``: print the exact script a recorded run ran.

The script is the run's ``script_snapshot`` (stored at record time: what ``autobench
compile`` gave for the recipe then; for a multi-node run, the driver followed by each node
script).  It is printed byte for byte, never recompiled, so a later change to autobench or
to the recipe file cannot change what ``replay`` shows.  ``--run`` (run it again and link
the new run back) is not built yet.
"""

from __future__ import annotations

import click

from autobench.cli.options import ledger_option


@click.command("replay")
@click.argument("run")
@ledger_option
def replay(run: str, ledger_url: str | None) -> None:
    """Print the exact script RUN ran (an id, #id or a row-hash prefix), from the ledger's snapshot."""
    from autobench.ledger import open_ledger
    from autobench.ledger.snapshot import stored_script

    with open_ledger(ledger_url, create=False) as book:
        script = stored_script(book.get(book.resolve(run)))
    click.echo(script, nl=False)

"""Human output of the CLI: every line a person reads goes through :func:`say`.

``say`` is ``click.echo`` after :func:`autobench.escape.human`: secret values redacted (token
shapes, secret-named variables of the environment) and control characters shown escaped
(``\\u001b``), line breaks kept.  Machine output -- JSON (already escaped by ``json.dumps``),
compiled scripts (quoted by ``autobench.compile.quoting``), exported data -- is written with
``click.echo`` as is.  Rich tables get :func:`cell` values: escaped, and never read as Rich
markup.
"""

from __future__ import annotations

from typing import Any

import click

from autobench.escape import human


def say(text: Any = "", *, err: bool = False, nl: bool = True) -> None:
    click.echo(human(str(text), newlines=True), err=err, nl=nl)


def cell(value: Any) -> Any:
    """A value for a Rich table cell: redacted, escaped, as plain text (no markup)."""
    from rich.text import Text

    return Text(human(str(value)))

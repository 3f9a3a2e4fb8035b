"""What every command shares: the ``--ledger`` and ``--json`` options, JSON and table output.

    @ledger_option                  # --ledger PATH|URL -> ledger_url (env AUTOBENCH_LEDGER)
    @json_option                    # --json -> as_json (or @json_option("Print the plan as JSON."))
    @gpu_request_option             # --gpu-request gpus-per-node|gres (compile --target slurm, run --runtime slurm)
    print_json(doc)
    print_table(head, rows, title=...)   # a rich table on a terminal, plain columns otherwise
    @click.group(cls=Group)         # a command group whose listing shows each summary whole

Commands end with an exit code through click (``ctx.exit(code)``, or raise an
``AutobenchError``); ``autobench.cli.main`` passes it on.  Only modules under
``autobench/cli/`` import this one.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

import click

from autobench.cli.option_group import Spec

F = TypeVar("F", bound=Callable[..., Any])

LEDGER_HELP = "Ledger database: a path or SQLAlchemy URL [env AUTOBENCH_LEDGER; default ./ledger.db]."
JSON_HELP = "Print JSON for machines."


def summary(command: click.Command) -> str:
    """A command's one-line summary: the first paragraph of its help, on one line.  Its own
    ``--help`` starts with it, and so does the listing of its group (``autobench --help``
    shows the copy in ``autobench.cli.COMMANDS``; tests/test_cli_reference.py holds them equal)."""
    return " ".join((command.help or "").split("\n\n")[0].split())


class Group(click.Group):
    """A click group that lists its commands with their whole summary (click cuts it at 45
    characters with "..." otherwise, so the listing and the command's own help would differ)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


#: ``--ledger PATH|URL`` as the parameter ``ledger_url`` (default: $AUTOBENCH_LEDGER, else ./ledger.db).
LEDGER = Spec(
    ("--ledger", "ledger_url"),
    {"envvar": "AUTOBENCH_LEDGER", "default": None, "metavar": "PATH|URL", "help": LEDGER_HELP},
)

#: ``--gpu-request`` as the parameter ``gpu_request``: how a Slurm job asks for its GPUs.
GPU_REQUEST = Spec(
    ("--gpu-request",),
    {
        "type": click.Choice(["gpus-per-node", "gres"]),
        "default": "gpus-per-node",
        "show_default": True,
        "help": "slurm: ask for GPUs as #SBATCH --gpus-per-node=N or as #SBATCH --gres=gpu:N (sites that "
        "configure GPUs only as a generic resource).",
    },
)


def ledger_option(func: F) -> F:
    """:data:`LEDGER` on the command."""
    return LEDGER.option()(func)


def gpu_request_option(func: F) -> F:
    """:data:`GPU_REQUEST` on the command (compile --target slurm; run options carry it too)."""
    return GPU_REQUEST.option()(func)


@overload
def json_option(func: F) -> F: ...
@overload
def json_option(func: str) -> Callable[[F], F]: ...
def json_option(func: F | str) -> F | Callable[[F], F]:
    """``--json`` as the flag ``as_json``; ``@json_option`` or ``@json_option("what it prints")``."""
    if isinstance(func, str):
        text = func
        return lambda f: click.option("--json", "as_json", is_flag=True, help=text)(f)
    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(func)


def print_json(doc: Any, *, sort_keys: bool = False) -> None:
    """``doc`` as indented JSON: every string redacted (token shapes, secret-named variables, the
    secrets of URLs: secrets by name, never by value, in JSON too) and every non-ASCII character
    escaped, so no value can carry a control or bidi character to the terminal."""
    from autobench.redaction import environment_secrets, redact_tree

    doc = redact_tree(json.loads(json.dumps(doc, default=str)), environment_secrets())
    click.echo(json.dumps(doc, indent=2, sort_keys=sort_keys, ensure_ascii=True))


def print_table(
    head: Sequence[str] | None,
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    justify: Sequence[str] | None = None,
    plain_row: Callable[[Sequence[str]], str] | None = None,
    plain_title: bool = True,
) -> None:
    """``rows`` as a rich table on a terminal; otherwise plain text: the title, then columns
    padded to their widths (``head`` first, if given), or one ``plain_row(row)`` line per row.
    ``plain_title=False`` shows the title on the terminal only.

    ``head=None`` is a table without a header row (key/value tables).  ``justify`` gives
    each column's alignment on the terminal (``"left"``, ``"right"``).

    Every cell and the title are redacted and escaped (:func:`autobench.escape.human`): table
    values come from ledgers, logs and servers; on the terminal they are plain text, never Rich
    markup.
    """
    from autobench.escape import human

    rows = [[human(str(v)) for v in row] for row in rows]
    title = human(title) if title else title
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        columns = list(head) if head is not None else [""] * max((len(r) for r in rows), default=0)
        table = Table(title=title, show_header=head is not None)
        for i, name in enumerate(columns):
            align = justify[i] if justify and i < len(justify) else "left"
            table.add_column(name, overflow="fold", justify=align)  # type: ignore[arg-type]
        from rich.text import Text

        for row in rows:
            table.add_row(*(Text(v) for v in row))
        Console().print(table)
        return
    if title and plain_title:
        click.echo(title)
    if plain_row is not None:
        for row in rows:
            click.echo(plain_row(row))
        return
    lines = [list(head), *rows] if head is not None else list(rows)
    if not lines:
        return
    widths = [max(len(str(x)) for x in col) for col in zip(*lines, strict=False)]
    for row in lines:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=False)).rstrip())


__all__ = [
    "GPU_REQUEST",
    "JSON_HELP",
    "LEDGER",
    "LEDGER_HELP",
    "gpu_request_option",
    "json_option",
    "ledger_option",
    "print_json",
    "print_table",
]

"""Write docs/cli.md, the command-line reference, from the click command tree.

    python tools/cli_reference.py            # rewrite docs/cli.md
    python tools/cli_reference.py --check    # exit 1 if docs/cli.md is not what it would write

Every command and subcommand gets a section with its ``--help`` text exactly as click renders
it (at a fixed width of 100 columns, so the page does not depend on the terminal), in the order
of ``autobench.cli.COMMANDS``; subcommands follow their group.  The table at the top lists each
command with its one-line summary.  tests/test_cli_reference.py fails when the page is stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import click

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "cli.md"
WIDTH = 100

HEADER = """\
# Command-line reference

Every `autobench` command with its `--help`, generated from the click command tree by
`python tools/cli_reference.py` (do not edit by hand: `tests/test_cli_reference.py` fails when
this page and the commands differ). The guides say when to use which: [README](../README.md).
"""


def walk(
    command: click.Command, ctx: click.Context, order: list[str] | None = None
) -> Iterator[tuple[click.Context, click.Command]]:
    """The command and, depth first, every subcommand, each with its own context."""
    yield ctx, command
    if isinstance(command, click.Group):
        names = command.list_commands(ctx)
        if order is not None:
            names = sorted(names, key=order.index)
        for name in names:
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, click.Context(sub, info_name=name, parent=ctx, terminal_width=WIDTH))


def commands() -> list[tuple[str, click.Command, str]]:
    """``(path, command, --help text)`` for every command below ``autobench``."""
    from autobench.cli import COMMANDS, cli
    from autobench.cli.options import summary

    root = click.Context(
        cli, info_name="autobench", terminal_width=WIDTH, max_content_width=WIDTH, **cli.context_settings
    )
    out = []
    for ctx, command in walk(cli, root, order=list(COMMANDS)):
        if ctx.parent is None:
            continue
        out.append((ctx.command_path, command, summary(command)))
    return out


def help_text(path: str) -> str:
    """``autobench ... --help`` as click prints it, at WIDTH columns."""
    from autobench.cli import cli

    words = path.split()[1:]
    ctx = click.Context(
        cli, info_name="autobench", terminal_width=WIDTH, max_content_width=WIDTH, **cli.context_settings
    )
    command: click.Command = cli
    for word in words:
        assert isinstance(command, click.Group)
        sub = command.get_command(ctx, word)
        assert sub is not None, path
        ctx = click.Context(sub, info_name=word, parent=ctx, terminal_width=WIDTH, max_content_width=WIDTH)
        command = sub
    # click (>= 8.1.8) caches a command's help option the first time any context asks for it:
    # a command first invoked on its own (a test calling it without the `autobench` group) caches
    # `--help` alone, and the page would then depend on which ran first.  Build it afresh here,
    # as the `autobench` group's context (`-h, --help`) makes it for a user.
    command._help_option = None
    return command.get_help(ctx)


def anchor(path: str) -> str:
    return path.replace(" ", "-")


def render() -> str:
    rows = commands()
    lines = [HEADER, "| Command | Summary |", "|---|---|"]
    for path, _, text in rows:
        cell = text.replace("|", "\\|")
        lines.append(f"| [`{path}`](#{anchor(path)}) | {cell} |")
    lines.append("")
    lines += ["## autobench", "", "```text", help_text("autobench"), "```", ""]
    for path, _, _ in rows:
        lines += [f"## {path}", "", "```text", help_text(path), "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md is stale; write nothing")
    args = ap.parse_args(argv)
    page = render()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE.relative_to(REPO)} is stale: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)} ({len(commands())} commands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``autobench report``: render Markdown pages from the ledger (thin: parse, call, print)."""

from __future__ import annotations

import shlex

import click

from autobench.cli.options import json_option, ledger_option, print_json
from autobench.cli.output import say
from autobench.errors import ReportError


@click.command("report")
@click.argument("recipes", nargs=-1, metavar="RECIPE_NAME_OR_FILE...")
@ledger_option
@click.option(
    "-o",
    "--output",
    "out_dir",
    default="docs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Directory for index.md and recipes/*.md.",
)
@click.option("--index", is_flag=True, help="Also render index.md and the page of every recipe in the ledger.")
@click.option("--check", is_flag=True, help="Write nothing; exit non-zero when the pages on disk are stale.")
@click.option(
    "--recipes",
    "recipes_dir",
    default="recipes",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Recipe files (<name>.yaml) that fill in what runs did not record.",
)
@click.option("--no-plots", is_flag=True, help="Neither link nor draw plots.")
@json_option("Print what was written (or found stale) as JSON.")
def report(
    recipes: tuple[str, ...],
    ledger_url: str | None,
    out_dir: str,
    index: bool,
    check: bool,
    recipes_dir: str,
    no_plots: bool,
    as_json: bool,
) -> None:
    """Render the page of each RECIPE (a name or a recipe file) from the ledger.

    Every figure on a page names the run it came from; missing figures print "—".
    """
    from autobench.report import report as render

    result = render(
        list(recipes),
        ledger=ledger_url,
        out_dir=out_dir,
        index=index,
        check=check,
        plots=not no_plots,
        recipes_dir=recipes_dir,
    )
    if as_json:
        print_json(
            {
                "written": [str(p) for p in result.written],
                "unchanged": [str(p) for p in result.unchanged],
                "plots": [str(p) for p in result.plots],
                "stale": result.stale,
                "notes": result.notes,
            }
        )
    else:
        for note in result.notes:
            say(f"note: {note}", err=True)
        for line in result.stale:
            say(f"stale: {line}")
        for path in result.written + result.plots:
            say(f"wrote {path}")
        if result.unchanged and not check:
            say(f"{len(result.unchanged)} page(s) already up to date")
        if check and not result.stale:
            say(f"{len(result.checked)} page(s) up to date")
    if result.stale:
        again = ["autobench", "report", *recipes]
        if index:
            again.append("--index")
        if ledger_url:
            again += ["--ledger", ledger_url]
        if recipes_dir != "recipes":
            again += ["--recipes", recipes_dir]
        if no_plots:
            again.append("--no-plots")
        again += ["-o", out_dir]
        raise ReportError(
            f"{len(result.stale)} page(s) stale against the ledger",
            hint=f"re-render with: {shlex.join(again)}",
        )

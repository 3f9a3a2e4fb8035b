"""``autobench recipes [PATH...]``: the catalogue as a table (or JSON)."""

from __future__ import annotations

from pathlib import Path

import click

from autobench.cli.options import json_option, ledger_option, print_json, print_table


@click.command("recipes")
@click.argument("paths", nargs=-1, type=click.Path())
@ledger_option
@json_option
def recipes(paths: tuple[str, ...], ledger_url: str | None, as_json: bool) -> None:
    """List the catalogue: each recipe's model, draft, pins and last run.

    PATHS default to the recipes/ folder.  Per recipe: name, model, draft, whether every Hub
    revision is pinned to a commit, and the last run with its status from the ledger.

    Without --ledger or AUTOBENCH_LEDGER and no ./ledger.db, no runs are shown.
    """
    from autobench.catalogue import catalogue
    from autobench.cli.recipe_cmds import recipe_files
    from autobench.errors import UsageError
    from autobench.ledger import open_ledger
    from autobench.ledger.store import resolve_location

    if not paths and not Path("recipes").is_dir():
        raise UsageError("no recipes/ folder here", hint="pass recipe files or folders: autobench recipes PATH...")
    files = [p for p in recipe_files(paths or ("recipes",)) if not p.name.endswith(".lock.json")]
    _, db_path = resolve_location(ledger_url)
    if db_path is not None and not db_path.exists():
        if ledger_url is not None:  # named on purpose: say so rather than show "never run"
            raise UsageError(f"no ledger at {db_path}", hint="check --ledger (or AUTOBENCH_LEDGER)")
        entries = catalogue(files, None)
    else:
        with open_ledger(ledger_url, create=False) as book:
            entries = catalogue(files, book)
    if as_json:
        print_json([e.to_json_dict() for e in entries])
        return
    print_table(
        ["NAME", "MODEL", "DRAFT", "PINNED", "LAST RUN"],
        [[e.name, e.model or "-", e.draft or "-", e.pin_text, e.run_text] for e in entries],
    )

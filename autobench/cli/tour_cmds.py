"""``autobench tour``: the whole flow on this machine, no GPU (thin: call, print where things are)."""

from __future__ import annotations

from pathlib import Path

import click

from autobench.cli.options import json_option, print_json


@click.command("tour")
@click.option(
    "--dir",
    "folder",
    default=None,
    type=click.Path(file_okay=False),
    help="A new or empty folder for the tour [default: a new temporary folder].",
)
@json_option("Print where everything is as JSON.")
@click.pass_context
def tour(ctx: click.Context, folder: str | None, as_json: bool) -> None:
    """Run a bundled recipe end to end against the synthetic server standing in for vLLM.

    validate -> plan -> compile -> launch (process runtime; `vllm` is autobench's stand-in)
    -> wait ready -> bench -> tear down -> parse the log -> record into a scratch ledger ->
    render the report pages.  Nothing outside the folder is touched (the committed ledger.db
    never).  Takes a few seconds.
    """
    import tempfile

    from autobench.escape import human
    from autobench.tour import tour as run_tour

    where = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="autobench-tour-"))
    result = run_tour(where, echo=lambda line: click.echo(human(line, newlines=True), err=True))
    if as_json:
        print_json(
            {
                "status": result.status,
                "run": result.display_id,
                "folder": str(result.folder),
                "recipe": str(result.recipe),
                "ledger": str(result.ledger),
                "run_dir": str(result.run_dir),
                "docs": str(result.docs),
                "pages": [str(p) for p in result.pages],
                "metrics": result.metrics,
            }
        )
    else:
        m = result.metrics
        decode = m.get("decode_tok_s")
        lines = [
            f"{result.status} tour  ledger {result.display_id or '-'}",
            f"  decode {decode:,.1f} tok/s" if isinstance(decode, int | float) else "  decode -",
            f"  {m.get('completed', '-')} completed, {m.get('errors', '-')} errors",
            f"  recipe   {result.recipe}",
            f"  run      {result.run_dir}  (server.log, bench result, compiled script)",
            f"  ledger   {result.ledger}  (autobench ledger list --ledger {result.ledger})",
            f"  report   {result.docs / 'index.md'}",
            f"next: autobench history --recipe tour --ledger {result.ledger}",
        ]
        for line in lines:
            click.echo(human(line))
    ctx.exit(result.exit_code)

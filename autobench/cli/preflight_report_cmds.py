"""CLI: ``autobench preflight-report [RUN...]``: stored predictions against the boot facts."""

from __future__ import annotations

import click

from autobench.cli.options import json_option, ledger_option, print_json
from autobench.cli.output import say


@click.command("preflight-report")
@click.argument("run_ids", nargs=-1, metavar="[RUN]...")
@ledger_option
@json_option
def preflight_report(run_ids: tuple[str, ...], ledger_url: str | None, as_json: bool) -> None:
    """Compare each run's stored preflight prediction with the boot facts its log printed.

    Rows per run: boot (predicted vs the run's status), attention block size, mamba padding,
    KV blocks, GPU KV cache tokens, max concurrency and the KV budget, each marked as agreeing
    or not.  Without RUN ids: every run that has a prediction.  Exit 0 when every comparable
    fact agrees, 1 when one does not.
    """
    from autobench.cli.ledger_cmds import _open, _run_id
    from autobench.preflight.compare import compare

    with _open(ledger_url) as ledger:
        if run_ids:
            records = [ledger.get(rid) for rid in (_run_id(x) for x in run_ids) if rid is not None]
        else:
            records = [r for r in ledger.runs() if r.preflight]
    docs = []
    disagree = 0
    for rec in records:
        rows = compare(rec.preflight, rec.boot, rec.status) if rec.preflight else []
        disagree += sum(r.agrees is False for r in rows)
        docs.append(
            {
                "run": rec.display_id,
                "recipe": rec.recipe_name,
                "status": rec.status,
                "rows": [r.as_dict() for r in rows],
            }
        )
    if as_json:
        print_json({"runs": docs, "disagreements": disagree})
    else:
        for doc in docs:
            say(f"{doc['run']} {doc['recipe']} {doc['status']}")
            if not doc["rows"]:
                click.echo("  no preflight prediction stored")
            for r in doc["rows"]:
                mark = {True: "ok", False: "DIFFERS", None: ""}[r["agrees"]]
                say(f"  {r['fact']:22s} predicted {r['predicted']:28s} logged {r['logged']:24s} {mark}".rstrip())
        if not docs:
            click.echo("no runs with a preflight prediction", err=True)
    if disagree:
        raise click.exceptions.Exit(1)

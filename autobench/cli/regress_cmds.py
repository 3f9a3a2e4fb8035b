"""``autobench regress --baseline RUN|latest --current RUN [--threshold 5%] [--json]``.

Exit 0 when no metric of the current run is worse than the baseline's by more than the
threshold, 1 when one is (for CI); errors exit with their own codes (4: ledger).  Logic in
``autobench.ledger.regress``.
"""

from __future__ import annotations

import click

from autobench.cli.options import json_option, ledger_option, print_json, print_table
from autobench.cli.output import say

REGRESSION_EXIT = 1


@click.command("regress")
@click.option(
    "--baseline", required=True, metavar="RUN|latest", help="The run to hold the current one to, or 'latest'."
)
@click.option("--current", required=True, metavar="RUN", help="The run under test.")
@click.option("--threshold", default="5%", show_default=True, metavar="PCT", help="Allowed worsening per metric.")
@ledger_option
@json_option
@click.pass_context
def regress(
    ctx: click.Context, baseline: str, current: str, threshold: str, ledger_url: str | None, as_json: bool
) -> None:
    """Exit 1 when CURRENT is worse than BASELINE by more than the threshold on any metric.

    Throughputs regress when they fall, latencies when they rise.  'latest' is the newest
    DONE run of the same recipe with the same pins before CURRENT.  Single runs: no noise band."""
    from autobench.ledger import open_ledger
    from autobench.ledger.regress import LATEST_WINDOW, judge, latest_baseline, parse_threshold

    limit = parse_threshold(threshold)
    with open_ledger(ledger_url, create=False) as book:
        cur = book.get(book.resolve(current))
        if baseline.strip().lower() == "latest":
            base = latest_baseline(book.runs(cur.recipe_name, "DONE", LATEST_WINDOW, newest_first=True), cur)
        else:
            base = book.get(book.resolve(baseline))
    result = judge(base, cur, limit)
    if as_json:
        print_json(result.to_json_dict())
    else:
        rows = [
            [c.metric, f"{c.baseline:g}", f"{c.current:g}", f"{c.change:+.1%}", "REGRESSED" if c.regressed else "ok"]
            for c in result.changes
        ]
        head = ["metric", f"baseline {base.display_id}", f"current {cur.display_id}", "change", ""]
        print_table(head, rows)
        pct = f"{limit * 100:g}%"
        worst = ", ".join(f"{c.metric} {c.change:+.1%}" for c in result.regressed)
        if worst:
            say(f"regression beyond {pct}: {worst} (single runs: no noise band)")
        else:
            say(f"no regression beyond {pct} (single runs: no noise band)")
    if result.regressed:
        ctx.exit(REGRESSION_EXIT)

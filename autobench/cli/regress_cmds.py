"""``autobench regress --baseline RUN|latest --current RUN [--threshold 5%] [--json]``.

Exit 0 when no metric of any cell of the current run is slower than the baseline's beyond
the threshold and the noise band, 1 when one is (for CI); errors exit with their own codes
(4: ledger).  Logic in ``autobench.ledger.regress`` and ``autobench.ledger.verdict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from autobench.cli.options import json_option, ledger_option, print_json, print_table
from autobench.cli.output import say

if TYPE_CHECKING:
    from autobench.ledger.models import CellRecord, RunRecord
    from autobench.ledger.store import Ledger

REGRESSION_EXIT = 1


@click.command("regress")
@click.option(
    "--baseline", required=True, metavar="RUN|latest", help="The run to hold the current one to, or 'latest'."
)
@click.option("--current", required=True, metavar="RUN", help="The run under test.")
@click.option("--threshold", default="5%", show_default=True, metavar="PCT", help="Allowed worsening per metric.")
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the per-request bootstrap band (used when a side has one repeat).",
)
@ledger_option
@json_option
@click.pass_context
def regress(
    ctx: click.Context,
    baseline: str,
    current: str,
    threshold: str,
    seed: int,
    ledger_url: str | None,
    as_json: bool,
) -> None:
    """Exit 1 when CURRENT is slower than BASELINE beyond the threshold and the noise band.

    Per cell and metric: throughputs regress when they fall, latencies when they rise; the
    band is a t interval over the repeats (two or more a side), else a seeded bootstrap over
    the per-request samples; without either there is no band and the threshold alone decides
    (docs/verdicts.md).
    'latest' is the newest DONE run of the same recipe with the same pins before CURRENT."""
    from autobench.ledger import open_ledger
    from autobench.ledger.regress import LATEST_WINDOW, judge, latest_baseline, parse_threshold
    from autobench.ledger.render import verdict_notes, verdict_table

    limit = parse_threshold(threshold)
    with open_ledger(ledger_url, create=False) as book:
        cur = book.get(book.resolve(current))
        if baseline.strip().lower() == "latest":
            base = latest_baseline(book.runs(cur.recipe_name, "DONE", LATEST_WINDOW, newest_first=True), cur)
        else:
            base = book.get(book.resolve(baseline))
        result = judge(base, cur, limit, baseline_cells=_cells(book, base), current_cells=_cells(book, cur), seed=seed)
    if as_json:
        print_json(result.to_json_dict())
    else:
        names = f"baseline {base.display_id}", f"current {cur.display_id}"
        print_table(*verdict_table(result.verdicts, *names, regress=True))
        for note in verdict_notes(result.verdicts, regress=True):
            say(note)
        pct = f"{limit * 100:g}%"
        by_cell: dict[str, list[str]] = {}
        for c, m in result.regressed:
            by_cell.setdefault(c.label, []).append(
                f"{m.metric} {m.change:+.1%}" + (" (no band)" if m.method == "none" else "")
            )
        worst = "; ".join((f"{label}: " if label != "run" else "") + ", ".join(ms) for label, ms in by_cell.items())
        if worst:
            say(f"regression beyond {pct}: {worst}")
        else:
            say(f"no regression beyond {pct}")
    if result.regressed:
        ctx.exit(REGRESSION_EXIT)


def _cells(book: Ledger, rec: RunRecord) -> list[CellRecord]:
    """The run's recorded cells with their samples (none for a run recorded without them)."""
    return list(book.cells(rec.id))

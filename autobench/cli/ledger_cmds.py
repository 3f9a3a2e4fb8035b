"""``autobench record | ledger (list, show, export, verify) | history | compare``.

Thin commands: parse options, call one autobench.ledger function, print (rich tables
on a TTY, plain text otherwise, JSON with ``--json``).  The ledger (SQLAlchemy) is
imported inside the commands so ``autobench --help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from autobench.cli.options import Group, json_option, ledger_option, print_json, print_table
from autobench.cli.output import say
from autobench.digits import is_digits
from autobench.errors import LedgerError, UsageError


def _open(ledger_url: str | None, *, create: bool = False) -> Any:
    from autobench.ledger import open_ledger

    return open_ledger(ledger_url, create=create)


def _run_id(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip().lstrip("#")
    if not is_digits(value):
        raise UsageError(f"not a run id: {text!r}", hint="use the integer id shown by autobench ledger list")
    return int(value)


# ------------------------------------------------------------------ record
@click.command("record")
@click.argument("recipe", metavar="RECIPE")
@click.option("--status", required=True, help="DONE, BLOCKED, FAILED or ABORTED.")
@click.option("--root-cause", default=None, metavar="CATEGORY:MESSAGE", help="e.g. 'assertion:assert x == y'.")
@click.option("--root-cause-category", default=None)
@click.option("--root-cause-message", default=None)
@click.option(
    "--metrics",
    "metrics_file",
    default=None,
    metavar="FILE",
    help="Result JSON: autobench bench --result or vllm bench serve --save-result.",
)
@click.option("--log", "log_file", default=None, metavar="FILE", help="vLLM server log: boot facts, root cause.")
@click.option("--note", "notes", multiple=True, help="A note (repeatable).")
@click.option("--started-at", default=None, help="UTC ISO 8601 time or date (naive means UTC).")
@click.option("--ended-at", default=None)
@click.option("--model-sha", default=None, help="Full 40-hex commit of the model, if the recipe is not pinned.")
@click.option("--draft-sha", default=None, help="Full 40-hex commit of the draft, if the recipe is not pinned.")
@click.option("--corrects", default=None, metavar="ID", help="This run corrects run ID.")
@click.option("--supersedes", default=None, metavar="ID", help="This run supersedes run ID.")
@ledger_option
@json_option
def record(
    recipe: str,
    ledger_url: str | None,
    as_json: bool,
    status: str,
    root_cause: str | None,
    root_cause_category: str | None,
    root_cause_message: str | None,
    metrics_file: str | None,
    log_file: str | None,
    notes: tuple[str, ...],
    started_at: str | None,
    ended_at: str | None,
    model_sha: str | None,
    draft_sha: str | None,
    corrects: str | None,
    supersedes: str | None,
) -> None:
    """Append a run of RECIPE (a recipe file) to the ledger by hand."""
    from autobench.record import RecordInput, build_new_run

    run = build_new_run(
        RecordInput(
            recipe_path=recipe,
            status=status,
            root_cause=root_cause,
            root_cause_category=root_cause_category,
            root_cause_message=root_cause_message,
            metrics_file=metrics_file,
            log_file=log_file,
            notes=list(notes),
            started_at=started_at,
            ended_at=ended_at,
            model_sha=model_sha,
            draft_sha=draft_sha,
            corrects=_run_id(corrects),
            supersedes=_run_id(supersedes),
        )
    )
    with _open(ledger_url, create=True) as book:
        rec = book.append(run)
    if as_json:
        print_json(rec.to_json_dict())
    else:
        say(f"recorded run {rec.display_id}: {rec.recipe_name} {rec.status} ({book.where})")


# ------------------------------------------------------------------ ledger group
@click.group("ledger", cls=Group)
def ledger() -> None:
    """List, show, export, verify, push and pull the run ledger."""


@ledger.command("list")
@click.option("--recipe", default=None, help="Only runs of this recipe name.")
@click.option("--status", default=None, help="Only runs with this status.")
@click.option("--model", default=None, help="Only runs of this model repo.")
@click.option("--draft", default=None, help="Only runs with this draft repo.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Most recent N runs.")
@ledger_option
@json_option
def list_(
    ledger_url: str | None,
    as_json: bool,
    recipe: str | None,
    status: str | None,
    model: str | None,
    draft: str | None,
    limit: int,
) -> None:
    """The most recent runs by start time, newest first."""
    from autobench.ledger.render import runs_table

    with _open(ledger_url) as book:
        records = book.runs(recipe, status, limit, model=model, draft=draft, newest_first=True, by_time=True)
    if as_json:
        print_json([r.to_json_dict() for r in records])
    else:
        print_table(*runs_table(records))


@ledger.command("show")
@click.argument("run")
@click.option("--full", is_flag=True, help="Include the recipe and script snapshots.")
@ledger_option
@json_option
def show(run: str, full: bool, ledger_url: str | None, as_json: bool) -> None:
    """Everything recorded about RUN (an id, #id or a row-hash prefix), with a grid run's cells.

    The cells' raw samples: `autobench ledger export`."""
    from autobench.ledger.render import cell_lines, run_lines

    with _open(ledger_url) as book:
        rec = book.get(book.resolve(run))
        cells = book.cells(rec.id, samples=False)
    if as_json:
        print_json({**rec.to_json_dict(), "cells": [c.to_json_dict() for c in cells]})
    else:
        say("\n".join([*run_lines(rec, full=full), *cell_lines(cells)]))


@ledger.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv"]),
    default=None,
    help="Default: from the output suffix, else jsonl.",
)
@click.option("-o", "--output", default=None, metavar="FILE", help="Write here (atomically); default stdout.")
@ledger_option
def export(fmt: str | None, output: str | None, ledger_url: str | None) -> None:
    """Export every run as JSONL or CSV."""
    from autobench.ledger.export import export_to

    fmt = fmt or ("csv" if output and output.lower().endswith(".csv") else "jsonl")
    with _open(ledger_url) as book:
        count = export_to(book, output, fmt)
    if output:
        say(f"exported {count} runs to {output} ({fmt})", err=True)


@ledger.command("verify")
@click.option(
    "--head",
    "known_head",
    default=None,
    metavar="HASH",
    help="A head_hash printed by an earlier verify: fail unless the chain still contains it.",
)
@ledger_option
@json_option
def verify(known_head: str | None, ledger_url: str | None, as_json: bool) -> None:
    """Recompute the hash chain, name the first broken row and check the append-only triggers.

    With --head, also check that an earlier head is still in the chain.  Exit 4 if anything fails."""
    with _open(ledger_url) as book:
        result = book.verify(known_head)
    if as_json:
        print_json(result.to_json_dict())
    if not result.ok:
        raise LedgerError(
            str(result), location=book.where, hint="the ledger was changed outside autobench; restore it from a copy"
        )
    if not as_json:
        say(str(result))


# ------------------------------------------------------------------ history / compare
@click.command("history")
@click.option("--draft", default=None, metavar="REPO", help="Per revision of this draft repo.")
@click.option("--model", default=None, metavar="REPO", help="Per revision of this model repo.")
@click.option("--recipe", default=None, metavar="NAME", help="Per digest of this recipe.")
@ledger_option
@json_option
def history(draft: str | None, model: str | None, recipe: str | None, ledger_url: str | None, as_json: bool) -> None:
    """Run history grouped per draft revision, model revision or recipe digest.

    Without --draft, --model or --recipe: every recipe of the ledger, each per digest."""
    given = sum(x is not None for x in (draft, model, recipe))
    if given > 1:
        raise UsageError("give at most one of --draft, --model or --recipe")
    with _open(ledger_url) as book:
        if given:
            results = [book.history(draft=draft, model=model, recipe=recipe)]
        else:
            results = [book.history(recipe=name) for name in sorted(book.known("recipe"))]
        known = book.known(results[0].kind) if given and not results[0].groups else []
    if as_json:
        print_json(results[0].to_json_dict() if given else [r.to_json_dict() for r in results])
        return
    if given and not results[0].groups:
        import difflib

        result = results[0]
        close = difflib.get_close_matches(result.subject, known, 1, 0.5)
        hint = f"; did you mean {close[0]}?" if close else ""
        say(f"no runs with {result.kind} {result.subject}{hint}", err=True)
        return
    if not results:
        say("no runs in the ledger", err=True)
        return
    for result in results:
        _print_history(result)


def _print_history(result: Any) -> None:
    from autobench.ledger.render import history_causes, history_table

    runs = f"{result.runs} run" + ("" if result.runs == 1 else "s")
    print_table(*history_table(result, short_keys=sys.stdout.isatty()), title=f"{result.kind} {result.subject}: {runs}")
    causes = history_causes(result)
    if causes:
        say("root causes:")
        say("\n".join(f"  {line}" for line in causes))


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option(
    "--anyway",
    is_flag=True,
    help="Compare even when the runs' pins differ (the differences head the output).",
)
@click.option("--threshold", default="5%", show_default=True, metavar="PCT", help="A change smaller is 'no change'.")
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the per-request bootstrap band (used when a side has one repeat).",
)
@ledger_option
@json_option
def compare(
    run_a: str, run_b: str, anyway: bool, threshold: str, seed: int, ledger_url: str | None, as_json: bool
) -> None:
    """Compare RUN_A and RUN_B side by side: ratios B/A, then a verdict per cell and metric.

    The verdict (faster / slower / no change / inconclusive) weighs the ratio against the
    threshold and a noise band: a t interval over the repeats (two or more a side), else a
    seeded bootstrap over the per-request samples (docs/verdicts.md).  Refuses runs whose
    pins differ (model, draft, image, engine version, engine arguments, bench parameters),
    naming each difference, unless --anyway."""
    from autobench.ledger.regress import parse_threshold

    show_comparison(
        ledger_url, run_a, run_b, anyway=anyway, threshold=parse_threshold(threshold), seed=seed, as_json=as_json
    )


def show_comparison(
    ledger_url: str | None,
    run_a: str,
    run_b: str,
    *,
    anyway: bool,
    threshold: float,
    seed: int,
    as_json: bool,
    head: dict[str, Any] | None = None,
) -> None:
    """``compare``'s output (also after ``replay --run``): pins, the side-by-side table, the
    verdicts; with ``as_json`` one document (``head``'s keys first)."""
    from autobench.cli.regress_cmds import _cells
    from autobench.ledger.cells import sweep_summary
    from autobench.ledger.pins import require_same_pins
    from autobench.ledger.regress import run_cells
    from autobench.ledger.render import compare_table, verdict_notes, verdict_table
    from autobench.ledger.verdict import judge_cells

    with _open(ledger_url) as book:
        result = book.compare(run_a, run_b)
        if not anyway:
            require_same_pins(result.a, result.b, result.pins)
        cells_a, cells_b = _cells(book, result.a), _cells(book, result.b)
    verdicts = judge_cells(run_cells(result.a, cells_a), run_cells(result.b, cells_b), threshold=threshold, seed=seed)
    sweeps = {side: sweep_summary(cells) for side, cells in (("a", cells_a), ("b", cells_b))}
    if as_json:
        doc = {**(head or {}), **result.to_json_dict(), "verdicts": verdicts.to_json_dict()}
        doc["sweeps"] = {side: s.to_json_dict() if s is not None else None for side, s in sweeps.items()}
        print_json(doc)
        return
    for warning in result.warnings:
        say(f"warning: {warning}", err=True)
    for (side, sweep), run in zip(sweeps.items(), (result.a, result.b), strict=True):
        if sweep is not None:  # a sweep's row is its headline cell: say which, and the totals
            say(f"{side.upper()} {run.display_id}: figures of its {sweep.headline_text()}; {sweep.totals_text()}")
    if result.pins.differences:
        say("pins differ (A vs B):")
        say("\n".join(f"  {d.text()}" for d in result.pins.differences))
    print_table(*compare_table(result))
    if result.decode_speedup is not None:
        say(f"decode speedup (B/A): {result.decode_speedup:.2f}x")
    if any(True for _ in verdicts.rows()):
        say("")
        print_table(*verdict_table(verdicts, f"A {result.a.display_id}", f"B {result.b.display_id}"))
        for note in verdict_notes(verdicts):
            say(note)


def _add_sync_commands() -> None:
    from autobench.cli.sync_cmds import pull, push

    ledger.add_command(push)
    ledger.add_command(pull)


_add_sync_commands()

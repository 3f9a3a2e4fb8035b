"""CLI: ``experiment plan`` (an experiment's treatments, validated, digested and pruned)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from autobench.cli.options import json_option, ledger_option, print_json, print_table
from autobench.cli.output import say
from autobench.cli.run_options import run_options

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from autobench.experiment.analysis import Analysis
    from autobench.experiment.plan import ExperimentPlan, PlannedTreatment
    from autobench.run.outcome import RunOptions


def _runtime_option(text: str) -> Callable[[F], F]:
    return click.option(
        "--runtime", type=click.Choice(["docker", "process"]), default="docker", show_default=True, help=text
    )


@click.group("experiment")
def experiment() -> None:
    """Plan experiments across boots: factors over recipe keys, one boot per treatment."""


@experiment.command("plan")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--vllm-version", default=None, metavar="X.Y.Z", help="Predict boots under this vLLM's rules.")
@click.option("--offline", is_flag=True, default=None, help="Read configs from the local HF cache only.")
@_runtime_option("Validate each treatment for this runtime.")
@json_option("Print JSON: {experiment, digest, treatments: [{id, label, levels, digest, status, cause}], ...}.")
@click.pass_context
def plan(
    ctx: click.Context, file: str, vllm_version: str | None, offline: bool | None, runtime: str, as_json: bool
) -> None:
    """List the treatments of the experiment FILE, each validated and digested like a recipe,
    with its predicted boot: a treatment predicted to fail is pruned, with the cause.

    Configs are read as `autobench preflight` reads them: from the Hub into the HF cache, or
    from the cache only with --offline (or HF_HUB_OFFLINE=1).
    Exit 0 when at least one treatment is left to run; 6 when every one is pruned.
    """
    from autobench.experiment import load_experiment, plan_experiment
    from autobench.experiment.execute import rules_runtime
    from autobench.experiment.plan import PRUNED, preflight_predictor
    from autobench.run import RunOptions

    exp = load_experiment(file)
    predictor = preflight_predictor(vllm_version, offline=offline)
    # each treatment as `experiment run` will check it: a multi-node one by the multi-node driver's rules
    result = plan_experiment(exp, predictor=predictor, runtime=rules_runtime(RunOptions(runtime=runtime)))
    if as_json:
        print_json(result.to_json_dict())
    else:
        rows = [
            [t.treatment.id, t.treatment.label(), t.digest[7:19], t.status, t.cause or ""] for t in result.treatments
        ]
        print_table(["id", "treatment", "digest", "status", "cause"], rows, title=f"experiment {exp.name}")
        say(
            f"{len(result.treatments)} treatments: {result.count('ready')} ready, {result.count(PRUNED)} pruned "
            f"(predicted not to boot), {result.count('unpredicted')} without a prediction; plan {result.digest[:19]}"
        )
        floating = sorted({ref for t in result.treatments for ref in t.unpinned})
        if floating:
            say(f"not pinned: {', '.join(floating)} (autobench lock pins them)")
    if result.treatments and result.count(PRUNED) == len(result.treatments):
        ctx.exit(6)


@experiment.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@run_options(
    runtime="Where each treatment boots: docker, process, or slurm (a job array, one task per treatment). "
    "A multi-node treatment (topology.nodes > 1) runs on the multi-node driver, or on Slurm as a task of its nodes.",
    gpus_per_node="slurm: GPUs per task (default: the most any treatment needs; 0: request none).",
    time_limit="slurm: each task's time limit (default: boot + bench + 5 min).",
    container="slurm: each task runs the server on the node (none) or in Docker (docker); "
    "pyxis and apptainer are refused.",
    force="Boot pruned treatments too (predicted not to boot).",
)
@click.option("--rerun", is_flag=True, help="Boot treatments that already have a DONE run of their digest.")
@click.option("--offline", is_flag=True, default=None, help="Read configs from the local HF cache only.")
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="slurm: array tasks running at once (sbatch --array=0-N%P).",
)
@click.option(
    "--confirm",
    "confirm_boots",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Then boot the top treatments of each bench cell N more times each, interleaved, so the report "
    "judges the best against the runner-up across boots (N >= 2 for a band; docs/experiments.md).",
)
@click.option(
    "--confirm-top",
    type=click.IntRange(min=2),
    default=2,
    show_default=True,
    help="--confirm: how many top treatments of each bench cell to confirm.",
)
@click.option("--metric", default="decode_tok_s", show_default=True, help="--confirm: rank treatments by this metric.")
@click.option("--slo", "slos", multiple=True, metavar="METRIC<=VALUE", help="--confirm: only treatments meeting it.")
@json_option(
    "Print JSON: {experiment, plan, treatments: [{id, label, digest, action, status, run, run_uid, cause}], "
    "confirm: [{id, round, status, run_uid}]}."
)
@click.pass_context
def run(
    ctx: click.Context,
    file: str,
    options: RunOptions,
    rerun: bool,
    offline: bool | None,
    max_parallel: int,
    confirm_boots: int,
    confirm_top: int,
    metric: str,
    slos: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run the experiment FILE: one boot per treatment, each recorded like any run.

    Pruned treatments are not booted (unless --force); a treatment with a DONE run of its
    digest in the ledger is skipped (unless --rerun), so an interrupted experiment completes
    when run again.  With --runtime slurm the treatments to boot are one job array, each task
    recording its run into the ledger (docs/slurm.md).  Exit 0 when every treatment run is
    DONE, 6 when one is not, 130 after Ctrl-C (treatments left for the next run).

    With --confirm N the top --confirm-top treatments of each bench cell (by --metric, among
    those meeting every --slo) are then booted N times each, interleaved, for a verdict across
    boots; the boots already recorded count.
    """
    from dataclasses import replace
    from pathlib import Path

    from autobench.experiment import load_experiment, plan_experiment
    from autobench.experiment.analysis import analyse, parse_slo
    from autobench.experiment.confirm import CONFIRM, Confirmation, confirm, one_by_one, select, treatment_runs
    from autobench.experiment.execute import (
        Booted,
        boot,
        exit_code,
        fan_out,
        rules_runtime,
        run_experiment,
    )
    from autobench.experiment.plan import preflight_predictor
    from autobench.ledger import open_ledger
    from autobench.ledger.experiments import new_experiment_values
    from autobench.recipe.loader import LoadedRecipe

    parsed = [parse_slo(s) for s in slos]
    options = replace(options, live=False)  # treatments' progress lines interleave with the experiment's
    runtime, ledger_url, force = options.runtime, options.ledger, options.force
    # each treatment is validated for the runtime it boots on (a Slurm task's: the node's, or
    # for a multi-node treatment its job script's in the task's allocation)
    if runtime == "slurm":
        from autobench.experiment.array import task_rules

        rules = task_rules(options)
    else:
        rules = rules_runtime(options)
    exp = load_experiment(file)
    predictor = preflight_predictor(options.vllm_version, offline=offline)
    plan = plan_experiment(exp, predictor=predictor, runtime=rules)
    folder = Path(options.runs_dir) / "experiments" / exp.name

    def echo(text: str) -> None:
        say(text, err=True)

    def done_run(loaded: LoadedRecipe) -> Booted | None:
        with open_ledger(ledger_url) as book:
            done = book.runs(status="DONE", digest=loaded.digest, limit=1, newest_first=True)
        return Booted("DONE", done[0].display_id, done[0].stable_id) if done else None

    def run_one(p: PlannedTreatment) -> Booted:
        return boot(plan, p, folder, options, echo)

    if runtime == "slurm":
        from autobench.experiment.array import SlurmArray

        fan = SlurmArray(plan, folder, options, max_parallel, echo)
        outcomes = fan_out(plan, fan, done_run, rerun=rerun, force=force, echo=echo)
        boot_round: Callable[[Sequence[PlannedTreatment]], Mapping[str, Booted]] = fan
    else:
        outcomes = run_experiment(plan, run_one, done_run, rerun=rerun, force=force, echo=echo)
        boot_round = one_by_one(run_one, echo)
    confirmations: list[Confirmation] = []
    stopped = False
    if confirm_boots and exit_code(outcomes) != 130:
        with open_ledger(ledger_url) as book:
            runs = treatment_runs(book, plan, book.experiments(plan_digest=plan.digest))
        analysis = analyse(plan, runs, metric=metric, slos=parsed)
        chosen = select(analysis, confirm_top)
        have = {tr.planned.digest: len(tr.boots) for tr in runs}
        confirmations, stopped = confirm(chosen, have, confirm_boots, boot_round, echo=echo)
    treatments = [o.to_ledger_dict() for o in outcomes]
    for entry in treatments:
        mine = [c.to_ledger_dict() for c in confirmations if c.planned.treatment.id == entry["id"]]
        if mine:
            entry[CONFIRM] = mine
    with open_ledger(ledger_url) as book:
        record = book.record_experiment(new_experiment_values(exp.name, plan.digest, exp.doc.data, treatments))
    if as_json:
        print_json(
            {
                "experiment": exp.name,
                "record": record,
                "plan": plan.digest,
                "treatments": [o.to_json_dict() for o in outcomes],
                "confirm": [
                    {"id": c.planned.treatment.id, **c.to_ledger_dict(), "run": c.booted.display_id}
                    for c in confirmations
                ],
            }
        )
    else:
        for o in outcomes:
            t = o.planned.treatment
            say(f"{t.id:<5} {t.label():<48} {o.action:<8} {o.status or '-':<8} {o.display_id or ''}".rstrip())
        for c in confirmations:
            t = c.planned.treatment
            shown = f"{t.id:<5} {t.label():<48} confirm {c.round:<2} {c.booted.status:<8} {c.booted.display_id or ''}"
            say(shown.rstrip())
        say(f"experiment {exp.name}: record #{record} in the ledger (plan {plan.digest[:19]})")
    code = exit_code(outcomes)
    if stopped or any(c.booted.status == "ABORTED" for c in confirmations):
        code = 130
    elif code == 0 and any(c.booted.status != "DONE" for c in confirmations):
        code = 6
    ctx.exit(code)


def _plan_for_ledger(file: str) -> ExperimentPlan:
    """The experiment's treatments and digests, without predicting boots (no Hub access)."""
    from autobench.experiment import load_experiment, plan_experiment
    from autobench.experiment.plan import READY

    return plan_experiment(load_experiment(file), predictor=lambda loaded: (READY, None, None), runtime=None)


@experiment.command("report")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--metric", default="decode_tok_s", show_default=True, help="Rank treatments by this metric.")
@click.option(
    "--latency",
    default="tpot_median_ms",
    show_default=True,
    help="The latency of the Pareto front (against output tok/s per GPU).",
)
@click.option("--slo", "slos", multiple=True, metavar="METRIC<=VALUE", help="Only treatments meeting it can be best.")
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0, 1), help="No change within it.")
@click.option(
    "--page",
    "page_dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Also write the report page: DIR/experiments/NAME.md, a Pareto plot per cell (SVG) and the "
    "pages of the runs' recipes (DIR/recipes/), every row and point linked to its run.",
)
@ledger_option
@json_option("Print JSON: {cells: [{params, treatments, best, runner_up, verdict, pareto, main_effects}], ...}.")
def report(
    file: str,
    metric: str,
    latency: str,
    slos: tuple[str, ...],
    threshold: float,
    page_dir: str | None,
    ledger_url: str | None,
    as_json: bool,
) -> None:
    """Judge the experiment FILE from the ledger: per bench cell, the treatments ranked by a
    metric, the best under the SLOs against the runner-up (faster / no change / inconclusive,
    from the raw samples), the Pareto front, main effects and acceptance lengths."""
    from autobench.experiment.analysis import analyse, parse_slo, to_json_dict
    from autobench.experiment.confirm import treatment_runs
    from autobench.ledger import open_ledger

    parsed = [parse_slo(s) for s in slos]
    plan = _plan_for_ledger(file)
    with open_ledger(ledger_url, create=False) as book:
        records = book.experiments(plan_digest=plan.digest)
        runs = treatment_runs(book, plan, records)
    analysis = analyse(plan, runs, metric=metric, latency=latency, slos=parsed, threshold=threshold)
    pruned = [t for t in records[-1].treatments if t.get("action") == "pruned"] if records else []
    written = None
    if page_dir is not None:
        from autobench.experiment.page import write_page

        causes = [(str(t.get("id")), str(t.get("label")), str(t.get("cause"))) for t in pruned]
        written = write_page(analysis, page_dir, ledger=ledger_url, pruned=causes)
    if as_json:
        doc = to_json_dict(analysis)
        doc["records"] = [r.id for r in records]
        doc["pruned"] = [{"id": t.get("id"), "label": t.get("label"), "cause": t.get("cause")} for t in pruned]
        if written is not None:
            doc["page"] = {
                "page": str(written.page),
                "plots": [str(p) for p in written.plots],
                "recipe_pages": [str(p) for p in written.recipe_pages],
                "written": [str(p) for p in written.written],
                "notes": written.notes,
            }
        print_json(doc)
        return
    for line in report_lines(analysis):
        say(line)
    if records:
        say(f"\nrecorded: experiment run(s) #{', #'.join(str(r.id) for r in records)} of this plan")
    for t in pruned:
        say(f"pruned {t.get('id')} {t.get('label')}: {t.get('cause')}")
    if written is not None:
        say(f"\npage: {written.page} ({len(written.plots)} plot(s), {len(written.recipe_pages)} recipe page(s))")
        for note in written.notes:
            say(f"note: {note}")


def report_lines(analysis: Analysis) -> list[str]:
    from autobench.ledger.verdict import cell_label
    from autobench.metric_catalogue import format_value as fmt

    lines = [f"experiment {analysis.plan.experiment.name}: {len(analysis.plan.treatments)} treatments"]
    if analysis.missing:
        lines.append("not run yet: " + ", ".join(p.treatment.id for p in analysis.missing))
    for cell in analysis.cells:
        lines.append(f"\n{cell_label(cell.params)}")
        for p in cell.points:
            t = p.treatment
            mark = "*" if p is cell.best else " "
            run_id = t.run.display_id if t.run else "-"
            latency = "" if analysis.latency == analysis.metric else f"{analysis.latency}={fmt(p.latency)} "
            lines.append(
                f" {mark} {t.planned.treatment.id:<5} {t.planned.treatment.label():<48} "
                f"{analysis.metric}={fmt(p.value)} {latency}"
                f"acceptance={fmt(p.acceptance)} run {run_id}"
                + (f" boots={len(p.boots)}" if p.boots else "")
                + ("" if p.meets_slo else "  (misses the SLO)")
            )
        if cell.best is not None and cell.runner_up is not None:
            across = f" across {cell.boots[0]} and {cell.boots[1]} boots" if cell.boots else ""
            band = (
                f" (band {cell.band[0]:.3f}..{cell.band[1]:.3f} at {cell.level:.2%}{across}; "
                f"no change within ±{analysis.threshold:.0%})"
                if cell.band is not None and cell.level is not None
                else ""
            )
            lines.append(
                f"  best {cell.best.treatment.planned.treatment.id} against runner-up "
                f"{cell.runner_up.treatment.planned.treatment.id}: {cell.verdict}{band}"
            )
        elif cell.best is not None:
            lines.append(f"  best {cell.best.treatment.planned.treatment.id} (no runner-up to judge against)")
        else:
            lines.append("  no treatment meets the SLO" if analysis.slos else "  no treatment has the metric")
        front = ", ".join(p.treatment.planned.treatment.id for p in cell.pareto)
        lines.append(f"  Pareto front (output tok/s per GPU vs {analysis.latency}): {front or '-'}")
        for factor, levels in cell.effects.items():
            shown = ", ".join(f"{lvl}: {fmt(v)}" for lvl, v in levels.items())
            lines.append(f"  main effect of {factor}: {shown}")
    return lines

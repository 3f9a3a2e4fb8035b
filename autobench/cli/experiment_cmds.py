"""CLI: ``experiment plan`` (an experiment's treatments, validated, digested and pruned)."""

from __future__ import annotations

import click

from autobench.cli.options import json_option, print_json, print_table
from autobench.cli.output import say


@click.group("experiment")
def experiment() -> None:
    """Plan experiments across boots: factors over recipe keys, one boot per treatment."""


@experiment.command("plan")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--vllm-version", default=None, metavar="X.Y.Z", help="Predict boots under this vLLM's rules.")
@click.option("--offline", is_flag=True, default=None, help="Read configs from the local HF cache only.")
@click.option(
    "--runtime",
    type=click.Choice(["docker", "process"]),
    default="docker",
    show_default=True,
    help="Validate each treatment for this runtime.",
)
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
    from autobench.experiment.plan import PRUNED, preflight_predictor

    exp = load_experiment(file)
    result = plan_experiment(exp, predictor=preflight_predictor(vllm_version, offline=offline), runtime=runtime)
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

"""CLI: ``autobench preflight RECIPE`` (thin: options -> autobench.preflight.predict)."""

from __future__ import annotations

import click

from autobench.cli.options import json_option, print_json
from autobench.cli.output import say
from autobench.cli.params import Finite


@click.command("preflight")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--vllm-version", default=None, metavar="X.Y.Z", help="vLLM version the image runs (else from the tag).")
@click.option(
    "--kv-blocks", type=click.IntRange(min=1), default=None, help="KV blocks a real boot reported: exact concurrency."
)
@click.option("--gpu", default=None, metavar="NAME", help="GPU for the KV budget (GB10, H200); or --gpu-memory-gib.")
@click.option("--gpu-memory-gib", type=Finite(min=0, min_open=True), default=None, help="Memory of one GPU, GiB.")
@click.option("--weights-gib", type=Finite(min=0), default=None, help="Override the weights' size (GiB, all GPUs).")
@click.option(
    "--target-config", type=click.Path(exists=True), default=None, help="Local config.json (or folder) of the model."
)
@click.option(
    "--draft-config", type=click.Path(exists=True), default=None, help="Local config.json (or folder) of the draft."
)
@click.option("--offline", is_flag=True, help="Read configs from the local HF cache only.")
@click.option(
    "--against",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    metavar="LOG",
    help="A vLLM server log of this recipe's boot: compare the prediction with the facts it printed.",
)
@json_option("Print the prediction as JSON.")
@click.pass_context
def preflight(
    ctx: click.Context,
    recipe: str,
    vllm_version: str | None,
    kv_blocks: int | None,
    gpu: str | None,
    gpu_memory_gib: float | None,
    weights_gib: float | None,
    target_config: str | None,
    draft_config: str | None,
    offline: bool,
    against: str | None,
    as_json: bool,
) -> None:
    """Predict the KV-cache layout of RECIPE's boot, and whether it fails, from configs alone.

    Prints page sizes per layer kind, the attention block size, mamba padding, the KV groups,
    blocks per request and the unification verdict, each with the vLLM function it mirrors.
    Exit 0 when the boot is predicted to succeed, 6 when it is predicted to fail, 9 when it
    cannot be predicted.
    """
    from autobench.preflight.budget import gpu_memory_gib as table_memory
    from autobench.preflight.predict import Options, predict_recipe
    from autobench.recipe.loader import load_recipe

    memory = gpu_memory_gib if gpu_memory_gib is not None else (table_memory(gpu) if gpu else None)
    options = Options(
        vllm_version=vllm_version,
        target_config=target_config,
        draft_config=draft_config,
        kv_blocks=kv_blocks,
        gpu_memory_gib=memory,
        weights_gib=weights_gib,
        offline=offline or None,
        budget_required=memory is not None,
    )
    prediction = predict_recipe(load_recipe(recipe), options)
    doc = prediction.to_dict()
    rows = None
    if against:
        from autobench.logs import parse_log
        from autobench.preflight.compare import compare

        report = parse_log(against)
        facts = report.to_json_dict()
        # a log that reached "Application startup complete" booted; one with a root cause did not
        status = "DONE" if report.ready else "BLOCKED" if report.root_cause is not None else None
        rows = compare(doc, facts, status)
        doc["against"] = {"log": against, "rows": [r.as_dict() for r in rows]}
    if as_json:
        print_json(doc)
    else:
        say(prediction.render_text())
        for r in rows or []:
            mark = {True: "ok", False: "DIFFERS", None: ""}[r.agrees]
            say(f"  vs log: {r.fact:22s} predicted {r.predicted:28s} logged {r.logged:24s} {mark}".rstrip())
    ctx.exit(6 if prediction.fails else 0)

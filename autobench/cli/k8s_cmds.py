"""``autobench k8s collect RECIPE RUN-ID``: a bench Job's result into the ledger (autobench.run.k8s)."""

from __future__ import annotations

import os

import click

from autobench.cli.options import Group, json_option, ledger_option, print_json
from autobench.cli.output import say


@click.group(cls=Group)
def k8s() -> None:
    """Bring a Kubernetes bench Job's result (compile --target k8s) into the ledger."""


@k8s.command()
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.argument("run_id", metavar="RUN-ID")
@click.option("--namespace", "-n", default=None, help="The namespace the manifests were applied in.")
@click.option(
    "--kubectl", default="kubectl", show_default=True, metavar="CMD", help="How to run kubectl (shell words)."
)
@ledger_option
@json_option
def collect(
    recipe: str, run_id: str, namespace: str | None, kubectl: str, ledger_url: str | None, as_json: bool
) -> None:
    """Read the bench Job of RUN-ID (its log, through kubectl) and append its run of RECIPE."""
    from autobench.ledger import open_ledger
    from autobench.run.k8s import collect as collect_run

    run = collect_run(recipe, run_id, namespace=namespace, kubectl=kubectl, env=os.environ)
    with open_ledger(ledger_url, create=True) as book:
        rec = book.append(run)
    if as_json:
        print_json(rec.to_json_dict())
    else:
        say(f"recorded run {rec.display_id}: {rec.recipe_name} {rec.status} (k8s run id {run_id})")

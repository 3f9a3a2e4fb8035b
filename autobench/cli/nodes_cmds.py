"""``autobench nodes status|stop RECIPE``: a multi-node recipe's nodes (autobench.run.nodes)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from autobench.cli.options import Group, json_option, print_json, print_table

if TYPE_CHECKING:
    from autobench.recipe import LoadedRecipe
    from autobench.run.nodes import NodeState


@click.group(cls=Group)
def nodes() -> None:
    """Show or stop what a multi-node recipe runs on its nodes, and which run holds them."""


def _options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--remote",
        default=None,
        metavar="CMD",
        help="How to reach a host [env AUTOBENCH_REMOTE; default ssh with connect and keep-alive timeouts].",
    )(func)
    func = click.option(
        "--hosts", default=None, metavar="HEAD,WORKER,...", help="The hosts (overrides topology.hosts)."
    )(func)
    return click.argument("recipe", type=click.Path(dir_okay=False))(func)


def _load(recipe: str, hosts: str | None, remote: str | None) -> tuple[LoadedRecipe, list[str] | None, str]:
    from autobench.compile.cluster import DEFAULT_REMOTE
    from autobench.recipe import load_recipe

    chosen = [h.strip() for h in hosts.split(",")] if hosts else None
    return load_recipe(recipe), chosen, remote or os.environ.get("AUTOBENCH_REMOTE") or DEFAULT_REMOTE


def _show(states: Sequence[NodeState], as_json: bool) -> None:
    if as_json:
        print_json([s.to_json_dict() for s in states])
        return
    rows = []
    for s in states:
        state = "unreachable" if s.running is None else ("running" if s.running else "stopped")
        rows.append([str(s.rank), s.host, s.container, state, s.holder or s.error or "-"])
    print_table(["node", "host", "container", "state", "held by"], rows)


@nodes.command()
@_options
@json_option
def status(recipe: str, hosts: str | None, remote: str | None, as_json: bool) -> None:
    """Each node's container (running or stopped) and the run that holds the node (the node guard)."""
    from autobench.run.nodes import node_states

    loaded, chosen, how = _load(recipe, hosts, remote)
    _show(node_states(loaded, chosen, how, os.environ), as_json)


@nodes.command()
@_options
@json_option
def stop(recipe: str, hosts: str | None, remote: str | None, as_json: bool) -> None:
    """Stop each node's container and release the node guard, for whichever run holds it."""
    from autobench.run.nodes import stop_nodes

    loaded, chosen, how = _load(recipe, hosts, remote)
    _show(stop_nodes(loaded, chosen, how, os.environ), as_json)

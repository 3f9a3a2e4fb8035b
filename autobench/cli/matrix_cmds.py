"""CLI: ``variants`` (the cells of a recipe's variants and roles)."""

from __future__ import annotations

import click

from autobench.cli.options import json_option, print_json
from autobench.cli.output import say


@click.command()
@click.argument("recipe", type=click.Path(dir_okay=False))
@json_option("Print JSON: [{cell, digest, served_name, image}].")
def variants(recipe: str, as_json: bool) -> None:
    """List the cells of RECIPE: base and each variant, times each role.

    Every cell is loaded (so a bad override is reported with its line); compile one with
    `autobench compile RECIPE --variant CELL`.
    """
    from autobench.recipe.loader import load_recipe, recipe_cells

    rows = []
    for cell in recipe_cells(recipe):
        loaded = load_recipe(recipe, cell)
        r = loaded.recipe
        rows.append(
            {
                "cell": cell,
                "digest": loaded.digest,
                "model": r.model.repo,
                "image": r.container.image,
                "nodes": r.topology.nodes,
            }
        )
    if as_json:
        print_json(rows)
        return
    width = max(len(str(row["cell"])) for row in rows)
    for row in rows:
        say(f"{str(row['cell']).ljust(width)}  {str(row['digest'])[:19]}  {row['model']}  {row['image']}")

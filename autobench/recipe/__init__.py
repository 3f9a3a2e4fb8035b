"""Recipes: schema, loading (with file/line positions, ``extends``, variants and roles), rules,
the docs key reference (``reference``) and peer-format import (``importer``)."""

from autobench.recipe.facts import is_full_sha
from autobench.recipe.loader import LoadedRecipe, Position, load_recipe
from autobench.recipe.schema import Recipe

__all__ = ["LoadedRecipe", "Position", "Recipe", "is_full_sha", "load_recipe"]

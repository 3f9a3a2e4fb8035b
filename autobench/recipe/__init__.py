"""Recipes: schema, loading (with file/line positions and ``extends``), rules."""

from autobench.recipe.loader import LoadedRecipe, Position, load_recipe
from autobench.recipe.schema import Recipe, is_full_sha

__all__ = ["LoadedRecipe", "Position", "Recipe", "is_full_sha", "load_recipe"]

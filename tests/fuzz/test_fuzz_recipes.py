"""Fuzz: every recipe field, drawn from the recipe's JSON Schema (fuzz_strategies.py).

Whatever a recipe holds: loading raises only RecipeError (one clean line: no traceback, no raw
control character, no token repeated); the rules run; compiling yields a script or one
RecipeError; and in a compiled ``docker run`` the image is the image and no value is an option.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from fuzz_strategies import TOKEN, recipe_documents
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings

from autobench.errors import AutobenchError, RecipeError

SETTINGS = settings(
    max_examples=budget(60), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE
)


def _docker_image_slot(argv: list[str], value_flags: set[str]) -> str | None:
    """The word docker reads as the image (pflag: a value flag takes the next word verbatim)."""
    i = 2
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[i + 1] if i + 1 < len(argv) else None
        if not word.startswith("-") or word == "-":
            return word
        if "=" not in word and word in value_flags:
            i += 1
        i += 1
    return None


@SETTINGS
@given(recipe_documents())
def test_any_recipe_loads_checks_and_compiles_or_says_why_in_one_clean_line(doc):
    from autobench.compile import compile_recipe, docker_argv
    from autobench.recipe.loader import load_recipe
    from autobench.recipe.rules import check

    tried("recipes: load/check/compile")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.yaml"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
        try:
            loaded = load_recipe(path)
        except RecipeError as exc:
            assert_clean_line(str(exc))
            return
        for finding in check(loaded):
            assert_clean_line(finding.text())
            assert TOKEN not in json.dumps(finding.as_dict())
        try:
            script = compile_recipe(loaded, "full", check=False)
        except AutobenchError as exc:
            assert_clean_line(str(exc))
            return
        assert "\x1b" not in script and "\r" not in script.replace("\r\n", "")
        recipe = loaded.recipe
        if recipe.launch.is_default and not recipe.container.extra_args:
            argv = docker_argv(recipe, home="/h")
            value_flags = {"--name", "--gpus", "--shm-size", "-p", "-v", "--env", "--entrypoint"}
            assert _docker_image_slot(argv, value_flags) == recipe.container.image

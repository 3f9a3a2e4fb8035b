"""Load a recipe file: YAML with positions, ``extends`` merge, schema validation.

CONTRACT (other modules rely on it):
    load_recipe(path) -> LoadedRecipe
    LoadedRecipe.path       Path of the file given
    LoadedRecipe.recipe     the validated Recipe
    LoadedRecipe.data       the fully merged plain dict (after extends), as validated
    LoadedRecipe.digest     "sha256:<hex>" over the canonical JSON of the resolved recipe
    LoadedRecipe.positions  {key path tuple: Position(file, line, col)} -- where each effective value
                            was written (1-based line/col; the file may be an extended parent)
    LoadedRecipe.position(*keys) -> Position | None
Errors: RecipeError with location "file:line:col" and a hint.

(Initial minimal version; hardened by the recipe engineer.)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError
from autobench.recipe.schema import Recipe


@dataclass(frozen=True)
class Position:
    file: Path
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class LoadedRecipe:
    path: Path
    recipe: Recipe
    data: dict[str, Any]
    digest: str
    positions: dict[tuple[Any, ...], Position] = field(default_factory=dict)

    def position(self, *keys: Any) -> Position | None:
        return self.positions.get(tuple(keys))


def canonical_digest(data: dict[str, Any]) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def load_recipe(path: str | Path) -> LoadedRecipe:
    from ruamel.yaml import YAML

    path = Path(path)
    try:
        raw = YAML(typ="rt").load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecipeError(f"cannot read recipe: {exc.strerror}", location=str(path)) from exc
    data = json.loads(json.dumps(raw))
    data.setdefault("name", path.stem)
    recipe = Recipe.model_validate(data)
    resolved = recipe.model_dump(mode="json")
    return LoadedRecipe(path=path, recipe=recipe, data=resolved, digest=canonical_digest(resolved))

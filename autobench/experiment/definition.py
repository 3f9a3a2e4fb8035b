"""An experiment file: which recipe, which factors (recipe keys) at which levels, and which
design.  Read with the recipe loader's rules (size, UTF-8, duplicate keys, node bounds), every
problem reported as one line at its file, line and column.

```yaml
recipe: ../recipes/qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml   # relative to this file
factors:                                    # recipe key -> its levels
  speculative.num_speculative_tokens: [1, 2, 3, 4, 5, 6, 7, 8]
  speculative.revision: [6c7242c934a9870d7c59c05240bdbb2467cc1394, bce6f76cef2027552bed4a8a1bc9c449def48f05]
design: full                                # full (default) | list | random
exclude:                                    # treatments left out (every named factor at that level)
  - {speculative.num_speculative_tokens: 8, speculative.revision: bce6f76cef2027552bed4a8a1bc9c449def48f05}
sample: {size: 6, seed: 0}                  # design: random -- a seeded subset of the full design
treatments:                                 # design: list -- each a mapping of factor -> level
  - {speculative.num_speculative_tokens: 5}
bench: {concurrency: [1, 8]}                # merged onto every treatment's bench (its grid, as today)
max_treatments: 200                         # refuse a design with more (default 1,000)
```
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError
from autobench.recipe.loader import Document, Position, read_document

DESIGNS = ("full", "list", "random")
KEYS = ("name", "recipe", "factors", "design", "exclude", "sample", "treatments", "bench", "max_treatments")
DEFAULT_MAX = 1_000
#: The bounds of the design itself, whatever ``max_treatments`` says (a plan holds every treatment).
MAX_FACTORS = 32
MAX_LEVELS = 1_000
HARD_MAX_TREATMENTS = 100_000
#: Recipe keys a factor cannot vary: what names the recipe, and the matrix (a treatment is one cell).
NOT_FACTORS = ("name", "extends", "variants", "roles", "meta", "cell")
HINT = (
    "an experiment file names a recipe and its factors, e.g. `recipe: base.yaml` and "
    "`factors: {speculative.num_speculative_tokens: [1, 2, 3]}` (docs/experiments.md)"
)

Level = Any  # a YAML scalar, list or mapping: the value the recipe key takes


@dataclass(frozen=True)
class Factor:
    """A recipe key (``speculative.num_speculative_tokens``) and its levels, as written."""

    key: str
    path: tuple[str, ...]
    levels: tuple[Level, ...]
    where: Position  # the factor's key
    level_where: tuple[Position, ...]  # each level's value


@dataclass(frozen=True)
class Experiment:
    """A checked experiment file (``treatments`` and ``exclude`` as factor key -> level)."""

    path: Path
    name: str
    recipe: Path
    factors: tuple[Factor, ...]
    design: str
    exclude: tuple[dict[str, Level], ...]
    sample_size: int  # design: random (0 for the other designs)
    sample_seed: int
    listed: tuple[dict[str, Level], ...]  # design: list
    listed_where: tuple[dict[str, Position], ...]
    bench: dict[str, Any]
    bench_where: dict[str, Position]
    max_treatments: int
    doc: Document

    def factor(self, key: str) -> Factor | None:
        return next((f for f in self.factors if f.key == key), None)


def _fail(doc: Document, keys: tuple[Any, ...], message: str, hint: str, *, value: bool = False) -> RecipeError:
    where = doc.value_where(*keys) if value else doc.where(*keys)
    return RecipeError(message, location=str(where), hint=hint)


def _models_in(annotation: Any) -> list[type]:
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _is_mapping(annotation: Any) -> bool:
    if typing.get_origin(annotation) is dict:
        return True
    return any(_is_mapping(arg) for arg in typing.get_args(annotation))


def key_problem(path: tuple[str, ...]) -> str | None:
    """Why ``path`` is not a recipe key a factor can vary (None when it is).  A key under a
    mapping-valued field (``env.NAME``) is any name."""
    from autobench.recipe.schema import Recipe

    if not path or any(not part for part in path):
        return "is not a recipe key (write keys joined by '.', e.g. engine.max_num_seqs)"
    if path[0] in NOT_FACTORS:
        return f"{path[0]} cannot be a factor (a treatment is one recipe cell)"
    model: type | None = Recipe
    for depth, part in enumerate(path):
        fields = getattr(model, "model_fields", None)
        if fields is None:
            return f"{'.'.join(path[:depth])} has no keys below it"
        if part not in fields:
            import difflib

            near = difflib.get_close_matches(part, list(fields), n=1)
            where = ".".join(path[:depth]) or "a recipe"
            return f"{where} has no key {part!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
        annotation = fields[part].annotation
        rest = path[depth + 1 :]
        if rest and _is_mapping(annotation) and not _models_in(annotation):
            return None if len(rest) == 1 else f"{'.'.join(path[: depth + 2])} has no keys below it"
        models = _models_in(annotation)
        model = models[0] if models else None
    return None


def _factors(doc: Document) -> tuple[Factor, ...]:
    table = doc.data.get("factors")
    if table is None:
        return ()
    if not isinstance(table, dict):
        raise _fail(doc, ("factors",), "factors: must map each recipe key to its levels", HINT)
    if len(table) > MAX_FACTORS:
        raise _fail(doc, ("factors",), f"factors: {len(table)} factors, at most {MAX_FACTORS}", "split the experiment")
    out = []
    for key, levels in table.items():
        path = tuple(str(key).split("."))
        problem = key_problem(path)
        if problem:
            raise _fail(
                doc, ("factors", key), f"factors.{key}: {problem}", "a factor is a recipe key (docs/recipes.md)"
            )
        if not isinstance(levels, list) or not levels:
            raise _fail(
                doc,
                ("factors", key),
                f"factors.{key}: needs a list of one or more levels",
                f"write `{key}: [level, level, ...]`",
            )
        if len(levels) > MAX_LEVELS:
            raise _fail(
                doc, ("factors", key), f"factors.{key}: {len(levels)} levels, at most {MAX_LEVELS}", "fewer levels"
            )
        seen: list[Level] = []
        for i, level in enumerate(levels):
            if level in seen:
                raise _fail(
                    doc,
                    ("factors", key, i),
                    f"factors.{key}[{i}]: level {level!r} is listed twice",
                    "list each level once",
                    value=True,
                )
            seen.append(level)
        wheres = tuple(doc.value_where("factors", key, i) for i in range(len(levels)))
        out.append(Factor(str(key), path, tuple(levels), doc.where("factors", key), wheres))
    return tuple(out)


def _assignments(doc: Document, key: str, factors: tuple[Factor, ...], *, known_only: bool) -> list[dict[str, Level]]:
    """``exclude`` / ``treatments``: a list of mappings factor key -> level, each checked."""
    items = doc.data.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise _fail(doc, (key,), f"{key}: must be a list of mappings (factor key: level)", HINT)
    by_key = {f.key: f for f in factors}
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not item:
            raise _fail(
                doc,
                (key, i),
                f"{key}[{i}]: must be a mapping of factor keys to levels",
                "e.g. `- {engine.max_num_seqs: 8}`",
            )
        for name, level in item.items():
            factor = by_key.get(name)
            if factor is None and known_only:
                raise _fail(
                    doc,
                    (key, i, name),
                    f"{key}[{i}].{name}: not a factor of this experiment",
                    "factors: " + (", ".join(by_key) or "(none)"),
                )
            if factor is not None and level not in factor.levels:
                raise _fail(
                    doc,
                    (key, i, name),
                    f"{key}[{i}].{name}: {level!r} is not one of its levels",
                    "levels: " + ", ".join(repr(v) for v in factor.levels[:10]),
                    value=True,
                )
            if factor is None:
                problem = key_problem(tuple(str(name).split(".")))
                if problem:
                    raise _fail(doc, (key, i, name), f"{key}[{i}].{name}: {problem}", "a treatment sets recipe keys")
        out.append(dict(item))
    return out


def _int(doc: Document, keys: tuple[Any, ...], value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(
            doc,
            keys,
            f"{'.'.join(map(str, keys))}: must be a whole number from {low:,} to {high:,}",
            "e.g. 10",
            value=True,
        )
    return value


def load_experiment(path: str | Path) -> Experiment:
    """Read and check the experiment file at ``path`` (RecipeError, located, on any problem)."""
    path = Path(path)
    doc = read_document(path, what="experiment", hint=HINT)
    data = doc.data
    for key in data:
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(str(key), KEYS, n=1)
            raise _fail(
                doc,
                (key,),
                f"{key}: not an experiment key" + (f" (did you mean {near[0]!r}?)" if near else ""),
                "keys: " + ", ".join(KEYS),
            )
    recipe = data.get("recipe")
    if not isinstance(recipe, str) or not recipe.strip():
        raise _fail(doc, ("recipe",), "recipe: names the recipe file the treatments change", HINT, value=True)
    recipe_path = Path(recipe) if Path(recipe).is_absolute() else path.parent / recipe
    design = data.get("design", "full")
    if design not in DESIGNS:
        raise _fail(doc, ("design",), f"design: {design!r} is not a design", "one of " + ", ".join(DESIGNS), value=True)
    factors = _factors(doc)
    exclude = _assignments(doc, "exclude", factors, known_only=True)
    listed = _assignments(doc, "treatments", factors, known_only=False)
    if design == "list" and not listed:
        raise _fail(
            doc,
            ("design",),
            "design: list needs `treatments:`, a list of them",
            "e.g. `treatments: [{engine.max_num_seqs: 8}]`",
        )
    if design != "list" and "treatments" in data:
        raise _fail(
            doc,
            ("treatments",),
            f"treatments: only read with design: list (this is design: {design})",
            "set `design: list`",
        )
    if design != "list" and not factors:
        raise _fail(doc, ("factors",), "factors: the design is empty (no factor has levels)", HINT)
    size, seed = 0, 0
    sample = data.get("sample")
    if design == "random":
        if not isinstance(sample, dict) or "size" not in sample:
            raise _fail(
                doc,
                ("sample",) if sample is not None else ("design",),
                "design: random needs `sample: {size: N, seed: S}`",
                "e.g. `sample: {size: 10, seed: 0}`",
            )
        unknown = [k for k in sample if k not in ("size", "seed")]
        if unknown:
            raise _fail(doc, ("sample", unknown[0]), f"sample.{unknown[0]}: not a sample key", "keys: size, seed")
        size = _int(doc, ("sample", "size"), sample["size"], 1, HARD_MAX_TREATMENTS)
        seed = _int(doc, ("sample", "seed"), sample.get("seed", 0), 0, 2**63 - 1)
    elif sample is not None:
        raise _fail(
            doc,
            ("sample",),
            f"sample: only read with design: random (this is design: {design})",
            "set `design: random`",
        )
    bench = data.get("bench") or {}
    if not isinstance(bench, dict):
        raise _fail(doc, ("bench",), "bench: must be a mapping of bench keys", "e.g. `bench: {concurrency: [1, 8]}`")
    maximum = _int(doc, ("max_treatments",), data.get("max_treatments", DEFAULT_MAX), 1, HARD_MAX_TREATMENTS)
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise _fail(doc, ("name",), "name: must be text", "e.g. `name: dflash-k-sweep`", value=True)
    return Experiment(
        path=path,
        name=name,
        recipe=recipe_path,
        factors=factors,
        design=design,
        exclude=tuple(exclude),
        sample_size=size,
        sample_seed=seed,
        listed=tuple(listed),
        listed_where=tuple({k: doc.value_where("treatments", i, k) for k in item} for i, item in enumerate(listed)),
        bench=bench,
        bench_where={k: doc.value_where("bench", k) for k in bench},
        max_treatments=maximum,
        doc=doc,
    )

"""An experiment's design -> its treatments, in a stable order (pure, no I/O).

- ``full``: the cartesian product of the factors' levels in the order written (the first
  factor varies slowest), less the exclusions;
- ``list``: the treatments as written, less the exclusions;
- ``random``: a seeded subset of the full design (the same seed gives the same treatments),
  in design order.

A design with more treatments than ``max_treatments`` is refused at the factors, before any
recipe is built; enumeration is bounded, whatever the factors multiply to.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from autobench.errors import RecipeError
from autobench.experiment.definition import Experiment, Level
from autobench.recipe.loader import Position

#: Candidates looked at per treatment kept, at most, before a design is refused as mostly excluded.
MAX_SCAN_FACTOR = 20


@dataclass(frozen=True)
class Treatment:
    """One boot of the experiment: ``index`` (1-based, in design order), each factor's level
    (factor key, level, where the level was written), and a short label."""

    index: int
    levels: tuple[tuple[str, Level, Position], ...]

    @property
    def id(self) -> str:
        return f"t{self.index}"

    def assignment(self) -> dict[str, Level]:
        return {key: level for key, level, _ in self.levels}

    def label(self) -> str:
        """``num_speculative_tokens=5 revision=6c7242c`` (a full sha shortened to 7)."""
        names = [key.rpartition(".")[2] for key, _, _ in self.levels]
        parts = []
        for (key, level, _), name in zip(self.levels, names, strict=True):
            shown = name if names.count(name) == 1 else key
            parts.append(f"{shown}={short(level)}")
        return " ".join(parts)  # a treatment sets one key at least (definition checks it)


def short(level: Level) -> str:
    if isinstance(level, str):
        if len(level) == 40 and all(c in "0123456789abcdef" for c in level):
            return level[:7]
        return level
    if level is None:
        return "null"
    if isinstance(level, bool):
        return "true" if level else "false"
    if isinstance(level, int | float):
        return f"{level:g}" if isinstance(level, float) else str(level)
    return json.dumps(level, sort_keys=True, separators=(",", ":"))


def _excluded(assignment: dict[str, Level], exclude: tuple[dict[str, Level], ...]) -> bool:
    return any(all(k in assignment and assignment[k] == v for k, v in rule.items()) for rule in exclude)


def _decode(index: int, radices: list[int]) -> list[int]:
    """Mixed-radix digits of ``index``, the first factor slowest."""
    digits = []
    for radix in reversed(radices):
        index, digit = divmod(index, radix)
        digits.append(digit)
    return digits[::-1]


def _too_many(exp: Experiment, found: str) -> RecipeError:
    return RecipeError(
        f"the design has {found} treatments, more than max_treatments {exp.max_treatments:,}",
        location=str(exp.doc.where("max_treatments") if "max_treatments" in exp.doc.data else exp.doc.where("factors")),
        hint="fewer levels, exclusions, `design: random` with `sample: {size: N}`, or a higher max_treatments",
    )


def _full(exp: Experiment) -> Iterator[dict[str, int]]:
    radices = [len(f.levels) for f in exp.factors]
    total = math.prod(radices)
    for index in range(total):
        yield dict(zip((f.key for f in exp.factors), _decode(index, radices), strict=True))


def _random_indices(exp: Experiment) -> list[int]:
    radices = [len(f.levels) for f in exp.factors]
    total = math.prod(radices)
    size = exp.sample_size
    rng = random.Random(exp.sample_seed)
    kept: set[int] = set()
    tried: set[int] = set()
    budget = size * MAX_SCAN_FACTOR
    while len(kept) < size and len(tried) < min(total, budget):
        index = rng.randrange(total)
        if index in tried:
            continue
        tried.add(index)
        digits = _decode(index, radices)
        assignment = {f.key: f.levels[d] for f, d in zip(exp.factors, digits, strict=True)}
        if not _excluded(assignment, exp.exclude):
            kept.add(index)
    if len(kept) < size:
        raise RecipeError(
            f"sample.size {size:,}: the design has only {len(kept):,} treatments left to sample"
            + (" after its exclusions" if exp.exclude else ""),
            location=str(exp.doc.value_where("sample", "size")),
            hint="a smaller sample, more levels, or fewer exclusions",
        )
    return sorted(kept)


def treatments(exp: Experiment) -> list[Treatment]:
    """Every treatment of ``exp`` in design order (RecipeError, located, if there are too many)."""
    out: list[Treatment] = []
    if exp.design == "list":
        for item, wheres in zip(exp.listed, exp.listed_where, strict=True):
            if _excluded(item, exp.exclude):
                continue
            out.append(Treatment(len(out) + 1, tuple((k, v, wheres[k]) for k, v in item.items())))
        if len(out) > exp.max_treatments:
            raise _too_many(exp, f"{len(out):,}")
        if not out:
            raise RecipeError(
                "the design is empty: its exclusions leave no treatment",
                location=str(exp.doc.where("exclude")),
                hint="exclude fewer combinations",
            )
        return out
    if exp.design == "random":
        picked = _random_indices(exp)
        radices = [len(f.levels) for f in exp.factors]
        digit_rows = [_decode(i, radices) for i in picked]
    else:
        digit_rows = []
        scanned = 0
        limit = (exp.max_treatments + 1) * MAX_SCAN_FACTOR
        for digits_by_key in _full(exp):
            scanned += 1
            digits = list(digits_by_key.values())
            assignment = {f.key: f.levels[d] for f, d in zip(exp.factors, digits, strict=True)}
            if _excluded(assignment, exp.exclude):
                if scanned > limit:
                    total = math.prod(len(f.levels) for f in exp.factors)
                    raise RecipeError(
                        f"the design has {total:,} candidate treatments and its exclusions leave "
                        f"{len(digit_rows):,} of the first {limit:,}: too sparse to plan "
                        f"(at most {MAX_SCAN_FACTOR} x max_treatments are looked at)",
                        location=str(exp.doc.where("exclude")),
                        hint="write the treatments you want as `design: list`, or fewer levels",
                    )
                continue
            digit_rows.append(digits)
            if len(digit_rows) > exp.max_treatments:
                total = math.prod(len(f.levels) for f in exp.factors)
                raise _too_many(exp, f"up to {total:,}" if exp.exclude else f"{total:,}")
    for digits in digit_rows:
        levels = tuple((f.key, f.levels[d], f.level_where[d]) for f, d in zip(exp.factors, digits, strict=True))
        out.append(Treatment(len(out) + 1, levels))
    if not out:
        raise RecipeError(
            "the design is empty: its exclusions leave no treatment",
            location=str(exp.doc.where("exclude")),
            hint="exclude fewer combinations",
        )
    return out

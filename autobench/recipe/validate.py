"""Validate recipe files: load each (schema) and run the rules; never raises for a bad recipe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from autobench.errors import RecipeError
from autobench.recipe.loader import LoadedRecipe, Position, RecipeSchemaError, load_recipe
from autobench.recipe.rules import RULES, Finding, _parse_location, check, load_error_finding

# An extra check over a loaded recipe (e.g. autobench.preflight.findings.check), passed in by the
# caller so that ``recipe`` imports nothing above it.
ExtraCheck = Callable[[LoadedRecipe, bool], list[Finding]]


def validate_file(
    path: Path,
    *,
    strict: bool = False,
    env: Mapping[str, str] | None = None,
    extra: ExtraCheck | None = None,
    profile: Path | None = None,
    runtime: str = "docker",
) -> list[Finding]:
    """Findings for one file (for ``runtime``: ``process`` drops the container rules, as ``run
    --runtime process`` does); a file that cannot be loaded yields AB000 findings.  ``env``: see
    :func:`autobench.recipe.rules.check` (secret values that must not be in the recipe).  ``extra``:
    a further check over the loaded recipe (the preflight).  A recipe with variants or roles is
    checked cell by cell; a finding that several cells share is reported once.  ``profile``: a bench
    profile merged onto every cell's bench, as ``run --profile`` does (findings in it point at it)."""
    first = _validate_cell(path, None, profile)
    if isinstance(first, list):
        return first
    findings = check(first, strict=strict, env=env, runtime=runtime) + (
        extra(first, strict) if extra is not None else []
    )
    for cell in first.cells[1:] if first.recipe.cell in (None, "base") else first.cells:
        if cell == first.recipe.cell:
            continue
        loaded = _validate_cell(path, cell, profile)
        if isinstance(loaded, list):
            findings += [replace(f, message=f"cell {cell}: {f.message}") for f in loaded]
            continue
        for f in check(loaded, strict=strict, env=env, runtime=runtime) + (
            extra(loaded, strict) if extra is not None else []
        ):
            findings.append(replace(f, message=f"cell {cell}: {f.message}"))
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        plain = f.message.split(": ", 1)[1] if f.message.startswith("cell ") else f.message
        if (f.code + str(f.location), plain) in seen:
            continue
        seen.add((f.code + str(f.location), plain))
        out.append(f)
    return out


def _validate_cell(path: Path, cell: str | None, profile: Path | None) -> LoadedRecipe | list[Finding]:
    try:
        return load_recipe(path, cell, profile=profile)
    except RecipeSchemaError as exc:
        return [  # the key in its field (--format json), said once in the line
            Finding(
                "AB000",
                "error",
                message.removeprefix(f"{key}: ") if key else message,
                hint or RULES["AB000"].hint,
                _parse_location(location) if location else None,
                key if message.startswith(f"{key}: ") else "",
            )
            for location, key, message, hint in exc.problems
        ]
    except RecipeError as exc:
        finding = load_error_finding(exc)
        if finding.location is None:
            finding = replace(finding, location=Position(path, 0, 0))
        return [finding]


def validate_paths(
    paths: list[Path],
    *,
    strict: bool = False,
    env: Mapping[str, str] | None = None,
    extra: ExtraCheck | None = None,
    profile: Path | None = None,
    runtime: str = "docker",
) -> list[tuple[Path, list[Finding]]]:
    return [
        (path, validate_file(path, strict=strict, env=env, extra=extra, profile=profile, runtime=runtime))
        for path in paths
    ]

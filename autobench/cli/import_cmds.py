"""CLI: ``import`` (peer recipes -> autobench recipes; see autobench.recipe.importer)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from autobench.errors import RecipeError, UsageError


def _yaml_text(imported: Any) -> str:
    import io

    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    buf = io.StringIO()
    yaml.dump(imported.data, buf)
    head = (
        f"# Imported by `autobench import` from {imported.source.name} ({imported.fmt}); "
        "review, then `autobench lock`.\n"
    )
    return head + buf.getvalue()


def check_imported(imported: Any, folder: Path) -> tuple[Path, list[str]]:
    """Write into ``folder``, then validate and compile every cell; (path, compiled texts)."""
    from autobench.compile import compile_recipe
    from autobench.compile.cluster import compile_cluster
    from autobench.recipe.importer import missing_flags
    from autobench.recipe.loader import load_recipe, recipe_cells
    from autobench.recipe.rules import check

    path = folder / f"{imported.name}.yaml"
    path.write_text(_yaml_text(imported), encoding="utf-8")
    texts: list[str] = []
    for cell in recipe_cells(path):
        loaded = load_recipe(path, cell)
        errors = [f for f in check(loaded) if f.severity == "error"]
        if errors:
            f = errors[0]
            raise RecipeError(
                f"the imported recipe does not validate (cell {cell}): {f.code} {f.key}: {f.message}",
                location=str(imported.source),
                hint=f.hint,
            )
        if loaded.recipe.topology.nodes > 1:
            texts.extend(compile_cluster(loaded).values())
        else:
            texts.append(compile_recipe(loaded))
    lost = missing_flags(imported, "\n".join(texts))
    if lost:
        raise RecipeError(
            f"round trip: source flag(s) {', '.join(lost)} missing from the compiled command",
            location=str(imported.source),
            hint="this is a bug in the importer; report it with the source file",
        )
    return path, texts


@click.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--from",
    "fmt",
    type=click.Choice(["auto", "eugr", "sparkrun", "vllm-recipes", "vllm-config", "inferencex"]),
    default="auto",
    show_default=True,
    help="The peer format (auto: detected from the file's keys).",
)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Folder for the recipes.")
@click.option("--image", default=None, help="Container image when the source names none (vLLM config files).")
def import_(files: tuple[str, ...], fmt: str, output: str, image: str | None) -> None:
    """Convert peer recipes (eugr, sparkrun, vLLM recipes and configs, InferenceX) into autobench recipes.

    Each written recipe validates and compiles, and every flag of the source command appears in
    the compiled command.  What could not be carried is printed per file with its source line.
    On any error nothing is written.
    """
    from autobench.recipe.importer import convert

    results = []
    for name in files:
        results.extend(convert(name, fmt, image=image))
    names = [r.name for r in results]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise UsageError(f"two imported recipes are both named {dup!r}", hint="import them into different folders")
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is not a folder", hint="give a folder for the recipes")
    clash = [n for n in names if (out / f"{n}.yaml").exists()]
    if clash:
        raise UsageError(f"{out / (clash[0] + '.yaml')} exists", hint="import into an empty folder")
    with tempfile.TemporaryDirectory(prefix="autobench-import-") as tmp:
        staged = [check_imported(r, Path(tmp))[0] for r in results]
        out.mkdir(parents=True, exist_ok=True)
        for path in staged:
            (out / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    for r in results:
        click.echo(f"{r.source} -> {out / (r.name + '.yaml')} ({r.fmt}, {len(set(r.flags))} flag(s) carried)")
        for note in r.notes:
            click.echo(f"  {r.source}:{note}")

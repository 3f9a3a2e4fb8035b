"""CLI: ``import`` (peer recipes and deployment files -> autobench recipes; see autobench.recipe.importer)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from autobench.errors import RecipeError, UsageError
from autobench.recipe.importer import FORMATS as SOURCE_FORMATS

FORMATS = ("auto", *SOURCE_FORMATS)  # one list of formats: the importer's


def _yaml_text(imported: Any) -> str:
    import io

    from ruamel.yaml import YAML

    from autobench.escape import one_line

    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    buf = io.StringIO()
    yaml.dump(imported.data, buf)
    head = (
        f"# Imported by `autobench import` from {one_line(imported.source.name)} ({imported.fmt}); "
        "review, then `autobench lock`.\n"
    )
    return head + buf.getvalue()


def _from_source(imported: Any, exc: RecipeError) -> RecipeError:
    """A loader error on the staged recipe, said at the source file (the staged file is gone)."""
    return RecipeError(
        f"the imported recipe does not validate: {exc.message}", location=str(imported.source), hint=exc.hint
    )


def check_imported(imported: Any, folder: Path) -> tuple[Path, list[str]]:
    """Write into ``folder`` (with its mods), then validate and compile every cell; (path, compiled texts)."""
    from autobench.compile import compile_recipe
    from autobench.compile.cluster import compile_cluster
    from autobench.recipe.importer import copy_mod, missing_flags
    from autobench.recipe.loader import load_recipe, recipe_cells
    from autobench.recipe.rules import check

    for written, source in imported.mods.items():
        if not (folder / written).exists():
            copy_mod(source, folder / written)
    path = folder / f"{imported.name}.yaml"
    path.write_text(_yaml_text(imported), encoding="utf-8")
    texts: list[str] = []
    try:
        cells = recipe_cells(path)
    except RecipeError as exc:
        raise _from_source(imported, exc) from exc
    for cell in cells:
        try:
            loaded = load_recipe(path, cell)
        except RecipeError as exc:
            raise _from_source(imported, exc) from exc
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


def _place(staged: Path, target: Path) -> None:
    """A staged mod (file or folder) at ``target``, replacing what is there."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if staged.is_dir():
        shutil.copytree(staged, target)
    else:
        shutil.copyfile(staged, target)


@click.command(name="import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--from",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="The source format (auto: detected from the file's keys).",
)
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Folder for the recipes.")
@click.option("--image", default=None, help="Container image (replaces the source's; needed when it names none).")
@click.option("--model", default=None, help="Model (Hub repo id) when the source names none or an alias.")
@click.option(
    "--nodes", type=click.IntRange(1, 1024), default=None, help="Node count when the source leaves it to the hosts."
)
@click.option(
    "--gpus-per-node", type=click.IntRange(1, 64), default=None, help="GPUs per node when the source leaves it."
)
@click.option(
    "--hardware",
    default=None,
    metavar="ID",
    help="vllm-project/recipes: the site's hardware profile (an id of the checkout's taxonomy.yaml, "
    "e.g. h100): its GPUs and their memory size the parallelism as the site does.",
)
@click.option("--force", is_flag=True, help="Replace recipes (and mods) that exist in OUTPUT.")
def import_(
    files: tuple[str, ...],
    fmt: str,
    output: str,
    image: str | None,
    model: str | None,
    nodes: int | None,
    gpus_per_node: int | None,
    hardware: str | None,
    force: bool,
) -> None:
    """Convert peer recipes and deployment files into autobench recipes.

    Peer recipes: eugr, sparkrun, vLLM recipes and configs, InferenceX; deployment files:
    compose, Kubernetes, Helm values, srt-slurm, llm-d-benchmark scenarios.  The recipes are
    written to OUTPUT.  Each validates and compiles, and every flag of the source command
    appears in the compiled command.  What could not be carried is printed per file with its
    source line.  On any error nothing is written.
    """
    from autobench.escape import human
    from autobench.recipe.importer import convert

    results = []
    for name in files:
        results.extend(
            convert(name, fmt, image=image, model=model, nodes=nodes, gpus_per_node=gpus_per_node, hardware=hardware)
        )
    names = [r.name for r in results]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise UsageError(f"two imported recipes are both named {dup!r}", hint="import them into different folders")
    out = Path(output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is not a folder", hint="give a folder for the recipes")
    clash = [n for n in names if (out / f"{n}.yaml").exists()]
    if clash and not force:
        raise UsageError(f"{out / (clash[0] + '.yaml')} exists", hint="import into an empty folder, or pass --force")
    with tempfile.TemporaryDirectory(prefix="autobench-import-") as tmp:
        staged = [check_imported(r, Path(tmp))[0] for r in results]
        out.mkdir(parents=True, exist_ok=True)
        for r in results:
            for written in r.mods:
                target = out / written
                if target.exists() and not force:
                    raise UsageError(f"{target} exists", hint="import into an empty folder, or pass --force")
                _place(Path(tmp) / written, target)
        for path in staged:
            (out / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    for r in results:
        click.echo(human(f"{r.source} -> {out / (r.name + '.yaml')} ({r.fmt}, {len(set(r.flags))} flag(s) carried)"))
        for note in r.notes:
            click.echo("  " + human(f"{r.source}:{note}"))

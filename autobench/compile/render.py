"""Render a loaded recipe into a bash script (jinja2, StrictUndefined, one quoting path)."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.compile.argv import base_url, bench_api_key_env, bench_lines, container_name, docker_lines
from autobench.compile.quoting import command_text, comment_text, shell_word
from autobench.errors import RecipeError
from autobench.recipe.facts import pins
from autobench.recipe.loader import LoadedRecipe

if TYPE_CHECKING:
    import jinja2
from autobench.templates_dir import templates_dir as _templates_dir

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

TARGETS = ("full", "serve", "bench")
# Rule findings that make a script unsafe or wrong; compile refuses them even with check=False
# (AB052: a container name is a positional word of docker rm/logs/exec; AB056: a stray word in
# container.extra_args would become docker's image).
UNSAFE_CODES = {"AB030", "AB031", "AB032", "AB033", "AB034", "AB052", "AB055", "AB056"}


def templates_dir() -> Path:
    return _templates_dir("script.sh.j2", RecipeError)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["q"] = shell_word
    env.filters["comment"] = comment_text
    env.filters["command"] = command_text
    return env


def _pins(recipe: Recipe) -> list[dict[str, Any]]:
    """The script header's pins (``autobench.recipe.facts.pins``: the list rules and run use)."""
    return [
        {
            "label": p.kind,
            "key": p.rev_key,
            "repo": p.repo,
            "revision": p.revision or "(default)",
            "pinned": p.full_sha,
        }
        for p in pins(recipe)
    ]


def check_frozen(loaded: LoadedRecipe) -> None:
    """Refuse any model / tokenizer / draft revision that is not a full 40-hex sha, and a
    container image that is not pinned by digest."""
    from autobench.recipe.facts import image_digest

    bad = [p for p in _pins(loaded.recipe) if not p["pinned"]]
    if not bad and image_digest(loaded.recipe) is None:
        where = loaded.value_position("container", "image")
        raise RecipeError(
            "container.image is not pinned by digest (name@sha256:...); --frozen refuses it",
            location=str(where) if where else str(loaded.path),
            hint=f"autobench lock {loaded.path}",
        )
    if not bad:
        return
    first = bad[0]
    key = first["key"]
    where = loaded.value_position(*key)
    more = f" ({len(bad) - 1} more unpinned)" if len(bad) > 1 else ""
    raise RecipeError(
        f"{'.'.join(key)}: {first['label']} revision {first['revision']!r} of {first['repo']} is not a "
        f"full 40-hex commit sha; --frozen refuses it{more}",
        location=str(where) if where else str(loaded.path),
        hint=f"autobench lock {loaded.path}",
    )


def refuse_grid(loaded: LoadedRecipe, runtime: str) -> None:
    """A job compiled for ``runtime`` (slurm, k8s) benches one cell: a grid is refused (AB081)."""
    _refuse(loaded, {"AB081"}, runtime=runtime)


def _refuse(loaded: LoadedRecipe, codes: set[str] | None, *, runtime: str = "docker") -> None:
    from autobench.recipe.rules import check

    found = check(loaded, runtime=runtime)
    errors = [f for f in found if f.severity == "error" and (codes is None or f.code in codes)]
    if errors:
        f = errors[0]
        more = (
            f" ({len(errors) - 1} more error{'s' if len(errors) > 2 else ''}; run autobench validate)"
            if len(errors) > 1
            else ""
        )
        raise RecipeError(
            f"{f.code}: {f.key + ': ' if f.key else ''}{f.message}{more}",
            location=str(f.location) if f.location else str(loaded.path),
            hint=f.hint,
        )


def build_lines(loaded: LoadedRecipe) -> tuple[Any, str | None]:
    """The ``docker build`` command of a recipe's ``build:`` (or None) and the Dockerfile text fed on
    stdin (autobench's default; None when the recipe names its own Dockerfile)."""
    from autobench.compile.argv import _w

    b = loaded.recipe.build
    if b is None:
        return None, None
    from autobench.recipe.facts import container_image

    lines = [_w("docker", "build"), _w("-t", container_image(loaded.recipe))]
    args = {"BASE_IMAGE": b.base_image, "VLLM_REPO": b.vllm_repo, "VLLM_REF": b.vllm_ref}
    if b.prs:
        args["VLLM_PRS"] = " ".join(str(n) for n in b.prs)
    args.update({k: str(v) for k, v in b.build_args.items()})
    for key, value in args.items():
        lines.append(_w("--build-arg", f"{key}={value}"))
    if b.dockerfile:
        where = loaded.value_position("build", "dockerfile")
        base = where.file.parent if where else loaded.path.parent
        path = (base / b.dockerfile).resolve()
        lines.append(_w("-f", str(path), str(path.parent)))
        return lines, None
    lines.append(_w("-"))  # the Dockerfile on stdin, no build context (the source comes from git)
    return lines, (templates_dir() / "vllm-build.Dockerfile").read_text(encoding="utf-8")


def _benches(recipe: Recipe) -> list[dict[str, Any]]:
    """One bench per cell of the grid (``autobench.recipe.grid``), in run order, on the one
    server the script started; a one-cell recipe's single bench is written as before."""
    from autobench.recipe.grid import cell_recipe, cells

    all_cells = cells(recipe)
    if len(all_cells) == 1:
        return [{"label": None, "lines": bench_lines(recipe), "result": "$BENCH_RESULT"}]
    return [
        {
            "label": f"{c.index + 1}/{len(all_cells)}: {c.label()}",
            "lines": bench_lines(cell_recipe(recipe, c)),
            "result": f"cell-{c.index + 1}.$BENCH_RESULT",
        }
        for c in all_cells
    ]


def compile_recipe(loaded: LoadedRecipe, target: str = "full", *, frozen: bool = False, check: bool = True) -> str:
    """The bash script for ``target`` (full | serve | bench).  Pure: no I/O besides reading the
    template; deterministic for the same recipe.  ``check`` refuses any rule error; unsafe
    findings (secret values, bad env/secret names, NUL bytes) are refused regardless."""
    if target not in TARGETS:
        raise RecipeError(f"unknown compile target {target!r}", hint="use one of: " + ", ".join(TARGETS))
    _refuse(loaded, None if check else UNSAFE_CODES)
    if loaded.recipe.topology.nodes > 1:
        raise RecipeError(
            f"a {loaded.recipe.topology.nodes}-node recipe compiles into node scripts and a driver, not one script",
            location=str(loaded.position("topology", "nodes") or loaded.path),
            hint=f"autobench compile {loaded.path} -o DIR [--hosts HEAD,WORKER,...]",
        )
    if frozen:
        check_frozen(loaded)
    recipe = loaded.recipe
    from autobench import __version__

    try:
        return (
            environment()
            .get_template("script.sh.j2")
            .render(
                version=__version__,
                name=recipe.name,
                digest=loaded.digest,
                target=target,
                pins=_pins(recipe),
                container=container_name(recipe),
                base_url=base_url(recipe),
                ready_timeout_s=str(math.ceil(recipe.bench.ready_timeout_s)),
                secrets=list(recipe.secrets),
                api_key_env=bench_api_key_env(recipe),
                vllm_client=recipe.bench.client == "vllm",
                docker=docker_lines(recipe, loaded.mods),
                build=build_lines(loaded)[0],
                build_dockerfile=build_lines(loaded)[1],
                build_tag=recipe.container.image,
                benches=_benches(recipe),
                result_file=recipe.name + ".bench.json",
            )
        )
    except ValueError as exc:  # a NUL byte reached the quoting path
        raise RecipeError(
            f"cannot compile: {exc}", location=str(loaded.path), hint="remove control characters from the recipe"
        ) from exc
    except Exception as exc:
        import jinja2

        if isinstance(exc, jinja2.TemplateError):
            raise RecipeError(f"template error: {exc}", hint="this is a bug in templates/") from exc
        raise

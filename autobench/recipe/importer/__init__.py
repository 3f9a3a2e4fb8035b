"""``autobench import``: peer recipes and deployment files converted into autobench recipes.

``convert(path, fmt="auto", *, image=, model=, nodes=, gpus_per_node=, hardware=) -> list[Imported]`` reads
one file and returns the recipe(s) it holds as plain dicts, with what could not be carried (each
with its source line) and the source's serve flags (for the round-trip check: every one must
appear in the compiled command).  One private module per source: ``_peer`` (eugr, sparkrun),
``_recipes`` (vllm-project/recipes, vLLM ``--config`` files), ``_inferencex``, ``_deploy``
(compose, Kubernetes, production-stack Helm values, srt-slurm), ``_llmd`` (llm-d-benchmark
scenarios); ``_command`` reads serve
commands and flags, ``_common`` what they share, ``_source`` the file with positions and bounds.
The modules work on draft recipe dicts (JSON-like, ``dict[str, Any]``) and stay private; this
package's public face is typed.  The launch, the
topology and the key mapping of each source are written from its own launcher's code
(docs/import.md).  Bad input raises RecipeError with the line.
"""

from __future__ import annotations

import re
from pathlib import Path

from autobench.errors import RecipeError
from autobench.recipe.importer._command import missing_flags
from autobench.recipe.importer._common import copy_mod
from autobench.recipe.importer._source import Imported, Options, Src, unfilled

__all__ = ["FORMATS", "Imported", "Options", "convert", "copy_mod", "detect", "missing_flags"]

FORMATS = (
    "eugr",
    "sparkrun",
    "vllm-recipes",
    "vllm-config",
    "inferencex",
    "compose",
    "kubernetes",
    "helm-values",
    "srt-slurm",
    "llm-d",
)
_FLAG_KEY = re.compile(r"^[a-z][a-z0-9_.-]*$")


def detect(docs: list[Src]) -> str:
    """The format of a file, from its keys."""
    d = docs[0].data
    if len(docs) > 1 or ("kind" in d and "apiVersion" in d):
        return "kubernetes"
    version = str(d.get("recipe_version", "")).strip()
    if version == "1" and "command" in d:
        return "eugr"
    if "services" in d and "model" not in d:
        return "compose"
    if "servingEngineSpec" in d:
        return "helm-values"
    if isinstance(d.get("backend"), dict) and ("vllm_config" in d["backend"] or "type" in d["backend"]):
        return "srt-slurm"
    if isinstance(d.get("scenario"), list):
        return "llm-d"
    if version or ("runtime" in d and ("command" in d or "defaults" in d)):
        return "sparkrun"
    if isinstance(d.get("model"), dict) and "model_id" in d["model"]:
        return "vllm-recipes"
    entries = list(d.values())
    if entries and all(isinstance(v, dict) for v in entries) and any("scenarios" in v for v in entries):
        return "inferencex"
    if isinstance(d.get("model"), str) and all(isinstance(k, str) and _FLAG_KEY.match(k) for k in d):
        return "vllm-config"
    raise RecipeError(
        "unknown peer recipe format",
        location=f"{docs[0].path}:1:1",
        hint="give --from " + "|".join(FORMATS),
    )


def convert(
    path: str | Path,
    fmt: str = "auto",
    *,
    image: str | None = None,
    model: str | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    hardware: str | None = None,
) -> list[Imported]:
    """The autobench recipe(s) one file holds (RecipeError with the line on bad input)."""
    path = Path(path)
    options = Options(image=image, model=model, nodes=nodes, gpus_per_node=gpus_per_node, hardware=hardware)
    results = _convert(path, fmt, options)
    for imported in results:
        _no_token(imported)
        _no_placeholder(imported)
    return results


def _no_placeholder(imported: Imported) -> None:
    """No recipe is written with a placeholder its source's launcher would have filled (or left
    as written, to be read literally): every compiled script would carry it as it stands.  The
    formats refuse the ones they know at their own line first; this catches the rest of the class."""

    def strings(node: object, where: str) -> list[tuple[str, str]]:
        if isinstance(node, dict):
            return [s for k, v in node.items() if k != "meta" for s in strings(v, f"{where}.{k}".lstrip("."))]
        if isinstance(node, list):
            return [s for i, v in enumerate(node) for s in strings(v, f"{where}[{i}]")]
        return [(where, node)] if isinstance(node, str) else []

    for where, text in strings(imported.data, ""):
        found = [] if text in imported.literal else unfilled(text)
        if found:
            raise RecipeError(
                f"{imported.name}: {where} holds {found[0]}, a placeholder nothing fills: the compiled script "
                "would carry it as written",
                location=_located(imported.source, found[0]),
                hint="write the value the placeholder stands for",
            )


def _located(path: Path, needle: str) -> str:
    """``path:line:col`` of the first line of the source holding ``needle`` (else line 1)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    for number, line in enumerate(lines, 1):
        if needle in line:
            return f"{path}:{number}:{line.index(needle) + 1}"
    return f"{path}:1:1"


def _no_token(imported: Imported) -> None:
    """A recipe is never written with a token-shaped value in it (secrets travel by name)."""
    import json

    from autobench.redaction import find_token

    if find_token(json.dumps(imported.data, ensure_ascii=False)):
        raise RecipeError(
            f"{imported.name}: a token-shaped value in the file would be written into the recipe",
            location=f"{imported.source}:1:1",
            hint="pass secrets by name (env: NAME, secrets: [NAME]), never by value",
        )


def _convert(path: Path, fmt: str, options: Options) -> list[Imported]:
    from autobench.recipe.importer import _deploy as deploy
    from autobench.recipe.importer import _inferencex as inferencex
    from autobench.recipe.importer import _llmd as llmd
    from autobench.recipe.importer import _peer as peer
    from autobench.recipe.importer import _recipes as recipes

    if fmt != "auto" and fmt not in FORMATS:
        raise RecipeError(f"unknown format {fmt!r}", hint="use --from auto|" + "|".join(FORMATS))
    docs = Src.read(path)
    if fmt == "auto":
        fmt = detect(docs)
    if fmt == "kubernetes":
        return deploy.kubernetes(docs, options)
    src = docs[0]
    if fmt in ("eugr", "sparkrun"):
        return [peer.convert(src, fmt, options)]
    if fmt == "vllm-recipes":
        if not isinstance(src.data.get("model"), dict):
            raise src.fail(("model",), "not a vllm-project/recipes file: model is not a mapping", "check --from")
        return [recipes.vllm_recipes(src, options)]
    if fmt == "vllm-config":
        return [recipes.vllm_config(src, options)]
    if fmt == "inferencex":
        return inferencex.convert(src, options)
    if fmt == "compose":
        return deploy.compose(src, options)
    if fmt == "helm-values":
        return deploy.helm_values(src, options)
    if fmt == "srt-slurm":
        return [deploy.srt_slurm(src, options)]
    return llmd.convert(src, options)

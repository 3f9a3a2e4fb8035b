"""What every format shares: the recipe's base, env and secrets, mods, the topology from the
source's rules, the bench section, and the accounting of every key (carried or noted)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError
from autobench.files import confined
from autobench.recipe.importer._command import Parsed
from autobench.recipe.importer._source import MAX_GPUS_PER_NODE, MAX_NODES, Imported, Options, Src, shown

DEFAULT_IMAGE = "vllm/vllm-openai:latest"
#: The HF cache mounts the launchers add: eugr's launch-cluster.sh mounts
#: ``${HF_HOME:-$HOME/.cache/huggingface}`` at ``/root/.cache/huggingface``; sparkrun mounts the
#: cache at ``/cache/huggingface`` and sets ``HF_HOME`` there (runtimes/base.py get_extra_env).
HF_CACHE_ROOT = "~/.cache/huggingface:/root/.cache/huggingface"
HF_CACHE_SPARKRUN = "~/.cache/huggingface:/cache/huggingface"
RESERVED_VARIANTS = {"base"}


def name_of(text: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")[:80]
    return name or "imported"


def variant_name(text: str) -> str:
    name = name_of(text)
    return name + "-variant" if name in RESERVED_VARIANTS else name


def base(model: str, image: str, src: Src, fmt: str) -> dict[str, Any]:
    return {
        "model": {"repo": model},
        "container": {"image": image, "ipc": "host", "ports": ["8000:8000"]},
        "meta": {"source": f"{fmt}: {src.path.name}"},
    }


def model_ref(value: Any, src: Src, keys: tuple[Any, ...], options: Options) -> str:
    if options.model:
        return options.model
    if not isinstance(value, str) or not value.strip():
        raise src.fail(keys, "no model: a Hub repo id is required", "write model: owner/name, or pass --model")
    return value.strip()


def env_of(src: Src, keys: tuple[Any, ...], env: Any, *, python_str: bool = False) -> dict[str, str]:
    """A peer's env mapping (or ``[NAME=value]`` / ``[{name, value}]`` list) as strings.
    ``python_str``: booleans written as Python prints them (eugr's ``export K="{value}"``)."""
    out: dict[str, str] = {}
    if isinstance(env, dict):
        items = list(env.items())
    elif isinstance(env, list):
        items = []
        for i, item in enumerate(env):
            if isinstance(item, str) and "=" in item:
                k, _, v = item.partition("=")
                items.append((k, v))
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                if "value" in item:
                    items.append((item["name"], item["value"]))
                else:
                    items.append((item["name"], None))  # valueFrom: a reference, by name
            elif isinstance(item, str):
                items.append((item, None))
            else:
                raise src.fail((*keys, i), f"{'.'.join(map(str, keys))}[{i}]: not NAME=value", "write NAME=value")
    elif env is None:
        return out
    else:
        raise src.fail(keys, f"{'.'.join(map(str, keys))}: must be a mapping", "write NAME: value lines")
    for k, v in items:
        if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", k):
            raise src.fail((*keys, k), f"env: {shown(k)} is not a variable name", "use letters, digits and _")
        if isinstance(v, (dict, list)):
            raise src.fail((*keys, k), f"env.{k}: must be a plain value", "write NAME: value")
        out[k] = "" if v is None else (str(v) if python_str or not isinstance(v, bool) else str(v).lower())
    return out


def put_env(recipe: dict[str, Any], env: dict[str, str], src: Src, keys: tuple[Any, ...], out: Imported) -> None:
    """Plain variables to ``env``; secret-named ones (or token-shaped values) to ``secrets``, by name."""
    from autobench.redaction import find_token, is_secret_name

    for key, value in env.items():
        if is_secret_name(key) or find_token(value):
            if key not in recipe.setdefault("secrets", []):
                recipe["secrets"].append(key)
            out.notes.append(f"{src.line(*keys, key)}: {key} moved to secrets (passed by name, never by value)")
        else:
            recipe.setdefault("env", {})[key] = value


def put_launch(recipe: dict[str, Any], parsed: Parsed, src: Src, keys: tuple[Any, ...], out: Imported) -> None:
    """The launch as the source runs it: its command explicit, the image's entrypoint cleared
    (eugr's launch-cluster.sh starts containers with ``--entrypoint=``; sparkrun runs
    ``bash -c <command>``); VAR=value words to env; shell steps before the serve to setup."""
    launch: dict[str, Any] = {"entrypoint": "", "command": parsed.command}
    if parsed.prefix:
        launch["prefix"] = parsed.prefix
    if parsed.model_flag:
        launch["model_flag"] = parsed.model_flag
    recipe.setdefault("launch", {}).update(launch)
    for i, step in enumerate(parsed.setup):
        recipe["launch"].setdefault("setup", []).append({"run": step, "name": f"command step {i + 1}"})
    for step in parsed.after:
        out.notes.append(f"{src.line(*keys)}: not carried: {shown(step)} (runs after the server stops)")
    if parsed.env:
        put_env(recipe, parsed.env, src, keys, out)
    if parsed.model and parsed.model != recipe["model"]["repo"]:
        out.notes.append(
            f"{src.line(*keys)}: the command serves {shown(parsed.model)}, the recipe names "
            f"{shown(recipe['model']['repo'])}; used the command's"
        )
        recipe["model"]["repo"] = parsed.model


def mods(recipe: dict[str, Any], value: Any, src: Src, out: Imported, roots: list[Path]) -> None:
    """eugr-style mods: folders (or scripts) inside the source tree, copied next to the imported
    recipe as ``mods/<name>`` (``Imported.mods``) and run as setup steps.  A path that is absolute,
    starts with ``~`` or leaves the source tree is refused at its line."""
    if value is None:
        return
    items = src.typed(("mods",), value, list)
    steps = []
    for i, mod in enumerate(items):
        keys = ("mods", i)
        if isinstance(mod, dict) and "path" in mod:
            mod = mod["path"]
        if not isinstance(mod, str) or not mod.strip():
            raise src.fail(keys, "mods: each mod is a path (a string)", "write mods: [mods/fix-x]")
        text = mod.strip()
        from autobench.redaction import find_token

        if find_token(text):
            raise src.fail(keys, "a mod name holds a token-shaped value", "name mods by path; pass secrets by name")
        if text.startswith("@") or "://" in text:
            out.notes.append(
                f"{src.line(*keys)}: not carried: mod {shown(text)} is a registry reference "
                "(fetch it, then name its folder)"
            )
            recipe.setdefault("meta", {}).setdefault("mods", []).append(text)
            continue
        if "\x00" in text or text.startswith("~") or Path(text).is_absolute():
            raise src.fail(
                keys,
                f"mod {shown(text)} is outside the recipe's folder (an absolute or home path)",
                "name a mod folder",
            )
        top = roots[-1]
        found = None
        for root in roots:  # nearest first; every candidate must lie inside the source tree
            candidate = confined(root / text, top, what="mod", error=RecipeError, location=src.where(*keys), allow=[])
            if candidate.is_dir() or candidate.is_file():
                found = candidate
                break
        if found is None:
            out.notes.append(f"{src.line(*keys)}: not carried: mod {shown(text)} not found in the source tree")
            recipe.setdefault("meta", {}).setdefault("mods", []).append(text)
            continue
        written = f"mods/{name_of(found.name)}"
        steps.append({"mod": written, "name": found.name})
        out.mods[written] = found
    if steps:
        recipe.setdefault("launch", {}).setdefault("setup", []).extend(steps)


def source_roots(path: Path) -> list[Path]:
    """Where a recipe's mods are looked up, nearest first; the last is the source tree's top: the
    folder holding eugr's ``run-recipe.py`` (mods are relative to it, ``SCRIPT_DIR / mod``), or a
    ``.git``, else the recipe's folder."""
    folder = path.resolve().parent
    chain = [folder, *list(folder.parents)[:4]]
    for i, d in enumerate(chain):
        if (d / "run-recipe.py").is_file() or (d / ".git").exists():
            return chain[: i + 1]
    return [folder]


def topology(
    recipe: dict[str, Any],
    src: Src,
    out: Imported,
    *,
    nodes: int | None,
    gpus_per_node: int | None,
    executor: str | None,
    options: Options,
    rule: str,
    keys: tuple[Any, ...] = (),
) -> None:
    """The topology from the source's rule (``rule`` says which, for the refusal); the user's
    ``--nodes``/``--gpus-per-node`` win.  An unknown count is a refusal naming the option."""
    if options.nodes is not None:
        nodes = options.nodes
    if options.gpus_per_node is not None:
        gpus_per_node = options.gpus_per_node
    if nodes is None:
        raise src.fail(keys, f"the node count is not in the file ({rule})", "pass --nodes N (and --gpus-per-node G)")
    if not 1 <= nodes <= MAX_NODES:
        raise src.fail(keys, f"{nodes} nodes: out of range (1 to {MAX_NODES})", "pass --nodes N")
    t = recipe.setdefault("topology", {})
    written_executor = t.pop("executor", None)
    executor = executor or written_executor or "native"
    if nodes == 1:
        if written_executor is not None:  # one node: autobench runs vLLM's own executor (mp)
            if "--distributed-executor-backend" in out.flags:
                out.flags.remove("--distributed-executor-backend")
            if written_executor == "ray":
                out.notes.append(
                    f"{src.line(*keys)}: not carried: --distributed-executor-backend ray on one node "
                    "(autobench starts Ray for multi-node topologies only; vLLM's mp executor runs this node)"
                )
        if gpus_per_node is not None:
            if not 1 <= gpus_per_node <= MAX_GPUS_PER_NODE:
                raise src.fail(keys, f"{gpus_per_node} GPUs per node: out of range", "pass --gpus-per-node G")
            t["gpus_per_node"] = gpus_per_node
        if not t:
            recipe.pop("topology", None)
        return
    if gpus_per_node is None:
        raise src.fail(
            keys, f"{nodes} nodes, but the GPUs per node are not in the file ({rule})", "pass --gpus-per-node G"
        )
    if not 1 <= gpus_per_node <= MAX_GPUS_PER_NODE:
        raise src.fail(keys, f"{gpus_per_node} GPUs per node: out of range", "pass --gpus-per-node G")
    if "--distributed-executor-backend" in out.flags and executor == "native":
        out.flags.remove("--distributed-executor-backend")
    t.update({"nodes": nodes, "gpus_per_node": gpus_per_node, "executor": executor})
    t["hosts"] = [f"node{k}" for k in range(nodes)]


def world(recipe: dict[str, Any]) -> int:
    engine = recipe.get("engine", {})
    size = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size"):
        v = engine.get(key)
        size *= v if isinstance(v, int) else 1
    return size


def bench(recipe: dict[str, Any]) -> None:
    b = recipe.setdefault("bench", {})
    b.setdefault("dataset", {"kind": "random", "input_len": 1024, "output_len": 256})
    engine = recipe.get("engine", {})
    if engine.get("runner") == "pooling" or "embed" in " ".join(engine.get("extra_args", [])):
        b.update({"client": "vllm", "endpoint": "embeddings"})
        b["dataset"] = {"kind": "random", "input_len": 256, "output_len": 1}
        b["max_tokens"] = 1
    ml = engine.get("max_model_len")
    if isinstance(ml, int) and ml < 256 + 1:
        b["max_tokens"] = max(1, ml // 2)
    if isinstance(engine.get("max_num_seqs"), int) and "concurrency" not in b:
        b["concurrency"] = min(8, engine["max_num_seqs"])
    port = engine.get("port")
    if isinstance(port, int) and port != 8000:
        recipe["container"]["ports"] = [f"{port}:{port}"]


def account(src: Src, out: Imported, handled: dict[str, str], *, within: tuple[Any, ...] = ()) -> None:
    """Every key of the document (or of the mapping at ``within``) is carried or noted: ``handled``
    names the keys this format reads (value: "" carried, else the reason it is not carried); any
    other key is noted as unknown to the format, with its line."""
    node: Any = src.data
    for k in within:
        node = node.get(k) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return
    for key in node:
        reason = handled.get(key)
        if reason == "":
            continue
        where = src.line(*within, key)
        if reason is None:
            out.notes.append(f"{where}: not carried: {shown(key, 40)} (not a key of the {out.fmt} format)")
        else:
            out.notes.append(f"{where}: not carried: {key} ({reason})")


#: A mod is a few scripts and patches; a bigger tree is not a mod.
MAX_MOD_BYTES = 16 * 1024 * 1024
MAX_MOD_FILES = 2000


def copy_mod(source: Path, target: Path) -> None:
    """Copy a mod (a file, or a folder of regular files and folders) to ``target``: symbolic
    links, special files and trees over MAX_MOD_BYTES / MAX_MOD_FILES are refused."""
    from autobench.errors import RecipeError
    from autobench.files import read_regular

    total = files = 0
    pairs: list[tuple[Path, Path]] = []
    stack = [(source, target)]
    while stack:
        src, dst = stack.pop()
        if src.is_symlink():
            raise RecipeError(
                f"mod {source.name}: {src.name} is a symbolic link", location=str(src), hint="copy the file in"
            )
        if src.is_dir():
            pairs.append((src, dst))
            stack.extend((child, dst / child.name) for child in sorted(src.iterdir()))
            continue
        files += 1
        size = src.stat().st_size
        total += size
        if files > MAX_MOD_FILES or total > MAX_MOD_BYTES:
            raise RecipeError(
                f"mod {source.name} is over {MAX_MOD_FILES} files or {MAX_MOD_BYTES // 2**20} MiB",
                location=str(source),
                hint="a mod is a few scripts and patches",
            )
        pairs.append((src, dst))
    for src, dst in pairs:
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(read_regular(src, what="mod file", limit=MAX_MOD_BYTES, error=RecipeError))

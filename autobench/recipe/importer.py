"""``autobench import``: peer recipes (eugr v1, sparkrun v2, vllm-project/recipes, vLLM --config
files, InferenceX configs) converted into autobench recipes.

``convert(path, fmt="auto", *, image=None) -> list[Imported]`` reads one peer file and returns the
recipe(s) it holds as plain dicts, with what could not be carried (each with its source line) and
the source's serve flags (for the round-trip check: every one must appear in the compiled
command).  Placeholders are filled from the source's defaults; JSON carried in strings is parsed
into typed fields; the command is parsed with shlex and every flag is mapped to a typed field or
kept in ``engine.extra_args`` -- never dropped.  Bad input raises RecipeError with the line.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError
from autobench.recipe.loader import KeyPath, _Converter, _parse, _read_text
from autobench.recipe.rules import flag_name, norm_flag

FORMATS = ("eugr", "sparkrun", "vllm-recipes", "vllm-config", "inferencex")
DEFAULT_IMAGE = "vllm/vllm-openai:latest"
#: eugr's build script starts from this image (its Dockerfile's FROM); recipes do not say it.
EUGR_BASE_IMAGE = "nvcr.io/nvidia/pytorch:26.08-py3"

# flag -> (section, key, kind); kind: int | float | str | bool | len (int or "auto")
TYPED: dict[str, tuple[str, str, str]] = {
    "--tensor-parallel-size": ("engine", "tensor_parallel_size", "int"),
    "-tp": ("engine", "tensor_parallel_size", "int"),
    "--pipeline-parallel-size": ("engine", "pipeline_parallel_size", "int"),
    "-pp": ("engine", "pipeline_parallel_size", "int"),
    "--data-parallel-size": ("engine", "data_parallel_size", "int"),
    "-dp": ("engine", "data_parallel_size", "int"),
    "--enable-expert-parallel": ("engine", "enable_expert_parallel", "bool"),
    "--max-model-len": ("engine", "max_model_len", "len"),
    "--gpu-memory-utilization": ("engine", "gpu_memory_utilization", "float"),
    "--max-num-seqs": ("engine", "max_num_seqs", "int"),
    "--max-num-batched-tokens": ("engine", "max_num_batched_tokens", "int"),
    "--dtype": ("engine", "dtype", "str"),
    "--kv-cache-dtype": ("engine", "kv_cache_dtype", "str"),
    "--load-format": ("engine", "load_format", "str"),
    "--attention-backend": ("engine", "attention_backend", "str"),
    "--quantization": ("engine", "quantization", "str"),
    "-q": ("engine", "quantization", "str"),
    "--runner": ("engine", "runner", "str"),
    "--host": ("engine", "host", "str"),
    "--port": ("engine", "port", "int"),
    "--served-model-name": ("model", "served_name", "str"),
    "--revision": ("model", "revision", "str"),
    "--tokenizer": ("model", "tokenizer", "str"),
    "--trust-remote-code": ("model", "trust_remote_code", "bool"),
    "--enable-prefix-caching": ("engine", "enable_prefix_caching", "bool"),
    "--no-enable-prefix-caching": ("engine", "enable_prefix_caching", "false"),
    "--enable-chunked-prefill": ("engine", "enable_chunked_prefill", "bool"),
    "--no-enable-chunked-prefill": ("engine", "enable_chunked_prefill", "false"),
    "--enforce-eager": ("engine", "enforce_eager", "bool"),
    "--no-enforce-eager": ("engine", "enforce_eager", "false"),
    "--no-trust-remote-code": ("model", "trust_remote_code", "false"),
}
#: Short flags and the long names compile writes.
ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-q": "--quantization",
}
#: Flags compile writes per node from the topology (kept out of extra_args).
TOPOLOGY_FLAGS = {"--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"}
BOOL_FLAGS = {f for f, (_s, _k, kind) in TYPED.items() if kind in ("bool", "false")} | {
    "--headless",
    "--enable-auto-tool-choice",
    "--async-scheduling",
    "--disable-log-requests",
    "--no-enable-log-requests",
    "--disable-custom-all-reduce",
    "--enable-sleep-mode",
}


@dataclass
class Imported:
    """One recipe converted from a peer file."""

    name: str
    data: dict[str, Any]
    source: Path
    fmt: str
    flags: list[str] = field(default_factory=list)  # the source's serve flags (normalised)
    notes: list[str] = field(default_factory=list)  # "LINE: not carried: ..."
    mods: dict[str, Path] = field(default_factory=dict)  # mod as written in data -> absolute source path


class _Src:
    """A parsed peer YAML file with positions."""

    def __init__(self, path: Path):
        self.path = path
        text = _read_text(path)
        raw = _parse(path, text)
        if not isinstance(raw, dict):
            raise RecipeError(
                "not a peer recipe: the file does not hold a YAML mapping",
                location=f"{path}:1:1",
                hint="give a recipe file of one of: " + ", ".join(FORMATS),
            )
        conv = _Converter(path)
        self.data: dict[str, Any] = conv.convert(raw, ())
        self.positions = conv.positions
        self.value_positions = conv.value_positions

    def where(self, *keys: Any) -> str:
        path = tuple(keys)
        while path:
            p = self.value_positions.get(path) or self.positions.get(path)
            if p is not None:
                return str(p)
            path = path[:-1]
        return f"{self.path}:1:1"

    def line(self, *keys: Any) -> str:
        return self.where(*keys).rsplit(":", 2)[-2] if ":" in self.where(*keys) else "1"

    def fail(self, keys: KeyPath, message: str, hint: str) -> RecipeError:
        return RecipeError(message, location=self.where(*keys), hint=hint)


def detect(src: _Src) -> str:
    d = src.data
    version = str(d.get("recipe_version", "")).strip()
    if version == "1" and "command" in d:
        return "eugr"
    if version == "2" or ("runtime" in d and "command" in d):
        return "sparkrun"
    if isinstance(d.get("model"), dict) and "model_id" in d["model"]:
        return "vllm-recipes"
    entries = [v for v in d.values() if isinstance(v, dict)]
    if entries and all("image" in v and "model" in v and "scenarios" in v for v in entries):
        return "inferencex"
    if isinstance(d.get("model"), str) and all(
        not isinstance(v, dict) or k.replace("_", "-") in _JSON_FLAGS for k, v in d.items()
    ):
        return "vllm-config"
    raise RecipeError(
        "unknown peer recipe format",
        location=f"{src.path}:1:1",
        hint="give --from " + "|".join(FORMATS),
    )


_JSON_FLAGS = {
    "speculative-config",
    "kv-transfer-config",
    "compilation-config",
    "hf-overrides",
    "override-generation-config",
}


# --------------------------------------------------------------------------- commands


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill(src: _Src, keys: KeyPath, text: str, values: Mapping[str, object], *, doubled: bool) -> str:
    """``{name}`` placeholders from ``values``; eugr (``doubled``) writes literal braces as ``{{ }}``."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0] if doubled else m.group(0)
        name = m.group(1)
        if name not in values or values[name] is None:
            raise src.fail(
                keys,
                f"placeholder {{{name}}} has no default",
                f"add `{name}:` under defaults (known: {', '.join(sorted(values)) or 'none'})",
            )
        value = values[name]
        return (
            json.dumps(value)
            if isinstance(value, (dict, list))
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )

    return _PLACEHOLDER.sub(sub, text)


@dataclass
class Parsed:
    prefix: list[str]
    command: list[str]
    model: str | None
    model_flag: str | None
    args: list[str]  # every word after the model


def parse_command(src: _Src, keys: KeyPath, text: str) -> Parsed:
    """``[env/wrapper words] vllm serve MODEL flags`` or ``python -m vllm.entrypoints... --model M``
    or ``WRAPPER.sh MODEL flags``."""
    try:
        words = shlex.split(text.replace("\\\n", " "))
    except ValueError as exc:
        raise src.fail(keys, f"command does not parse as shell words: {exc}", "check the quotes") from exc
    if not words:
        raise src.fail(keys, "command is empty", "write the vllm serve command")
    for i in range(len(words) - 1):
        if Path(words[i]).name == "vllm" and words[i + 1] == "serve":
            rest = words[i + 2 :]
            model = rest[0] if rest and flag_name(rest[0]) is None else None
            return Parsed(words[:i], words[i : i + 2], model, None, rest[1:] if model else rest)
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words) and words[i + 1].startswith("vllm.entrypoints"):
            rest = words[i + 2 :]
            return Parsed([], words[: i + 2], None, "--model", rest)
    # A wrapper script: its own words up to the first flag; the first of those that looks like a
    # model id is the model.
    head = 0
    while head < len(words) and flag_name(words[head]) is None:
        head += 1
    before = words[:head]
    for j in range(len(before) - 1, 0, -1):
        if re.fullmatch(r"[A-Za-z0-9][\w.\-]*/[A-Za-z0-9][\w.\-]*", before[j]) and not before[j].startswith("/"):
            return Parsed([], before[:j], before[j], None, before[j + 1 :] + words[head:])
    return Parsed([], before, None, None, words[head:])


def split_flags(args: list[str]) -> list[tuple[str, str | None, str]]:
    """[(normalised flag, value or None, flag as written)] in order; a bare word joins its flag."""
    out: list[tuple[str, str | None, str]] = []
    i = 0
    while i < len(args):
        word = args[i]
        name = flag_name(word)
        if name is None:
            if out and out[-1][1] is None and out[-1][0] not in BOOL_FLAGS:
                flag, _, written = out.pop()
                out.append((flag, word, written))
            else:
                out.append(("", word, word))  # a stray positional: kept as written
            i += 1
            continue
        if "=" in word:
            out.append((norm_flag(name), word.split("=", 1)[1], name))
        else:
            out.append((norm_flag(name), None, name))
        i += 1
    return out


def _typed(kind: str, value: str | None, flag: str, src: _Src, keys: KeyPath) -> Any:
    if kind == "bool":
        return True if value is None else value.lower() in ("1", "true", "yes", "on")
    if kind == "false":
        return False
    if value is None:
        raise src.fail(keys, f"{flag} needs a value", f"write `{flag} VALUE`")
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "len":
            return "auto" if value == "auto" else int(value)
    except ValueError as exc:
        raise src.fail(keys, f"{flag} {value!r}: not a number", "fix the value (or its default)") from exc
    return value


def _json_value(value: Any, flag: str, src: _Src, keys: KeyPath) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except (TypeError, json.JSONDecodeError) as exc:
        raise src.fail(
            keys,
            f"{flag}: the JSON in this string does not parse ({exc.msg if hasattr(exc, 'msg') else exc})",
            "write valid JSON (double quotes; eugr v1 doubles literal braces {{ }})",
        ) from exc
    if not isinstance(parsed, dict):
        raise src.fail(keys, f"{flag}: expected a JSON object", 'write {"method": ...}')
    return parsed


def apply_flags(
    recipe: dict[str, Any], flags: list[tuple[str, str | None, str]], src: _Src, keys: KeyPath, out: Imported
) -> None:
    """Map each flag to a typed field or keep it (as written) in engine.extra_args."""
    engine = recipe.setdefault("engine", {})
    extra = engine.setdefault("extra_args", [])
    for flag, value, written in flags:
        if flag:
            out.flags.append(ALIASES.get(flag, flag))
        if flag in TYPED:
            section, key, kind = TYPED[flag]
            recipe.setdefault(section, {})[key] = _typed(kind, value, written, src, keys)
        elif flag == "--speculative-config":
            spec = _json_value(value, written, src, keys)
            typed = {k: spec[k] for k in ("method", "model", "revision", "num_speculative_tokens") if k in spec}
            if "method" not in typed and "model" in spec:
                typed["method"] = "draft_model"
            options = {k: v for k, v in spec.items() if k not in typed}
            recipe["speculative"] = {**typed, **({"options": options} if options else {})}
        elif flag == "--distributed-executor-backend":
            if value == "ray":
                recipe.setdefault("topology", {})["executor"] = "ray"
            else:
                extra += [written, value] if value is not None else [written]
        elif flag in TOPOLOGY_FLAGS:
            if flag == "--nnodes" and value is not None:
                recipe.setdefault("topology", {})["nodes"] = int(value)
            out.notes.append(f"{src.line(*keys)}: {written} is written per node by compile (topology)")
        elif flag == "" and value is not None:
            extra.append(value)
        elif value is None:
            extra.append(written)
        elif flag in {"--" + k for k in _JSON_FLAGS} and not isinstance(value, str):
            extra += [written, json.dumps(value, separators=(",", ":"))]
        else:
            extra += [written, value]
    if not extra:
        del engine["extra_args"]


# --------------------------------------------------------------------------- formats


def _name(text: str) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return name or "imported"


def _base(model: str, image: str, src: _Src, fmt: str) -> dict[str, Any]:
    return {
        "model": {"repo": model},
        "container": {"image": image, "ipc": "host", "ports": ["8000:8000"]},
        "meta": {"source": f"{fmt}: {src.path.name}"},
    }


def _model_ref(value: Any, src: _Src, keys: KeyPath) -> str:
    if not isinstance(value, str) or not value.strip():
        raise src.fail(keys, "model: a Hub repo id is required", "write model: owner/name")
    return value.strip()


def _finish_launch(
    recipe: dict[str, Any], parsed: Parsed, src: _Src, keys: KeyPath, out: Imported, *, exec_style: bool
) -> None:
    launch: dict[str, Any] = {}
    if parsed.prefix:
        launch["prefix"] = parsed.prefix
    if parsed.command != ["vllm", "serve"]:
        launch["command"] = parsed.command
    if parsed.model_flag:
        launch["model_flag"] = parsed.model_flag
    if exec_style and (launch or recipe.get("launch")):
        launch.setdefault("entrypoint", "")  # these images run the command, they do not wrap it
    if launch:
        recipe.setdefault("launch", {}).update(launch)
    if parsed.model and parsed.model != recipe["model"]["repo"]:
        out.notes.append(
            f"{src.line(*keys)}: the command serves {parsed.model}, the recipe names "
            f"{recipe['model']['repo']}; used the command's"
        )
        recipe["model"]["repo"] = parsed.model


def _mods(recipe: dict[str, Any], mods: Any, src: _Src, out: Imported) -> None:
    if not mods:
        return
    steps = []
    for i, mod in enumerate(mods if isinstance(mods, list) else [mods]):
        keys = ("mods", i)
        text = str(mod)
        if text.startswith("@") or "://" in text:
            out.notes.append(
                f"{src.line(*keys)}: not carried: mod {text} is a registry reference (fetch it, then name its folder)"
            )
            recipe.setdefault("meta", {}).setdefault("mods", []).append(text)
            continue
        found = next(
            (p for p in (src.path.parent / text, src.path.parent.parent / text) if p.is_dir() or p.is_file()), None
        )
        if found is None:
            out.notes.append(f"{src.line(*keys)}: not carried: mod {text} not found next to the recipe")
            recipe.setdefault("meta", {}).setdefault("mods", []).append(text)
            continue
        steps.append({"mod": str(found.resolve()), "name": Path(text).name})
        out.mods[text] = found.resolve()
    if steps:
        recipe.setdefault("launch", {}).setdefault("setup", []).extend(steps)


def _env(recipe: dict[str, Any], env: Any) -> None:
    if isinstance(env, dict) and env:
        recipe["env"] = {
            str(k): ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v)) for k, v in env.items()
        }


def _secrets_from_env(recipe: dict[str, Any], src: _Src, out: Imported) -> None:
    from autobench.redaction import is_secret_name

    env = recipe.get("env") or {}
    for key in [k for k in env if is_secret_name(k)]:
        del env[key]
        recipe.setdefault("secrets", []).append(key)
        out.notes.append(f"{src.line('env', key)}: {key} moved to secrets (passed by name, never by value)")


def _topology(recipe: dict[str, Any], nodes: int | None, gpus_per_node: int | None) -> None:
    nodes = nodes or (recipe.get("topology") or {}).get("nodes")
    if not nodes or nodes < 2:
        executor = (recipe.get("topology") or {}).pop("executor", None)
        if executor == "ray":  # one node: the flag stays a plain vllm serve flag
            recipe.setdefault("engine", {}).setdefault("extra_args", []).extend(
                ["--distributed-executor-backend", "ray"]
            )
        if not recipe.get("topology"):
            recipe.pop("topology", None)
        return
    if nodes > 1:
        t = recipe.setdefault("topology", {})
        t["nodes"] = nodes
        engine = recipe.get("engine", {})
        world = (
            (engine.get("tensor_parallel_size") or 1)
            * (engine.get("pipeline_parallel_size") or 1)
            * (engine.get("data_parallel_size") or 1)
        )
        t.setdefault("gpus_per_node", gpus_per_node or max(1, world // nodes))
        t["hosts"] = [f"node{k}" for k in range(nodes)]


def _bench(recipe: dict[str, Any]) -> None:
    bench = recipe.setdefault("bench", {})
    bench.setdefault("dataset", {"kind": "random", "input_len": 1024, "output_len": 256})
    engine = recipe.get("engine", {})
    if engine.get("runner") == "pooling" or "embed" in " ".join(engine.get("extra_args", [])):
        bench.update({"client": "vllm", "endpoint": "embeddings"})
        bench["dataset"] = {"kind": "random", "input_len": 256, "output_len": 1}
        bench["max_tokens"] = 1
    ml = engine.get("max_model_len")
    if isinstance(ml, int) and ml < 256 + 1:
        bench["max_tokens"] = max(1, ml // 2)
    if isinstance(engine.get("max_num_seqs"), int):
        bench["concurrency"] = min(8, engine["max_num_seqs"])
    port = engine.get("port")
    if isinstance(port, int) and port != 8000:
        recipe["container"]["ports"] = [f"{port}:{port}"]


def _from_command(src: _Src, fmt: str, image: str | None) -> Imported:
    d = src.data
    exec_style = True
    name = _name(str(d.get("name") or src.path.stem))
    out = Imported(name, {}, src.path, fmt)
    defaults = d.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise src.fail(("defaults",), "defaults: must be a mapping", "write `defaults:` with `key: value` lines")
    model = d.get("model")
    values = {**defaults, **({"model": model} if model else {})}
    container = d.get("container") or image or DEFAULT_IMAGE
    if not isinstance(container, str):
        raise src.fail(("container",), "container: must be an image name", "write container: IMAGE")
    command = d.get("command")
    if not isinstance(command, str):
        raise src.fail(("command",), "command: the serve command is required", "write command: vllm serve {model} ...")
    text = fill(src, ("command",), command, values, doubled=(fmt == "eugr"))
    parsed = parse_command(src, ("command",), text)
    repo = model or parsed.model
    if not repo:
        raise src.fail(("command",), "no model: neither `model:` nor a model in the command", "add model: owner/name")
    recipe = _base(_model_ref(repo, src, ("model",)), container, src, fmt)
    _finish_launch(recipe, parsed, src, ("command",), out, exec_style=exec_style)
    apply_flags(recipe, split_flags(parsed.args), src, ("command",), out)
    _env(recipe, d.get("env"))
    _secrets_from_env(recipe, src, out)
    _mods(recipe, d.get("mods"), src, out)
    for i, step in enumerate(d.get("pre_exec") or []):
        if isinstance(step, str):
            recipe.setdefault("launch", {}).setdefault("setup", []).append({"run": step, "name": f"pre_exec {i + 1}"})
            recipe["launch"].setdefault("entrypoint", "") if recipe["launch"].get("entrypoint") else None
        else:
            out.notes.append(f"{src.line('pre_exec', i)}: not carried: pre_exec step {json.dumps(step)} (file copy)")
    if recipe.get("launch", {}).get("setup"):
        recipe["launch"].pop("entrypoint", None)  # setup steps run through bash
    description = d.get("description") or (d.get("metadata") or {}).get("description")
    if description:
        recipe["meta"]["description"] = " ".join(str(description).split())
    build_args = d.get("build_args") or []
    if build_args:
        _eugr_build(recipe, build_args, src, out)
    nodes = d.get("min_nodes") or (2 if d.get("cluster_only") else None)
    _topology(recipe, int(nodes) if nodes else None, d.get("gpus_per_node"))
    for key in ("benchmark", "metadata", "post_exec", "post_commands"):
        if key in d and key != "metadata":
            out.notes.append(f"{src.line(key)}: not carried: {key} (autobench's bench: section runs the bench)")
    for i, vol in enumerate(((d.get("executor_config") or {}).get("volumes")) or []):
        out.notes.append(f"{src.line('executor_config', 'volumes', i)}: not carried: hard-coded host path {vol}")
    recipe["meta"]["tags"] = [fmt]
    _bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _eugr_build(recipe: dict[str, Any], args: Any, src: _Src, out: Imported) -> None:
    words = [str(a) for a in (args if isinstance(args, list) else shlex.split(str(args)))]
    build: dict[str, Any] = {"base_image": EUGR_BASE_IMAGE, "vllm_ref": "main"}
    i = 0
    while i < len(words):
        w, nxt = words[i], words[i + 1] if i + 1 < len(words) else None
        if w == "--vllm-ref" and nxt:
            build["vllm_ref"] = nxt
            i += 2
        elif w == "--vllm-repo" and nxt:
            build["vllm_repo"] = nxt
            i += 2
        elif w == "--apply-vllm-pr" and nxt:
            build.setdefault("prs", []).append(int(re.sub(r"\D", "", nxt.rsplit("/", 1)[-1]) or 0))
            i += 2
        else:
            out.notes.append(f"{src.line('build_args')}: not carried: build arg {w} (eugr's build script only)")
            i += 1
    out.notes.append(f"{src.line('build_args')}: build base image not stated by the source; assumed {EUGR_BASE_IMAGE}")
    recipe["build"] = build


def _from_vllm_recipes(src: _Src, image: str | None) -> Imported:
    d = src.data
    m = d["model"]
    repo = _model_ref(m.get("model_id"), src, ("model", "model_id"))
    name = _name(repo.split("/")[-1])
    out = Imported(name, {}, src.path, "vllm-recipes")
    version = m.get("min_vllm_version")
    recipe = _base(repo, image or (f"vllm/vllm-openai:v{version}" if version else DEFAULT_IMAGE), src, "vllm-recipes")
    base_args = [str(a) for a in m.get("base_args") or []]
    apply_flags(recipe, split_flags(base_args), src, ("model", "base_args"), out)
    _env(recipe, m.get("base_env"))
    features = d.get("features") or {}
    opt_in = set(d.get("opt_in_features") or [])
    for fname, feature in features.items():
        if fname in opt_in or not isinstance(feature, dict):
            continue
        apply_flags(recipe, split_flags([str(a) for a in feature.get("args") or []]), src, ("features", fname), out)
    variants: dict[str, Any] = {}
    for vname, variant in (d.get("variants") or {}).items():
        if not isinstance(variant, dict):
            raise src.fail(("variants", vname), f"variants.{vname}: must be a mapping", "write the variant's keys")
        over: dict[str, Any] = {}
        if variant.get("model_id"):
            over["model"] = {"repo": variant["model_id"]}
        if variant.get("min_vllm_version"):
            over["container"] = {"image": f"vllm/vllm-openai:v{variant['min_vllm_version']}"}
        scratch: dict[str, Any] = {}
        apply_flags(
            scratch, split_flags([str(a) for a in variant.get("extra_args") or []]), src, ("variants", vname), out
        )
        if variant.get("tp"):
            scratch.setdefault("engine", {})["tensor_parallel_size"] = int(variant["tp"])
        _merge_engine(over, scratch)
        if variant.get("extra_env"):
            over["env"] = {str(k): str(v) for k, v in variant["extra_env"].items()}
        if vname == "default":
            _deep_update(recipe, over)
        elif over:
            variants[_name(vname)] = over
    for fname in sorted(opt_in):
        feature = features.get(fname) or {}
        scratch = {}
        apply_flags(scratch, split_flags([str(a) for a in feature.get("args") or []]), src, ("features", fname), out)
        over = {}
        if "speculative" in scratch:
            over["speculative"] = scratch.pop("speculative")
        _merge_engine(over, scratch)
        if over:
            variants[_name(fname)] = over
    if variants:
        recipe["variants"] = variants
    meta = d.get("meta") or {}
    if meta.get("description"):
        recipe["meta"]["description"] = " ".join(str(meta["description"]).split())
    for key in ("guide", "strategy_overrides", "hardware_overrides"):
        if key in d:
            out.notes.append(f"{src.line(key)}: not carried: {key} (web-page text / per-hardware overrides)")
    recipe["meta"]["tags"] = ["vllm-recipes"]
    _topology(recipe, None, None)
    _bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _merge_engine(over: dict[str, Any], scratch: dict[str, Any]) -> None:
    for section, values in scratch.items():
        if section == "engine" and "extra_args" in values:
            values = dict(values)
            values["extra_args+"] = values.pop("extra_args")
        if values:
            over.setdefault(section, {}).update(values)


def _deep_update(base: dict[str, Any], over: dict[str, Any]) -> None:
    for k, v in over.items():
        if k.endswith("+"):
            base.setdefault(k[:-1], []).extend(v)
        elif isinstance(v, dict) and isinstance(base.get(k), dict):
            _deep_update(base[k], v)
        else:
            base[k] = v


def _from_vllm_config(src: _Src, image: str | None) -> Imported:
    d = src.data
    repo = _model_ref(d.get("model"), src, ("model",))
    name = _name(src.path.stem)
    out = Imported(name, {}, src.path, "vllm-config")
    recipe = _base(repo, image or DEFAULT_IMAGE, src, "vllm-config")
    if not image:
        out.notes.append(f"{src.line('model')}: a vLLM config names no image; used {DEFAULT_IMAGE} (pin it)")
    for key, value in d.items():
        if key == "model":
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            words = [flag]
        elif value is False:
            words = ["--no-" + key.replace("_", "-")] if not key.startswith("no-") else []
        elif isinstance(value, (dict, list)):
            words = [flag, json.dumps(value, separators=(",", ":"))]
        else:
            words = [flag, str(value)]
        apply_flags(recipe, split_flags(words), src, (key,), out)
    recipe["meta"]["tags"] = ["vllm-config"]
    _topology(recipe, None, None)
    _bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _from_inferencex(src: _Src, image: str | None) -> list[Imported]:
    results = []
    for entry_name, entry in src.data.items():
        if entry.get("framework") not in ("vllm", None):
            raise src.fail(
                (entry_name, "framework"),
                f"{entry_name}: framework {entry.get('framework')} is not vLLM",
                "autobench runs vLLM; import the vLLM entries only",
            )
        repo = _model_ref(entry.get("model"), src, (entry_name, "model"))
        name = _name(entry_name)
        out = Imported(name, {}, src.path, "inferencex")
        recipe = _base(repo, image or str(entry.get("image") or DEFAULT_IMAGE), src, "inferencex")
        variants: dict[str, Any] = {}
        roles: dict[str, Any] = {}
        first = True
        for s_name, scenarios in (entry.get("scenarios") or {}).items():
            for i, scenario in enumerate(scenarios or []):
                for j, row in enumerate(scenario.get("search-space") or []):
                    words: list[str] = []
                    for key, flag in (("tp", "-tp"), ("pp", "-pp")):
                        if key in row:
                            words += [flag, str(row[key])]
                    if row.get("ep", 1) > 1:
                        words.append("--enable-expert-parallel")
                    if row.get("dp-attn"):
                        words += ["--data-parallel-size", str(row.get("ep", 1))]
                    if row.get("spec-decoding") == "mtp":
                        words += ["--speculative-config", '{"method":"mtp","num_speculative_tokens":3}']
                    scratch: dict[str, Any] = {}
                    apply_flags(
                        scratch, split_flags(words), src, (entry_name, "scenarios", s_name, i, "search-space", j), out
                    )
                    over = {k: v for k, v in scratch.items() if k != "engine"}
                    over["engine"] = {k: v for k, v in scratch.get("engine", {}).items() if k != "extra_args"}
                    over["bench"] = {
                        "concurrency": int(row.get("conc-end", row.get("conc-start", 8))),
                        "dataset": {
                            "kind": "random",
                            "input_len": int(scenario.get("isl", 1024)),
                            "output_len": int(scenario.get("osl", 1024)),
                        },
                        "max_tokens": int(scenario.get("osl", 1024)),
                    }
                    if row.get("prefill") or row.get("decode"):
                        for role in ("prefill", "decode"):
                            part = row.get(role) or {}
                            roles[role] = {
                                "engine": {
                                    "tensor_parallel_size": int(part.get("tp", 1)),
                                    "extra_args+": [
                                        "--kv-transfer-config",
                                        json.dumps(
                                            {
                                                "kv_connector": "NixlConnector",
                                                "kv_role": "kv_producer" if role == "prefill" else "kv_consumer",
                                            },
                                            separators=(",", ":"),
                                        ),
                                    ],
                                }
                            }
                            out.flags += ["--tensor-parallel-size", "--kv-transfer-config"]
                    label = _name(
                        f"{s_name}-{scenario.get('isl')}-{scenario.get('osl')}"
                        f"-tp{row.get('tp', 1)}-ep{row.get('ep', 1)}"
                    )
                    if first:
                        _deep_update(recipe, over)
                        first = False
                    else:
                        variants[label] = over
        if variants:
            recipe["variants"] = variants
        if roles:
            recipe["roles"] = roles
        if entry.get("multinode"):
            out.notes.append(
                f"{src.line(entry_name, 'multinode')}: not carried: multinode runner layout (srt-slurm config)"
            )
        out.notes.append(
            f"{src.line(entry_name, 'runner')}: not carried: runner {entry.get('runner')} (a CI machine label)"
        )
        recipe["meta"]["tags"] = ["inferencex", str(entry.get("precision", ""))]
        _bench(recipe)
        out.data = {"name": name, **recipe}
        results.append(out)
    return results


def convert(path: str | Path, fmt: str = "auto", *, image: str | None = None) -> list[Imported]:
    """The autobench recipe(s) one peer file holds (RecipeError with the line on bad input)."""
    path = Path(path)
    src = _Src(path)
    if fmt == "auto":
        fmt = detect(src)
    if fmt not in FORMATS:
        raise RecipeError(f"unknown format {fmt!r}", hint="use --from auto|" + "|".join(FORMATS))
    if fmt in ("eugr", "sparkrun"):
        return [_from_command(src, fmt, image)]
    if fmt == "vllm-recipes":
        if not isinstance(src.data.get("model"), dict):
            raise src.fail(("model",), "not a vllm-project/recipes file: model is not a mapping", "check --from")
        return [_from_vllm_recipes(src, image)]
    if fmt == "vllm-config":
        return [_from_vllm_config(src, image)]
    return _from_inferencex(src, image)


_FLAG_IN_TEXT = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9_-]*)")


def missing_flags(imported: Imported, compiled: str) -> list[str]:
    """Source flags that do not appear in the compiled text (names normalised)."""
    seen = {norm_flag(m.group(1).split("=", 1)[0]) for m in _FLAG_IN_TEXT.finditer(compiled)}
    return sorted({f for f in imported.flags if f and f not in seen})

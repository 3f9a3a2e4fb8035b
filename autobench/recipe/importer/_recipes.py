"""vllm-project/recipes structured files (``models/<org>/<repo>.yaml``) and vLLM ``--config`` files.

vllm-project/recipes' site builds the command (``src/lib/command-synthesis.js``, commit in
docs/import.md): ``vllm serve MODEL`` + ``base_args`` + the args of every feature not opt-in (a
feature with ``modes`` contributes its ``default_mode``'s, or the variant's ``default_modes``)
+ the variant's ``extra_args``; the parallelism comes from the hardware the user picks on the site
(``site_parallel``): ``--hardware ID`` names a profile of the checkout's ``taxonomy.yaml`` (its GPUs
and their memory), ``--gpus-per-node`` the GPUs alone.
"""

from __future__ import annotations

import json
from typing import Any

from autobench.recipe.importer import _common as common
from autobench.recipe.importer._command import apply_flags, split_flags
from autobench.recipe.importer._source import MAX_GPUS_PER_NODE, Imported, Options, Src, dig, shown

TOP_KEYS = {
    "meta": "",
    "model": "",
    "features": "",
    "opt_in_features": "",
    "variants": "",
    "default_strategy": "",
    "compatible_strategies": "the site's strategy picker",
    "strategy_overrides": "per-strategy overrides of the site's command builder",
    "strategy_hardware": "per-GPU strategy gates of the site",
    "strategy_min_gpus": "the site's GPU floor per strategy",
    "hardware_overrides": "per-hardware overrides: pick the hardware's flags by hand",
    "hardware_opt_in_features": "per-hardware opt-in features",
    "hardware_notes": "web-page text",
    "guide": "web-page text",
    "omni": "",
    "dependencies": "packages installed beside vLLM",
    "kv_offload_support": "the site's KV-offload picker",
}
MODEL_KEYS = {
    "model_id": "",
    "min_vllm_version": "",
    "docker_image": "",
    "base_args": "",
    "base_env": "",
    "architecture": "informational",
    "parameter_count": "informational",
    "active_parameters": "informational",
    "context_length": "informational",
    "nightly_required": "install instructions",
    "install": "install instructions",
    "docker_source": "install instructions",
    "supports_dcp": "the site's strategy picker",
    "flashinfer_autotune": "the site's command builder",
}
VARIANT_KEYS = {
    "model_id": "",
    "extra_args": "",
    "extra_env": "",
    "tp": "",
    "min_vllm_version": "",
    "docker_image": "",
    "default_modes": "",
    "precision": "",
    "description": "",
    "label": "informational",
    "vram_minimum_gb": "the site's auto-fit of TP to the GPU's memory",
    "hardware_overrides": "per-hardware overrides: pick the hardware's flags by hand",
    "supported_hardware": "the site's hardware list",
    "precision_hardware": "the site's hardware list",
}
STRATEGIES = {"single_node_tp", "single_node_tep", "single_node_dep"}


def _args(src: Src, keys: tuple[Any, ...], value: Any) -> list[str]:
    """A list of arguments as the site joins them into a shell command (an item with spaces is
    several words: ``"--max-model-len auto"``)."""
    import shlex

    items = src.typed(keys, value, list, [])
    words: list[str] = []
    for i, item in enumerate(items):
        item = src.need((*keys, i), item, (str, int, float, bool))
        text = str(item).lower() if isinstance(item, bool) else str(item)
        if text.startswith("-") and " " in text.strip() and not text.lstrip("-").startswith("{"):
            try:
                words += shlex.split(text)
            except ValueError:
                words.append(text)
        else:
            words.append(text)
    return words


def _image(src: Src, keys: tuple[Any, ...], node: dict[str, Any], fallback: str | None) -> str | None:
    docker = node.get("docker_image")
    if isinstance(docker, dict) and isinstance(docker.get("nvidia"), str):
        return str(docker["nvidia"])
    if isinstance(docker, str):
        return docker
    version = node.get("min_vllm_version")
    if version is not None:
        text = str(src.typed((*keys, "min_vllm_version"), version, (str, int, float))).lstrip("v")
        return f"vllm/vllm-openai:v{text}"
    return fallback


def _omni_args(src: Src, omni: dict[str, Any], recipe: dict[str, Any], out: Imported, options: Options) -> list[str]:
    """command-synthesis.js ``resolveOmniCommand`` for the first omni task (the site's default):
    ``vllm serve MODEL`` + ``base_args`` + the task's ``extra_args`` + ``--port omni.port`` +
    ``--omni``; no strategy, no features, not the default variant's ``extra_args``."""
    tasks = src.typed(("omni", "tasks"), omni.get("tasks"), list, [])
    words: list[str] = []
    first = tasks[0] if tasks and isinstance(tasks[0], dict) else {}
    if isinstance(first.get("model_id"), str) and not options.model:
        recipe["model"]["repo"] = first["model_id"]
    words += _args(src, ("omni", "tasks", 0, "extra_args"), first.get("extra_args"))
    for i, task in enumerate(tasks[1:], 1):
        label = task.get("id") if isinstance(task, dict) else task
        out.notes.append(
            f"{src.line('omni', 'tasks', i)}: not carried: omni task {shown(label, 40)} (the first is served)"
        )
    if omni.get("port") is not None:
        words += ["--port", str(src.typed(("omni", "port"), omni["port"], (int, str)))]
    if omni.get("serve_binary") not in (None, "vllm serve"):
        out.notes.append(
            f"{src.line('omni', 'serve_binary')}: not carried: omni.serve_binary (vllm serve --omni runs it)"
        )
    return [*words, "--omni"]


def _feature_args(src: Src, fname: str, feature: Any, variant: str, modes: dict[str, Any]) -> list[str]:
    if not isinstance(feature, dict):
        raise src.fail(("features", fname), f"features.{fname}: must be a mapping", "write args: [...]")
    words = _args(src, ("features", fname, "args"), feature.get("args"))
    table = feature.get("modes")
    if isinstance(table, dict):
        chosen = modes.get(fname) or feature.get("default_mode")
        mode = table.get(chosen) if isinstance(chosen, str) else None
        if isinstance(mode, dict):
            applies = mode.get("variants")
            if not isinstance(applies, list) or variant in applies:
                words += _args(src, ("features", fname, "modes", chosen, "args"), mode.get("args"))
    return words


def vllm_recipes(src: Src, options: Options) -> Imported:
    d = src.data
    m = src.need(("model",), src.data.get("model"), dict)
    variants_in = src.get(("variants",), dict, {})
    default = src.typed(("variants", "default"), variants_in.get("default"), dict, {})
    repo = common.model_ref(default.get("model_id") or m.get("model_id"), src, ("model", "model_id"), options)
    name = common.name_of(repo.split("/")[-1])
    out = Imported(name, {}, src.path, "vllm-recipes")
    image = options.image or _image(src, ("model",), m, None) or common.DEFAULT_IMAGE
    image = options.image or _image(src, ("variants", "default"), default, image) or image
    recipe = common.base(repo, image, src, "vllm-recipes")
    features = src.get(("features",), dict, {})
    opt_in = src.get(("opt_in_features",), list, [])
    opt_in = {str(f) for f in opt_in}
    default_modes = src.typed(("variants", "default", "default_modes"), default.get("default_modes"), dict, {})
    words = _args(src, ("model", "base_args"), m.get("base_args"))
    omni = src.get(("omni",), dict)
    if omni is not None:
        words += _omni_args(src, omni, recipe, out, options)
        features, opt_in = {}, set()
    for fname, feature in features.items():
        if fname not in opt_in:
            words += _feature_args(src, fname, feature, "default", default_modes)
    if omni is None:
        words += _args(src, ("variants", "default", "extra_args"), default.get("extra_args"))
    apply_flags(recipe, split_flags(words), src, ("model", "base_args"), out)
    env = common.env_of(src, ("model", "base_env"), m.get("base_env"))
    env |= common.env_of(src, ("variants", "default", "extra_env"), default.get("extra_env"))
    common.put_env(recipe, env, src, ("model", "base_env"), out)
    _tp(recipe, src, out, default, d, options, ("variants", "default"))
    variants: dict[str, Any] = {}
    for vname, variant in variants_in.items():
        if vname == "default":
            continue
        variant = src.need(("variants", vname), variant, dict)
        over = _variant(src, d, vname, variant, features, opt_in, recipe, out, options)
        if over:
            variants[common.variant_name(vname)] = over
        common.account(src, out, VARIANT_KEYS, within=("variants", vname))
    for fname in sorted(opt_in):
        feature = features.get(fname)
        if feature is None:
            out.notes.append(
                f"{src.line('opt_in_features')}: not carried: opt-in feature {shown(fname)} is not defined"
            )
            continue
        table = feature.get("modes") if isinstance(feature, dict) else None
        choices = list(table) if isinstance(table, dict) else [None]
        for mode in choices:
            scratch: dict[str, Any] = {}
            modes = {fname: mode} if mode else {}
            fwords = _feature_args(src, fname, feature, "default", modes)
            apply_flags(scratch, split_flags(fwords), src, ("features", fname), out)
            over = _override(scratch)
            if over:
                label = fname if mode is None or len(choices) == 1 else f"{fname}-{mode}"
                variants[common.variant_name(label)] = over
    if variants:
        recipe["variants"] = variants
    meta = src.get(("meta",), dict, {})
    if isinstance(meta.get("description"), str):
        recipe["meta"]["description"] = " ".join(meta["description"].split())[:500]
    if isinstance(default.get("precision"), str):
        recipe["meta"]["tags"] = ["vllm-recipes", default["precision"]]
    else:
        recipe["meta"]["tags"] = ["vllm-recipes"]
    common.account(src, out, TOP_KEYS)
    common.account(src, out, MODEL_KEYS, within=("model",))
    common.account(src, out, VARIANT_KEYS, within=("variants", "default"))
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _tp(
    recipe: dict[str, Any],
    src: Src,
    out: Imported,
    variant: dict[str, Any],
    d: dict[str, Any],
    options: Options,
    keys: tuple[Any, ...],
) -> None:
    hw = _hardware(src, options)
    engine = recipe.setdefault("engine", {})
    if not isinstance(d.get("omni"), dict):  # the strategy's flag comes after the args: it wins
        engine.update(site_parallel(src, d, variant, keys, hw, options))
    gpus = options.gpus_per_node or (hw.gpus if hw else None)
    common.topology(
        recipe, src, out, nodes=1, gpus_per_node=gpus, executor=None, options=options, rule="vllm-project/recipes"
    )


class Hardware:
    """A hardware profile of vllm-project/recipes' ``taxonomy.yaml`` (``hardware_profiles.<id>``)."""

    def __init__(self, ident: str, profile: dict[str, Any]):
        self.id = ident
        count = profile.get("gpu_count")
        self.gpus = count if isinstance(count, int) and not isinstance(count, bool) and 0 < count <= 64 else 1
        vram = profile.get("vram_gb")
        self.vram_gb = float(vram) if isinstance(vram, (int, float)) and not isinstance(vram, bool) else 0.0
        gen = profile.get("generation") or profile.get("gpu_generation")
        self.generation = str(gen[0] if isinstance(gen, list) and gen else gen or "")
        self.brand = str(profile.get("brand") or "").lower()
        self.cpu = self.generation == "cpu"


def _hardware(src: Src, options: Options) -> Hardware | None:
    """The profile ``--hardware`` names, from the taxonomy.yaml of the checkout holding the file."""
    if not options.hardware:
        return None
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    for folder in src.path.resolve().parents:
        path = folder / "taxonomy.yaml"
        try:  # a missing taxonomy.yaml, or a folder of that name, is an OSError: the next folder up
            if path.stat().st_size > 1024 * 1024:
                continue
            data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, YAMLError, ValueError):
            continue
        profiles = data.get("hardware_profiles") if isinstance(data, dict) else None
        if not isinstance(profiles, dict):
            continue
        profile = profiles.get(options.hardware)
        if not isinstance(profile, dict):
            known = ", ".join(str(k) for k in list(profiles)[:12])
            raise src.fail(
                (), f"--hardware {shown(options.hardware, 30)} is not a profile of {path}", f"name one of: {known}"
            )
        return Hardware(options.hardware, profile)
    raise src.fail(
        (),
        f"--hardware {shown(options.hardware, 30)}: no taxonomy.yaml in a folder above the file",
        "import from a checkout of vllm-project/recipes, or pass --gpus-per-node",
    )


def _keyed(value: Any, hw: Hardware | None) -> Any:
    """command-synthesis.js ``hardwareKeyedValue``: exact GPU id > generation > brand > ``default``
    (a number stands for every hardware)."""
    if not isinstance(value, dict):
        return value
    for key in ((hw.id, hw.generation, hw.brand) if hw else ()) + ("default",):
        if key in value:
            return value[key]
    return None


def strategy_of(d: dict[str, Any]) -> str:
    """command-synthesis.js ``recommendStrategy`` at one node: ``default_strategy`` when the recipe
    offers it (``effectiveCompatibleStrategies``: the listed ones plus ``strategy_hardware``
    grants), else ``single_node_tp`` when offered, else the first offered."""
    listed = d.get("compatible_strategies")
    offered = [str(x) for x in listed] if isinstance(listed, list) else []
    gates = d.get("strategy_hardware")
    for name, gate in gates.items() if isinstance(gates, dict) else []:
        if name not in offered and isinstance(gate, dict) and "supported" in gate.values():
            offered.append(str(name))
    explicit = d.get("default_strategy")
    if isinstance(explicit, str) and explicit in offered:
        return explicit
    if "single_node_tp" in offered or not offered:
        return "single_node_tp"
    return offered[0]


def site_parallel(
    src: Src, d: dict[str, Any], variant: dict[str, Any], keys: tuple[Any, ...], hw: Hardware | None, options: Options
) -> dict[str, Any]:
    """The engine's parallelism as the site emits it for a variant (``resolveCommand``,
    ``resolveSingleNodeTp``, ``autoFitTp``): ``single_node_dep`` DP = the GPUs with expert
    parallel; ``single_node_tep`` TP = the GPUs with expert parallel; ``single_node_tp`` the
    variant's ``tp``, else ``strategy_overrides.single_node_tp.tp``, else TP 1 when
    ``vram_minimum_gb`` fits one GPU of the hardware, else the GPUs (each capped at the GPUs)."""
    strategy = strategy_of(d)
    if strategy not in STRATEGIES:
        raise src.fail(
            ("default_strategy",) if "default_strategy" in d else ("compatible_strategies",),
            f"the site's strategy {shown(strategy)} spans nodes the file does not count",
            "pass --nodes N --gpus-per-node G, or pick a single-node variant",
        )
    gpus = options.gpus_per_node or (hw.gpus if hw else None)
    if strategy == "single_node_tp":
        declared = _keyed(variant.get("tp"), hw)
        if declared is None and isinstance(variant.get("tp"), dict) and hw is None:
            raise src.fail(
                (*keys, "tp"),
                "the variant's tp depends on the GPU (a map without `default`)",
                "pass --hardware ID (the site's hardware profile, taxonomy.yaml)",
            )
        over = d.get("strategy_overrides")
        override = _keyed(dig(over, strategy, "tp") if isinstance(over, dict) else None, hw)
        for value, where in ((declared, (*keys, "tp")), (override, ("strategy_overrides", strategy, "tp"))):
            if value is not None:
                size = src.count(where, value, "tp", MAX_GPUS_PER_NODE)
                return {"tensor_parallel_size": size if gpus is None or (hw and hw.cpu) else min(size, gpus)}
        vram = variant.get("vram_minimum_gb")
        if isinstance(vram, (int, float)) and not isinstance(vram, bool) and vram > 0:
            if hw is None or not hw.vram_gb:
                raise src.fail(
                    (*keys, "vram_minimum_gb"),
                    f"the site fits TP to the GPU's memory ({shown(vram)} GB of weights, TP 1 when one GPU holds "
                    "them, else the node's GPUs)",
                    "pass --hardware ID (the site's hardware profile, taxonomy.yaml: h100, h200, b200, ...)",
                )
            if vram <= hw.vram_gb / hw.gpus:
                return {"tensor_parallel_size": 1}
    if gpus is None:
        raise src.fail(
            ("model", "model_id"),
            f"vllm-project/recipes sizes the engine by your hardware ({strategy}: the node's GPUs)",
            "pass --hardware ID (the site's hardware profile), or --gpus-per-node N",
        )
    if strategy == "single_node_dep":
        return {"data_parallel_size": gpus, "enable_expert_parallel": True}
    if strategy == "single_node_tep":
        return {"tensor_parallel_size": gpus, "enable_expert_parallel": True}
    return {"tensor_parallel_size": gpus}


def _override(scratch: dict[str, Any]) -> dict[str, Any]:
    over: dict[str, Any] = {}
    for section, values in scratch.items():
        if section == "engine" and "extra_args" in values:
            values = dict(values)
            values["extra_args+"] = values.pop("extra_args")
        if values:
            over.setdefault(section, {}).update(values) if isinstance(values, dict) else over.update({section: values})
    return over


def _variant(
    src: Src,
    d: dict[str, Any],
    vname: str,
    variant: dict[str, Any],
    features: dict[str, Any],
    opt_in: set[str],
    recipe: dict[str, Any],
    out: Imported,
    options: Options,
) -> dict[str, Any]:
    keys = ("variants", vname)
    over: dict[str, Any] = {}
    if variant.get("model_id") and not options.model:
        over["model"] = {"repo": src.need((*keys, "model_id"), variant["model_id"], str)}
    image = None if options.image else _image(src, keys, variant, None)
    if image:
        over["container"] = {"image": image}
    words: list[str] = []
    modes = src.typed((*keys, "default_modes"), variant.get("default_modes"), dict, {})
    for fname, feature in features.items():
        if fname in opt_in:
            continue
        mine = _feature_args(src, fname, feature, vname, modes)
        if mine != _feature_args(src, fname, feature, "default", {}):
            words += mine
    words += _args(src, (*keys, "extra_args"), variant.get("extra_args"))
    scratch: dict[str, Any] = {}
    apply_flags(scratch, split_flags(words), src, keys, out)
    engine = scratch.setdefault("engine", {})
    if not isinstance(d.get("omni"), dict):
        sized = site_parallel(src, d, variant, keys, _hardware(src, options), options)
        base = {k: v for k, v in recipe.get("engine", {}).items() if k in sized}
        if sized != base:  # the site sizes each variant by its own tp / vram_minimum_gb
            engine.update(sized)
    if not engine:
        scratch.pop("engine")
    for section, values in _override(scratch).items():
        if isinstance(values, dict):
            over.setdefault(section, {}).update(values)
        else:
            over[section] = values
    _merge_extra(over, recipe)
    if variant.get("extra_env"):
        env = common.env_of(src, (*keys, "extra_env"), variant["extra_env"])
        over["env"] = env
    if isinstance(variant.get("precision"), str):
        over.setdefault("meta", {})["tags"] = ["vllm-recipes", variant["precision"]]
    return over


def _merge_extra(over: dict[str, Any], recipe: dict[str, Any]) -> None:
    """A variant's flags that the base already holds replace the base's (vLLM: the last wins),
    so the variant writes its whole ``extra_args`` instead of appending a duplicate."""
    from autobench.recipe.importer._command import _replace, flag_key
    from autobench.recipe.rules import flag_name

    engine = over.get("engine", {})
    added = engine.get("extra_args+")
    base = list(recipe.get("engine", {}).get("extra_args", []))
    if not added or not base:
        return
    names = {flag_key(n) for w in base if (n := flag_name(w))}
    if not any((n := flag_name(w)) and flag_key(n) in names for w in added):
        return
    merged = base
    i = 0
    while i < len(added):
        word = added[i]
        takes = "=" not in word and i + 1 < len(added) and flag_name(added[i + 1]) is None
        value = added[i + 1] if takes else (word.partition("=")[2] if "=" in word else None)
        name = flag_name(word)
        if name is None or not _replace(merged, flag_key(name), name, value):
            merged += added[i : i + (2 if takes else 1)]
        i += 2 if takes else 1
    del engine["extra_args+"]
    engine["extra_args"] = merged


def vllm_config(src: Src, options: Options) -> Imported:
    """A vLLM ``--config`` file: every key a flag (``_``/``-`` alike); ``model`` the model."""
    d = src.data
    repo = common.model_ref(d.get("model"), src, ("model",), options)
    name = common.name_of(src.path.stem)
    out = Imported(name, {}, src.path, "vllm-config")
    recipe = common.base(repo, options.image or common.DEFAULT_IMAGE, src, "vllm-config")
    if not options.image:
        out.notes.append(f"{src.line('model')}: a vLLM config names no image; used {common.DEFAULT_IMAGE} (pin it)")
    for key, value in d.items():
        if key == "model":
            continue
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            words = [flag]
        elif value is False:
            words = [] if flag.startswith("--no-") else ["--no-" + flag[2:]]
        elif isinstance(value, (dict, list)):
            words = [flag, json.dumps(value, separators=(",", ":"))]
        elif value is None:
            continue
        else:
            words = [flag, str(value)]
        apply_flags(recipe, split_flags(words), src, (key,), out)
    recipe["meta"]["tags"] = ["vllm-config"]
    common.topology(recipe, src, out, nodes=1, gpus_per_node=None, executor=None, options=options, rule="vLLM config")
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out

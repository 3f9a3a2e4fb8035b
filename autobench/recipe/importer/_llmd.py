"""llm-d-benchmark scenarios (``config/scenarios/**``): each stack's modelservice vLLM pod as a
recipe, rendered as llm-d-benchmark renders it (read at llm-d/llm-d-benchmark 8bc9f1dd):

- the stack is merged over ``config/templates/values/defaults.yaml`` (``llmdbenchmark/parser/
  render_plans.py`` ``_process_stack``): defaults, then the scenario's ``shared`` block, then the
  stack, each with its ``common`` block expanded to the root (seeding ``decode``/``prefill`` with
  the keys they own that the stack does not set, ``_expand_stack_common``); sections nested under
  ``modelservice`` hoisted to the root (``_hoist_modelservice_sections``); an accelerator
  ``profile`` other than ``auto`` merges ``overlays/<profile>.yaml``; ``resourcePreset`` merges
  its decode/prefill blocks; ``${dotted.path}`` references are filled from the merged values
  (``_substitute_config_variables``);
- the pod's command is ``/bin/bash -c`` with the script of ``_macros.j2`` ``build_vllm_command``,
  rendered from the checkout's own macros file (``_llmd_macros``: no copy of it here): the
  preprocess script, then ``customCommand`` or the generated ``vllm serve`` (its table in
  ``config/README.md`` "vLLM Command Generation"); its ``$VARS`` are the pod's env, the checkout's
  ``build_ms_env_vars`` rendered (``TP_SIZE``/``DP_SIZE`` the stack's parallelism, as the
  modelservice chart sets them); a ``$(VAR)`` the kubelet fills is refused;
- the model: ``/model-cache/<model.path>`` is the PVC copy that the download job fills with
  ``hf download <model.huggingfaceId>`` (``04_download_job.yaml.j2``): imported as that Hub repo;
  ``modelservice.uriProtocol: hf`` serves the Hub id itself;
- the image is ``images.vllm`` (``13_ms-values.yaml.j2``); GPUs ``accelerator.count``, else
  tensor x dataLocal parallelism; prefill pods make the recipe's prefill/decode roles.

Stacks deployed another way (kustomize guides, whose manifests live in llm-d's repository; fast
model actuation; standalone; no-Kubernetes; LeaderWorkerSet multinode) are skipped with a note;
the file is refused when no stack is left.  An ``auto`` image tag (resolved from the registry at
render time) needs ``--image``; ``accelerator.profile: auto`` (detected from the cluster's nodes)
is read as the NVIDIA defaults of defaults.yaml, noted."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError
from autobench.recipe.importer import _common as common
from autobench.recipe.importer._command import apply_flags, parse_command, split_flags
from autobench.recipe.importer._llmd_macros import MACROS, macros_file, render
from autobench.recipe.importer._source import MAX_GPUS_PER_NODE, Imported, Options, Src, dig, shown

DEFAULTS = ("config", "templates", "values", "defaults.yaml")
#: ``render_plans.py``: sections a scenario may nest under ``modelservice``, and the per-method
#: sections ``common`` seeds (never their ``enabled`` switch).
HOISTED = (
    "common",
    "gateway",
    "router",
    "routing",
    "httpRoute",
    "inferenceExtension",
    "prefill",
    "decode",
    "multinode",
)
METHOD_SECTIONS = ("decode", "prefill", "standalone", "fma")
_CONFIG_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+)\}")
_SHELL_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
#: A Kubernetes dependent variable, ``$(NAME)``, which the kubelet fills in a container's args.
_KUBELET_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
#: The pod env vLLM (or NIXL/UCX under it) reads, from ``build_ms_env_vars``; the others are
#: llm-d-benchmark's plumbing for the command's ``$VARS`` and are filled into the flags.
VLLM_ENV = (
    "VLLM_WORKER_MULTIPROC_METHOD",
    "VLLM_LOGGING_LEVEL",
    "VLLM_HTTP_TIMEOUT_KEEP_ALIVE",
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    "VLLM_SERVER_DEV_MODE",
    "VLLM_NIXL_SIDE_CHANNEL_PORT",
    "UCX_TLS",
    "UCX_SOCKADDR_TLS_PRIORITY",
)
STACK_KEYS = {
    "name": "",
    "common": "",
    "shared": "",
    "model": "",
    "modelservice": "",
    "decode": "",
    "prefill": "",
    "images": "",
    "vllmCommon": "",
    "accelerator": "",
    "resourcePreset": "",
    "routing": "",
    "standalone": "",
    "kustomize": "",
    "fma": "",
    "nok8s": "",
    "multinode": "",
    "harness": "autobench's bench: section runs the bench",
    "workload": "autobench's bench: section runs the bench",
    "experiment": "autobench's bench: section runs the bench",
    "workDir": "llm-d-benchmark's workspace",
    "gateway": "the cluster's gateway in front of the pods",
    "router": "llm-d's router (EPP) in front of the pods",
    "httpRoute": "the cluster's gateway in front of the pods",
    "inferenceExtension": "llm-d's router (EPP) in front of the pods",
    "storage": "the cluster's volumes",
    "monitoring": "the cluster's monitoring",
    "chartVersions": "Helm chart versions of the stack",
    "namespace": "the Kubernetes namespace",
    "affinity": "Kubernetes scheduling",
    "annotations": "Kubernetes pod annotations",
    "timeouts": "llm-d-benchmark's standup timeouts",
    "wva": "llm-d's autoscaler",
    "keda": "KEDA autoscaling",
    "eppKedaSaturation": "KEDA autoscaling",
    "fmaWarmupStep": "fast model actuation",
    "huggingface": "the Hugging Face token secret of the cluster (autobench passes HF_TOKEN by name)",
}


def convert(src: Src, options: Options) -> list[Imported]:
    stacks = src.get(("scenario",), list, [])
    if not stacks:
        raise src.fail(("scenario",), "scenario: no stack", "add a stack under scenario:")
    found = _defaults_file(src.path)
    if found is None:
        raise src.fail(
            ("scenario",),
            "an llm-d-benchmark scenario is merged over config/templates/values/defaults.yaml, "
            "which is not in a folder above this file",
            "import the scenario from a checkout of llm-d-benchmark (config/scenarios/...)",
        )
    defaults = _load(src, found)
    macros = macros_file(found)
    if not macros.is_file():
        raise src.fail(
            ("scenario",),
            f"llm-d-benchmark writes the pod's command with {'/'.join(MACROS)}, which is not in the checkout "
            f"of {found}",
            "import the scenario from a whole llm-d-benchmark checkout",
        )
    shared = src.get(("shared",), dict, {})
    results: list[Imported] = []
    skipped: list[str] = []
    for i, stack in enumerate(stacks):
        keys = ("scenario", i)
        stack = src.need(keys, stack, dict)
        values = _merged(defaults, found, shared, stack)
        why = _method(values)
        if why:
            skipped.append(f"{src.line(*keys)}: skipped: stack {shown(stack.get('name', i), 40)} {why}")
            continue
        results.append(_stack(src, keys, stack, values, options, macros))
    if not results:
        raise src.fail(
            ("scenario",),
            "no stack of this scenario runs a modelservice vLLM pod: " + skipped[0].split(": ", 1)[1],
            "autobench imports modelservice stacks (render the others' manifests, then import the Deployment)",
        )
    results[0].notes[:0] = skipped
    if len(results) > 1:
        for out in results:
            out.name = common.name_of(f"{src.path.stem}-{out.name}")
            out.data["name"] = out.name
    return results


def _defaults_file(path: Path) -> Path | None:
    for folder in path.resolve().parents:
        candidate = folder.joinpath(*DEFAULTS)
        if candidate.is_file():
            return candidate
    return None


def _load(src: Src, path: Path) -> dict[str, Any]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        if path.stat().st_size > 1024 * 1024:
            raise ValueError("over 1 MB")
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError, ValueError) as exc:
        raise src.fail(("scenario",), f"{path} does not read as YAML ({shown(str(exc))})", "check the file") from exc
    if not isinstance(data, dict):
        raise src.fail(("scenario",), f"{path} is not a mapping", "check the file")
    return data


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``render_plans.py`` ``deep_merge``: override wins; a null override keeps the base."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            continue
        if isinstance(result.get(key), dict) and isinstance(value, dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _expand_common(layer: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``_expand_stack_common``: ``common`` to the root (it wins there), and into each per-method
    section that owns the key in defaults.yaml and does not set it itself."""
    result = {k: copy.deepcopy(v) for k, v in layer.items() if k != "name"}
    shared = result.pop("common", None)
    if not isinstance(shared, dict):
        return result
    for key, value in shared.items():
        for section in METHOD_SECTIONS:
            allowed = (defaults.get(section) or {}).get(key) if key != "enabled" else None
            if key == "enabled" or key not in (defaults.get(section) or {}):
                continue
            block = result.setdefault(section, {})
            if not isinstance(block, dict) or key in block:
                continue
            inherited = copy.deepcopy(value)
            if isinstance(allowed, dict) and isinstance(inherited, dict):
                inherited = {k: v for k, v in inherited.items() if k in allowed}
                if not inherited:
                    continue
            block[key] = inherited
    return deep_merge(result, shared)


def _merged(defaults: dict[str, Any], where: Path, shared: dict[str, Any], stack: dict[str, Any]) -> dict[str, Any]:
    values = deep_merge(defaults, _expand_common(shared, defaults))
    values = deep_merge(values, _expand_common(stack, defaults))
    ms = values.get("modelservice")
    if isinstance(ms, dict):
        for key in HOISTED:
            if key in ms:
                nested = ms.pop(key)
                top = values.get(key)
                values[key] = deep_merge(
                    top if isinstance(top, dict) else {}, nested if isinstance(nested, dict) else {}
                )
    profile = dig(values, "accelerator", "profile")
    if isinstance(profile, str) and profile != "auto" and re.fullmatch(r"[A-Za-z0-9_-]+", profile):
        overlay = where.parent / "overlays" / f"{profile}.yaml"
        if overlay.is_file() and overlay.stat().st_size <= 1024 * 1024:
            from ruamel.yaml import YAML

            loaded = YAML(typ="safe").load(overlay.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                values = deep_merge(values, loaded)
    preset = values.get("resourcePreset")
    presets = values.get("resourcePresets")
    if isinstance(preset, str) and isinstance(presets, dict) and isinstance(presets.get(preset), dict):
        for section in ("decode", "prefill"):
            block = presets[preset].get(section)
            if isinstance(block, dict):
                base = values.get(section)
                values[section] = deep_merge(base if isinstance(base, dict) else {}, block)
    _fill_config_vars(values, values)
    return values


def _fill_config_vars(node: Any, root: dict[str, Any]) -> None:
    """``_substitute_config_variables``: ``${a.b}`` in strings from the merged values (a path to a
    mapping, a list or nothing stays as written), in place, in document order."""

    def one(m: re.Match[str]) -> str:
        value = dig(root, *m.group(1).split("."))
        return m.group(0) if value is None or isinstance(value, (dict, list)) else str(value)

    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in list(items):
        if isinstance(value, str) and "${" in value:
            node[key] = _CONFIG_VAR.sub(one, value)
        elif isinstance(value, (dict, list)):
            _fill_config_vars(value, root)


def _on(values: dict[str, Any], *keys: str) -> bool:
    return dig(values, *keys) is True


def _method(values: dict[str, Any]) -> str | None:
    """Why the stack is not a modelservice deployment autobench imports, or None."""
    if _on(values, "nok8s", "enabled"):
        return "runs without Kubernetes (nok8s): not imported"
    if _on(values, "kustomize", "enabled"):
        return "deploys llm-d's guide manifests (kustomize), which hold the command and are not in this repository"
    if not _on(values, "modelservice", "enabled"):
        if _on(values, "standalone", "enabled"):
            return "is a standalone deployment: not imported"
        return "deploys no modelservice pods (fast model actuation or another method): not imported"
    if _on(values, "multinode", "enabled"):
        return "runs LeaderWorkerSet groups (multinode): not imported"
    return None


def _stack(
    src: Src, keys: tuple[Any, ...], stack: dict[str, Any], values: dict[str, Any], options: Options, macros: Path
) -> Imported:
    name = common.name_of(str(stack.get("name") or src.path.stem))
    out = Imported(name, {}, src.path, "llm-d")
    image = _image(src, keys, values) if not options.image else options.image
    if dig(values, "accelerator", "profile") in (None, "auto"):
        out.notes.append(
            f"{src.line(*keys)}: accelerator profile auto (detected from the cluster's nodes): "
            "read as the NVIDIA defaults of defaults.yaml"
        )
    modes = ["decode"]
    prefill = values.get("prefill")
    if isinstance(prefill, dict) and prefill.get("enabled") is not False and _replicas(prefill) > 0:
        modes.append("prefill")
    recipe: dict[str, Any] = {}
    roles: dict[str, Any] = {}
    gpus: dict[str, int | None] = {}
    for mode in modes:
        script, env = _script(macros, values, mode)
        # the kubelet first fills each `$(NAME)` of the container's command from its env (a name
        # the env does not give stays, and bash then runs it as a command)
        script = _fill_kubelet_vars(script, env)
        _per_replica(src, keys, script, env, mode, out)
        for var in sorted({a or b for a, b in _SHELL_VAR.findall(script)} - set(env)):
            if re.search(rf"\$\{{?{var}\b", script.partition("vllm serve")[2]):
                raise src.fail(
                    keys,
                    f"{mode}: the vLLM command uses ${var}, set in the pod at run time, not in the scenario",
                    "render the stack's manifests (llm-d-benchmark's standup), then import the Deployment",
                )
        kubelet = _KUBELET_VAR.search(script.partition("vllm serve")[2])
        if kubelet:  # `$(POD_IP)`: the pod's address, a valueFrom the kubelet resolves at run time
            raise src.fail(
                keys,
                f"{mode}: the vLLM command uses {kubelet.group(0)}, which the pod's env does not set in the scenario "
                "(the kubelet fills it at run time, or bash runs it as a command)",
                "render the stack's manifests (llm-d-benchmark's standup), then import the Deployment",
            )
        script = _fill_shell_vars(script, env)
        parsed = parse_command(src, keys, script)
        if parsed.model is None and "--model" in parsed.args[:-1]:  # a wrapper script's --model
            at = parsed.args.index("--model")
            parsed.model, parsed.model_flag = parsed.args[at + 1], "--model"
            del parsed.args[at : at + 2]
        for step in parsed.setup:
            if step.strip() != "/bin/true":
                out.notes.append(f"{src.line(*keys)}: not carried: {shown(step)} ({mode} pod's preprocess step)")
        for step in parsed.after:
            out.notes.append(f"{src.line(*keys)}: not carried: {shown(step)} (runs after the server stops)")
        repo = _model(src, keys, values, parsed.model, options, out)
        if mode == "decode":
            recipe = common.base(repo, image, src, "llm-d")
            parsed.setup, parsed.after, parsed.model = [], [], None
            common.put_launch(recipe, parsed, src, keys, out)  # the pod runs `/bin/bash -c SCRIPT`
            apply_flags(recipe, split_flags(parsed.args), src, keys, out)
            common.put_env(recipe, {k: env[k] for k in VLLM_ENV if k in env}, src, keys, out)
            common.put_env(recipe, _extra_env(src, keys, values, mode), src, keys, out)
        if len(modes) > 1:
            scratch: dict[str, Any] = {}
            apply_flags(scratch, split_flags(parsed.args), src, keys, out)
            port = scratch.get("engine", {}).get("port")
            if isinstance(port, int):  # each role is its own pod: its port published in its cell
                scratch["container"] = {"ports": [f"{port}:{port}"]}
            roles[mode] = scratch
        gpus[mode] = _gpus(src, keys, values, mode)
        if _replicas(values.get(mode)) > 1:
            out.notes.append(
                f"{src.line(*keys)}: not carried: {mode} replicas {_replicas(values.get(mode))} "
                "(autobench benches one server)"
            )
    if roles:
        recipe["roles"] = {"prefill": roles["prefill"], "decode": roles["decode"]}
        recipe["engine"] = {k: v for k, v in recipe.get("engine", {}).items() if k in ("host", "port")}
        recipe.pop("speculative", None)
    gpn = max((g for g in gpus.values() if g), default=None)
    common.topology(recipe, src, out, nodes=1, gpus_per_node=gpn, executor=None, options=options, rule="llm-d")
    if gpn:
        recipe["container"]["gpus"] = "all"
    for key in stack:  # every key of the stack carried or noted (common.account reads mappings only)
        reason = STACK_KEYS.get(key)
        if reason is None:
            out.notes.append(f"{src.line(*keys, key)}: not carried: {shown(key, 40)} (not a key of the llm-d format)")
        elif reason:
            out.notes.append(f"{src.line(*keys, key)}: not carried: {key} ({reason})")
    out.notes = list(dict.fromkeys(out.notes))  # the roles' pods share their preprocess and model notes
    recipe["meta"]["tags"] = ["llm-d"]
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


#: llm-d's preprocess script, which re-exports each ``VLLM_*`` value holding ``,,`` as the pod's own.
_SPLITTER = "set_llmdbench_environment.py"


def _per_replica(src: Src, keys: tuple[Any, ...], script: str, env: dict[str, str], mode: str, out: Imported) -> None:
    """``vllmVariants`` values (``VLLM_MAX_MODEL_LEN="2048,,8192"``, one per replica) as the pod
    autobench benches gets them: llm-d's preprocess script (``set_llmdbench_environment.py``)
    re-exports each ``VLLM_*`` variable holding ``,,`` with the pod's value (its LWS index; the
    first value without LeaderWorkerSet), before ``vllm serve``; without that script vLLM would
    read the joined text."""
    joined = {k: v for k, v in env.items() if "VLLM_" in k and ",," in v}
    if not joined:
        return
    name, value = next(iter(joined.items()))
    if _SPLITTER not in script.partition("vllm serve")[0]:
        raise src.fail(
            keys,
            f"{mode}: {name}={shown(value, 40)} holds one value per replica (vllmVariants), split only by "
            f"llm-d's preprocess script {_SPLITTER}, which this pod does not run",
            "run it in vllmCommon.preprocessScript, as llm-d-benchmark's config/README.md says",
        )
    for k, v in joined.items():
        env[k] = v.split(",,")[0]
    out.notes.append(
        f"{src.line(*keys)}: not carried: {mode} vllmVariants after the first "
        f"({', '.join(f'{k}={shown(v, 40)}' for k, v in sorted(joined.items()))}: the first pod's values imported)"
    )


def _fill_kubelet_vars(script: str, env: dict[str, str]) -> str:
    """``$(NAME)`` of the container's env filled in, as the kubelet fills a container's command."""

    def one(m: re.Match[str]) -> str:
        return env.get(m.group(1), m.group(0))

    return _KUBELET_VAR.sub(one, script)


def _fill_shell_vars(script: str, env: dict[str, str]) -> str:
    """``$VAR`` / ``${VAR}`` of the pod's env filled in (bash does it when the pod starts)."""

    def one(m: re.Match[str]) -> str:
        return env.get(m.group(1) or m.group(2), m.group(0))

    return _SHELL_VAR.sub(one, script)


def _m(node: Any, *keys: Any) -> dict[str, Any]:
    """The mapping at ``keys`` under ``node``; anything else: an empty mapping."""
    value = dig(node, *keys)
    return value if isinstance(value, dict) else {}


def _replicas(block: Any) -> int:
    n = block.get("replicas", 1) if isinstance(block, dict) else 0
    return n if isinstance(n, int) and not isinstance(n, bool) else 1


def _image(src: Src, keys: tuple[Any, ...], values: dict[str, Any]) -> str:
    repo, tag = dig(values, "images", "vllm", "repository"), dig(values, "images", "vllm", "tag")
    if not isinstance(repo, str) or not repo or tag is None:
        raise src.fail(keys, "images.vllm: no repository and tag", "pass --image")
    if "inference-sim" in repo:
        raise src.fail(
            keys, f"images.vllm {shown(repo)} is llm-d's inference simulator, not vLLM", "autobench runs vLLM"
        )
    if str(tag) == "auto":
        raise src.fail(
            keys,
            "images.vllm tag auto: llm-d-benchmark picks the registry's newest tag when it renders the stack",
            "pass --image REPOSITORY:TAG",
        )
    return f"{repo}:{tag}"


def _s(value: Any, default: str = "") -> str:
    if value is None:
        return default
    return str(value).lower() if isinstance(value, bool) else str(value)


def _pod_env(macros: Path, values: dict[str, Any], mode: str) -> dict[str, str]:
    """The vLLM container's env: ``build_ms_env_vars(mode)`` rendered from the checkout's macros
    (the entries with a ``value``; ``valueFrom`` ones are set by the kubelet), plus ``TP_SIZE``,
    ``DP_SIZE`` and ``DP_SIZE_LOCAL`` of the stack's parallelism, which the modelservice Helm
    chart adds (its ``parallelismEnv``; the chart is not in the checkout)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    text = render(macros, values, "build_ms_env_vars", mode)
    try:
        items = YAML(typ="safe").load(text)
    except YAMLError as exc:
        raise RecipeError(
            f"{macros.name}: build_ms_env_vars({mode!r}) does not render a YAML list of env entries",
            location=f"{macros}:1:1",
            hint="check the scenario's env values (a quote in a value breaks the pod's YAML too)",
        ) from exc
    env: dict[str, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and "value" in item:
            env[item["name"]] = _s(item["value"])
    par = _m(_m(values, mode), "parallelism")
    env["TP_SIZE"] = _s(par.get("tensor"), "1")
    env["DP_SIZE"] = _s(par.get("data"), "1")
    env["DP_SIZE_LOCAL"] = _s(par.get("dataLocal"), "1")
    return env


def _extra_env(src: Src, keys: tuple[Any, ...], values: dict[str, Any], mode: str) -> dict[str, str]:
    cfg = _m(values, mode)
    extra = cfg.get("extraEnvVars") or []
    return common.env_of(src, keys, extra if isinstance(extra, list) else [])


def _script(macros: Path, values: dict[str, Any], mode: str) -> tuple[str, dict[str, str]]:
    """``build_vllm_command(mode)``: the pod's bash script, and the pod's env for its ``$VARS``."""
    return render(macros, values, "build_vllm_command", mode), _pod_env(macros, values, mode)


def _int(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _model(
    src: Src, keys: tuple[Any, ...], values: dict[str, Any], served: str | None, options: Options, out: Imported
) -> str:
    if options.model:
        return options.model
    model = _m(values, "model")
    hub = model.get("huggingfaceId") or model.get("name")
    base = _s(model.get("cacheBase") or dig(values, "modelArtifacts", "mountPath")).rstrip("/")
    if served and base and served.startswith(base + "/") and isinstance(hub, str):
        out.notes.append(
            f"{src.line(*keys)}: the pod serves {shown(served)}, the PVC copy the download job fills with "
            f"`hf download {shown(hub)}`: imported as that Hub repo"
        )
        return hub
    if served:
        return served
    raise src.fail(keys, "the vLLM command names no model", "pass --model owner/name")


def _gpus(src: Src, keys: tuple[Any, ...], values: dict[str, Any], mode: str) -> int | None:
    """``13_ms-values.yaml.j2``: ``<mode>.accelerator.count``, else ``accelerator.count``, else
    tensor x dataLocal; a CPU accelerator: none."""
    if dig(values, "accelerator", "type") == "cpu":
        return None
    count = dig(values, mode, "accelerator", "count")
    if count is None:
        count = dig(values, "accelerator", "count")
    if count is None:
        count = _int(dig(values, mode, "parallelism", "tensor")) * _int(
            dig(values, mode, "parallelism", "dataLocal") or 1
        )
    if count in (0, "0"):
        return None
    return src.count(keys, count, f"{mode} GPUs", MAX_GPUS_PER_NODE)

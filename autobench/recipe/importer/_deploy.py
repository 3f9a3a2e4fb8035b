"""Deployment files as import sources: docker compose, Kubernetes (Deployment, StatefulSet, Pod,
Job, LeaderWorkerSet, KServe ServingRuntime/InferenceService, Dynamo DynamoGraphDeployment,
AIBrix), production-stack Helm values, srt-slurm recipes (llm-d-benchmark scenarios: ``_llmd``).
The vLLM argv, image, env and GPU resources become a recipe; anything not vLLM is refused.

How each starts vLLM:
- compose: ``entrypoint`` (else the image's: ``vllm serve`` in vllm/vllm-openai) + ``command``;
  ``${VAR:-default}`` is the default, an unset ``${VAR}`` the empty string (compose's rule).
- Kubernetes: ``command`` replaces the entrypoint, ``args`` the image's CMD; ``$(NAME)`` is expanded
  from the container's env; ``sh -c`` scripts run as shell.  LeaderWorkerSet: the leader's
  command on ``size`` nodes (Ray).  Dynamo's ``python3 -m dynamo.vllm`` worker takes vLLM's engine
  args: imported as ``vllm serve`` with them (Dynamo's frontend and router are not vLLM).
- production-stack Helm values: each ``servingEngineSpec.modelSpec[]`` through the chart's
  ``templates/deployment-vllm-multi.yaml``: ``vllm serve modelURL --host 0.0.0.0 --port 8000 ...``.
- srt-slurm: ``backend.vllm_config.{aggregated|prefill|decode}`` flag maps (true: the flag alone);
  ``model.path`` as srtctl resolves it (``hf:`` ids, srtslurm.yaml ``model_paths`` aliases; ``_srt_model``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from autobench.recipe.importer import _common as common
from autobench.recipe.importer._command import Parsed, apply_flags, parse_command, split_flags
from autobench.recipe.importer._source import MAX_GPUS_PER_NODE, MAX_NODES, Imported, Options, Src, dig, shown, unfilled
from autobench.recipe.sizes import from_kubernetes_quantity

#: Dynamo worker flags that are Dynamo's own (components/src/dynamo/vllm/args.py).
DYNAMO_ONLY = {"--is-prefill-worker", "--is-decode-worker", "--connector", "--endpoint", "--migration-limit"}
_COMPOSE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\$\$")


def _image_launch(image: str) -> list[str]:
    """The serve command of an image's own entrypoint (vllm/vllm-openai: ``vllm serve``)."""
    return ["vllm", "serve"] if re.search(r"(^|/)vllm-openai(:|@|$)", image) else []


def _words(src: Src, keys: tuple[Any, ...], value: Any, subst: Any) -> list[str]:
    import shlex

    if value is None:
        return []
    if isinstance(value, list):
        return [subst(str(src.need((*keys, i), v, (str, int, float)))) for i, v in enumerate(value)]
    text = subst(str(src.need(keys, value, (str, int, float))))
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise src.fail(keys, f"command does not parse as shell words: {exc}", "check the quotes") from exc


def _parse_argv(src: Src, keys: tuple[Any, ...], argv: list[str], out: Imported) -> Parsed:
    """An exec-form argv (no shell) or ``sh -c SCRIPT``: the serve command in it."""
    import shlex

    if len(argv) >= 3 and Path(argv[0]).name in ("sh", "bash") and re.fullmatch(r"-[a-z]*c[a-z]*", argv[1]):
        script = argv[3] if argv[2] == "--" and len(argv) >= 4 else argv[2]  # `bash -lc -- SCRIPT`
        return parse_command(src, keys, script)  # bash -c, -ec, -exc, ...: the script
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] == "dynamo.vllm":
        rest = [w for w in argv[3:] if w not in DYNAMO_ONLY]
        out.notes.append(
            f"{src.line(*keys)}: Dynamo's vLLM worker imported as `vllm serve` with its engine args "
            "(Dynamo's frontend, router and disaggregation flags are not carried)"
        )
        argv = ["vllm", "serve", *rest]
    return parse_command(src, keys, shlex.join(argv))


def _model_from_args(parsed: Parsed) -> None:
    """A wrapper script's ``--model X`` as its model (``vllm serve``'s own ``--model`` is read by
    ``_command.serve_model`` as vLLM reads it)."""
    if parsed.model is None and parsed.model_flag is None:
        args = parsed.args
        for i, word in enumerate(args):
            if word == "--model" and i + 1 < len(args):
                parsed.model = args[i + 1]
                del args[i : i + 2]
                return
            if word.startswith("--model="):
                parsed.model = word.partition("=")[2]
                del args[i]
                return


def _finish(
    recipe_model: Any,
    src: Src,
    keys: tuple[Any, ...],
    fmt: str,
    image: str,
    parsed: Parsed,
    env: dict[str, str],
    out: Imported,
    options: Options,
    *,
    explicit: bool,
) -> dict[str, Any]:
    _model_from_args(parsed)
    if parsed.model_flag:
        for i, word in enumerate(parsed.args):
            if word == parsed.model_flag and i + 1 < len(parsed.args):
                parsed.model = parsed.args[i + 1]
                del parsed.args[i : i + 2]
                break
    repo = common.model_ref(parsed.model or recipe_model, src, keys, options)
    recipe = common.base(repo, options.image or image, src, fmt)
    if options.model:
        parsed.model = None
    if explicit or parsed.prefix or parsed.setup or parsed.env or parsed.model_flag:
        common.put_launch(recipe, parsed, src, keys, out)
    apply_flags(recipe, split_flags(parsed.args), src, keys, out)
    common.put_env(recipe, env, src, keys, out)
    return recipe


# --------------------------------------------------------------------------- compose


COMPOSE_KEYS = {
    "image": "",
    "command": "",
    "entrypoint": "",
    "environment": "",
    "deploy": "",
    "ports": "",
    "volumes": "",
    "ipc": "",
    "shm_size": "",
    "runtime": "",
    "container_name": "the container is named by autobench",
    "restart": "autobench starts and stops the server",
    "healthcheck": "autobench waits for /health itself",
    "networks": "compose networks",
    "network_mode": "compose networks",
    "env_file": "a file of variables on the compose host: name them under env",
    "depends_on": "other compose services",
    "ulimits": "",
    "devices": "",
}


def compose(src: Src, options: Options) -> list[Imported]:
    services = src.get(("services",), dict, {})
    results = []
    skipped = []
    runs = {}
    for sname, svc in services.items():
        svc = src.need(("services", sname), svc, dict)
        if "vllm" in json.dumps(svc, default=str).lower():
            runs[sname] = svc
        else:
            skipped.append(f"{src.line('services', sname)}: skipped: service {shown(sname, 40)} does not run vLLM")
    for sname, svc in runs.items():
        results.append(_service(src, str(sname), svc, options, single=len(runs) == 1))
    if not results:
        raise src.fail(("services",), "no service of this compose file runs vLLM", "autobench runs vLLM")
    results[0].notes[:0] = skipped
    return results


def _compose_subst(src: Src, out: Imported, keys: tuple[Any, ...]) -> Any:
    def sub(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            if m.group(0) == "$$":
                return "$"
            name = m.group(1) or m.group(4)
            op, default = m.group(2), m.group(3)
            if op in (":-", "-"):
                return default or ""
            out.notes.append(
                f"{src.line()}: ${{{name}}} has no default in the file; compose fills it from .env (here: empty)"
            )
            return ""

        return _COMPOSE_VAR.sub(one, text)

    return sub


def _service(src: Src, sname: str, svc: dict[str, Any], options: Options, *, single: bool) -> Imported:
    keys = ("services", sname)
    stem = src.path.parent.name if src.path.stem in ("docker-compose", "compose") else src.path.stem
    name = common.name_of(stem if single else f"{stem}-{sname}")
    out = Imported(name, {}, src.path, "compose")
    subst = _compose_subst(src, out, keys)
    image = subst(str(src.typed((*keys, "image"), svc.get("image"), str, "") or ""))
    if not image:
        raise src.fail(
            keys, f"service {shown(sname, 40)}: no image", "write image: vllm/vllm-openai:TAG, or pass --image"
        )
    entry = _words(src, (*keys, "entrypoint"), svc.get("entrypoint"), subst)
    cmd = _words(src, (*keys, "command"), svc.get("command"), subst)
    argv = (entry or _image_launch(image)) + cmd
    if not argv:
        raise src.fail(keys, f"service {shown(sname, 40)}: neither command nor a vLLM image", "write command: ...")
    parsed = _parse_argv(src, (*keys, "command") if "command" in svc else keys, argv, out)
    env = common.env_of(src, (*keys, "environment"), svc.get("environment"))
    env = {k: subst(v) for k, v in env.items()}
    recipe = _finish(None, src, (*keys, "command"), "compose", image, parsed, env, out, options, explicit=bool(entry))
    container = recipe["container"]
    if "ports" in svc:
        ports = src.typed((*keys, "ports"), svc["ports"], list, [])
        container["ports"] = [subst(str(p)) for p in ports if isinstance(p, (str, int))]
    for i, vol in enumerate(src.typed((*keys, "volumes"), svc.get("volumes"), list, [])):
        if isinstance(vol, str):
            text = subst(vol)
            host, sep, rest = text.partition(":")
            if sep and host.startswith("."):
                text = f"{(src.path.parent / host).resolve()}:{rest}"
            if sep:
                container.setdefault("volumes", []).append(text)
            else:
                out.notes.append(f"{src.line(*keys, 'volumes', i)}: not carried: anonymous volume {shown(text)}")
        else:
            out.notes.append(f"{src.line(*keys, 'volumes', i)}: not carried: long-form volume {shown(vol)}")
    for key in ("ipc", "shm_size"):
        if isinstance(svc.get(key), (str, int)):
            container[key] = subst(str(svc[key]))
    gpus = _compose_gpus(src, keys, svc)
    if gpus is not None:
        container["gpus"] = gpus
    common.account(src, out, COMPOSE_KEYS, within=keys)
    recipe["meta"]["tags"] = ["compose"]
    common.topology(recipe, src, out, nodes=1, gpus_per_node=None, executor=None, options=options, rule="compose")
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _compose_gpus(src: Src, keys: tuple[Any, ...], svc: dict[str, Any]) -> str | None:
    devices = dig(svc, "deploy", "resources", "reservations", "devices")
    if not isinstance(devices, list):
        return None
    for dev in devices:
        if not isinstance(dev, dict):
            continue
        if isinstance(dev.get("device_ids"), list):
            return "device=" + ",".join(str(x) for x in dev["device_ids"])
        count = dev.get("count")
        if count == "all" or count is None:
            return "all"
        return str(src.count((*keys, "deploy"), count, "GPU count", MAX_GPUS_PER_NODE))
    return None


# --------------------------------------------------------------------------- Kubernetes


def _containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "containers" and isinstance(v, list):
                found += [((*path, k, i), c) for i, c in enumerate(v) if isinstance(c, dict)]
            elif k == "mainContainer" and isinstance(v, dict):
                found.append(((*path, k), v))
            elif k != "initContainers":
                found += _containers(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _containers(v, (*path, i))
    return found


def _runs_vllm(c: dict[str, Any]) -> bool:
    text = json.dumps({k: c.get(k) for k in ("command", "args", "image")}, default=str)
    return "vllm" in text.lower() and (
        "serve" in text
        or "vllm.entrypoints" in text
        or "dynamo.vllm" in text
        or bool(_image_launch(str(c.get("image"))))
    )


def kubernetes(docs: list[Src], options: Options) -> list[Imported]:
    results = []
    for src in docs:
        kind = str(src.data.get("kind", ""))
        lws = dig(src.data, "spec", "leaderWorkerTemplate") if kind == "LeaderWorkerSet" else None
        for keys, c in _containers(src.data):
            if not _runs_vllm(c):
                continue
            if lws and "workerTemplate" in keys:
                continue  # LWS workers join the leader's Ray cluster
            results.append(_container(src, keys, c, options, lws=lws if isinstance(lws, dict) else None))
    if not results:
        kinds = ", ".join(sorted({str(s.data.get("kind", "?")) for s in docs}))
        raise docs[0].fail((), f"no container of this file runs vLLM ({shown(kinds, 60)})", "autobench runs vLLM")
    return results


def _k8s_subst(env: dict[str, str]) -> Any:
    def sub(text: str) -> str:
        return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), text)

    return sub


def _container(
    src: Src, keys: tuple[Any, ...], c: dict[str, Any], options: Options, *, lws: dict[str, Any] | None
) -> Imported:
    meta_name = str(dig(src.data, "metadata", "name") or src.path.stem)
    cname = str(c.get("name") or (keys[-3] if len(keys) >= 3 and keys[-2] == "extraPodSpec" else "vllm"))
    service = next((k for k, n in zip(keys, keys[1:], strict=False) if k == "services"), None)
    if service:
        cname = str(keys[keys.index("services") + 1])
    name = common.name_of(f"{meta_name}-{cname}")
    out = Imported(name, {}, src.path, "kubernetes")
    env = common.env_of(src, (*keys, "env"), c.get("env"))
    subst = _k8s_subst(env)
    image = str(src.typed((*keys, "image"), c.get("image"), str, "") or "")
    if not image:
        raise src.fail(keys, f"container {shown(cname, 40)}: no image", "pass --image")
    command = _words(src, (*keys, "command"), c.get("command"), subst) if "command" in c else []
    args = _words(src, (*keys, "args"), c.get("args"), subst) if "args" in c else []
    argv = (command or _image_launch(image)) + args
    if not argv:
        raise src.fail(keys, f"container {shown(cname, 40)}: no command and not a vLLM image", "pass --image")
    parsed = _parse_argv(src, (*keys, "command" if command else "args"), argv, out)
    ray = any("ray" in s for s in parsed.setup)
    if lws is not None:
        for step in parsed.setup:
            out.notes.append(f"{src.line(*keys, 'command')}: not carried: {shown(step)} (autobench starts Ray itself)")
        parsed.setup = []
    recipe = _finish(
        None, src, (*keys, "command"), "kubernetes", image, parsed, env, out, options, explicit=bool(command)
    )
    limits = dig(c, "resources", "limits") or {}
    gpus = limits.get("nvidia.com/gpu") if isinstance(limits, dict) else None
    gpn = src.count((*keys, "resources"), gpus, "nvidia.com/gpu", MAX_GPUS_PER_NODE) if gpus is not None else None
    nodes = 1
    if lws is not None:
        nodes = src.count(("spec", "leaderWorkerTemplate", "size"), lws.get("size", 1), "size", MAX_NODES)
    if gpn is not None and nodes == 1:
        recipe["container"]["gpus"] = "all"
    common.topology(
        recipe,
        src,
        out,
        nodes=nodes,
        gpus_per_node=gpn,
        executor="ray" if ray or lws is not None else None,
        options=options,
        rule="Kubernetes: the pod's nvidia.com/gpu limit",
        keys=keys,
    )
    _host_mounts(src, keys, c, recipe, out)
    for key in c:
        if key not in ("name", "image", "command", "args", "env", "resources", "volumeMounts"):
            out.notes.append(f"{src.line(*keys, key)}: not carried: {shown(key, 40)} (Kubernetes pod settings)")
    recipe["meta"]["tags"] = ["kubernetes", common.name_of(str(src.data.get("kind", "")))]
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _host_mounts(src: Src, keys: tuple[Any, ...], c: dict[str, Any], recipe: dict[str, Any], out: Imported) -> None:
    """The container's ``volumeMounts`` of the pod's ``hostPath`` volumes as docker mounts (the
    kubelet binds the node's directory at ``mountPath``); other volumes and the pod's init
    containers (which may fill them) are noted."""
    pod = keys[:-2]  # (..., "containers", i) -> the pod spec
    spec = dig(src.data, *pod)
    volumes = {
        v.get("name"): (i, v) for i, v in enumerate(dig(spec, "volumes") or []) if isinstance(v, dict) and "name" in v
    }
    mounts = src.typed((*keys, "volumeMounts"), c.get("volumeMounts"), list, [])
    for i, mount in enumerate(mounts):
        mkeys = (*keys, "volumeMounts", i)
        if not isinstance(mount, dict):
            raise src.fail(mkeys, "volumeMounts: each must be a mapping", "write name: and mountPath:")
        target = mount.get("mountPath")
        found = volumes.get(mount.get("name"))
        host = dig(found[1], "hostPath", "path") if found else None
        if isinstance(host, str) and host.startswith("/") and isinstance(target, str) and target.startswith("/"):
            if ":" in host or ":" in target or mount.get("subPath"):
                out.notes.append(f"{src.line(*mkeys)}: not carried: volume mount {shown(target)} (subPath or ':')")
                continue
            ro = ":ro" if mount.get("readOnly") is True else ""
            recipe["container"].setdefault("volumes", []).append(f"{host}:{target}{ro}")
        else:
            kind = next((k for k in (found[1] if found else {}) if k != "name"), "unknown volume")
            out.notes.append(
                f"{src.line(*mkeys)}: not carried: volume {shown(mount.get('name'), 40)} at "
                f"{shown(target, 60)} ({shown(kind, 30)}: not a host directory)"
            )
    for i, init in enumerate(dig(spec, "initContainers") or []):
        name = init.get("name") if isinstance(init, dict) else i
        out.notes.append(
            f"{src.line(*pod, 'initContainers', i)}: not carried: init container {shown(name, 40)} "
            "(runs before vLLM in the pod; run it yourself if it fills a mounted directory)"
        )


# --------------------------------------------------------------------------- production-stack


VLLM_CONFIG_FLAGS = {
    "maxModelLen": "--max-model-len",
    "dtype": "--dtype",
    "tensorParallelSize": "--tensor-parallel-size",
    "maxNumSeqs": "--max-num-seqs",
    "gpuMemoryUtilization": "--gpu_memory_utilization",
    "maxLoras": "--max_loras",
    "runner": "--runner",
    "convert": "--convert",
}
MODEL_SPEC_KEYS = {
    **{
        k: ""
        for k in (
            "name",
            "repository",
            "tag",
            "modelURL",
            "vllmConfig",
            "env",
            "requestGPU",
            "enableLoRA",
            "enableTool",
            "toolCallParser",
            "modelRevision",
            "hf_token",
        )
    },
    "replicaCount": "replicas behind the router (autobench benches one server)",
    "requestCPU": "Kubernetes resources",
    "requestMemory": "Kubernetes resources",
    "requestGPUType": "Kubernetes resources",
    "limitCPU": "Kubernetes resources",
    "limitMemory": "Kubernetes resources",
    "pvcStorage": "Kubernetes storage",
    "pvcAccessMode": "Kubernetes storage",
    "storageClass": "Kubernetes storage",
    "lmcacheConfig": "LMCache (not part of vLLM)",
    "chatTemplate": "a chat template file mounted by the chart",
    "nodeSelectorTerms": "Kubernetes scheduling",
    "shmSize": "",
}


def _shm_size(src: Src, out: Imported, recipe: dict[str, Any], keys: tuple[Any, ...], quantity: str) -> None:
    """A chart's shm size (a Kubernetes quantity) as ``container.shm_size`` of the same bytes."""
    try:
        size = from_kubernetes_quantity(quantity)
    except ValueError as exc:
        out.notes.append(f"{src.line(*keys)}: not carried: shmSize ({exc})")
        return
    recipe["container"]["shm_size"] = size
    if size != quantity:
        out.notes.append(f"{src.line(*keys)}: shmSize {shown(quantity)} is {size} bytes (Kubernetes' units)")


def helm_values(src: Src, options: Options) -> list[Imported]:
    specs = src.get(("servingEngineSpec", "modelSpec"), list, [])
    if not specs:
        raise src.fail(("servingEngineSpec",), "servingEngineSpec.modelSpec is empty", "add a model spec")
    return [_model_spec(src, i, spec, options) for i, spec in enumerate(specs)]


def _model_spec(src: Src, i: int, spec: Any, options: Options) -> Imported:
    keys = ("servingEngineSpec", "modelSpec", i)
    spec = src.need(keys, spec, dict)
    name = common.name_of(str(spec.get("name") or f"{src.path.stem}-{i}"))
    out = Imported(name, {}, src.path, "helm-values")
    repository = src.typed((*keys, "repository"), spec.get("repository"), str, "")
    tag = src.typed((*keys, "tag"), spec.get("tag"), (str, int, float), "")
    if not repository or tag == "":
        raise src.fail(keys, "modelSpec: repository and tag are required (the chart refuses it too)", "write both")
    image = f"{repository}:{tag}"
    words = ["/opt/venv/bin/vllm" if repository == "lmcache/vllm-openai" else "vllm", "serve"]
    model = src.typed((*keys, "modelURL"), spec.get("modelURL"), str)
    words += [model or "", "--host", "0.0.0.0", "--port", "8000"]
    if spec.get("enableLoRA"):
        words.append("--enable-lora")
    if spec.get("enableTool"):
        words.append("--enable-auto-tool-choice")
    if spec.get("toolCallParser"):
        words += ["--tool-call-parser", str(spec["toolCallParser"])]
    cfg = src.typed((*keys, "vllmConfig"), spec.get("vllmConfig"), dict)
    if cfg is not None:
        if "enableChunkedPrefill" in cfg:
            words.append("--enable-chunked-prefill" if cfg["enableChunkedPrefill"] else "--no-enable-chunked-prefill")
        words.append("--enable-prefix-caching" if cfg.get("enablePrefixCaching") else "--no-enable-prefix-caching")
        for key, flag in VLLM_CONFIG_FLAGS.items():
            if key in cfg:
                words += [flag, str(src.need((*keys, "vllmConfig", key), cfg[key], (str, int, float)))]
        extra = src.typed((*keys, "vllmConfig", "extraArgs"), cfg.get("extraArgs"), list, [])
        words += [str(a) for a in extra]
        for key in cfg:
            if key not in VLLM_CONFIG_FLAGS and key not in ("enableChunkedPrefill", "enablePrefixCaching", "extraArgs"):
                out.notes.append(f"{src.line(*keys, 'vllmConfig', key)}: not carried: vllmConfig.{shown(key, 40)}")
    if spec.get("modelRevision"):
        words += ["--revision", str(spec["modelRevision"])]
    import shlex

    parsed = parse_command(src, (*keys, "modelURL"), shlex.join(words))
    env = common.env_of(src, (*keys, "env"), spec.get("env"))
    recipe = _finish(model, src, (*keys, "modelURL"), "helm-values", image, parsed, env, out, options, explicit=True)
    if spec.get("hf_token") is not None:
        recipe.setdefault("secrets", []).append("HF_TOKEN")
        out.notes.append(f"{src.line(*keys, 'hf_token')}: hf_token passed by name as HF_TOKEN (never by value)")
    gpus = spec.get("requestGPU")
    gpn = src.count((*keys, "requestGPU"), gpus, "requestGPU", MAX_GPUS_PER_NODE) if gpus is not None else None
    if isinstance(spec.get("shmSize"), str):  # the chart's emptyDir sizeLimit: a Kubernetes quantity
        _shm_size(src, out, recipe, (*keys, "shmSize"), spec["shmSize"])
    common.account(src, out, MODEL_SPEC_KEYS, within=keys)
    recipe["meta"]["tags"] = ["production-stack"]
    common.topology(recipe, src, out, nodes=1, gpus_per_node=gpn, executor=None, options=options, rule="Helm values")
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


# --------------------------------------------------------------------------- srt-slurm


SRT_KEYS = {
    "name": "",
    "model": "",
    "resources": "",
    "backend": "",
    "slurm": "Slurm job settings (autobench's Slurm target takes its own)",
    "frontend": "the Dynamo/SGLang frontend in front of the workers",
    "dynamo": "Dynamo's version and request plane",
    "benchmark": "autobench's bench: section runs the bench",
    "setup_script": "a script of the srt-slurm checkout",
    "health_check": "srt-slurm's readiness",
    "profiling": "srt-slurm's profiler",
    "environment": "",
    "container_mounts": "mounts of the srt-slurm cluster",
    "extra_mount": "mounts of the srt-slurm cluster",
    "sbatch_directives": "Slurm job settings",
    "srun_options": "Slurm job settings",
    "identity": "",
    "infra": "srt-slurm's cluster infrastructure",
    "output": "srt-slurm's log folders",
}


def srt_slurm(src: Src, options: Options) -> Imported:
    backend = src.get(("backend",), dict, {})
    kind = str(backend.get("type", "vllm"))
    if kind != "vllm":
        raise src.fail(("backend", "type"), f"backend {shown(kind, 30)} is not vLLM", "autobench runs vLLM")
    cfg = src.get(("backend", "vllm_config"), dict, {})
    model = src.get(("model",), dict, {})
    name = common.name_of(str(src.data.get("name") or src.path.stem))
    out = Imported(name, {}, src.path, "srt-slurm")
    repo, mount = _srt_model(src, cfg, options, out)
    image = options.image or src.typed(("model", "container"), model.get("container"), str) or common.DEFAULT_IMAGE
    resources = src.get(("resources",), dict, {})
    gpn = resources.get("gpus_per_node")
    gpus = (
        src.count(("resources", "gpus_per_node"), gpn, "gpus_per_node", MAX_GPUS_PER_NODE) if gpn is not None else None
    )
    roles_in = {k: v for k, v in cfg.items() if k in ("prefill", "decode")}
    main = cfg.get("aggregated") if "aggregated" in cfg else next(iter(roles_in.values()), None)
    main_key = "aggregated" if "aggregated" in cfg else next(iter(roles_in), "aggregated")
    if not isinstance(main, dict):
        raise src.fail(("backend", "vllm_config"), "vllm_config: no aggregated, prefill or decode flags", "add them")
    recipe = common.base(repo, image, src, "srt-slurm")
    if mount:
        recipe["container"]["volumes"] = [f"{mount}:{mount}:ro"]
    apply_flags(
        recipe,
        split_flags(_flag_map(main)),
        src,
        ("backend", "vllm_config", main_key),
        out,
    )
    if mount and "served_name" not in recipe["model"]:  # srtctl: --served-model-name the directory's name
        recipe["model"]["served_name"] = Path(mount).name
    used = {f"{k}_environment" for k in (roles_in if len(roles_in) == 2 else [main_key])}
    # srtctl's worker env: the role's <role>_environment, then the recipe's top-level environment
    # over it (cli/mixins/worker_stage.py: env_to_set.update(self.runtime.environment))
    every = _worker_env(src, ("environment",), src.data.get("environment"), out)
    if len(roles_in) != 2:
        env = _worker_env(src, ("backend", f"{main_key}_environment"), backend.get(f"{main_key}_environment"), out)
        common.put_env(recipe, env, src, ("backend", f"{main_key}_environment"), out)
        common.put_env(recipe, every, src, ("environment",), out)
    else:  # each worker runs with its own role's environment (backend.<role>_environment)
        roles = {}
        for role, flags in roles_in.items():
            scratch: dict[str, Any] = {}
            rkeys = ("backend", "vllm_config", role)
            apply_flags(scratch, split_flags(_flag_map(src.need(rkeys, flags, dict))), src, rkeys, out)
            engine = scratch.get("engine", {})
            if "extra_args" in engine:
                engine["extra_args"] = engine.pop("extra_args")
            ekeys = ("backend", f"{role}_environment")
            common.put_env(scratch, _worker_env(src, ekeys, backend.get(f"{role}_environment"), out), src, ekeys, out)
            common.put_env(scratch, every, src, ("environment",), out)
            roles[role] = scratch
        recipe["roles"] = roles
        recipe["engine"] = {k: v for k, v in recipe.get("engine", {}).items() if k in ("host", "port")}
        recipe.pop("speculative", None)
    for key in backend:
        if key not in ("type", "vllm_config") and key not in used:
            out.notes.append(f"{src.line('backend', key)}: not carried: backend.{shown(key, 40)}")
    for key in resources:
        if key != "gpus_per_node":
            out.notes.append(
                f"{src.line('resources', key)}: not carried: resources.{shown(key, 40)} (workers and nodes of the job)"
            )
    world = _gpus_of(recipe.get("engine", {})) if "roles" not in recipe else 1
    nodes = 1 if gpus is None or world <= gpus else -(-world // gpus)
    common.topology(recipe, src, out, nodes=nodes, gpus_per_node=gpus, executor=None, options=options, rule="srt-slurm")
    for role in recipe.get("roles", {}).values():  # a worker spans the nodes its TP x PP x DP needs
        size = _gpus_of(role.get("engine", {}))
        per_node = options.gpus_per_node or gpus
        if per_node and size > per_node and options.nodes is None:
            span = -(-size // per_node)
            hosts = [f"node{k}" for k in range(span)]
            role["topology"] = {"nodes": span, "gpus_per_node": per_node, "executor": "native", "hosts": hosts}
    _identity(src, recipe, path_is_hf=str(dig(src.data, "model", "path") or "").strip().startswith("hf:"), out=out)
    common.account(src, out, SRT_KEYS)
    recipe["meta"]["tags"] = ["srt-slurm"]
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


#: srtctl's per-worker placeholders in environment values (cli/mixins/worker_stage.py).
_PER_WORKER = {"node": "the hostname of the worker's node", "node_id": "the index of the worker's node in the job"}


class _KeepUnknown(dict[str, str]):
    """srtctl's ``SafeDict``: a name it does not fill formats as itself, ``{name}``."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _worker_env(src: Src, keys: tuple[Any, ...], value: Any, out: Imported) -> dict[str, str]:
    """An srt-slurm environment mapping as srtctl exports it to a worker.

    srtctl formats every value of ``<role>_environment`` and ``environment`` with
    ``value.format_map(SafeDict({"node": process.node, "node_id": node_id}))``, where a
    ``SafeDict`` gives back ``{name}`` for any other name (NVIDIA/srt-slurm c88ef731
    ``src/srtctl/cli/mixins/worker_stage.py``; ``docs/config-reference.md`` "Per-Worker Template
    Variables"): ``{{``/``}}`` become ``{``/``}``, ``{node}``/``{node_id}`` the worker's node, any
    other ``{name}`` (``{job_id}`` in InferenceX's recipes) stays as written, and a value
    ``str.format`` cannot parse fails srtctl.  autobench writes one environment for every node of
    a cell, so ``{node}``/``{node_id}`` are refused at their line; every other value is formatted
    exactly as srtctl formats it (the same ``format_map``), and one that still holds braces is
    kept as srtctl exports it, with a note, and marked literal (``Imported.literal``)."""
    import string

    env = common.env_of(src, keys, value)
    for name, text in env.items():
        if "{" not in text and "}" not in text:
            continue
        try:
            parts = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise src.fail(
                (*keys, name),
                f"{name}: {shown(text)} fails srtctl's placeholder formatting ({exc})",
                "write a literal brace as {{ or }}",
            ) from exc
        for _lit, field_name, _spec, _conv in parts:
            if field_name is None:
                continue
            bare = re.split(r"[.\[]", field_name, maxsplit=1)[0]
            if not bare or bare[0].isdigit():
                why = (
                    f"{{{shown(field_name, 40)}}} fails srtctl's formatting (str.format_map takes no positional field)"
                )
            elif bare in _PER_WORKER:
                why = (
                    f"{{{bare}}} is srt-slurm's per-worker placeholder ({_PER_WORKER[bare]}), which autobench "
                    "cannot fill: it writes one environment for every node of a cell"
                )
            else:
                continue
            raise src.fail((*keys, name), f"{name}: {why}", "write the value without the placeholder")
        try:
            exported = text.format_map(_KeepUnknown())
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            raise src.fail(
                (*keys, name),
                f"{name}: {shown(text)} fails srtctl's placeholder formatting ({exc})",
                "write the value without the placeholder",
            ) from exc
        env[name] = exported
        if unfilled(exported):
            out.literal.add(exported)
            out.notes.append(
                f"{src.line(*keys, name)}: kept as srtctl exports it: {name}={shown(exported)} (srtctl fills only "
                "{node} and {node_id}; the worker gets the rest as written)"
            )
    return env


def _gpus_of(engine: dict[str, Any]) -> int:
    """The GPUs one srt-slurm worker takes: TP x PP x DP (srtctl places a worker's ranks)."""
    size = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        size *= engine[key] if isinstance(engine.get(key), int) else 1
    return size


#: A Hugging Face repo id (owner/name), as the recipe schema's REPO_ID.
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*")


def _srt_model(src: Src, cfg: dict[str, Any], options: Options, out: Imported) -> tuple[str, str | None]:
    """(model, host directory to mount or None) as srtctl resolves ``model.path``
    (src/srtctl/core/runtime.py, core/config.py ``resolve_config_with_defaults``):

    - ``hf:owner/name``: the Hub id, downloaded by vLLM at serve time;
    - an alias of the cluster's ``srtslurm.yaml`` ``model_paths`` (srtctl reads ``SRTSLURM_CONFIG``,
      else srtslurm.yaml in the working folder or its two parents: here the recipe's folders): the
      directory it names, mounted at ``/model`` and served as ``--served-model-name`` (else the
      directory's name);
    - an alias with no srtslurm.yaml to read (it is gitignored; a checkout has only
      ``srtslurm.yaml.example``): the Hub repo the recipe's ``served-model-name`` names, the
      checkpoint the alias directory holds (srt-slurm ``recipes/dsv4-pro/README.md`` fills
      ``dsv4-pro`` with ``hf download deepseek-ai/DeepSeek-V4-Pro``), noted; none: a refusal;
    - an ``owner/name`` path as written (the Hub repo of that name)."""
    keys = ("model", "path")
    path = src.typed(keys, dig(src.data, "model", "path"), str)
    if options.model:
        return options.model, None
    if not path or not path.strip():
        raise src.fail(keys, "model.path: no model", "write model.path: hf:owner/name, or pass --model")
    path = path.strip()
    if path.startswith("hf:"):
        return path[3:], None
    served = _served_names(cfg)
    cluster = _srtslurm_yaml(src.path)
    if cluster is not None:
        aliases = dig(cluster[1], "model_paths")
        target = aliases.get(path) if isinstance(aliases, dict) else None
        if isinstance(target, str) and target.strip():
            target = target.strip().rstrip("/") or "/"
            out.notes.append(f"{src.line(*keys)}: model.path {shown(path)} resolved by {cluster[0]}: {shown(target)}")
            if target.startswith("hf:"):
                return target[3:], None
            if not target.startswith("/") or "$" in target or ".." in target.split("/"):
                raise src.fail(
                    keys,
                    f"model.path {shown(path)}: srtslurm.yaml names {shown(target)}, not an absolute directory",
                    "pass --model owner/name",
                )
            return target, target
    if _REPO_ID.fullmatch(path):
        return path, None
    declared = _identity_repo(src)
    if declared is not None:
        out.notes.append(
            f"{src.line(*keys)}: model.path {shown(path)} is an alias of the cluster's srtslurm.yaml model_paths "
            f"(not in the repository); imported as the Hub repo its identity.model.repo declares, {shown(declared)} "
            "(srtctl verifies the checkpoint against it; pass --model to name another)"
        )
        return declared, None
    if len(served) == 1 and _REPO_ID.fullmatch(next(iter(served))):
        repo = next(iter(served))
        out.notes.append(
            f"{src.line(*keys)}: model.path {shown(path)} is an alias of the cluster's srtslurm.yaml model_paths "
            f"(not in the repository); imported as the Hub repo its served-model-name names, {shown(repo)} "
            "(pass --model to name another)"
        )
        return repo, None
    if not served:
        why = "neither identity.model.repo nor a served-model-name names the model"
    elif len(served) == 1:
        why = f"its served-model-name {shown(next(iter(served)), 60)} is not a Hub repo id"
    else:
        why = "its roles serve different names"
    raise src.fail(
        keys,
        f"model.path {shown(path)} is an alias of the cluster's srtslurm.yaml model_paths (not in the repository), "
        f"and {why}",
        "pass --model owner/name, or put the cluster's srtslurm.yaml beside the recipe",
    )


#: A full commit sha, the only revision srt-slurm's identity pins that autobench pins as written.
_FULL_SHA = re.compile(r"[0-9a-f]{40}")


def _identity(src: Src, recipe: dict[str, Any], *, path_is_hf: bool, out: Imported) -> None:
    """``identity:`` (srt-slurm ``IdentityConfig``: what should be running, verified at run time,
    never used to launch). ``model.revision`` is the revision the model directory holds: carried
    when the imported model is the declared repo read from a directory (an alias or a path; with
    ``hf:`` vLLM downloads the default branch, so it is noted); the container image is carried when
    it is the one launched; ``frameworks`` is noted."""
    ident = src.get(("identity",), dict, {})
    declared = _identity_repo(src)
    revision = src.get(("identity", "model", "revision"), str)
    for key in ident:
        where = src.line("identity", key)
        if key == "model":
            for sub in src.get(("identity", "model"), dict, {}):
                if sub not in ("repo", "revision"):
                    out.notes.append(
                        f"{src.line('identity', 'model', sub)}: not carried: identity.model.{shown(sub, 40)} "
                        "(not a key of the srt-slurm format)"
                    )
            if declared is not None and declared != recipe["model"]["repo"]:
                out.notes.append(
                    f"{src.line('identity', 'model', 'repo')}: not carried: identity.model.repo {shown(declared)} "
                    f"(the recipe serves {shown(recipe['model']['repo'])})"
                )
            if revision is None or not revision.strip():
                continue
            if declared == recipe["model"]["repo"] and not path_is_hf and _FULL_SHA.fullmatch(revision.strip()):
                recipe["model"]["revision"] = revision.strip()
            else:
                why = (
                    "vLLM downloads the hf: id's default branch"
                    if path_is_hf and declared == recipe["model"]["repo"]
                    else "not a full 40-hex commit sha"
                    if declared == recipe["model"]["repo"]
                    else "of another model"
                )
                out.notes.append(
                    f"{src.line('identity', 'model', 'revision')}: not carried: identity.model.revision ({why})"
                )
        elif key == "container":
            image = src.get(("identity", "container", "image"), str)
            for sub in src.get(("identity", "container"), dict, {}):
                if sub != "image" or image != recipe["container"]["image"]:
                    out.notes.append(
                        f"{src.line('identity', 'container', sub)}: not carried: identity.container.{shown(sub, 40)} "
                        "(recorded for reproduction; the launch runs model.container)"
                    )
        elif key == "frameworks":
            out.notes.append(f"{where}: not carried: identity.frameworks (versions srtctl checks in the running image)")
        else:
            out.notes.append(f"{where}: not carried: identity.{shown(key, 40)} (not a key of the srt-slurm format)")


def _identity_repo(src: Src) -> str | None:
    """The Hub repo ``identity.model.repo`` declares (srt-slurm ``core/schema.py``
    ``IdentityModelConfig``: the checkpoint the model directory must hold, checked by srtctl
    against the run's fingerprint and the Hub), or None when the recipe declares none."""
    keys = ("identity", "model", "repo")
    src.get(("identity",), dict)
    src.get(("identity", "model"), dict)
    repo: str | None = src.get(keys, str)
    if repo is None or not repo.strip():
        return None
    if not _REPO_ID.fullmatch(repo.strip()):
        raise src.fail(keys, f"identity.model.repo {shown(repo)} is not a Hub repo id", "write it as owner/name")
    return repo.strip()


def _served_names(cfg: dict[str, Any]) -> set[str]:
    names = set()
    for flags in cfg.values():
        if isinstance(flags, dict):
            for key in ("served-model-name", "served_model_name"):
                if isinstance(flags.get(key), str):
                    names.add(flags[key].strip())
    return names


def _srtslurm_yaml(recipe: Path) -> tuple[str, dict[str, Any]] | None:
    """(its path, its mapping) of the srtslurm.yaml srtctl would read for this recipe: the file
    ``SRTSLURM_CONFIG`` names, else one in the recipe's folder or a folder above it."""
    import os

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    named = os.environ.get("SRTSLURM_CONFIG")
    candidates = [Path(named)] if named else [d / "srtslurm.yaml" for d in recipe.resolve().parents]
    for candidate in candidates:
        try:
            if not candidate.is_file() or candidate.stat().st_size > 1024 * 1024:
                continue
            data = YAML(typ="safe").load(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, YAMLError, ValueError):
            continue
        if isinstance(data, dict):
            return str(candidate), data
    return None


def _flag_map(flags: dict[str, Any]) -> list[str]:
    """srt-slurm's flag map as vLLM argv: ``key: true`` the flag alone, false/null omitted."""
    words: list[str] = []
    for key, value in flags.items():
        flag = "--" + str(key)
        if value is True:
            words.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (dict, list)):
            words += [flag, json.dumps(value, separators=(",", ":"))]
        else:
            words += [flag, str(value)]
    return words

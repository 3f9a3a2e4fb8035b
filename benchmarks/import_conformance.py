"""`autobench import` against real public recipe repositories: how much imports whole.

    python benchmarks/import_conformance.py DIR... [--show N] [--json]

Each DIR is a checkout of a public repository (kept outside this repository, e.g. under a
scratch folder; see docs/import.md for the list and commits).  Every recipe-like file in it
is sniffed for its format *by this script* (not by the importer), then imported with
``autobench.recipe.importer.convert``, validated and compiled (every cell), and compared with
what the source's own launcher would start.  The reference launch is written here from each
launcher's code, independently of the importer:

- eugr (``run-recipe.py``): ``command.format(**defaults)``; ``env`` exported; the script runs
  through bash in a container started with ``--entrypoint=`` (cleared) and the HF cache mounted;
  ``--distributed-executor-backend`` stripped (no-Ray is the default); solo unless
  ``cluster_only``, a cluster of one GPU per DGX Spark node (TP x PP nodes).
- sparkrun (``runtimes/base.py``, RECIPES.md): placeholders from ``defaults`` + ``{model}``,
  unresolved ones left as they are; ``bash -c <command>``; nodes = tp x pp x dp from the config
  chain (one GPU per node), unknown when none is set (sparkrun then uses every host given);
  ``runtime`` other than vLLM is another engine.
- vllm-project/recipes (``src/lib/command-synthesis.js``): ``base_args`` + non-opt-in features'
  args (a feature with ``modes`` contributes its ``default_mode``'s args); TP from the hardware
  (single_node_tp: the node's GPUs) -- run here as a user with ``--gpus-per-node 8``.
- InferenceX master configs: one entry per model/framework; non-vLLM entries are skipped.
- docker compose: the image's entrypoint (``vllm serve`` in vllm/vllm-openai) + ``command``,
  or ``entrypoint`` + ``command``; ``${VAR:-default}`` filled with its default.
- Kubernetes (Deployment, LeaderWorkerSet, KServe, Dynamo, AIBrix, ...): the container's
  ``command`` + ``args`` (``sh -c`` strings parsed as shell).
- production-stack Helm values: ``servingEngineSpec.modelSpec[]`` through the chart's
  ``deployment-vllm-multi.yaml`` (``vllm serve modelURL --host 0.0.0.0 --port 8000 ...``).
- srt-slurm: ``backend.vllm_config.{aggregated|prefill|decode}`` flag maps.

Per source and format it prints: files, imported whole, refused (by reason), silently wrong
(imported, but the compiled launch differs from the reference: engine, model, image, launch,
env, topology or a flag), crashes (an exception that is not an AutobenchError: exit 70), and
the share of the sources' flags carried with an equal value, and (column ``{ph}``) the files
imported with an unfilled placeholder (``{name}``, ``{{ name }}``; not ``${VAR}`` or JSON) in any
script or manifest compiled from them: the docker script (node scripts and driver when
multi-node), the Slurm job and the Kubernetes manifests of every cell.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import shlex
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ruamel.yaml import YAML  # noqa: E402

SKIP_PARTS = {".git", "node_modules", "templates", ".github", "site", "crds", "deprecated"}
#: Options a user passes for a source whose files leave something to the deployment.
SOURCE_OPTIONS: dict[str, dict[str, Any]] = {"vllm-recipes": {"hardware": "h100"}}
#: Dynamo worker flags that are Dynamo's own, not vLLM's (components/src/dynamo/vllm/args.py).
DYNAMO_ONLY = {"--is-prefill-worker", "--is-decode-worker"}
TOPOLOGY = {"--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"}
ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size"}
ALIASES |= {"-q": "--quantization", "-O": "--compilation-config", "-cc": "--compilation-config"}
ALIASES |= {"-ep": "--enable-expert-parallel", "-dcp": "--decode-context-parallel-size"}


# --------------------------------------------------------------------------- reference launches


@dataclass
class Expect:
    """How the source's own launcher would start one recipe (or entry)."""

    label: str
    engine: str = "vllm"  # the engine it starts; not "vllm" = the import must refuse it
    model: str | None = None
    revision: str | None = None  # the model revision the source pins, when it pins one
    image: str | None = None
    flags: list[tuple[str, str | None]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    nodes: int | None = 1  # None: the source leaves it to the deployment (a refusal naming --nodes)
    shell: bool = False  # the source runs its command through a shell in an image without a vllm entrypoint
    source_error: str | None = None  # the source's own launcher fails on it
    recipe: str | None = None  # the imported recipe it pairs with ("*": the file's only one)
    cell: str | None = None  # the role cell (prefill/decode) of that recipe it is compared with


def flag_key(word: str) -> str:
    """A flag's name as vLLM compares it: ``_`` and ``-`` alike before a dot, short aliases long."""
    name = word.split("=", 1)[0]
    head, dot, tail = name.partition(".")
    head = ALIASES.get(head, head)
    if head.startswith("--"):
        head = "--" + head[2:].replace("_", "-")
    return head + dot + tail


def is_flag(word: str) -> bool:
    return bool(re.match(r"^--?[A-Za-z]", word))


#: vLLM flags of several words (argparse nargs="+").
MANY = {"--served-model-name", "--lora-modules", "--allowed-origins", "--middleware"}


def pairs(words: list[str]) -> list[tuple[str, str | None]]:
    """[(flag, value or None)]: a flag takes the next word when it is not a flag itself (all
    the following ones for a flag of several words)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        w = words[i]
        if not is_flag(w):
            if out and out[-1][0] in MANY and out[-1][1] is not None:
                out[-1] = (out[-1][0], f"{out[-1][1]} {w}")
            else:
                out.append(("", w))
            i += 1
            continue
        if "=" in w and w.startswith("--"):
            out.append((flag_key(w), w.split("=", 1)[1]))
            i += 1
        elif i + 1 < len(words) and not is_flag(words[i + 1]):
            out.append((flag_key(w), words[i + 1]))
            i += 2
        else:
            out.append((flag_key(w), None))
            i += 1
    return out


def vllm_argv(words: list[str]) -> tuple[str, str | None, list[str], dict[str, str]] | None:
    """(engine, model, words after the model, leading VAR=value env) of a command's words."""
    env: dict[str, str] = {}
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        k, v = words[0].split("=", 1)
        env[k] = v
        words = words[1:]
    for i in range(len(words) - 1):
        if Path(words[i]).name == "vllm" and words[i + 1] == "serve":
            rest = words[i + 2 :]
            if rest and not is_flag(rest[0]):
                return "vllm", rest[0], rest[1:], env
            model = _model_flag(rest)  # `vllm serve --model X`: X is the model
            rest = [w for k, w in enumerate(rest) if w != "--model" and (k == 0 or rest[k - 1] != "--model")]
            rest = [w for w in rest if not w.startswith("--model=")]
            return "vllm", model, rest, env
        if words[i] == "-m" and words[i + 1].startswith("vllm.entrypoints"):
            rest = words[i + 2 :]
            return "vllm", _model_flag(rest), rest, env
        if words[i] == "-m" and words[i + 1] == "dynamo.vllm":  # Dynamo's worker: vLLM's engine args
            return vllm_argv(["vllm", "serve", *[w for w in words[i + 2 :] if w not in DYNAMO_ONLY]])
    if not words:
        return None
    first = Path(words[0]).name
    for w in words:
        if w in ("sglang", "sglang.launch_server") or w.startswith("sglang"):
            return "sglang", None, [], env
    return first, None, [], env


def _model_flag(rest: list[str]) -> str | None:
    for flag, value in pairs(rest):
        if flag == "--model":
            return value
    return None


def shell_words(text: str) -> list[str]:
    return shlex.split(text.replace("\\\r\n", " ").replace("\\\n", " "), comments=True)


def world(flags: list[tuple[str, str | None]]) -> int:
    n = 1
    for f, v in flags:
        if f in ("--tensor-parallel-size", "--pipeline-parallel-size") and v and v.isdigit():
            n *= int(v)
    return n


def eugr_expect(d: dict[str, Any], label: str) -> list[Expect]:
    e = Expect(label, image=str(d.get("container")), shell=True)
    params = dict(d.get("defaults") or {})
    if d.get("solo_only"):  # run-recipe.py: solo mode defaults tensor_parallel to 1
        params["tensor_parallel"] = 1
    try:
        command = str(d["command"]).format(**params)
    except (KeyError, IndexError, ValueError) as exc:
        e.source_error = f"run-recipe.py fails: {exc!r}"
        return [e]
    command = re.sub(r"--distributed-executor-backend(?:=|\s+)\S+", "", command)
    parsed = vllm_argv(shell_words(command))
    if parsed is None:
        e.source_error = "empty command"
        return [e]
    e.engine, e.model, rest, e.env = parsed
    e.env = {**{str(k): str(v) for k, v in (d.get("env") or {}).items()}, **e.env}
    e.flags = [p for p in pairs(rest) if p[0] not in TOPOLOGY]
    w = world(e.flags)
    e.nodes = (w if w > 1 else None) if d.get("cluster_only") else (1 if d.get("solo_only") or w == 1 else w)
    return [e]


def _sparkrun_fill(text: str, values: dict[str, Any]) -> str:
    for _ in range(10):  # iterative, unresolved placeholders left as they are
        new = re.sub(
            r"\{([A-Za-z_][A-Za-z0-9_]*)\}",
            lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0),
            text,
        )
        if new == text:
            break
        text = new
    return text


def sparkrun_expect(d: dict[str, Any], label: str) -> list[Expect]:
    e = Expect(label, image=str(d.get("container")) if d.get("container") else None, shell=True)
    runtime = str(d.get("runtime") or "vllm")
    defaults = dict(d.get("defaults") or {})
    values = {**{k: v for k, v in defaults.items()}, "model": d.get("model")}
    values = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in values.items()}
    if not runtime.startswith("vllm") and runtime != "eugr-vllm":
        e.engine = runtime
        return [e]
    command = d.get("command")
    if not command:
        e.source_error = "no command: sparkrun generates it from defaults (not compared here)"
        return [e]
    parsed = vllm_argv(shell_words(_sparkrun_fill(str(command), values)))
    if parsed is None:
        e.source_error = "empty command"
        return [e]
    e.engine, e.model, rest, e.env = parsed
    e.env = {**{str(k): str(v) for k, v in (d.get("env") or {}).items()}, **e.env}
    e.flags = [p for p in pairs(rest) if p[0] not in TOPOLOGY]
    keys = [defaults.get(k) for k in ("tensor_parallel", "pipeline_parallel", "data_parallel")]
    if any(v is not None for v in keys):
        n = 1
        for v in keys:
            n *= int(v) if str(v).isdigit() else 1
        e.nodes = n
    elif d.get("solo_only") or d.get("max_nodes") == 1 or d.get("mode") == "solo":
        e.nodes = 1
    else:
        e.nodes = None
    return [e]


#: The site's hardware profile the run uses (vllm-project/recipes taxonomy.yaml ``h100``: "NVIDIA H100
#: 80GB NVLink (8-GPU node)").
HARDWARE = {"id": "h100", "gpu_count": 8, "vram_gb": 640, "generation": "hopper", "brand": "nvidia"}


def _hw_value(value: Any) -> Any:
    """command-synthesis.js hardwareKeyedValue: exact GPU id > generation > brand > default."""
    if not isinstance(value, dict):
        return value
    for key in (HARDWARE["id"], HARDWARE["generation"], HARDWARE["brand"], "default"):
        if key in value:
            return value[key]
    return None


def site_parallel(d: dict[str, Any], variant: dict[str, Any]) -> list[tuple[str, str | None]] | None:
    """The parallel flags the site emits on HARDWARE at one node (recommendStrategy,
    resolveSingleNodeTp, autoFitTp); None when the strategy spans nodes."""
    compatible = list(d.get("compatible_strategies") or [])
    for name, gate in (d.get("strategy_hardware") or {}).items():
        if name not in compatible and isinstance(gate, dict) and "supported" in gate.values():
            compatible.append(name)
    explicit = d.get("default_strategy")
    strategy = (
        explicit
        if explicit and explicit in compatible
        else "single_node_tp"
        if "single_node_tp" in compatible
        else (compatible[0] if compatible else "single_node_tp")
    )
    gpus = HARDWARE["gpu_count"]
    if not strategy.startswith("single_node_"):
        return None
    if strategy == "single_node_dep":
        return [("--data-parallel-size", str(gpus)), ("--enable-expert-parallel", None)]
    size = gpus
    if strategy == "single_node_tp":
        declared = _hw_value(variant.get("tp"))
        override = _hw_value(((d.get("strategy_overrides") or {}).get(strategy) or {}).get("tp"))
        vram = variant.get("vram_minimum_gb") or 0
        if isinstance(declared, int) and declared > 0:
            size = min(declared, gpus)
        elif isinstance(override, int) and override > 0:
            size = min(override, gpus)
        elif vram and HARDWARE["vram_gb"] / gpus >= vram:
            size = 1
    flags: list[tuple[str, str | None]] = [("--tensor-parallel-size", str(size))]
    return flags + ([("--enable-expert-parallel", None)] if strategy == "single_node_tep" else [])


def vllm_recipes_expect(d: dict[str, Any], label: str) -> list[Expect]:
    m = d.get("model") or {}
    default = (d.get("variants") or {}).get("default") or {}
    e = Expect(label, model=default.get("model_id") or m.get("model_id"))
    args = [str(a) for a in m.get("base_args") or []]
    opt_in = set(d.get("opt_in_features") or [])
    for name, feat in (d.get("features") or {}).items():
        if name in opt_in or not isinstance(feat, dict):
            continue
        if isinstance(feat.get("modes"), dict):
            mode = feat["modes"].get(feat.get("default_mode")) or {}
            args += [str(a) for a in mode.get("args") or []]
        args += [str(a) for a in feat.get("args") or []]
    args += [str(a) for a in default.get("extra_args") or []]
    omni = d.get("omni")
    if isinstance(omni, dict):  # resolveOmniCommand: base_args + the first task's args + --omni, no strategy
        task = (omni.get("tasks") or [{}])[0]
        task = task if isinstance(task, dict) else {}
        args = [str(a) for a in m.get("base_args") or []] + [str(a) for a in task.get("extra_args") or []]
        args += ["--port", str(omni["port"])] if omni.get("port") else []
        e.model = task.get("model_id") or e.model
        e.flags = pairs(shell_words(" ".join(shlex.quote(a) if not a.startswith("-") else a for a in args)))
        e.flags.append(("--omni", None))
        e.env = {str(k): str(v) for k, v in (m.get("base_env") or {}).items()}
        return [e]
    e.flags = pairs(shell_words(" ".join(shlex.quote(a) if not a.startswith("-") else a for a in args)))
    parallel = site_parallel(d, default)
    if parallel is None:
        e.source_error = "a multi-node strategy"
    else:
        named = {f for f, _ in parallel}
        e.flags = [p for p in e.flags if p[0] not in named] + parallel
    e.env = {str(k): str(v) for k, v in (m.get("base_env") or {}).items()}
    e.nodes = 1
    return [e]


def inferencex_expect(d: dict[str, Any], label: str) -> list[Expect]:
    out = []
    for name, entry in d.items():
        if not isinstance(entry, dict):
            continue
        fw = str(entry.get("framework"))
        e = Expect(f"{label}#{name}", model=entry.get("model"), image=entry.get("image"))
        e.engine = "vllm" if fw in ("vllm", "vllm-disagg", "dynamo-vllm", "llmd-vllm") else fw
        rows = [
            r for s in (entry.get("scenarios") or {}).values() for sc in s or [] for r in sc.get("search-space") or []
        ]
        if rows and "tp" in rows[0]:
            e.flags = [("--tensor-parallel-size", str(rows[0]["tp"]))]
        e.nodes = None if entry.get("multinode") else 1
        out.append(e)
    return out


def _fill_compose(text: str) -> str:
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}", lambda m: m.group(2) or "", text)


def _words(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [_fill_compose(str(v)) for v in value]
    return shell_words(_fill_compose(str(value)))


def _shell_unwrap(words: list[str]) -> tuple[list[str], bool]:
    if len(words) >= 3 and Path(words[0]).name in ("sh", "bash") and words[1] in ("-c", "-lc", "-ec"):
        script = words[2]
        for part in re.split(r"\n|&&|;", script):
            w = shell_words(part) if part.strip() else []
            while w and w[0] == "exec":
                w = w[1:]
            if w and (("vllm" in w and "serve" in w) or any("vllm.entrypoints" in x for x in w)):
                return w, True
        return shell_words(script.split("\n")[0]) if script.strip() else [], True
    return words, False


def _env_of(env: Any) -> dict[str, str]:
    if isinstance(env, dict):
        return {str(k): _fill_compose(str(v)) for k, v in env.items() if v is not None}
    out = {}
    for item in env or []:
        if isinstance(item, dict) and "name" in item and "value" in item:
            out[str(item["name"])] = str(item["value"])
        elif isinstance(item, str) and "=" in item:
            k, v = item.split("=", 1)
            out[k] = _fill_compose(v)
    return out


def _image_entrypoint(image: str) -> list[str]:
    return ["vllm", "serve"] if "vllm-openai" in image or "vllm/" in image else []


def container_expect(c: dict[str, Any], label: str, nodes: int | None = 1) -> Expect:
    image = _fill_compose(str(c.get("image") or ""))
    e = Expect(label, image=image or None, nodes=nodes)
    entry = _words(c.get("entrypoint") if "entrypoint" in c else c.get("command") if "args" in c else None)
    args = _words(c.get("args") if "args" in c else c.get("command"))
    if "args" not in c and "entrypoint" not in c and "containers" not in label and isinstance(c.get("command"), list):
        pass
    words = (
        (entry or _image_entrypoint(image)) + args
        if entry or "args" in c or "entrypoint" in c
        else (
            (_image_entrypoint(image) + args)
            if not (args and (args[0] in ("vllm", "python", "python3", "sh", "bash", "/bin/sh", "/bin/bash")))
            else args
        )
    )
    words, _ = _shell_unwrap(words)
    parsed = vllm_argv(words)
    if parsed is None:
        e.engine = "none"
        return e
    e.engine, e.model, rest, extra_env = parsed
    e.env = {**_env_of(c.get("environment") or c.get("env")), **extra_env}
    e.flags = [p for p in pairs(rest) if p[0] not in TOPOLOGY]
    return e


def compose_expect(d: dict[str, Any], label: str) -> list[Expect]:
    out = []
    for name, svc in (d.get("services") or {}).items():
        if isinstance(svc, dict) and "vllm" in json.dumps(svc, default=str).lower():
            e = container_expect(svc, f"{label}#{name}")
            if e.engine not in ("none",):
                out.append(e)
    return out


def _containers(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("containers", "initContainers") and isinstance(v, list) and k == "containers":
                found += [(f"{path}.{k}[{i}]", c) for i, c in enumerate(v) if isinstance(c, dict)]
            elif k == "extraPodSpec" and isinstance(v, dict) and isinstance(v.get("mainContainer"), dict):
                found.append((f"{path}.{k}.mainContainer", v["mainContainer"]))
            else:
                found += _containers(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _containers(v, f"{path}[{i}]")
    return found


def k8s_expect(d: dict[str, Any], label: str) -> list[Expect]:
    out = []
    size = ((d.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("size")
    for where, c in _containers(d):
        text = json.dumps(c, default=str)
        if "vllm" not in text.lower() or where.endswith("workerTemplate.spec.containers[0]") and size:
            continue
        if "serve" not in text and "vllm.entrypoints" not in text and "dynamo.vllm" not in text:
            continue
        e = container_expect(c, f"{label}#{where}", nodes=int(size) if isinstance(size, int) else 1)
        out.append(e)
    return out


def helm_expect(d: dict[str, Any], label: str) -> list[Expect]:
    out = []
    for i, spec in enumerate(((d.get("servingEngineSpec") or {}).get("modelSpec")) or []):
        if not isinstance(spec, dict):
            continue
        e = Expect(f"{label}#modelSpec[{i}]", model=spec.get("modelURL"))
        e.image = f"{spec.get('repository')}:{spec.get('tag')}"
        flags = ["--host", "0.0.0.0", "--port", "8000"]
        if spec.get("enableLoRA"):
            flags.append("--enable-lora")
        if spec.get("enableTool"):
            flags.append("--enable-auto-tool-choice")
        if spec.get("toolCallParser"):
            flags += ["--tool-call-parser", str(spec["toolCallParser"])]
        cfg = spec.get("vllmConfig")
        if isinstance(cfg, dict):
            if "enableChunkedPrefill" in cfg:
                flags.append(
                    "--enable-chunked-prefill" if cfg["enableChunkedPrefill"] else "--no-enable-chunked-prefill"
                )
            flags.append("--enable-prefix-caching" if cfg.get("enablePrefixCaching") else "--no-enable-prefix-caching")
            for key, flag in (
                ("maxModelLen", "--max-model-len"),
                ("dtype", "--dtype"),
                ("tensorParallelSize", "--tensor-parallel-size"),
                ("maxNumSeqs", "--max-num-seqs"),
                ("gpuMemoryUtilization", "--gpu_memory_utilization"),
                ("maxLoras", "--max_loras"),
                ("runner", "--runner"),
                ("convert", "--convert"),
            ):
                if key in cfg:
                    flags += [flag, str(cfg[key])]
            flags += [str(a) for a in cfg.get("extraArgs") or []]
        if spec.get("modelRevision"):
            flags += ["--revision", str(spec["modelRevision"])]
        e.flags = pairs(flags)
        e.env = {str(x["name"]): str(x["value"]) for x in spec.get("env") or [] if isinstance(x, dict) and "value" in x}
        e.nodes = 1
        out.append(e)
    return out


def srt_model(path: Any, cfg: dict[str, Any], identity: Any = None) -> str | None:
    """The model srtctl serves for ``model.path`` (core/runtime.py: ``hf:`` ids; an alias of the
    cluster's srtslurm.yaml ``model_paths``, not in the checkout: the directory holding the
    checkpoint ``identity.model.repo`` declares (core/schema.py IdentityModelConfig, verified
    against the run's fingerprint), else the one the roles' ``--served-model-name`` names, when
    they name one Hub repo)."""
    path = str(path or "")
    if path.startswith("hf:"):
        return path[3:]
    if re.fullmatch(r"[\w.-]+/[\w.-]+", path):
        return path
    declared = ((identity or {}).get("model") or {}).get("repo") if isinstance(identity, dict) else None
    if isinstance(declared, str) and re.fullmatch(r"[\w.-]+/[\w.-]+", declared):
        return declared
    served = {
        str(f.get("served-model-name") or f.get("served_model_name"))
        for f in cfg.values()
        if isinstance(f, dict) and (f.get("served-model-name") or f.get("served_model_name"))
    }
    return served.pop() if len(served) == 1 and re.fullmatch(r"[\w.-]+/[\w.-]+", next(iter(served))) else None


def srt_expect(d: dict[str, Any], label: str) -> list[Expect]:
    backend = d.get("backend") or {}
    model = d.get("model") or {}
    cfg = backend.get("vllm_config") or {}
    out = []
    expected_model = srt_model(model.get("path"), cfg, d.get("identity"))
    ident = d.get("identity") if isinstance(d.get("identity"), dict) else {}
    declared = (ident.get("model") or {}) if isinstance(ident.get("model"), dict) else {}
    # the model directory holds identity's revision (verified at run time); an hf: id is
    # downloaded by vLLM at its default branch
    from_dir = not str(model.get("path") or "").startswith("hf:")
    revision = declared.get("revision") if from_dir and declared.get("repo") == expected_model else None
    roles = [r for r in cfg if r in ("prefill", "decode") and isinstance(cfg[r], dict)]
    for role, flags in cfg.items():
        if not isinstance(flags, dict):
            continue
        e = Expect(f"{label}#{role}", model=expected_model, image=model.get("container"), recipe="*")
        e.cell = role if len(roles) == 2 and role in roles else None
        if expected_model is None:
            e.source_error = "model.path is an alias of the cluster's srtslurm.yaml, not in the checkout"
        words: list[str] = []
        for k, v in flags.items():
            if v is True:
                words.append("--" + str(k))
            elif v is False:
                continue
            else:
                words += ["--" + str(k), json.dumps(v) if isinstance(v, (dict, list)) else str(v)]
        e.flags = pairs(words)
        e.env = {str(k): str(v) for k, v in (backend.get(f"{role}_environment") or {}).items()}
        # worker_stage.py: the recipe's top-level environment over the role's
        e.env.update({str(k): str(v) for k, v in (d.get("environment") or {}).items()})
        e.revision = str(revision) if revision else None
        e.nodes = None
        out.append(e)
    return out


SNIFF = [
    ("eugr", lambda d, p: str(d.get("recipe_version", "")).strip() == "1" and "command" in d, eugr_expect),
    (
        "sparkrun",
        lambda d, p: (
            str(d.get("recipe_version", "")).strip() not in ("", "1")
            and "model" in d
            or ("runtime" in d and ("command" in d or "defaults" in d) and "model" in d)
        ),
        sparkrun_expect,
    ),
    ("vllm-recipes", lambda d, p: isinstance(d.get("model"), dict) and "model_id" in d["model"], vllm_recipes_expect),
    (
        "inferencex",
        lambda d, p: (
            "master" in p.name
            and any(
                isinstance(v, dict) and "framework" in v and "search-space" in json.dumps(v, default=str)
                for v in d.values()
            )
        ),
        inferencex_expect,
    ),
    ("compose", lambda d, p: isinstance(d.get("services"), dict), compose_expect),
    (
        "helm-values",
        lambda d, p: isinstance((d.get("servingEngineSpec") or {}).get("modelSpec"), list),
        helm_expect,
    ),
    ("srt-slurm", lambda d, p: isinstance((d.get("backend") or {}).get("vllm_config"), dict), srt_expect),
    ("kubernetes", lambda d, p: "kind" in d and "apiVersion" in d, k8s_expect),
]
DEPLOYMENT = {"compose", "helm-values", "srt-slurm", "kubernetes", "llm-d"}


def sniff(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """[(format, document)] of a file (several for a multi-document Kubernetes file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if len(text) > 2_000_000 or "vllm" not in text.lower():
        return []
    try:
        docs = [d for d in YAML(typ="safe").load_all(text) if isinstance(d, dict)]
    except Exception:
        return []
    out = []
    for d in docs:
        for fmt, test, _ in SNIFF:
            try:
                ok = test(d, path)
            except Exception:
                ok = False
            if ok:
                out.append((fmt, d))
                break
    if (
        "llm-d" in str(path)
        and "scenario" in str(path)
        and isinstance(docs[0] if docs else None, dict)
        and "scenario" in docs[0]
    ):
        out = [("llm-d", docs[0])]
    return out


def _merge(base: Any, over: Any) -> Any:
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over if over is not None else base
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(base.get(k), v) if v is not None else base.get(k)
    return out


def _llmd_layer(layer: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """render_plans.py _expand_stack_common: common to the root, and into decode/prefill/... for
    the keys they own in defaults.yaml and do not set."""
    layer = {k: v for k, v in layer.items() if k != "name"}
    common = layer.pop("common", None) or {}
    for key, value in common.items():
        for sec in ("decode", "prefill", "standalone", "fma"):
            owned = (defaults.get(sec) or {}).get(key, KeyError) if key != "enabled" else KeyError
            block = layer.setdefault(sec, {})
            if owned is KeyError or not isinstance(block, dict) or key in block:
                continue
            block[key] = {k: v for k, v in value.items() if k in owned} if isinstance(owned, dict) else value
    return _merge(layer, common)


def llm_d_expect(d: dict[str, Any], label: str, path: Path) -> list[Expect]:
    """Each modelservice stack as llm-d-benchmark renders it: defaults.yaml + shared + stack
    (render_plans.py), the command of _macros.j2 build_vllm_command with the pod's env
    (build_ms_env_vars), images.vllm, the model the download job fetches (huggingfaceId)."""
    defaults_file = next(
        (
            q / "config/templates/values/defaults.yaml"
            for q in path.resolve().parents
            if (q / "config/templates/values/defaults.yaml").is_file()
        ),
        None,
    )
    if defaults_file is None:
        return [Expect(label, source_error="no defaults.yaml")]
    defaults = YAML(typ="safe").load(defaults_file.read_text())
    checkout = defaults_file.parents[3]
    if not (checkout / "config/templates/jinja/_macros.j2").is_file():
        return [Expect(label, source_error="no _macros.j2")]
    out = []
    stacks = [s for s in d.get("scenario") or [] if isinstance(s, dict)]
    for stack in stacks:
        v = _merge(_merge(defaults, _llmd_layer(d.get("shared") or {}, defaults)), _llmd_layer(stack, defaults))
        for key in (
            "common",
            "gateway",
            "router",
            "routing",
            "httpRoute",
            "inferenceExtension",
            "prefill",
            "decode",
            "multinode",
        ):
            if isinstance((v.get("modelservice") or {}).get(key), dict):
                v[key] = _merge(v.get(key) or {}, v["modelservice"][key])
        text = json.dumps(v)
        v = json.loads(re.sub(r"\$\{([A-Za-z_][\w-]*(?:\.[\w-]+)+)\}", lambda m, v=v: _llmd_var(v, m), text))
        name = str(stack.get("name") or path.stem)
        recipe = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
        if len(stacks) > 1:
            recipe = re.sub(r"[^a-z0-9._-]+", "-", f"{path.stem}-{name}".lower()).strip("-._")

        def on(*k: str, v: dict[str, Any] = v) -> bool:
            return _dig(v, *k) is True

        why = (
            "nok8s"
            if on("nok8s", "enabled")
            else "kustomize"
            if on("kustomize", "enabled")
            else "not modelservice"
            if not on("modelservice", "enabled")
            else "multinode"
            if on("multinode", "enabled")
            else None
        )
        img = v.get("images", {}).get("vllm", {})
        image = f"{img.get('repository')}:{img.get('tag')}"
        prefill = v.get("prefill") or {}
        roles = ["decode"] + (["prefill"] if prefill.get("enabled") is not False and prefill.get("replicas", 1) else [])
        for role in roles:
            e = Expect(f"{label}#{name}#{role}", image=image, recipe=recipe, cell=role if len(roles) > 1 else None)
            out.append(e)
            if why or "inference-sim" in image or str(img.get("tag")) == "auto":
                e.source_error = why or "not vLLM / auto tag"
                continue
            env = _llmd_env(checkout, v, role)
            script = _llmd_macros(checkout, v, f"build_vllm_command({role!r})").replace("\\\n", " ")
            # the kubelet fills `$(NAME)` in the container's command from its env before bash runs
            script = re.sub(r"\$\(([A-Za-z_]\w*)\)", lambda m, env=env: env.get(m.group(1), m.group(0)), script)
            if re.search(r"\$\([A-Za-z_]\w*\)", script.partition("vllm serve")[2]):
                e.source_error = "a $(NAME) only the running pod has"
                continue
            if "set_llmdbench_environment.py" in script.partition("vllm serve")[0]:
                # the preprocess re-exports each VLLM_* value holding ",," as the pod's own
                # (set_llmdbench_environment.py: index 0 without LeaderWorkerSet, pod 0 with it)
                env |= {k: x.split(",,")[0] for k, x in env.items() if "VLLM_" in k and ",," in x}
            script = re.sub(
                r"\$\{(\w+)\}|\$(\w+)", lambda m, env=env: env.get(m.group(1) or m.group(2), m.group(0)), script
            )
            serve = script[script.find("vllm serve") :] if "vllm serve" in script else script
            parsed = vllm_argv(shell_words(serve.replace("\n", " ")))
            if parsed is None:
                e.source_error = "no command"
                continue
            e.engine, served, rest, _ = parsed
            model = v.get("model") or {}
            if served and served.startswith(str(model.get("cacheBase")) + "/"):
                served = model.get("huggingfaceId") or model.get("name")
            e.model = served
            e.flags = [p for p in pairs(rest) if p[0] not in TOPOLOGY]
            if role == "decode":
                keep = ("VLLM_LOGGING_LEVEL", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_SERVER_DEV_MODE", "UCX_TLS")
                e.env = {k: env[k] for k in keep if k in env}
                e.env.update(
                    {
                        str(x["name"]): str(x["value"])
                        for x in (v.get(role) or {}).get("extraEnvVars") or []
                        if isinstance(x, dict) and "value" in x
                    }
                )
    return out


def _dig(node: Any, *keys: str) -> Any:
    for k in keys:
        node = node.get(k) if isinstance(node, dict) else None
    return node


def _llmd_var(v: dict[str, Any], m: re.Match[str]) -> str:
    value = _dig(v, *m.group(1).split("."))
    return m.group(0) if value is None or isinstance(value, (dict, list)) else json.dumps(str(value))[1:-1]


def _llmd_macros(checkout: Path, v: dict[str, Any], call: str) -> str:
    """``call`` (``build_vllm_command('decode')`` ...) rendered from the checkout's own
    ``config/templates/jinja/_macros.j2``, by the importer's renderer
    (``autobench.recipe.importer._llmd_macros.render``, an environment set up as
    ``render_plans.py`` ``_get_jinja_env`` sets it): the macros are the one source of truth for
    both sides, and this oracle keeps its own merge of the stack and its own reading of the script."""
    from autobench.recipe.importer._llmd_macros import render

    name, _, mode = call.partition("(")
    return render(checkout / "config/templates/jinja/_macros.j2", v, name, mode.strip("()'\""))


def _llmd_env(checkout: Path, v: dict[str, Any], role: str) -> dict[str, str]:
    """The vLLM container's env: ``_macros.j2`` ``build_ms_env_vars(role)`` rendered (the entries
    with a value), plus the parallelism env the modelservice chart adds (``parallelismEnv``:
    TP_SIZE, DP_SIZE, DP_SIZE_LOCAL; the chart is not in the checkout)."""
    items = YAML(typ="safe").load(_llmd_macros(checkout, v, f"build_ms_env_vars({role!r})")) or []
    env = {str(x["name"]): str(x["value"]) for x in items if isinstance(x, dict) and "value" in x}
    par = (v.get(role) or {}).get("parallelism") or {}
    for name, key in (("TP_SIZE", "tensor"), ("DP_SIZE", "data"), ("DP_SIZE_LOCAL", "dataLocal")):
        env.setdefault(name, str(par.get(key) if par.get(key) is not None else 1))
    return env


def expect(fmt: str, d: dict[str, Any], label: str, path: Path | None = None) -> list[Expect]:
    if fmt == "llm-d":
        return llm_d_expect(d, label, path or Path(label))
    fn = next(f for n, _, f in SNIFF if n == fmt)
    return fn(d, label)


# --------------------------------------------------------------------------- the compiled side


def same_value(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    if a is None or b is None:
        return False
    for parse in (json.loads, float):
        try:
            if parse(a) == parse(b):  # type: ignore[operator]
                return True
        except (ValueError, TypeError):
            pass
    return a.strip("'\"").lower() == b.strip("'\"").lower()


def compiled_cells(imported: Any, folder: Path) -> dict[str, Any]:
    """{cell: compiled recipe} of an imported recipe (``base`` when it has no variants or roles)."""
    from autobench.cli.import_cmds import check_imported
    from autobench.recipe.loader import load_recipe, recipe_cells

    written, _texts = check_imported(imported, folder)
    return {cell: load_recipe(written, cell).recipe for cell in recipe_cells(written)}


#: An unfilled placeholder: ``{name}`` (str.format, srt-slurm's env templating, sparkrun) or
#: ``{{ name }}`` (Jinja); not ``${NAME}`` (shell), JSON (``{"key": ...}``) or a brace list.
PLACEHOLDER = re.compile(r"(?<![$\\])\{\{?\s*[A-Za-z_][A-Za-z0-9_.-]*\s*\}\}?")


def compiled_scripts(imported: Any, folder: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """([(target, text)], [why a target refused]): every script and manifest autobench compiles
    from an imported recipe, cell by cell: the docker script (node scripts and driver when
    multi-node), the Slurm job and the Kubernetes manifests.  A target that refuses a cell by its
    own rule is skipped for that cell; the others are still read."""
    import io

    from ruamel.yaml import YAML as _Y

    from autobench.cli.import_cmds import check_imported
    from autobench.compile.k8s import manifests
    from autobench.compile.slurm import compile_slurm
    from autobench.errors import AutobenchError
    from autobench.recipe.loader import load_recipe, recipe_cells

    written, texts = check_imported(imported, folder)
    out = [("docker", t) for t in texts]
    refused: list[str] = []
    for cell in recipe_cells(written):
        loaded = load_recipe(written, cell)
        try:
            out.append(("slurm", compile_slurm(loaded)))
        except AutobenchError as exc:
            refused.append(f"slurm: {exc}")
        try:
            buf = io.StringIO()
            _Y(typ="safe").dump_all(manifests(loaded, run_id="conformance"), buf)
            out.append(("kubernetes", buf.getvalue()))
        except AutobenchError as exc:
            refused.append(f"kubernetes: {exc}")
    return out, refused


def placeholders(imported_list: list[Any], folder: Path) -> tuple[list[str], list[str]]:
    """(``target: {placeholder}`` for each unfilled placeholder in a compiled script of the file,
    the targets that refused a cell)."""
    found: list[str] = []
    refused: list[str] = []
    for imp in imported_list:
        scripts, why = compiled_scripts(imp, folder)
        refused += why
        for target, text in scripts:
            for literal in imp.literal:  # what the source's launcher passes as written
                text = text.replace(literal, "")
            for m in PLACEHOLDER.finditer(text):
                line = text[text.rfind("\n", 0, m.start()) + 1 : text.find("\n", m.end())]
                found.append(f"{target}: {m.group(0)} in {line.strip()[:120]!r}")
    return list(dict.fromkeys(found)), refused


def compiled_words(recipe: Any) -> list[str]:
    from autobench.compile.argv import docker_argv

    return [str(w) for w in docker_argv(recipe, home="/home/u")]


def launch_problem(words: list[str], recipe: Any, e: Expect) -> str | None:
    """Why the compiled docker command would not start the source's vLLM, or None."""
    image = recipe.container.image
    if image not in words:
        return "image missing from docker run"
    after = words[words.index(image) + 1 :]
    entry = None
    if "--entrypoint" in words[: words.index(image)]:
        entry = words[words.index("--entrypoint") + 1]
    elif any(w.startswith("--entrypoint=") for w in words[: words.index(image)]):
        entry = next(w for w in words if w.startswith("--entrypoint="))[13:]
    if entry == "bash" and after[:1] == ["-c"]:
        after = after[3:]
    if entry is None:
        if e.shell:
            return "the source clears the image's entrypoint and runs its command; compiled keeps the entrypoint"
        if not _image_entrypoint(image) and not recipe.launch.command:
            return "image has no vllm entrypoint"
        return None
    if after and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", after[0]):
        return f"docker would exec {after[0]!r}"
    if not after:
        return "nothing to run after the image"
    return None


def _is_vllm(e: Expect) -> bool:
    return e.engine.startswith("vllm") or e.engine == "dynamo.vllm"


def _pairs_of(imported_list: list[Any], expects: list[Expect]) -> list[tuple[Any, Expect]]:
    """Each imported recipe with the reference entry it came from."""
    vllm = [e for e in expects if _is_vllm(e)]
    if vllm and all(e.recipe for e in vllm):
        named = {i.name: i for i in imported_list}
        only = imported_list[0] if len(imported_list) == 1 else None
        return [(named.get(str(e.recipe)) or only, e) for e in vllm if named.get(str(e.recipe)) or only]
    if len(imported_list) == 1 and len(vllm) == 1:
        return [(imported_list[0], vllm[0])]
    by_entry = {e.label.split("#", 1)[-1]: e for e in expects}
    out = []
    for imp in imported_list:
        e = by_entry.get(imp.name) or next(
            (x for x in vllm if x.label.split("#")[-1].replace("_", "-").lower() in imp.name), None
        )
        if e is not None:
            out.append((imp, e))
    return out


def _in_json(value: str | None, flag: str, have: dict[str, list[str | None]]) -> bool:
    """A dotted flag (``--compilation-config.cudagraph_mode X``) carried inside its JSON config."""
    head, _, key = flag.partition(".")
    for g in have.get(head, []):
        try:
            obj = json.loads(g or "")
            for part in key.split("."):
                obj = obj[part.replace("-", "_")] if part.replace("-", "_") in obj else obj[part]
        except (ValueError, KeyError, TypeError):
            continue
        if same_value(value, obj if isinstance(obj, str) else json.dumps(obj)) or same_value(value, str(obj)):
            return True
    return False


#: Secret flags whose value the import passes by name, and the variable that carries it (vLLM's
#: api_server falls back to envs.VLLM_API_KEY; huggingface_hub reads HF_TOKEN).
BY_NAME = {"--api-key": "VLLM_API_KEY", "--hf-token": "HF_TOKEN"}


def _flag_problems(imp: Any, e: Expect, words: list[str], image: str) -> tuple[list[str], int, int]:
    """(problems, flags equal, flags) of the reference's flags against the compiled argv."""
    compiled = pairs(words[words.index(image) + 1 :]) if image in words else []
    have: dict[str, list[str | None]] = defaultdict(list)
    for f, v in compiled:
        have[f].append(v)
        if f.startswith("--no-"):
            have["--" + f[5:]].append("false")
    problems: list[str] = []
    equal = total = 0
    for f, v in e.flags:
        if not f:
            continue
        total += 1
        got = have.get(f)
        ok = got is not None and any(same_value(v, g) or (v is None and g in (None, "true")) for g in got)
        by_name = BY_NAME.get(f)  # a secret flag's value travels by name: vLLM reads VLLM_API_KEY itself
        if by_name and any(w in (by_name, f"{by_name}=") for w in words[: words.index(image)] if image in words):
            ok = True
        if ok or ("." in f and _in_json(v, f, have)):
            equal += 1
        elif any(f in note and "not carried" in note for note in imp.notes):
            problems.append(f"noted: {f}")
        else:
            problems.append(f"flag {f} {v!r} -> {got!r}")
    return problems, equal, total


def _launch_problems(base: Any, e: Expect, words: list[str]) -> list[str]:
    """Engine, model, image, launch, topology and env of the compiled recipe against the reference."""
    problems = []
    if e.model and base.model.repo != e.model:
        problems.append(f"model {base.model.repo} != {e.model}")
    if e.revision and base.model.revision != e.revision:
        problems.append(f"revision {base.model.revision} != {e.revision}")
    if e.image and base.container.image != e.image:
        problems.append(f"image {base.container.image} != {e.image}")
    lp = launch_problem(words, base, e)
    if lp:
        problems.append("launch: " + lp)
    if e.nodes is not None and base.topology.nodes != e.nodes:
        problems.append(f"nodes {base.topology.nodes} != {e.nodes}")
    env_words = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in words if "=" in w}
    for k, v in e.env.items():
        if k not in base.secrets and str(base.env.get(k)) != v and env_words.get(k) != v:
            problems.append(f"env {k}")
    return problems


def check(imported_list: list[Any], expects: list[Expect], folder: Path) -> tuple[list[str], int, int]:
    """(problems, flags equal, flags in source) of one file's import against its references."""
    problems: list[str] = []
    equal = total = 0
    names = {getattr(i, "name", "") for i in imported_list}
    for e in expects:
        if not _is_vllm(e) and e.label.split("#")[-1] in names:
            problems.append(f"{e.label}: engine {e.engine} imported as vLLM")
    for imp, e in _pairs_of(imported_list, expects):
        cells = compiled_cells(imp, folder)
        if e.cell is not None and e.cell not in cells:
            problems.append(f"{e.label}: no {e.cell} cell")
            continue
        base = cells[e.cell] if e.cell is not None else next(iter(cells.values()))
        words = compiled_words(base)
        problems += _launch_problems(base, e, words)
        found, eq, tot = _flag_problems(imp, e, words, base.container.image)
        problems += found
        equal += eq
        total += tot
    return problems, equal, total


# --------------------------------------------------------------------------- the run


def candidates(root: Path) -> list[Path]:
    files = []
    for p in sorted(root.rglob("*")):
        if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file():
            continue
        rel = p.relative_to(root).parts
        if any(part in SKIP_PARTS for part in rel[:-1]) or "test" in rel[0]:
            continue
        files.append(p)
    return files


def import_file(path: Path, fmt: str, opts: dict[str, Any]) -> list[Any]:
    from autobench.recipe.importer import convert

    params = inspect.signature(convert).parameters
    kwargs = {k: v for k, v in opts.items() if k in params}
    return convert(path, **kwargs)


def cli_exit(path: Path, opts: dict[str, Any], folder: Path) -> tuple[int, int]:
    """(exit code, stderr lines) of ``autobench import PATH -o FOLDER [options]``, in-process."""
    import contextlib
    import io

    from autobench.cli import main as cli_main

    argv = ["import", str(path), "-o", str(folder / "cli-out")]
    for key, flag in (
        ("gpus_per_node", "--gpus-per-node"),
        ("model", "--model"),
        ("nodes", "--nodes"),
        ("hardware", "--hardware"),
    ):
        if opts.get(key) is not None:
            argv += [flag, str(opts[key])]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli_main(argv)
        except SystemExit as exc:  # click's own exit
            code = int(exc.code or 0)
        except Exception:  # noqa: BLE001 - what the CLI let through is what this counts
            code = 70
    return code, len(err.getvalue().strip().splitlines())


def reason_of(message: str) -> str:
    m = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S*|\b\d+(\.\d+)?\b", "…", message)
    return " ".join(m.split())[:90]


@dataclass
class Tally:
    """Counts per (source, format), refusal reasons, and examples per class."""

    rows: dict[tuple[str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    reasons: dict[tuple[str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def outcome(
    tally: Tally,
    key: tuple[str, str],
    where: str,
    fmt: str,
    path: Path,
    opts: dict[str, Any],
    expects: list[Expect],
    folder: Path,
) -> None:
    """Import one file, check it against its references, count what happened."""
    from autobench.errors import AutobenchError

    row = tally.rows[key]
    try:
        imported = import_file(path, str(opts.pop("fmt")), opts)
        problems, eq, tot = check(imported, expects, folder)
    except AutobenchError as exc:
        row["refused"] += 1
        tally.reasons[key][reason_of(str(exc).split(": ", 1)[-1])] += 1
        if any(_is_vllm(e) for e in expects) and not any(e.source_error or e.nodes is None for e in expects):
            tally.examples[f"refused {fmt}"].append(f"{where}: {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - a crash is what this counts
        row["crash"] += 1
        tally.examples[f"crash {fmt}"].append(f"{where}: {type(exc).__name__}: {exc}"[:300])
        return
    row["flags_total"] += tot
    row["flags_equal"] += eq
    unfilled, refused = placeholders(imported, folder)
    if refused:  # a target refuses a cell by its own rule: the other targets were still read
        tally.examples["compile target refused"].append(f"{where}: {refused[0]}"[:300])
    if unfilled:
        row["placeholder"] += 1
        tally.examples["unfilled placeholder in a compiled script"].append(f"{where}: " + "; ".join(unfilled[:3]))
    silent = [p for p in problems if not p.startswith("noted: ")]
    if silent:
        row["silently_wrong"] += 1
        tally.examples[f"wrong {fmt}"].append(f"{where}: " + "; ".join(silent[:4]))
    elif problems:
        row["noted"] += 1
        tally.examples[f"noted {fmt}"].append(f"{where}: " + "; ".join(problems[:4]))
    else:
        row["whole"] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--show", type=int, default=3, help="examples printed per class")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cli", action="store_true", help="also run `autobench import FILE` on each file: exit codes")
    ap.add_argument(
        "--name-models",
        action="store_true",
        help="pass --model for srt-slurm files whose model.path is an alias (as their user would)",
    )
    args = ap.parse_args(argv)

    tally = Tally()
    rows, reasons, examples = tally.rows, tally.reasons, tally.examples
    cli_codes: Counter[int] = Counter()
    cli_done: set[str] = set()
    slowest: tuple[float, str] = (0.0, "")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        for root in args.dirs:
            source = root.name
            for path in candidates(root):
                for fmt, doc in sniff(path):
                    key = (source, fmt)
                    rel = str(path.relative_to(root))
                    try:
                        expects = expect(fmt, doc, rel, path)
                    except Exception as exc:  # the reference itself cannot read it: not counted
                        examples["reference-failed"].append(f"{source}/{rel}: {exc!r}")
                        continue
                    if not expects:  # no vLLM container/service in it: not a recipe-like file
                        continue
                    rows[key]["files"] += 1
                    rows[key]["entries"] += len(expects)
                    opts: dict[str, Any] = {"fmt": "auto", **SOURCE_OPTIONS.get(fmt, {})}
                    alias = str((doc.get("model") or {}).get("path", "")) if fmt == "srt-slurm" else ""
                    if args.name_models and alias and "/" not in alias:
                        opts["model"] = f"srt-slurm-alias/{re.sub(r'[^A-Za-z0-9._-]', '-', alias)}"
                    folder = Path(tempfile.mkdtemp(dir=tmp))
                    if args.cli and str(path) not in cli_done:
                        cli_done.add(str(path))
                        t0 = time.monotonic()
                        code, lines = cli_exit(path, {k: v for k, v in opts.items() if k != "fmt"}, folder)
                        slowest = max(slowest, (time.monotonic() - t0, f"{source}/{rel}"))
                        cli_codes[code] += 1
                        if code not in (0, 2) or (code != 0 and lines != 1):
                            examples["cli not 0 nor one located line"].append(
                                f"{source}/{rel}: exit {code}, {lines} lines"
                            )
                    outcome(tally, key, f"{source}/{rel}", fmt, path, opts, expects, folder)
    elapsed = time.monotonic() - started
    if args.json:
        print(
            json.dumps(
                {
                    "rows": {f"{s}|{f}": dict(c) for (s, f), c in rows.items()},
                    "reasons": {f"{s}|{f}": dict(c) for (s, f), c in reasons.items()},
                },
                indent=1,
            )
        )
        return 0
    print(
        f"{'source':44} {'format':13} {'files':>5} {'whole':>5} {'noted':>5} {'refused':>7} {'wrong':>5} {'crash':>5} "
        f"{'flags =':>9} {'{ph}':>4}"
    )
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    for (source, fmt), c in sorted(rows.items()):
        group = "deployment" if fmt in DEPLOYMENT else "claimed"
        totals[group].update(c)
        ft = c["flags_total"]
        share = f"{100 * c['flags_equal'] / ft:.0f}% of {ft}" if ft else "-"
        counts = f"{c['files']:5} {c['whole']:5} {c['noted']:5} {c['refused']:7} {c['silently_wrong']:5} {c['crash']:5}"
        print(f"{source[:44]:44} {fmt:13} {counts} {share:>9} {c['placeholder']:4}")
        for reason, n in reasons[(source, fmt)].most_common():
            print(f"{'':58}refused {n}: {reason}")
    for group, c in totals.items():
        ft = c["flags_total"]
        print(
            f"TOTAL {group}: {c['files']} files, {c['whole']} whole ({100 * c['whole'] / max(1, c['files']):.0f}%), "
            f"{c['noted']} imported with a noted difference, "
            f"{c['refused']} refused, {c['silently_wrong']} silently wrong, {c['crash']} crash, "
            f"flags equal {c['flags_equal']}/{ft} ({100 * c['flags_equal'] / max(1, ft):.1f}%), "
            f"{c['placeholder']} imported with an unfilled placeholder in a compiled script"
        )
    if args.cli:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"autobench import per file: exit codes {dict(sorted(cli_codes.items()))}")
        print(f"slowest file {slowest[0]:.1f} s ({slowest[1]}); peak memory of the whole run {peak:.0f} MiB")
    print(f"elapsed {elapsed:.0f}s")
    for cls, items in sorted(examples.items()):
        print(f"\n{cls} ({len(items)}):")
        for item in items[: args.show]:
            print("  " + item)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

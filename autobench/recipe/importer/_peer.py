"""eugr (spark-vllm-docker ``recipes/*.yaml``, ``recipe_version: "1"``) and sparkrun (v2) recipes:
a serve command template, defaults, env, mods, topology keys.

How each launcher starts vLLM (read at the commits in docs/import.md):

- eugr ``run-recipe.py`` fills the command with ``str.format(**defaults)``, writes ``export K="V"``
  lines and the command into a script, strips ``--distributed-executor-backend`` (no-Ray is its
  default; ``launch-cluster.sh`` adds ``--nnodes/--node-rank/--master-addr`` per node) and runs
  the script with bash in a container started with ``--entrypoint=`` and the HF cache mounted.
  Solo unless ``cluster_only``; a cluster is DGX Sparks, one GPU each, so TP x PP nodes.  Mods
  are folders relative to the repository root (``SCRIPT_DIR / mod``).
- sparkrun (``core/recipe.py``, ``runtimes/base.py``) fills ``{key}`` from defaults + ``{model}``
  (unresolved placeholders stay), runs ``bash -c <command>`` in the container, sizes the cluster
  as tp x pp x dp of the defaults (one GPU per Spark; none set: every host given), and resolves
  ``distributed_executor_backend: ray`` (defaults or command) to its Ray runtime, else native.
  A ``runtime`` other than vLLM is another engine.
"""

from __future__ import annotations

import shlex
from typing import Any

from autobench.recipe.importer import _benchy
from autobench.recipe.importer import _common as common
from autobench.recipe.importer._command import apply_flags, fill, parse_command, split_flags
from autobench.recipe.importer._source import MAX_NODES, Imported, Options, Src, shown

EUGR_BASE_IMAGE = "nvcr.io/nvidia/pytorch:26.08-py3"  # eugr's Dockerfile FROM; recipes do not say it

#: eugr's recipe schema (run-recipe.py's docstring): "" = carried.
EUGR_KEYS = {
    k: ""
    for k in (
        "name",
        "recipe_version",
        "container",
        "command",
        "description",
        "model",
        "mods",
        "defaults",
        "env",
        "build_args",
        "cluster_only",
        "solo_only",
    )
}
#: sparkrun's known keys (core/recipe.py _KNOWN_KEYS) and what is not carried.
SPARKRUN_KEYS = {
    **{
        k: ""
        for k in (
            "sparkrun_version",
            "recipe_version",
            "name",
            "description",
            "model",
            "model_revision",
            "runtime",
            "mode",
            "min_nodes",
            "max_nodes",
            "container",
            "defaults",
            "env",
            "command",
            "cluster_only",
            "solo_only",
            "metadata",
            "pre_exec",
            "mods",
            "build_args",
            "executor_config",
            "runtime_version",
        )
    },
    "runtime_config": "sparkrun's runtime settings",
    "benchmark": "",  # llama-benchy's depth and prefix caching carried (_benchy), the rest noted
    "post_exec": "commands run after the server is up; autobench's bench: section runs the bench",
    "post_commands": "commands run on the control machine after the server is up",
    "stop_after_post": "sparkrun's lifecycle",
    "builder": "sparkrun's image builder",
    "builder_config": "sparkrun's image builder",
    "distribution_config": "sparkrun's model/image distribution",
}
#: executor_config keys (RECIPES.md "Executor Config") and docker flags they become.
EXECUTOR_FLAGS = {"privileged": "--privileged", "network": "--network", "user": "--user"}


def convert(src: Src, fmt: str, options: Options) -> Imported:
    d = src.data
    eugr = fmt == "eugr"
    name = common.name_of(str(d.get("name") or src.path.stem))
    out = Imported(name, {}, src.path, fmt)
    runtime = src.get(("runtime",), str, "vllm").strip() or "vllm"
    if not eugr and runtime not in ("vllm", "vllm-ray", "vllm-distributed", "eugr-vllm"):
        raise src.fail(
            ("runtime",), f"runtime {shown(runtime)} is not vLLM", "autobench runs vLLM; import a vLLM recipe"
        )
    defaults = src.get(("defaults",), dict, {})
    model = src.get(("model",), str)
    values: dict[str, Any] = {**defaults, **({"model": model} if model else {})}
    container = options.image or src.get(("container",), str) or common.DEFAULT_IMAGE
    command = src.get(("command",), str)
    if command is None:
        raise src.fail(("command",), "command: the serve command is required", "write command: vllm serve {model} ...")
    solo = eugr and (src.get(("solo_only",), bool, False) or options.nodes == 1)
    if solo and values.get("tensor_parallel") not in (None, 1):
        # run-recipe.py: "In solo mode, default tensor_parallel to 1 (unless user explicitly set --tp)"
        out.notes.append(f"{src.line('defaults')}: solo: eugr runs it with tensor_parallel 1, not the default")
        values["tensor_parallel"] = 1
    text = fill(src, ("command",), command, values, style="eugr" if eugr else "sparkrun")
    parsed = parse_command(src, ("command",), text)
    parsed_model = parsed.model
    repo = common.model_ref(parsed.model or model, src, ("model",), options)
    recipe = common.base(repo, container, src, fmt)
    if options.model:
        parsed.model = None
    common.put_launch(recipe, parsed, src, ("command",), out)
    apply_flags(recipe, split_flags(parsed.args), src, ("command",), out)
    if model and parsed_model and model != parsed_model and not options.model:
        out.notes.append(
            f"{src.line('model')}: model {shown(model)} differs from the command's {shown(parsed_model)}; "
            "the command's is served"
        )
    revision = src.get(("model_revision",), str)
    if revision:
        recipe["model"]["revision"] = revision
    common.put_env(recipe, common.env_of(src, ("env",), d.get("env"), python_str=eugr), src, ("env",), out)
    recipe["container"]["volumes"] = [common.HF_CACHE_ROOT if eugr else common.HF_CACHE_SPARKRUN]
    if not eugr:
        recipe.setdefault("env", {}).setdefault("HF_HOME", "/cache/huggingface")
    common.mods(recipe, d.get("mods"), src, out, common.source_roots(src.path))
    if not eugr:
        _pre_exec(recipe, src, out)
        _executor_config(recipe, src, out)
    description = src.get(("description",), str) or src.get(("metadata", "description"), str)
    if description:
        recipe["meta"]["description"] = " ".join(description.split())[:500]
    build_args = d.get("build_args")
    if build_args:
        _eugr_build(recipe, build_args, src, out)
    _topology(recipe, src, out, eugr=eugr, defaults=defaults, command=text, options=options)
    common.account(src, out, EUGR_KEYS if eugr else SPARKRUN_KEYS)
    if not eugr and isinstance(d.get("metadata"), dict):
        common.account(
            src,
            out,
            {"description": ""} | {k: "sparkrun's VRAM estimate and listing" for k in d["metadata"]},
            within=("metadata",),
        )
    recipe["meta"]["tags"] = [fmt]
    common.bench(recipe)
    if not eugr:
        _benchy.carry(recipe, src, out)
    out.data = {"name": name, **recipe}
    return out


def _topology(
    recipe: dict[str, Any],
    src: Src,
    out: Imported,
    *,
    eugr: bool,
    defaults: dict[str, Any],
    command: str,
    options: Options,
) -> None:
    d = src.data
    size = common.world(recipe)
    executor = None
    if eugr:
        if "--distributed-executor-backend" in out.flags:
            out.flags.remove("--distributed-executor-backend")
            out.notes.append(
                f"{src.line('command')}: --distributed-executor-backend not carried: eugr's launcher strips it "
                "(no-Ray is its default)"
            )
        recipe.get("topology", {}).pop("executor", None)
        cluster = bool(src.get(("cluster_only",), bool, False))
        solo = bool(src.get(("solo_only",), bool, False))
        if cluster and size == 1 and options.nodes is None:
            raise src.fail(
                ("cluster_only",),
                "cluster_only, but the command sets no tensor or pipeline parallel size to count the nodes by",
                "pass --nodes N (eugr's cluster is DGX Sparks: one GPU per node)",
            )
        nodes = 1 if solo or size == 1 else size
        if not cluster and not solo and size > 1 and options.nodes is None:
            out.notes.append(
                f"{src.line('defaults')}: {size} Sparks for TP x PP {size}; eugr runs it solo with tensor_parallel 1 "
                "when no cluster is configured (pass --nodes 1 for that)"
            )
        gpus = 1  # DGX Spark: one GPU per node
        rule = "eugr: one DGX Spark GPU per node, TP x PP nodes"
        executor = "native"
    else:
        keys = [defaults.get(k) for k in ("tensor_parallel", "pipeline_parallel", "data_parallel")]
        nodes_n: int | None = None
        if any(v is not None for v in keys):
            nodes_n = 1
            for k, v in zip(("tensor_parallel", "pipeline_parallel", "data_parallel"), keys, strict=True):
                if v is not None:
                    nodes_n *= src.count(("defaults", k), v, f"defaults.{k}", MAX_NODES)
            if nodes_n > MAX_NODES:
                raise src.fail(("defaults",), f"{nodes_n} nodes: out of range (1 to {MAX_NODES})", "fix the defaults")
        elif src.get(("solo_only",), bool, False) or d.get("max_nodes") == 1 or d.get("mode") == "solo":
            nodes_n = 1
        for key in ("min_nodes", "max_nodes"):
            if d.get(key) is not None:
                src.count((key,), d.get(key), key, MAX_NODES)
        nodes = nodes_n  # type: ignore[assignment]
        gpus = 1  # sparkrun counts one GPU per node (compute_required_nodes)
        rule = "sparkrun: tp x pp x dp of the defaults, one GPU per node; none set means every host given"
        ray = str(defaults.get("distributed_executor_backend", "")).lower() == "ray"
        ray = ray or recipe.get("topology", {}).get("executor") == "ray"
        executor = "ray" if ray else "native"
    common.topology(
        recipe,
        src,
        out,
        nodes=nodes,
        gpus_per_node=gpus,
        executor=executor,
        options=options,
        rule=rule,
        keys=("command",),
    )


def _pre_exec(recipe: dict[str, Any], src: Src, out: Imported) -> None:
    steps = src.get(("pre_exec",), list)
    if steps is None:
        return
    for i, step in enumerate(steps):
        if isinstance(step, str):
            recipe.setdefault("launch", {}).setdefault("setup", []).append({"run": step, "name": f"pre_exec {i + 1}"})
        elif isinstance(step, dict) and "copy" in step:
            out.notes.append(
                f"{src.line('pre_exec', i)}: not carried: pre_exec copy of {shown(step.get('copy'))} "
                "(a file from the control machine; make it a mod)"
            )
        else:
            raise src.fail(("pre_exec", i), "pre_exec: each step is a command or a {copy: ...}", "write - 'command'")


def _executor_config(recipe: dict[str, Any], src: Src, out: Imported) -> None:
    cfg = src.get(("executor_config",), dict)
    if not cfg:
        return
    container = recipe["container"]
    for key, value in cfg.items():
        keys = ("executor_config", key)
        if key in ("gpus", "ipc", "shm_size") and isinstance(value, (str, int)):
            container[key] = str(value)
        elif key == "entrypoint":
            continue  # the command runs with the entrypoint cleared in any case
        elif key == "privileged" and isinstance(value, bool):
            if value:
                container.setdefault("extra_args", []).append("--privileged")
        elif key in ("network", "user") and isinstance(value, (str, int)):
            container.setdefault("extra_args", []).append(f"{EXECUTOR_FLAGS[key]}={value}")
        elif key == "cap_add" and isinstance(value, list):
            for cap in value:
                container.setdefault("extra_args", []).append(f"--cap-add={src.typed(keys, cap, str)}")
        elif key == "ulimits" and isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else [(str(v), None) for v in value]
            for name, limit in items:
                text = name if limit is None else f"{name}={limit}"
                container.setdefault("extra_args", []).append(f"--ulimit={text}")
        elif key == "volumes" and isinstance(value, (list, dict)):
            for i, vol in enumerate(value if isinstance(value, list) else [f"{k}:{v}" for k, v in value.items()]):
                out.notes.append(f"{src.line(*keys, i)}: not carried: hard-coded host path {shown(vol)}")
        elif key in ("auto_remove", "restart_policy"):
            out.notes.append(
                f"{src.line(*keys)}: not carried: executor_config.{key} (autobench starts and stops the server)"
            )
        else:
            out.notes.append(f"{src.line(*keys)}: not carried: executor_config.{shown(key, 40)} {shown(value)}")


def _eugr_build(recipe: dict[str, Any], args: Any, src: Src, out: Imported) -> None:
    if isinstance(args, list):
        words = [src.need(("build_args", i), a, (str, int, float)) for i, a in enumerate(args)]
        words = [str(w) for w in words]
    elif isinstance(args, str):
        try:
            words = shlex.split(args)
        except ValueError as exc:
            raise src.fail(("build_args",), f"build_args: {exc}", "check the quotes") from exc
    else:
        raise src.fail(("build_args",), "build_args: must be a list or a string", "write build_args: [--vllm-ref, X]")
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
            number = nxt.rstrip("/").rsplit("/", 1)[-1]
            if not (number.isascii() and number.isdigit()) or len(number) > 9 or int(number) < 1:
                raise src.fail(("build_args",), f"--apply-vllm-pr {shown(nxt)}: not a PR number", "write the PR number")
            build.setdefault("prs", []).append(int(number))
            i += 2
        else:
            out.notes.append(f"{src.line('build_args')}: not carried: build arg {shown(w)} (eugr's build script only)")
            i += 1
    out.notes.append(f"{src.line('build_args')}: build base image not stated by the source; assumed {EUGR_BASE_IMAGE}")
    recipe["build"] = build

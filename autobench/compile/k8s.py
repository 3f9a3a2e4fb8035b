"""``compile --target k8s``: Kubernetes manifests for a recipe (multi-document YAML).

- One node (``topology.nodes == 1``): a Deployment (one replica) and a Service.
- Several nodes: a LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``) of ``nodes`` pods per
  group, the leader serving and the workers joining it (``topology.executor``: ``native``
  = vLLM's ``--nnodes/--node-rank/--master-addr``, workers ``--headless``; ``ray`` = a Ray
  head on the leader and ``ray start --block`` workers), and a Service on the leader.
- The bench: an Indexed Job that waits for the Service and runs ``autobench bench``.

Every object carries the labels ``autobench.dev/recipe``, ``autobench.dev/recipe-digest``
(the first 40 hex digits; the full digest is an annotation) and ``autobench.dev/run-id``.
Secrets are referenced by name from one Kubernetes Secret (``secretKeyRef``), never
inlined.  GPUs are ``nvidia.com/gpu`` limits; the Hugging Face cache is a volume (a PVC
when named, else an emptyDir).  Pure: no I/O; deterministic for the same inputs.
"""

from __future__ import annotations

import io
import math
import re
import shlex
from typing import Any

from autobench.compile.argv import (
    Lines,
    bench_api_key_env,
    bench_lines,
    engine_flag_lines,
    model_word_list,
)
from autobench.compile.quoting import Word
from autobench.errors import RecipeError
from autobench.escape import kubernetes
from autobench.recipe.loader import LoadedRecipe
from autobench.recipe.sizes import SIZE_HINT, kubernetes_quantity
from autobench.recipe.workerhosts import NODES

LWS_API = "leaderworkerset.x-k8s.io/v1"
GPU_RESOURCE = "nvidia.com/gpu"
HF_CACHE = "/root/.cache/huggingface"
#: The lines around the result JSON at the end of the bench Job's log (docs/k8s.md).
RESULT_BEGIN = "-----autobench-result-begin-----"
RESULT_END = "-----autobench-result-end-----"
_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _base(name: str) -> str:
    """A recipe name as a DNS-1035 label stem (lowercase, digits, '-'; at most 40; a longer
    name keeps 33 characters and 6 hex of its sha256, so two long names stay apart)."""
    import hashlib

    stem = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "recipe"
    if len(stem) > 40:
        stem = stem[:33].strip("-") + "-" + hashlib.sha256(name.encode()).hexdigest()[:6]
    if not stem[0].isalpha():
        stem = "r" + stem[:39]
    return stem


def _argv(lines: Lines) -> list[str]:
    """Words as a Kubernetes argv: each value a literal for the kubelet (``escape.kubernetes``:
    ``$(HF_TOKEN)`` in a recipe stays text, never the Secret); ``~/`` paths become
    ``$(HOME)/...``, the one expansion asked for."""
    out = []
    for line in lines:
        for word in line:
            value = kubernetes(word.value)
            out.append(f"$(HOME)/{value}" if word.home else value)
    return out


def _with_host(lines: Lines) -> Lines:
    """The server must listen on the pod's interfaces for a Service to reach it."""
    out: Lines = []
    for line in lines:
        if line and line[0].value == "--host":
            out.append([Word("--host"), Word("0.0.0.0")])
        else:
            out.append(list(line))
    return out


def _gpus(recipe: Any) -> int:
    topo = recipe.topology
    if topo.gpus_per_node:
        return int(topo.gpus_per_node)
    if recipe.container.gpus:
        e = recipe.engine
        return int((e.tensor_parallel_size or 1) * (e.pipeline_parallel_size or 1) * (e.data_parallel_size or 1))
    return 0


def _check(value: str | None, what: str) -> None:
    if value is not None and (not _DNS.fullmatch(value) or len(value) > 63):
        raise RecipeError(
            f"--{what} {value[:70]!r} is not a Kubernetes name (lowercase letters, digits, '-'; at most 63)",
            hint=f"e.g. --{what} bench-team",
        )


class _Spec:
    """What every manifest shares, computed once."""

    def __init__(self, loaded: LoadedRecipe, run_id: str, namespace: str | None, secret: str, pvc: str | None):
        recipe = loaded.recipe
        self.recipe = recipe
        self.base = f"ab-{_base(recipe.name)}"
        digest = loaded.digest.split(":", 1)[-1]
        self.labels = {
            "app.kubernetes.io/name": "autobench",
            "app.kubernetes.io/instance": self.base,
            "autobench.dev/recipe": _base(recipe.name),
            "autobench.dev/recipe-digest": digest[:40],
            "autobench.dev/run-id": run_id,
        }
        self.annotations = {"autobench.dev/recipe-digest": loaded.digest, "autobench.dev/recipe-name": recipe.name}
        self.namespace = namespace
        self.secret = secret
        self.pvc = pvc
        self.port = int(recipe.engine.port)
        self.gpus = _gpus(recipe)

    def meta(self, name: str, component: str, **extra_labels: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if self.namespace:
            meta["namespace"] = self.namespace
        meta["labels"] = {**self.labels, "app.kubernetes.io/component": component, **extra_labels}
        meta["annotations"] = dict(self.annotations)
        return meta

    def env(self, names: list[str]) -> list[dict[str, Any]]:
        env: list[dict[str, Any]] = [
            {"name": name, "valueFrom": {"secretKeyRef": {"name": self.secret, "key": name}}} for name in names
        ]
        for key, value in self.recipe.env.items():
            env.append({"name": str(key), "value": kubernetes(str(value))})
        return env

    def volumes(self) -> list[dict[str, Any]]:
        cache: dict[str, Any] = {"persistentVolumeClaim": {"claimName": self.pvc}} if self.pvc else {"emptyDir": {}}
        shm: dict[str, Any] = {"medium": "Memory"}
        if self.recipe.container.shm_size:
            shm["sizeLimit"] = _quantity(self.recipe.container.shm_size)
        return [{"name": "hf-cache", **cache}, {"name": "dshm", "emptyDir": shm}]

    def server_container(self, command: list[str] | None, args: list[str], *, serving: bool) -> dict[str, Any]:
        recipe = self.recipe
        c: dict[str, Any] = {"name": "server", "image": recipe.container.image}
        if command is not None:
            c["command"] = command
        c["args"] = args
        env = self.env(list(recipe.secrets))
        if env:
            c["env"] = env
        if serving:
            c["ports"] = [{"name": "http", "containerPort": self.port, "protocol": "TCP"}]
            period = 10
            c["startupProbe"] = {
                "httpGet": {"path": "/health", "port": "http"},
                "periodSeconds": period,
                "failureThreshold": max(1, math.ceil(recipe.bench.ready_timeout_s / period)),
            }
            c["readinessProbe"] = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": period}
        if self.gpus:
            c["resources"] = {"limits": {GPU_RESOURCE: self.gpus}}
        c["volumeMounts"] = [{"name": "hf-cache", "mountPath": HF_CACHE}, {"name": "dshm", "mountPath": "/dev/shm"}]
        return c


def _quantity(size: str) -> str:
    """docker's --shm-size (``16g``, ``512m``, ``20Gi``) as a Kubernetes quantity (``16Gi``,
    ``512Mi``, ``20Gi``): the one parser, ``autobench.recipe.sizes`` (rule AB057 refuses the rest)."""
    try:
        return kubernetes_quantity(size)
    except ValueError as exc:
        raise RecipeError(f"container.shm_size: {exc}", hint=SIZE_HINT) from exc


def _serve_parts(recipe: Any) -> tuple[list[str] | None, list[str]]:
    """(command, args) of the server container: the image's entrypoint (``vllm serve``) keeps
    running with the model and flags as args, or launch.command replaces it."""
    launch = recipe.launch
    if launch.setup:
        raise RecipeError(
            "launch.setup steps are not supported by compile --target k8s",
            hint="bake the setup into the image, or use --target full / slurm",
        )
    flags = _argv([model_word_list(recipe)] + _with_host(engine_flag_lines(recipe)))
    if launch.is_default:
        return None, flags
    return [kubernetes(word) for word in [*launch.prefix, *launch.command]], flags


def _service(spec: _Spec, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": spec.meta(spec.base, "server"),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": spec.port, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _deployment(spec: _Spec) -> tuple[dict[str, Any], dict[str, str]]:
    command, args = _serve_parts(spec.recipe)
    selector = {"app.kubernetes.io/instance": spec.base, "app.kubernetes.io/component": "server"}
    pod_meta = {"labels": {**spec.labels, "app.kubernetes.io/component": "server"}, "annotations": spec.annotations}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": spec.meta(spec.base, "server"),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},  # never two servers on the GPUs at once
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": pod_meta,
                "spec": {
                    "containers": [spec.server_container(command, args, serving=True)],
                    "volumes": spec.volumes(),
                },
            },
        },
    }, selector


def _multinode(spec: _Spec) -> tuple[dict[str, Any], dict[str, str]]:
    recipe = spec.recipe
    topo = recipe.topology
    command, args = _serve_parts(recipe)
    serve = [*(command or ["vllm", "serve"]), *args]
    leader_addr = "$(LWS_LEADER_ADDRESS)"
    if topo.executor == "ray":
        head = shlex.join([*serve, "--distributed-executor-backend", "ray"])
        leader = spec.server_container(
            ["bash", "-c"],
            # vLLM places its workers when it starts: it waits until Ray sees every node first
            # (no $(...) here: the kubelet would read it as a variable reference)
            [
                f"ray start --head --port={topo.ray_port} && "
                f"until ray status 2>/dev/null | grep -c ' node_' | awk '$1 < {topo.nodes} {{exit 1}}'; "
                f"do sleep 5; done && exec {head}"
            ],
            serving=True,
        )
        worker = spec.server_container(
            ["bash", "-c"], [f'exec ray start --address="$LWS_LEADER_ADDRESS:{topo.ray_port}" --block'], serving=False
        )
    else:
        common = [
            "--nnodes",
            str(topo.nodes),
            "--master-addr",
            leader_addr,
            "--master-port",
            str(topo.master_port),
        ]
        leader = spec.server_container(command, [*args, *common, "--node-rank", "0"], serving=True)
        worker = spec.server_container(
            command, [*args, *common, "--node-rank", "$(LWS_WORKER_INDEX)", "--headless"], serving=False
        )
    name = spec.base

    def template(role: str, container: dict[str, Any]) -> dict[str, Any]:
        return {
            "metadata": {
                "labels": {**spec.labels, "app.kubernetes.io/component": "server", "role": role},
                "annotations": spec.annotations,
            },
            "spec": {"containers": [container], "volumes": spec.volumes()},
        }

    lws = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": spec.meta(name, "server"),
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": topo.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": template("leader", leader),
                "workerTemplate": template("worker", worker),
            },
        },
    }
    return lws, {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"}


def _bench_job(spec: _Spec, bench_image: str) -> dict[str, Any]:
    recipe = spec.recipe
    if recipe.bench.client != "autobench":
        raise RecipeError(
            "compile --target k8s runs autobench's own bench client in a Job",
            hint="set bench.client: autobench",
        )
    if recipe.bench.worker_hosts == NODES:
        raise RecipeError(
            "bench.worker_hosts: nodes is for multi-node runs of the cluster runtime (autobench run, compile -o DIR)",
            hint="name the hosts: bench.worker_hosts: [user@host, ...]",
        )
    url = f"http://{spec.base}:{spec.port}"
    lines = bench_lines(recipe)
    for line in lines:
        if line and line[0].value == "--base-url":
            line[1:] = [Word(url)]
    result = f"/results/{spec.labels['autobench.dev/run-id']}.json"
    bench = shlex.join([*_argv(lines), "--result", result])
    wait = (
        "python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "
        f"{shlex.quote(url + '/health')}"
    )
    script = "\n".join(
        [
            "set -u",
            # Boot progress (the bench pod cannot read the server pod's log): every 10 s of the wait,
            # the time elapsed and what is awaited.  No $( in the script: the kubelet expands $(NAME).
            "start=$SECONDS next=10",
            f"until {wait} 2>/dev/null; do",
            "  (( t = SECONDS - start ))",
            "  if (( t >= next )); then",
            "    (( m = t / 60, s = t % 60, next = (t / 10 + 1) * 10 ))",
            f'    printf \'boot: %d:%02d elapsed, %s not ready yet\\n\' "$m" "$s" {shlex.quote(url + "/health")}',
            "  fi",
            "  sleep 5",
            "done",
            f"{bench}",
            "code=$?",
            # The result JSON, whole, between two marker lines at the end of the Job's log: `autobench
            # k8s collect` (or a copy of the file: `record --metrics FILE`) takes it into the ledger.
            f"echo {RESULT_BEGIN}",
            f"cat {shlex.quote(result)} 2>/dev/null || true",
            f"echo {RESULT_END}",
            'exit "$code"',
        ]
    )
    key_env = bench_api_key_env(recipe)
    # The bench counts prompt tokens with the served model's tokenizer: a gated one needs the
    # token, and the shared Hugging Face cache saves the download -- both by name, as the server's.
    names = [n for n in recipe.secrets if n == "HF_TOKEN"] + ([key_env] if key_env else [])
    container: dict[str, Any] = {
        "name": "bench",
        "image": bench_image,
        "command": ["bash", "-c", script],
        "volumeMounts": [
            {"name": "results", "mountPath": "/results"},
            {"name": "hf-cache", "mountPath": HF_CACHE},
        ],
    }
    if names:
        container["env"] = spec.env(names)[: len(names)]
    deadline = int(recipe.bench.ready_timeout_s + (recipe.bench.max_seconds or 3600) + 300)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": spec.meta(f"{spec.base}-bench", "bench"),
        "spec": {
            "completionMode": "Indexed",
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline,
            "template": {
                "metadata": {
                    "labels": {**spec.labels, "app.kubernetes.io/component": "bench"},
                    "annotations": spec.annotations,
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "results", "emptyDir": {}}, spec.volumes()[0]],
                },
            },
        },
    }


_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def placement(
    cpu: str | None = None,
    memory: str | None = None,
    node_selector: tuple[str, ...] = (),
    tolerations: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The server pods' CPU/memory requests, nodeSelector and tolerations from the command line
    (``--cpu 16 --memory 64Gi --node-selector KEY=VALUE --toleration KEY[=VALUE][:EFFECT]``)."""
    requests: dict[str, str] = {}
    for what, value in (("cpu", cpu), ("memory", memory)):
        if value is not None:
            if not _QUANTITY.fullmatch(value):
                raise RecipeError(
                    f"--{what} {value[:40]!r} is not a Kubernetes quantity", hint="e.g. --cpu 16 --memory 64Gi"
                )
            requests[what] = value
    selector: dict[str, str] = {}
    for item in node_selector:
        key, eq, value = item.partition("=")
        if not eq or not _LABEL_KEY.fullmatch(key) or (value and not _LABEL_VALUE.fullmatch(value)):
            raise RecipeError(f"--node-selector {item[:70]!r} is not KEY=VALUE", hint="e.g. --node-selector gpu=h200")
        selector[key] = value
    tolerate: list[dict[str, str]] = []
    for item in tolerations:
        head, colon, effect = item.partition(":")
        key, eq, value = head.partition("=")
        if (
            not _LABEL_KEY.fullmatch(key)
            or (colon and effect not in _EFFECTS)
            or (value and not _LABEL_VALUE.fullmatch(value))
        ):
            raise RecipeError(
                f"--toleration {item[:70]!r} is not KEY[=VALUE][:EFFECT]",
                hint="e.g. --toleration nvidia.com/gpu:NoSchedule (EFFECT: " + ", ".join(_EFFECTS) + ")",
            )
        t = {"key": key, "operator": "Equal" if eq else "Exists"}
        if eq:
            t["value"] = value
        if colon:
            t["effect"] = effect
        tolerate.append(t)
    return {"requests": requests, "nodeSelector": selector, "tolerations": tolerate}


def _place(server: dict[str, Any], where: dict[str, Any]) -> None:
    """Put the placement into every pod template of the server object."""
    spec = server["spec"]
    templates = (
        [spec["template"]]
        if "template" in spec
        else [spec["leaderWorkerTemplate"]["leaderTemplate"], spec["leaderWorkerTemplate"]["workerTemplate"]]
    )
    for template in templates:
        pod = template["spec"]
        if where["nodeSelector"]:
            pod["nodeSelector"] = dict(where["nodeSelector"])
        if where["tolerations"]:
            pod["tolerations"] = [dict(t) for t in where["tolerations"]]
        if where["requests"]:
            for container in pod["containers"]:
                container.setdefault("resources", {})["requests"] = dict(where["requests"])


def manifests(
    loaded: LoadedRecipe,
    *,
    run_id: str,
    namespace: str | None = None,
    secret: str = "autobench-secrets",
    hf_cache_pvc: str | None = None,
    bench_image: str | None = None,
    max_nodes: int | None = None,
    where: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The manifests of ``loaded`` as dicts: server (Deployment or LeaderWorkerSet), Service, bench Job."""
    from autobench import __version__

    if not _LABEL_VALUE.fullmatch(run_id) or not run_id:
        raise RecipeError(
            f"--run-id {run_id[:70]!r} is not a Kubernetes label value",
            hint="letters, digits, '-', '_', '.'; at most 63; starting and ending with a letter or digit",
        )
    _check(namespace, "namespace")
    _check(secret, "secret")
    _check(hf_cache_pvc, "hf-cache-pvc")
    nodes = loaded.recipe.topology.nodes
    if max_nodes is not None and nodes > max_nodes:
        raise RecipeError(
            f"topology.nodes is {nodes}, more than the {max_nodes} nodes the target offers (--max-nodes)",
            location=str(loaded.path),
            hint="lower topology.nodes (and the parallel sizes) or raise --max-nodes",
        )
    spec = _Spec(loaded, run_id, namespace, secret, hf_cache_pvc)
    server, selector = _deployment(spec) if nodes == 1 else _multinode(spec)
    if where is not None:
        _place(server, where)
    return [server, _service(spec, selector), _bench_job(spec, bench_image or f"autobench:{__version__}")]


def compile_k8s(loaded: LoadedRecipe, **options: Any) -> str:
    """The manifests as one multi-document YAML text (see :func:`manifests`)."""
    from autobench.compile.render import UNSAFE_CODES, _refuse, refuse_grid

    _refuse(loaded, None if options.pop("check", True) else UNSAFE_CODES)
    refuse_grid(loaded, "k8s")
    docs = manifests(loaded, **options)
    head = (
        f"# Generated by autobench from recipe {loaded.recipe.name} ({loaded.digest}); edit the recipe and "
        "recompile.\n# Secrets come from the Kubernetes Secret named in secretKeyRef (create it yourself).\n"
    )
    volumes = loaded.recipe.container.volumes
    if volumes:  # said, not dropped silently: a pod mounts what its spec names, not a host's paths
        from autobench.compile.quoting import comment_text

        head += (
            f"# container.volumes {comment_text(','.join(volumes))} is docker's: not mounted (the Hugging Face "
            "cache is a volume of its own, --hf-cache-pvc; a model directory belongs in the image or a PVC).\n"
        )
    return head + dump_documents(docs)


#: What a literal block (``|``) can hold as written: printable ASCII and line breaks.
_LITERAL_SAFE = re.compile(r"[\x20-\x7e\n]*")


def dump_documents(docs: list[dict[str, Any]]) -> str:
    """YAML documents separated by ``---``: block style, keys in the order built, no anchors,
    multi-line strings (the bench script) as literal blocks."""
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import LiteralScalarString

    def prepare(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: prepare(v) for k, v in node.items()}
        if isinstance(node, list):
            return [prepare(v) for v in node]
        if isinstance(node, str) and "\n" in node and _LITERAL_SAFE.fullmatch(node):
            return LiteralScalarString(node)
        return node  # ruamel picks a quoted style, with escapes for anything unprintable

    yaml = YAML()
    # ASCII out: a control, bidi or line-separator character in a value (a served name in the
    # bench script) is written as a double-quoted escape, never raw: a raw ESC or U+2028 made
    # the manifests unreadable YAML (and drove the terminal compile printed them on).
    yaml.allow_unicode = False
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=2, offset=0)
    yaml.representer.ignore_aliases = lambda *args: True
    out = io.StringIO()
    yaml.dump_all([prepare(doc) for doc in docs], out)
    return out.getvalue()


__all__ = ["compile_k8s", "dump_documents", "manifests"]

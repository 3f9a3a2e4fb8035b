"""Every target carries every recipe field that must reach the server, or says where it cannot.

One recipe sets them all: plain ``env:`` (one value a shell would split), a secret (by name;
its value is set in this process's environment and must never appear), engine options (typed
flags and extra_args), ``container.shm_size`` in the Kubernetes spelling an imported Helm
``shmSize`` has (``20Gi``), published ports and ``engine.port``.  Each target compiles it
(a one-node and a two-node form where the target has both) and each field is looked up in what
that target writes.  A Slurm job without Docker cannot apply docker's shm size or port mapping:
its header says so (the server uses the node's /dev/shm and listens on engine.port itself).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from yamltree import mappings

from autobench.compile.cluster import compile_cluster
from autobench.compile.k8s import compile_k8s
from autobench.compile.render import compile_recipe
from autobench.compile.slurm import compile_slurm
from autobench.recipe.loader import load_recipe

SECRET_VALUE = "hf_carry_value_never_written"
SPACED = "two words"
RECIPE = """name: carry
model:
  repo: org/m
  revision: 0123456789abcdef0123456789abcdef01234567
container:
  image: img:1
  shm_size: 20Gi
  ports: ['18123:8123', '9100:9100']
  volumes: ['~/.cache/hf:/root/.cache/hf', '/data/models:/models:ro']
secrets: [HF_TOKEN]
env:
  DG_JIT_CACHE_DIR: /tmp/dg-cache
  SPACED: two words
engine:
  host: 0.0.0.0
  port: 8123
  max_model_len: 8192
  kv_cache_dtype: fp8
  extra_args: ['--block-size', '64']
bench:
  dataset:
    kind: random
    input_len: 64
    output_len: 16
"""
TWO_NODES = "topology:\n  nodes: 2\n  gpus_per_node: 1\n  hosts: [h0, h1]\n"

# target id -> (nodes, compile: loaded -> {file name: text})
TARGETS: dict[str, tuple[int, Callable[[Any], dict[str, str]]]] = {
    "docker": (1, lambda loaded: {"script.sh": compile_recipe(loaded, "full")}),
    "cluster": (2, lambda loaded: compile_cluster(loaded)),
    **{
        f"slurm-{mode}": (1, lambda loaded, mode=mode: {"job.sh": compile_slurm(loaded, container=mode)})
        for mode in ("none", "docker", "pyxis", "apptainer")
    },
    **{
        f"slurm-{mode}-2node": (2, lambda loaded, mode=mode: {"job.sh": compile_slurm(loaded, container=mode)})
        for mode in ("none", "pyxis", "apptainer")
    },
    "k8s": (1, lambda loaded: {"k8s.yaml": compile_k8s(loaded, run_id="t")}),
    "k8s-2node": (2, lambda loaded: {"k8s.yaml": compile_k8s(loaded, run_id="t")}),
}
FIELDS = ("env", "secret", "engine", "shm_size", "ports", "volumes")


def _servers(text: str) -> list[dict[str, Any]]:
    """Every server container of the manifests (a Deployment's, a LeaderWorkerSet's leader and
    worker templates)."""
    docs = list(YAML(typ="safe").load_all(text))
    return [node for node in mappings(docs) if node.get("name") == "server" and "image" in node]


def _shm_limits(text: str) -> list[str]:
    docs = list(YAML(typ="safe").load_all(text))
    return [
        node["emptyDir"].get("sizeLimit")
        for node in mappings(docs)
        if node.get("name") == "dshm" and "emptyDir" in node
    ]


def _flag(words: list[str], flag: str, value: str) -> bool:
    return any(a == flag and b == value for a, b in zip(words, words[1:], strict=False))


def _k8s_carries(field: str, text: str) -> bool:
    servers = _servers(text)
    assert servers
    if field == "env":
        return all(
            {"name": "DG_JIT_CACHE_DIR", "value": "/tmp/dg-cache"} in s["env"]
            and {"name": "SPACED", "value": SPACED} in s["env"]
            for s in servers
        )
    if field == "secret":  # by reference to the Kubernetes Secret, never a value
        return all(
            any(e["name"] == "HF_TOKEN" and e["valueFrom"]["secretKeyRef"]["key"] == "HF_TOKEN" for e in s["env"])
            for s in servers
        )
    if field == "engine":
        return all(
            _flag(s["args"], "--max-model-len", "8192")
            and _flag(s["args"], "--kv-cache-dtype", "fp8")
            and _flag(s["args"], "--block-size", "64")
            for s in servers
        )
    if field == "volumes":  # a pod mounts what its spec names: the manifests say so
        return (
            '# container.volumes "~/.cache/hf:/root/.cache/hf,/data/models:/models:ro" is docker\'s: not mounted'
            in text
        )
    if field == "shm_size":
        limits = _shm_limits(text)
        return bool(limits) and all(limit == "20Gi" for limit in limits)
    # ports: the leader listens on engine.port and declares it (the Service targets it)
    return [p["containerPort"] for p in servers[0]["ports"]] == [8123] and _flag(servers[0]["args"], "--port", "8123")


def _script_carries(target: str, field: str, text: str, *, head: bool = True) -> bool:
    docker = target in ("docker", "cluster", "slurm-docker")
    mode = target.removeprefix("slurm-").removesuffix("-2node")
    if field == "env":
        if docker:
            return "--env DG_JIT_CACHE_DIR=/tmp/dg-cache" in text and "--env 'SPACED=two words'" in text
        exported = "export DG_JIT_CACHE_DIR=/tmp/dg-cache\n" in text and "export SPACED='two words'\n" in text
        if mode == "pyxis":
            return exported and "--container-env=HF_TOKEN,DG_JIT_CACHE_DIR,SPACED" in text
        if mode == "apptainer":
            return exported and 'export APPTAINERENV_SPACED="${SPACED}"' in text
        return exported
    if field == "secret":
        checked = "require_secret HF_TOKEN" in text
        if docker:
            return checked and "--env HF_TOKEN \\" in text
        if mode == "apptainer":
            return checked and 'export APPTAINERENV_HF_TOKEN="${HF_TOKEN}"' in text
        if mode == "pyxis":
            return checked and "--container-env=HF_TOKEN," in text
        return checked  # none: the server inherits the job's environment, which holds it
    if field == "engine":
        return all(f in text for f in ("--max-model-len 8192", "--kv-cache-dtype fp8", "--block-size 64"))
    if field == "volumes":
        flag = {"pyxis": "--container-mounts", "apptainer": "--bind"}.get(mode, "-v")
        if docker or mode in ("pyxis", "apptainer"):  # ~/ is the home of wherever the server starts
            return (
                f'  {flag} "${{HOME}}"/.cache/hf:/root/.cache/hf \\\n' in text
                and f"  {flag} /data/models:/models:ro \\\n" in text
            )
        said = (
            '# container.volumes "~/.cache/hf:/root/.cache/hf,/data/models:/models:ro" is docker\'s: not applied '
            "(the node's own paths)\n"
        )
        return said in text
    if field == "shm_size":
        if docker:
            return "--shm-size 20Gi" in text and "not applied" not in text
        return "# container.shm_size 20Gi is docker's: not applied (the node's /dev/shm)\n" in text
    # ports
    listens = "--port 8123" in text
    if target == "cluster":  # the nodes run on the hosts' network: the port is the engine's own
        url = "BASE_URL=http://127.0.0.1:8123\n" in text  # the head's readiness poll and bench
        return listens and "--network host" in text and "-p 18123" not in text and (url or not head)
    if docker:  # the bench reaches the published host port
        return listens and "-p 18123:8123" in text and "BASE_URL=http://127.0.0.1:18123\n" in text
    said = "# container.ports 18123:8123,9100:9100 is docker's: not applied (engine.port 8123 on the node)\n"
    return listens and said in text and "BASE_URL=http://127.0.0.1:8123\n" in text


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("target", list(TARGETS))
def test_every_target_carries_every_field_the_server_needs(tmp_path: Path, monkeypatch, target: str, field: str):
    monkeypatch.setenv("HF_TOKEN", SECRET_VALUE)  # set where compile runs: still never written
    nodes, build = TARGETS[target]
    path = tmp_path / "carry.yaml"
    text = RECIPE + (TWO_NODES if nodes == 2 else "")
    if nodes == 2:
        text = text.replace("  max_model_len: 8192\n", "  max_model_len: 8192\n  pipeline_parallel_size: 2\n")
    path.write_text(text, encoding="utf-8")
    files = build(load_recipe(path))
    for name, out in files.items():
        assert SECRET_VALUE not in out, name
    if target.startswith("k8s"):
        assert _k8s_carries(field, files["k8s.yaml"]), files["k8s.yaml"]
        return
    if target == "cluster":  # every node's script carries the server's settings
        for k in range(nodes):
            node = files[f"node-{k}.sh"]
            assert _script_carries(target, field, node, head=k == 0), f"node-{k}.sh lacks {field}:\n{node}"
        return
    (only,) = files.values()
    assert _script_carries(target, field, only), only

"""Compile a multi-node recipe: one script per node plus a driver.

``compile_cluster(loaded, hosts=None, remote=None) -> dict[filename, text]``:

``node-K.sh``  everything that happens on node K, as subcommands the driver sends it
               (``claim``, ``start``, ``joinable``, ``cluster``, ``serve``, ``alive``,
               ``ready``, ``bench``, ``serverlog``, ``logs``, ``stop``).  Node 0 is the head.
               ``claim HOLDER`` is the node guard: a lock folder per engine port on the
               node names the run holding it; a second run is refused with that name.
``driver.sh``  runs on the machine you start it from (``all``, the default): claims every
               node, starts the head, waits until it can take workers, starts the workers,
               waits for the cluster to form (Ray) and for the server to be ready, benches
               from the head, and tears every node down on exit, failure or a signal.
               ``up``, ``watch``, ``down`` and ``serverlog`` are those steps one at a time
               (``autobench run`` drives them and benches in-process).  It reaches node K by
               piping the recipe's secrets (export lines) and ``node-K.sh`` to
               ``$AUTOBENCH_REMOTE HOST bash -s -- ACTION`` (:data:`DEFAULT_REMOTE`; tests
               replace it with a local command); exit status 255 of that command is an
               unreachable node, any other failure of ``alive`` a stopped one.  It writes
               ``$AUTOBENCH_OUT/status`` (``status=DONE|READY|BLOCKED|FAILED|REFUSED|ABORTED``
               and ``cause=...``), ``$AUTOBENCH_OUT/left`` (what may still run after a failed
               teardown) and the bench result JSON ``$AUTOBENCH_OUT/bench.json``; exit 0 DONE,
               3 BLOCKED, 4 FAILED, 5 REFUSED, 130 ABORTED.

Executors: ``native`` is vLLM's own multi-node mode (every node runs ``vllm serve`` with
``--nnodes N --node-rank K --master-addr HEAD --master-port P``; workers add ``--headless``);
``ray`` starts ``ray start --head`` / ``ray start --address HEAD:PORT`` containers, waits until
Ray sees every node, then execs ``vllm serve … --distributed-executor-backend ray`` in the head.
Every word goes through the one quoting path (autobench.compile.quoting).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.compile.argv import (
    Lines,
    _w,
    bench_lines,
    container_name,
    docker_lines,
    serve_lines,
    setup_script,
    worker_host_lines,
)
from autobench.compile.quoting import Word
from autobench.errors import RecipeError
from autobench.recipe.facts import container_image, uses_host_network
from autobench.recipe.loader import LoadedRecipe
from autobench.recipe.schema import HOST_RE
from autobench.recipe.workerhosts import NODES

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

#: How the driver reaches a node: no password prompt, a connect timeout and keep-alives, so a
#: node whose link drops is "unreachable" (ssh exits 255) in ~15 s, not after TCP's minutes.
DEFAULT_REMOTE = "ssh -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=3"
#: Exit codes of the driver.
EXIT_BLOCKED = 3
EXIT_FAILED = 4
EXIT_REFUSED = 5  # the node guard: a node is held by another run
#: Exit code of ``node-K.sh claim`` when another run holds the node (EX_TEMPFAIL).
EXIT_HELD = 75


def cluster_hosts(loaded: LoadedRecipe, hosts: list[str] | None) -> list[str]:
    """The hosts, head first: given ones (``--hosts``) win over ``topology.hosts``."""
    topo = loaded.recipe.topology
    chosen = list(hosts) if hosts else list(topo.hosts)
    where = loaded.position("topology", "nodes") or loaded.path
    if not chosen:
        raise RecipeError(
            f"topology.nodes is {topo.nodes} but no hosts are named",
            location=str(where),
            hint="list them in topology.hosts (head first) or pass --hosts HEAD,WORKER,...",
        )
    if len(chosen) != topo.nodes:
        raise RecipeError(
            f"{len(chosen)} host(s) given for {topo.nodes} node(s)",
            location=str(where),
            hint="name one host per node, head first",
        )
    for host in chosen:
        if not is_host(host):
            raise RecipeError(
                f"not a host name: {host!r}",
                location=str(where),
                hint="a host is a name or address, optionally user@ before it (neither part may start with '-')",
            )
    return chosen


def is_host(host: str) -> bool:
    """Whether ``host`` is ``[user@]host`` with neither part an option or shell text."""
    return re.fullmatch(HOST_RE, host) is not None


def remote_words(remote: str) -> list[str]:
    """The remote command as the driver splits ``$AUTOBENCH_REMOTE`` (on whitespace, no
    expansion): each word is then written quoted, so ``$(...)`` in it stays text."""
    words = remote.split()
    if not words:
        raise RecipeError("--remote is empty", hint=f"e.g. --remote {DEFAULT_REMOTE!r}")
    return words


def _client_host(host: str) -> str:
    return "127.0.0.1" if host in ("", "0.0.0.0", "::", "[::]", "*") else host


def _native_flags(recipe: Recipe, rank: int, head: str) -> Lines:
    t = recipe.topology
    lines: Lines = [
        _w("--nnodes", str(t.nodes)),
        _w("--node-rank", str(rank)),
        _w("--master-addr", _address(head)),
        _w("--master-port", str(t.master_port)),
    ]
    if rank > 0:
        lines.append(_w("--headless"))
    return lines


def _address(host: str) -> str:
    """``user@host`` -> ``host`` (the address other nodes connect to)."""
    return host.rsplit("@", 1)[-1]


def _node_docker(recipe: Recipe, mods: dict[int, Path], rank: int, head: str) -> Lines:
    name = f"{container_name(recipe)}-node{rank}"
    if recipe.topology.executor == "native":
        lines = docker_lines(recipe, mods, name=name, extra=_native_flags(recipe, rank, head))
    else:  # ray: the container runs a Ray node; the head gets `vllm serve` through docker exec
        full = docker_lines(recipe, mods, name=name)
        image_at = next(i for i, line in enumerate(full) if line and line[0].value == recipe.container.image)
        lines = full[:image_at]
        lines = [line for line in lines if not (line and line[0].value == "--entrypoint")]
        port = recipe.topology.ray_port
        ray = (
            f"ray start --head --port={port} --block"
            if rank == 0
            else f"ray start --address={_address(head)}:{port} --block"
        )
        lines += [_w("--entrypoint", "bash"), _w(container_image(recipe)), _w("-c", ray)]
    if not uses_host_network(recipe.container.extra_args):
        # Nodes reach each other (NCCL, Ray, the master port) on the hosts' network; published
        # ports mean nothing there, so they are left out.
        lines = [line for line in lines if not (line and line[0].value == "-p")]
        lines.insert(2 if lines[1] == _w("-d") else 1, _w("--network", "host"))
    return lines


def _ray_serve(recipe: Recipe, mods: dict[int, Path]) -> Lines:
    """``docker exec -d HEAD bash -c 'exec "$@" >LOG 2>&1' autobench-serve … vllm serve …``."""
    head = f"{container_name(recipe)}-node0"
    serve = serve_lines(recipe, mods, extra=[_w("--distributed-executor-backend", "ray")])
    if recipe.launch.setup:  # run the container-side setup script, not the host one
        serve[0] = _w("bash", "-c", setup_script(recipe, mods, in_container=True), "autobench-setup")
    return [
        _w("docker", "exec", "-d", head, "bash", "-c", 'exec "$@" >/tmp/autobench-serve.log 2>&1', "autobench-serve"),
        *serve,
    ]


def _bench(recipe: Recipe, url: str, hosts: list[str]) -> Lines:
    from autobench.recipe.grid import cell_recipe, cells

    lines = bench_lines(cell_recipe(recipe, cells(recipe)[0]))  # a grid's first cell (autobench run benches all)
    if recipe.bench.worker_hosts == NODES:  # one load generator on each node, reached from the head
        lines.extend(worker_host_lines(recipe, hosts))
    out: Lines = []
    for line in lines:
        if line and line[0].value == "--base-url":
            out.append(_w("--base-url", url))
        else:
            out.append(line)
    if recipe.bench.client == "autobench":
        out.append(_w("--json"))  # the result JSON on stdout: the driver keeps it
    else:
        out[0] = [Word(w.value) if w.value != container_name(recipe) else Word(f"{w.value}-node0") for w in out[0]]
    return out


def _node_script(loaded: LoadedRecipe, rank: int, hosts: list[str], version: str) -> str:
    from autobench.compile.render import environment

    recipe = loaded.recipe
    e = recipe.engine
    url = f"http://{_client_host(e.host)}:{e.port}"
    return (
        environment()
        .get_template("cluster_node.sh.j2")
        .render(
            version=version,
            name=recipe.name,
            digest=loaded.digest,
            rank=rank,
            nodes=recipe.topology.nodes,
            host=hosts[rank],
            head=rank == 0,
            ray=recipe.topology.executor == "ray",
            container=f"{container_name(recipe)}-node{rank}",
            port=recipe.engine.port,
            exit_held=EXIT_HELD,
            secrets=list(recipe.secrets),
            docker=_node_docker(recipe, loaded.mods, rank, hosts[0]),
            serve=_ray_serve(recipe, loaded.mods) if rank == 0 else [],
            base_url=url,
            api_key_env="VLLM_API_KEY" if "VLLM_API_KEY" in recipe.secrets else None,
            bench=_bench(recipe, url, hosts) if rank == 0 else [],
        )
    )


def compile_cluster(
    loaded: LoadedRecipe,
    hosts: list[str] | None = None,
    remote: str | None = None,
    *,
    check: bool = True,
    runtime: str = "docker",
) -> dict[str, str]:
    """{"driver.sh": ..., "node-0.sh": ..., ...} for a recipe with topology.nodes > 1."""
    from autobench import __version__
    from autobench.compile.render import _refuse, environment

    recipe = loaded.recipe
    if recipe.topology.nodes < 2:
        raise RecipeError(
            "this recipe runs on one node; compile it into one script",
            location=str(loaded.path),
            hint="drop --hosts, or set topology.nodes",
        )
    # runtime "cluster" (autobench run): a grid is benched by autobench, cell by cell, on one boot;
    # node-0.sh's own `bench` (driver.sh all, by hand) runs the grid's first cell.
    _refuse(loaded, None if check else {"AB030", "AB031", "AB032", "AB033", "AB034", "AB055"}, runtime=runtime)
    chosen = cluster_hosts(loaded, hosts)
    files = {f"node-{k}.sh": _node_script(loaded, k, chosen, __version__) for k in range(recipe.topology.nodes)}
    t = recipe.topology
    files["driver.sh"] = (
        environment()
        .get_template("cluster_driver.sh.j2")
        .render(
            version=__version__,
            name=recipe.name,
            digest=loaded.digest,
            hosts=chosen,
            nodes=t.nodes,
            executor=t.executor,
            remote=remote_words(remote or DEFAULT_REMOTE),
            ready_timeout_s=str(math.ceil(recipe.bench.ready_timeout_s)),
            cluster_timeout_s=str(math.ceil(t.cluster_timeout_s)),
            exit_blocked=EXIT_BLOCKED,
            exit_failed=EXIT_FAILED,
            exit_refused=EXIT_REFUSED,
            exit_held=EXIT_HELD,
            port=recipe.engine.port,
            containers=[f"{container_name(recipe)}-node{k}" for k in range(t.nodes)],
            secrets=list(recipe.secrets),
        )
    )
    return files


__all__ = [
    "DEFAULT_REMOTE",
    "EXIT_BLOCKED",
    "EXIT_FAILED",
    "EXIT_HELD",
    "EXIT_REFUSED",
    "cluster_hosts",
    "compile_cluster",
    "is_host",
    "remote_words",
]

"""``compile --target slurm``: an ``sbatch`` script that serves, waits, benches and tears down.

One node: the server (the recipe's serve command on the node, or in a container by the
site's choice: Docker, pyxis/enroot ``srun --container-image``, or Apptainer) runs in the
background, the script polls ``/health`` and ``/v1/models``, runs ``autobench bench`` with
the result JSON in the run folder, and always tears the server down.  Several nodes
(``topology.nodes``): one ``srun`` step per node, the job's first node the head (node rank 0,
the API), the others workers (``native``: ``--nnodes/--node-rank/--master-addr $HEAD
--headless``; ``ray``: ``ray start`` on every node, ``vllm serve`` on the head).  Resources come
from the recipe (``topology.nodes``; GPUs per node from ``topology.gpus_per_node``, else the
engine's TP x PP x DP over the nodes) and the command line (partition, account, time, a GPU
override, and ``--gpus-per-node=N`` or ``--gres=gpu:N`` as the site wants them).
Pure: no I/O besides reading the template.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from autobench.compile.argv import (
    Lines,
    _opt,
    _w,
    bench_api_key_env,
    bench_lines,
    container_name,
    docker_lines,
    serve_lines,
)
from autobench.compile.quoting import Word
from autobench.compile.server_env import pyxis_env_option, slurm_env_body
from autobench.compile.slurm_mounts import mount_lines
from autobench.errors import RecipeError
from autobench.recipe.facts import container_image, node_gpus, server_endpoint
from autobench.recipe.loader import LoadedRecipe
from autobench.recipe.workerhosts import NODES

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

CONTAINER_MODES = ("none", "docker", "pyxis", "apptainer")
#: How the job asks for its GPUs: ``#SBATCH --gpus-per-node=N`` (Slurm >= 19.05, cons_tres) or
#: ``#SBATCH --gres=gpu:N`` (sites that configure GPUs only as a generic resource).
GPU_REQUESTS = ("gpus-per-node", "gres")
_SLURM_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_TIME = re.compile(r"^(\d+-)?\d{1,3}(:\d{2}){0,2}$")


def default_time_limit(recipe: Recipe) -> str:
    """Boot timeout + the bench's time cap (1 h when uncapped) + 5 min, in whole minutes."""
    seconds = recipe.bench.ready_timeout_s + (recipe.bench.max_seconds or 3600) + 300
    return str(math.ceil(seconds / 60))


def _check_name(value: str | None, what: str) -> None:
    if value is not None and not _SLURM_NAME.fullmatch(value):
        raise RecipeError(
            f"--{what} must be a Slurm name (letters, digits, . _ -; at most 64)",
            hint=f"e.g. --{what} gpu",
        )


def _serve(loaded: LoadedRecipe, mode: str) -> tuple[Lines, str]:
    """The serve command for ``mode`` and the URL the bench reaches it on, on the node
    (``autobench.recipe.facts.server_endpoint``: published by docker, else engine.host:port)."""
    recipe = loaded.recipe
    url = server_endpoint(recipe, "docker" if mode == "docker" else "process").base_url
    if mode == "docker":
        return docker_lines(recipe, loaded.mods, detach=False, extra=None), url
    lines = serve_lines(recipe, loaded.mods)
    if recipe.topology.nodes > 1:  # each node's srun step runs this (the template adds srun)
        return [*_node_prefix(recipe, mode), *lines], url
    if mode == "pyxis":
        return [_w("srun", "--ntasks=1", "--export=ALL"), *_node_prefix(recipe, mode), *lines], url
    if mode == "apptainer":
        return [*_node_prefix(recipe, mode), *lines], url
    return lines, url


def _node_prefix(recipe: Recipe, mode: str) -> Lines:
    """What runs the serve command inside a node's srun step: pyxis's ``--container-image``
    with ``--container-env`` naming the recipe's variables (srun options), ``apptainer exec``, or
    nothing (``autobench.compile.server_env``: how each carries the recipe's environment)."""
    if mode == "pyxis":
        env = pyxis_env_option(recipe)
        return [_opt("--container-image", container_image(recipe)), *([env] if env else []), *mount_lines(recipe, mode)]
    if mode == "apptainer":
        head, image = _w("apptainer", "exec", "--nv"), [Word("docker://" + container_image(recipe))]
        mounts = mount_lines(recipe, mode)
        return [head, *mounts, image] if mounts else [[*head, *image]]
    return []


def _docker_only(recipe: Recipe, mode: str) -> list[dict[str, str]]:
    """The recipe's ``docker run`` settings that mean nothing outside Docker, for the script's
    header (said there, not dropped silently): without Docker's own namespaces the server shares
    the node's /dev/shm (pyxis/enroot and Apptainer make no private one: pyxis's tests,
    tests/unshare_ipc.bats, "no --container-unshare shares host ipcns") and listens on
    ``engine.port`` itself; with no container at all (``none``) it reads the node's own paths
    (pyxis and Apptainer mount the volumes: ``autobench.compile.slurm_mounts``)."""
    c = recipe.container
    said = []
    if c.volumes and mode == "none":
        said.append({"key": "container.volumes", "value": ",".join(c.volumes), "instead": "the node's own paths"})
    if c.shm_size:
        said.append({"key": "container.shm_size", "value": c.shm_size, "instead": "the node's /dev/shm"})
    if c.ports:
        port = f"engine.port {recipe.engine.port} on the node"
        said.append({"key": "container.ports", "value": ",".join(c.ports), "instead": port})
    return said


def _bench(recipe: Recipe, url: str) -> Lines:
    """``autobench bench`` against the server on this node (the docker form already is)."""
    lines = bench_lines(recipe)
    if recipe.bench.client != "autobench":
        raise RecipeError(
            "compile --target slurm runs autobench's own bench client",
            hint="set bench.client: autobench",
        )
    if recipe.bench.worker_hosts == NODES:
        raise RecipeError(
            "bench.worker_hosts: nodes is for multi-node runs of the cluster runtime (autobench run, compile -o DIR)",
            hint="name the hosts: bench.worker_hosts: [user@host, ...]",
        )
    for line in lines:
        if line and line[0].value == "--base-url":
            line[1:] = [Word(url)]
    return lines


def compile_slurm(
    loaded: LoadedRecipe,
    *,
    partition: str | None = None,
    account: str | None = None,
    time_limit: str | None = None,
    container: str = "none",
    gpus_per_node: int | None = None,
    gpu_request: str = "gpus-per-node",
    check: bool = True,
) -> str:
    """The sbatch script of ``loaded`` (see the module doc)."""
    from autobench import __version__
    from autobench.compile.render import UNSAFE_CODES, _pins, _refuse, environment
    from autobench.recipe.grid import cell_recipe, cells

    recipe = loaded.recipe
    if container not in CONTAINER_MODES:
        raise RecipeError(f"unknown --container {container!r}", hint="use one of " + ", ".join(CONTAINER_MODES))
    _refuse(loaded, None if check else UNSAFE_CODES)
    nodes = recipe.topology.nodes
    if nodes > 1 and container == "docker":
        raise RecipeError(
            f"topology.nodes is {nodes}: a multi-node Slurm job runs its nodes' servers as srun steps, "
            "which --container docker cannot",
            location=str(loaded.path),
            hint="use --container pyxis, apptainer or none",
        )
    if nodes > 1 and recipe.launch.setup:
        raise RecipeError(
            "launch.setup steps are not supported in a multi-node Slurm job",
            location=str(loaded.path),
            hint="bake the setup into the image or the nodes' environment",
        )
    if gpu_request not in GPU_REQUESTS:
        raise RecipeError(f"unknown --gpu-request {gpu_request!r}", hint="use one of " + ", ".join(GPU_REQUESTS))
    # Every node's share of the engine (topology.gpus_per_node, else TP x PP x DP over the nodes);
    # --gpus-per-node overrides it, 0 requests none (a CPU test cluster).
    gpus = node_gpus(recipe) if gpus_per_node is None else (gpus_per_node or None)
    _check_name(partition, "partition")
    _check_name(account, "account")
    limit = time_limit or default_time_limit(recipe)
    if not _TIME.fullmatch(limit):
        raise RecipeError(f"--time {limit[:40]!r} is not a Slurm time", hint="minutes, MM:SS, HH:MM:SS or D-HH:MM:SS")
    serve, url = _serve(loaded, container)
    grid = cells(recipe)
    try:
        return (
            environment()
            .get_template("slurm.sh.j2")
            .render(
                version=__version__,
                name=recipe.name,
                digest=loaded.digest,
                pins=_pins(recipe),
                job_name=f"autobench-{recipe.name}"[:64],
                nodes=nodes,
                gpus_per_node=gpus,
                gpu_option=(f"--gres=gpu:{gpus}" if gpu_request == "gres" else f"--gpus-per-node={gpus}")
                if gpus
                else "",
                executor=recipe.topology.executor,
                master_port=recipe.topology.master_port,
                ray_port=recipe.topology.ray_port,
                node_prefix=_node_prefix(recipe, container),
                serve_plain=serve_lines(recipe, loaded.mods),
                time_limit=limit,
                partition=partition,
                account=account,
                container_mode=container,
                container=container_name(recipe),
                base_url=url,
                ready_timeout_s=str(math.ceil(recipe.bench.ready_timeout_s)),
                secrets=list(recipe.secrets),
                api_key_env=bench_api_key_env(recipe),
                serve=serve,
                serve_env=slurm_env_body(recipe, container),
                docker_only=_docker_only(recipe, container) if container != "docker" else [],
                # every cell of a grid in turn on the one allocation, each with its own result
                benches=[
                    {
                        "label": cell.label(),
                        "argv": _bench(cell_recipe(recipe, cell), url),
                        "result": f"bench.cell-{cell.index + 1}.json" if len(grid) > 1 else "bench.json",
                    }
                    for cell in grid
                ],
            )
        )
    except ValueError as exc:  # a NUL byte reached the quoting path
        raise RecipeError(f"cannot compile: {exc}", location=str(loaded.path)) from exc

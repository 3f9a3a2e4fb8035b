"""The plan of one run: what will be started, polled, benchmarked and torn down.

``build_plan`` is pure apart from reading the clock: given a loaded recipe and the
run options it returns a frozen :class:`RunPlan` -- the server argv for the chosen
runtime, the readiness URLs, the bench parameters and the run folder layout.
``autobench run --dry-run`` prints it; :mod:`autobench.run.pipeline` executes it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from autobench.compile.quoting import shell_join, shell_word
from autobench.errors import RunError, UsageError
from autobench.escape import terminal
from autobench.recipe import LoadedRecipe
from autobench.recipe.facts import output_tokens, passed_secrets, server_endpoint, unpinned

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

Runtime = Literal["docker", "process"]
RUNTIMES: tuple[str, ...] = ("docker", "process")

#: Files of a run folder, relative to it.
SERVER_LOG = "server.log"
PLAN_JSON = "plan.json"
SCRIPT = "script.sh"
RECIPE_JSON = "recipe.json"
BENCH_JSON = "bench.json"
METRICS_TXT = "metrics.prom"
LOG_JSON = "log.json"
OUTCOME_JSON = "outcome.json"


@dataclass(frozen=True)
class RunPlan:
    recipe_name: str
    recipe_path: str
    digest: str
    runtime: Runtime
    server_argv: tuple[str, ...]
    teardown: str  # human description of the teardown step
    container_name: str | None
    env: dict[str, str]  # plain env the process runtime adds (values are not secret)
    secret_names: tuple[str, ...]
    base_url: str
    served_model: str  # what /v1/models must list
    bench_model: str  # the model name the bench client sends
    ready_timeout_s: float
    grace_s: float
    bench: dict[str, object]
    run_dir: Path
    unpinned: tuple[str, ...] = field(default=())
    #: A bench grid's cells in run order (their labels); () for a one-cell recipe.
    cells: tuple[str, ...] = field(default=())
    #: The bench refuses to estimate prompt lengths (``run --require-tokenizer``).
    require_tokenizer: bool = False
    #: Hosts of the load generators, one each (bench.worker_hosts, or a multi-node run's nodes
    #: for ``nodes``); () runs them here.  ``remote`` reaches them (``run --remote``).
    worker_hosts: tuple[str, ...] = field(default=())
    remote: str | None = None

    @property
    def health_url(self) -> str:
        return f"{self.base_url}/health"

    @property
    def models_url(self) -> str:
        return f"{self.base_url}/v1/models"

    @property
    def metrics_url(self) -> str:
        return f"{self.base_url}/metrics"

    def path(self, name: str) -> Path:
        return self.run_dir / name

    def to_json_dict(self) -> dict[str, object]:
        return {
            "recipe": self.recipe_name,
            "recipe_path": self.recipe_path,
            "digest": self.digest,
            "runtime": self.runtime,
            "server_argv": list(self.server_argv),
            "server_command": shlex.join(self.server_argv),
            "container_name": self.container_name,
            "env": dict(self.env),
            "secret_names": list(self.secret_names),
            "readiness": {
                "health_url": self.health_url,
                "models_url": self.models_url,
                "served_model": self.served_model,
                "timeout_s": self.ready_timeout_s,
            },
            "bench": {"base_url": self.base_url, "model": self.bench_model, **self.bench},
            "metrics_url": self.metrics_url,
            "teardown": self.teardown,
            "grace_s": self.grace_s,
            "run_dir": str(self.run_dir),
            "files": {
                "server_log": SERVER_LOG,
                "plan": PLAN_JSON,
                "script": SCRIPT,
                "recipe": RECIPE_JSON,
                "bench": BENCH_JSON,
                "metrics": METRICS_TXT,
                "log_report": LOG_JSON,
                "outcome": OUTCOME_JSON,
            },
            "unpinned": list(self.unpinned),
            **({"cells": list(self.cells)} if self.cells else {}),
            **({"load_generators": self.load_generators()} if self.worker_hosts else {}),
        }

    def load_generators(self) -> dict[str, object]:
        """Where the load generators run: their hosts and the remote command's program (its
        other words may hold a key file's path or a password: not written)."""
        words = (self.remote or "").split()
        return {"hosts": list(self.worker_hosts), "remote": words[0] if words else None}

    def render_text(self) -> str:
        """The plan for people (``--dry-run``)."""
        b = self.bench
        bench_bits = [
            f"{k}={b[k]}"
            for k in (
                "endpoint",
                "num_prompts",
                "concurrency",
                "max_tokens",
                "max_seconds",
                "request_rate",
            )
            if b.get(k) is not None
        ]
        lines = [
            f"recipe     {self.recipe_name} ({self.recipe_path}, {self.digest})",
            f"runtime    {self.runtime}",
            f"start      {shell_join(self.server_argv)}",
        ]
        if self.env:
            lines.append("env        " + " ".join(f"{k}={shell_word(v)}" for k, v in self.env.items()))
        if self.secret_names:
            lines.append("secrets    " + ", ".join(self.secret_names) + " (by name, redacted from logs)")
        lines += [
            f"log        {self.path(SERVER_LOG)}",
            f"ready      GET {self.health_url} and {self.models_url} lists {self.served_model!r}"
            f" (timeout {self.ready_timeout_s:g} s; fail fast if the server exits)",
            f"bench      {self.base_url} model={self.bench_model} " + " ".join(bench_bits),
            *(
                [
                    f"load gen   one on each of {', '.join(self.worker_hosts)}"
                    + (f" (through {self.load_generators()['remote']})" if self.remote else "")
                ]
                if self.worker_hosts
                else []
            ),
            *(
                [f"cells      {len(self.cells)} on one server boot, in this order:"]
                + [f"           {i}. {label}" for i, label in enumerate(self.cells, 1)]
                if self.cells
                else []
            ),
            f"metrics    GET {self.metrics_url}",
            f"teardown   {self.teardown}",
            f"record     ledger row DONE / BLOCKED / FAILED / ABORTED; files in {self.run_dir}",
        ]
        if self.unpinned:
            lines.append(
                "UNPINNED   "
                + ", ".join(self.unpinned)
                + " (a run refuses these without --allow-unpinned; `autobench lock` pins them)"
            )
        return terminal("\n".join(lines), newlines=True)  # recipe values may hold control characters


def unpinned_refs(loaded: LoadedRecipe) -> list[str]:
    """Hub references of the recipe that are not pinned to a full 40-hex sha
    (``autobench.recipe.facts.unpinned``), as ``key (repo@revision)``."""
    return [f"{p.key} ({p.ref})" for p in unpinned(loaded.recipe)]


def _option_value(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def run_dir_for(runs_dir: Path, recipe_name: str, now: datetime) -> Path:
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return runs_dir / f"{stamp}-{recipe_name}"


def build_plan(
    loaded: LoadedRecipe,
    *,
    runtime: str = "docker",
    runs_dir: str | Path = "runs",
    vllm_exec: str | None = None,
    ready_timeout_s: float | None = None,
    grace_s: float = 10.0,
    now: datetime | None = None,
    require_tokenizer: bool = False,
    remote: str | None = None,
) -> RunPlan:
    """Build the plan of a run of ``loaded`` (no I/O); ``remote`` reaches bench.worker_hosts."""
    from autobench.compile import docker_argv, serve_argv

    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime {runtime!r}", hint="use --runtime docker or --runtime process")
    recipe = loaded.recipe
    engine = recipe.engine
    if recipe.bench.client != "autobench":
        raise RunError(
            f"bench.client {recipe.bench.client!r} is not supported by `autobench run`",
            hint="set bench.client: autobench (autobench's own client drives the bench)",
            location=str(loaded.path),
        )
    container_name: str | None = None
    if runtime == "process":
        argv = list(serve_argv(recipe, mods=loaded.mods))
        if vllm_exec:
            exe = shlex.split(vllm_exec)
            if not exe:
                raise UsageError("--vllm-exec is empty", hint='e.g. --vllm-exec "/opt/vllm/bin/vllm"')
            launch = recipe.launch
            if launch.setup or launch.prefix or launch.command[:1] != ["vllm"]:
                raise UsageError(
                    "--vllm-exec replaces `vllm` in the default launch command only",
                    hint="set launch.command in the recipe instead",
                )
            argv = exe + argv[1:]
        teardown = f"SIGTERM to the server's process group, SIGKILL after {grace_s:g} s"
        env = {k: str(v) for k, v in recipe.env.items()}
    else:
        if vllm_exec:
            raise UsageError("--vllm-exec applies to --runtime process only")
        argv = list(docker_argv(recipe, mods=loaded.mods))
        container_name = _option_value(argv, "--name")
        if not container_name:
            raise RunError(
                "the compiled docker command has no --name, so it cannot be torn down",
                hint="set container.name in the recipe",
                location=str(loaded.path),
            )
        teardown = f"docker rm -f {container_name}"
        env = {}
    endpoint = server_endpoint(recipe, runtime)  # the one answer (compile and AB022 ask it too)
    if not endpoint.reachable:
        raise RunError(
            endpoint.why,
            hint=f'add "{engine.port}:{engine.port}" to container.ports',
            location=str(loaded.path),
        )
    bench = recipe.bench.model_dump(mode="json", exclude={"client", "model", "ready_timeout_s"})
    bench["max_tokens"] = output_tokens(recipe)  # what each request asks for (a random output_len wins)
    return RunPlan(
        recipe_name=recipe.name,
        recipe_path=str(loaded.path),
        digest=loaded.digest,
        runtime=runtime,  # type: ignore[arg-type]
        server_argv=tuple(argv),
        teardown=teardown,
        container_name=container_name,
        env=env,
        secret_names=passed_secrets(recipe),
        base_url=endpoint.base_url,
        served_model=recipe.served_name,
        bench_model=recipe.bench_model,
        ready_timeout_s=float(ready_timeout_s if ready_timeout_s is not None else recipe.bench.ready_timeout_s),
        grace_s=grace_s,
        bench=bench,
        run_dir=run_dir_for(Path(runs_dir), recipe.name, now or datetime.now(UTC)),
        unpinned=tuple(unpinned_refs(loaded)),
        cells=_cell_labels(recipe),
        require_tokenizer=require_tokenizer,
        **worker_hosts(recipe, (), remote, endpoint.base_url),
    )


class WorkerHosts(TypedDict):
    worker_hosts: tuple[str, ...]
    remote: str | None


def worker_hosts(recipe: Recipe, nodes: Sequence[str], remote: str | None, base_url: str) -> WorkerHosts:
    """The plan's load-generator hosts: bench.worker_hosts, or for ``nodes`` the run's ``nodes``
    (a multi-node run's hosts); the remote command only when there are hosts.  They reach the
    server at ``base_url`` themselves, so a loopback address (their own machine) is refused."""
    import ipaddress
    from urllib.parse import urlsplit

    from autobench.recipe.workerhosts import NODES

    wanted = recipe.bench.worker_hosts
    hosts = tuple(nodes) if wanted == NODES else tuple(wanted)
    address = urlsplit(base_url).hostname or ""
    try:
        loopback = address == "localhost" or ipaddress.ip_address(address).is_loopback
    except ValueError:  # a name: the hosts resolve it themselves
        loopback = False
    if hosts and loopback:
        raise RunError(
            f"the load generators on bench.worker_hosts would reach the server at {base_url}: on each host, "
            "that is the host itself",
            hint="serve on an address the hosts reach: engine.host (or the container.ports address) of this machine",
        )
    return {"worker_hosts": hosts, "remote": remote if hosts else None}


def _cell_labels(recipe: Recipe) -> tuple[str, ...]:
    from autobench.recipe.grid import cells

    all_cells = cells(recipe)
    return tuple(c.label() for c in all_cells) if len(all_cells) > 1 else ()

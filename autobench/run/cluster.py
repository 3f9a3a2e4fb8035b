"""``autobench run`` of a multi-node recipe: compile the node scripts and the driver into the run
folder, run the driver, and record its outcome in the ledger.

The driver (autobench/compile/cluster.py) does the orchestration: it reaches every host through
the remote command (``--remote``, env ``AUTOBENCH_REMOTE``, default ssh), starts the head, waits
for the cluster, starts the workers, waits for readiness, benches from the head and tears every
node down on exit or failure.  It leaves ``status`` (DONE / BLOCKED / FAILED / ABORTED and the
cause) and ``bench.json`` in the run folder; this module turns them into a ledger row whose
script snapshot is the driver followed by every node script.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shlex
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from autobench.recipe import LoadedRecipe
from autobench.run import plan as P
from autobench.run.outcome import Echo, RowFacts, RunOptions, now
from autobench.run.plan import RunPlan, run_dir_for, unpinned_refs
from autobench.run.protocol import Compiled, Run, RuntimeBase
from autobench.run.signals import RunInterrupted

DRIVER_LOG = "driver.log"
STATUS_FILE = "status"


def read_status(path: Path) -> tuple[str, str]:
    """(status, cause) from the driver's status file; FAILED when it is missing or garbled."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return "FAILED", "the driver left no status"
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    status = fields.get("status", "")
    if status not in ("DONE", "BLOCKED", "FAILED", "ABORTED"):
        return "FAILED", "the driver left no status"
    return status, fields.get("cause", "")


def cause_category(status: str, cause: str) -> str | None:
    if status == "DONE":
        return None
    if status == "ABORTED":
        return "interrupted"
    if " stopped " in f" {cause} ":
        return "node_lost"
    if status == "BLOCKED":
        return "not_ready"
    return "bench_failed"


def cluster_plan(loaded: LoadedRecipe, options: RunOptions, hosts: list[str]) -> RunPlan:
    recipe = loaded.recipe
    run_dir = run_dir_for(Path(options.runs_dir), recipe.name, now())
    return RunPlan(
        recipe_name=recipe.name,
        recipe_path=str(loaded.path),
        digest=loaded.digest,
        runtime="docker",
        server_argv=("bash", str(run_dir / "driver.sh")),
        teardown="the driver's trap: node-K.sh stop on every started node, last first",
        container_name=None,
        env={},
        secret_names=tuple(recipe.secrets),
        base_url=f"http://{hosts[0].rsplit('@', 1)[-1]}:{recipe.engine.port}",
        served_model=recipe.served_name,
        bench_model=recipe.bench_model,
        ready_timeout_s=float(options.ready_timeout_s or recipe.bench.ready_timeout_s),
        grace_s=options.grace_s,
        bench=recipe.bench.model_dump(mode="json", exclude={"client", "model", "ready_timeout_s"}),
        run_dir=run_dir,
        unpinned=tuple(unpinned_refs(loaded)),
    )


class ClusterRuntime(RuntimeBase):
    """A multi-node recipe (topology.nodes > 1): its compiled driver, run from this machine."""

    preflight = False  # (every node runs the image under docker: the docker rules apply)

    def __init__(self, name: str, options: RunOptions, echo: Echo, env: Mapping[str, str]):
        from autobench.compile.cluster import DEFAULT_REMOTE

        super().__init__(name, options, echo, env)
        self.remote = options.remote or env.get("AUTOBENCH_REMOTE") or DEFAULT_REMOTE
        self.hosts: list[str] = []

    def compile(self, loaded: LoadedRecipe) -> Compiled:
        from autobench.compile.cluster import cluster_hosts, compile_cluster

        self.hosts = cluster_hosts(loaded, list(self.options.hosts) or None)
        files = compile_cluster(loaded, self.hosts, self.remote)
        script = "\n".join(f"# ===== {name}\n{text}" for name, text in sorted(files.items(), key=_driver_first))
        return Compiled(cluster_plan(loaded, self.options, self.hosts), script, files)

    def place(self, plan: RunPlan) -> RunPlan:
        return replace(plan, server_argv=("bash", str(plan.run_dir / "driver.sh")))

    def execute(self, run: Run) -> RowFacts:
        plan, outcome, echo = run.plan, run.outcome, run.echo
        run_dir = plan.run_dir
        loaded = run.loaded
        child_env = {**run.env, "AUTOBENCH_OUT": str(run_dir), "AUTOBENCH_REMOTE": self.remote}
        t = loaded.recipe.topology
        budget = t.cluster_timeout_s + plan.ready_timeout_s + (loaded.recipe.bench.max_seconds or 3600) + 600
        echo(f"run {plan.recipe_name}: {t.nodes} nodes ({t.executor}) {' '.join(self.hosts)}, folder {run_dir}")
        with (run_dir / DRIVER_LOG).open("wb") as log:
            with run.guard.deferred():  # the driver is started before a signal can stop it
                proc = subprocess.Popen(
                    ["bash", str(run_dir / "driver.sh")],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=child_env,
                    start_new_session=True,
                )
            try:
                proc.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                run.guard.disarm()
                _stop_driver(proc)
                outcome.notes.append(f"the driver ran past {budget:g}s and was stopped")
            except RunInterrupted as exc:
                run.guard.disarm()
                echo(f"interrupted by {exc.signame}; the driver tears every node down")
                outcome.signal = exc.signame
                _stop_driver(proc)
            finally:
                run.guard.disarm()
        text = (run_dir / DRIVER_LOG).read_text(encoding="utf-8", errors="replace")
        (run_dir / DRIVER_LOG).write_text(run.redact(text), encoding="utf-8")
        status, cause = read_status(run_dir / STATUS_FILE)
        outcome.status = status
        outcome.root_cause_category = cause_category(status, cause)
        outcome.root_cause_message = cause if status != "DONE" else None
        if status == "DONE":
            outcome.metrics = _metrics(run_dir / P.BENCH_JSON, outcome)
            if not outcome.metrics.get("completed"):
                outcome.status = "FAILED"
                outcome.root_cause_category = "bench_failed"
                outcome.root_cause_message = "no request completed"
        return self._row(loaded)

    def _row(self, loaded: LoadedRecipe) -> RowFacts:
        from autobench.recipe.imageref import parse_image_ref

        r = loaded.recipe
        image = r.container.image
        try:
            digest = parse_image_ref(image).digest
        except ValueError:
            digest = None
        remote = self.remote
        host_facts = {
            "runtime": "cluster",
            "executor": r.topology.executor,
            "nodes": r.topology.nodes,
            "gpus_per_node": r.topology.gpus_per_node,
            "hosts": self.hosts,
            "remote": shlex.split(remote)[0] if remote.strip() else remote,
            "driver_platform": platform.platform(),
        }
        return RowFacts(host_facts=host_facts, image=image, image_digest=digest)


def _stop_driver(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the driver's process group (its trap tears the nodes down), SIGKILL after 120 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _driver_first(item: tuple[str, str]) -> tuple[int, str]:
    return (0 if item[0] == "driver.sh" else 1, item[0])


def _metrics(path: Path, outcome: Any) -> dict[str, Any]:
    from autobench.bench.result import load_result_json
    from autobench.errors import AutobenchError
    from autobench.runrow import metric_columns

    try:
        norm = load_result_json(path)
    except (AutobenchError, OSError, ValueError) as exc:
        outcome.notes.append(f"bench result not read: {exc}")
        return {}
    return metric_columns(norm)


__all__ = ["DRIVER_LOG", "ClusterRuntime", "cause_category", "read_status"]

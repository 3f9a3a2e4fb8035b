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

import json
import os
import platform
import shlex
import signal
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autobench.errors import RunError
from autobench.recipe import LoadedRecipe
from autobench.run import plan as P
from autobench.run.folder import claim_run_dir, write_run_files
from autobench.run.plan import RunPlan, run_dir_for, unpinned_refs

DRIVER_LOG = "driver.log"
STATUS_FILE = "status"


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


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


def cluster_plan(loaded: LoadedRecipe, options: Any, hosts: list[str], remote: str) -> RunPlan:
    recipe = loaded.recipe
    run_dir = run_dir_for(Path(options.runs_dir), recipe.name, _now())
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


def run_cluster(
    loaded: LoadedRecipe,
    options: Any,
    *,
    echo: Callable[[str], None] = print,
    env: Mapping[str, str] | None = None,
) -> Any:
    """Run a multi-node recipe through its driver and record the outcome (a RunOutcome)."""
    from autobench.compile.cluster import DEFAULT_REMOTE, cluster_hosts, compile_cluster
    from autobench.run.orchestrate import RunOutcome, check_recipe, require_pinned

    check_recipe(loaded, echo)
    require_pinned(loaded, options.allow_unpinned or options.dry_run)
    hosts = cluster_hosts(loaded, list(options.hosts) or None)
    base_env = dict(os.environ if env is None else env)
    remote = options.remote or base_env.get("AUTOBENCH_REMOTE") or DEFAULT_REMOTE
    files = compile_cluster(loaded, hosts, remote)
    plan = cluster_plan(loaded, options, hosts, remote)
    script = "\n".join(f"# ===== {name}\n{text}" for name, text in sorted(files.items(), key=_driver_first))
    if options.dry_run:
        return RunOutcome(status="PLANNED", plan=plan, script=script, notes=list(plan.unpinned))

    from autobench.ledger import open_ledger
    from autobench.redaction import environment_secrets, redact

    ledger = open_ledger(options.ledger)
    try:
        claimed = claim_run_dir(plan)
        if claimed.run_dir != plan.run_dir:
            from dataclasses import replace

            claimed = replace(claimed, server_argv=("bash", str(claimed.run_dir / "driver.sh")))
        plan = claimed
        run_dir = plan.run_dir
        for name, text in files.items():
            path = run_dir / name
            path.write_text(text, encoding="utf-8")
            path.chmod(0o755)
        write_run_files(plan, script, loaded.data)
        secrets = environment_secrets(plan.secret_names, base_env)
        outcome = RunOutcome(status="FAILED", plan=plan, script=script)
        outcome.started_at = _now().isoformat()
        if plan.unpinned:
            outcome.notes.append("unpinned: " + ", ".join(plan.unpinned))
        child_env = {**base_env, "AUTOBENCH_OUT": str(run_dir), "AUTOBENCH_REMOTE": remote}
        t = loaded.recipe.topology
        budget = t.cluster_timeout_s + plan.ready_timeout_s + (loaded.recipe.bench.max_seconds or 3600) + 600
        echo(f"run {plan.recipe_name}: {t.nodes} nodes ({t.executor}) {' '.join(hosts)}, folder {run_dir}")
        with (run_dir / DRIVER_LOG).open("wb") as log:
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
                os.killpg(proc.pid, signal.SIGTERM)  # the driver's trap tears the nodes down
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                outcome.notes.append(f"the driver ran past {budget:g}s and was stopped")
            except KeyboardInterrupt:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=120)
        text = (run_dir / DRIVER_LOG).read_text(encoding="utf-8", errors="replace")
        (run_dir / DRIVER_LOG).write_text(redact(text, secrets), encoding="utf-8")
        status, cause = read_status(run_dir / STATUS_FILE)
        outcome.status = status
        outcome.root_cause_category = cause_category(status, cause)
        outcome.root_cause_message = redact(cause, secrets) if status != "DONE" else None
        if status == "DONE":
            outcome.metrics = _metrics(run_dir / P.BENCH_JSON, outcome)
            if not outcome.metrics.get("completed"):
                outcome.status = "FAILED"
                outcome.root_cause_category = "bench_failed"
                outcome.root_cause_message = "no request completed"
        outcome.ended_at = _now().isoformat()
        _record(ledger, loaded, plan, outcome, hosts, remote, base_env)
        (run_dir / P.OUTCOME_JSON).write_text(json.dumps(outcome.to_json_dict(), indent=2) + "\n")
        return outcome
    finally:
        close = getattr(ledger, "close", None)
        if close is not None:
            close()


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


def _record(
    ledger: Any,
    loaded: LoadedRecipe,
    plan: RunPlan,
    outcome: Any,
    hosts: list[str],
    remote: str,
    env: Mapping[str, str],
) -> None:
    """Append the run's row through ``autobench.runrow.new_run`` (the path every run takes)."""
    from autobench.recipe.imageref import parse_image_ref
    from autobench.runrow import RootCause, RunFacts, new_run

    r = loaded.recipe
    image = r.container.image
    try:
        digest = parse_image_ref(image).digest
    except ValueError:
        digest = None
    facts = RunFacts(
        status=outcome.status,
        source="run",
        metrics=outcome.metrics,
        root_cause=RootCause(outcome.root_cause_category, outcome.root_cause_message),
        notes=[f"run folder {plan.run_dir}", *outcome.notes],
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
        image=image,
        image_digest=digest,
        host_facts={
            "runtime": "cluster",
            "executor": r.topology.executor,
            "nodes": r.topology.nodes,
            "gpus_per_node": r.topology.gpus_per_node,
            "hosts": hosts,
            "remote": shlex.split(remote)[0] if remote.strip() else remote,
            "driver_platform": platform.platform(),
        },
    )
    rec = ledger.append(new_run(loaded, outcome.script, facts, env=env))
    outcome.run_id = getattr(rec, "id", None)
    outcome.display_id = getattr(rec, "display_id", None)


__all__ = ["DRIVER_LOG", "RunError", "cause_category", "read_status", "run_cluster"]

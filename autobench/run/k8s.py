"""``autobench k8s collect RECIPE RUN-ID``: a Kubernetes bench Job's result into the ledger.

The Job compiled by ``compile --target k8s`` ends its log with the result JSON between the
lines ``RESULT_BEGIN`` and ``RESULT_END`` (autobench/compile/k8s.py).  ``collect`` reads that
log with ``kubectl logs -l autobench.dev/run-id=RUN-ID,app.kubernetes.io/component=bench``
(``--kubectl`` and ``--namespace`` as you reach the cluster), cuts the result out and builds
the row as ``autobench record --metrics`` does (autobench.record): DONE when a request
completed, else FAILED.  autobench holds no cluster credentials: kubectl uses yours.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from autobench.errors import RunError
from autobench.ledger.models import NewRun

TIMEOUT_S = 120


def job_log(run_id: str, namespace: str | None, kubectl: str, env: Mapping[str, str]) -> str:
    argv = [*shlex.split(kubectl), "logs", "-l", f"autobench.dev/run-id={run_id},app.kubernetes.io/component=bench"]
    argv += ["--tail=-1", *(["-n", namespace] if namespace else [])]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=dict(env))
    except FileNotFoundError as exc:
        raise RunError(f"{argv[0]} is not installed", hint="install kubectl, or pass --kubectl CMD") from exc
    except subprocess.TimeoutExpired as exc:
        raise RunError(f"kubectl logs did not answer within {TIMEOUT_S} s") from exc
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise RunError(f"kubectl logs failed: {why}", hint="check --namespace and your kubectl context")
    return done.stdout


def result_from_log(text: str, run_id: str) -> str:
    """The result JSON the Job printed between the marker lines (the last such block)."""
    from autobench.compile.k8s import RESULT_BEGIN, RESULT_END

    lines = text.splitlines()
    begins = [i for i, line in enumerate(lines) if line.strip() == RESULT_BEGIN]
    if not begins:
        raise RunError(
            f"the bench Job of run id {run_id} printed no result (no {RESULT_BEGIN} line in its log)",
            hint="has the Job finished? kubectl get jobs -l autobench.dev/run-id=" + run_id,
        )
    start = begins[-1] + 1
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == RESULT_END), None)
    body = "\n".join(lines[start:end]).strip() if end is not None else ""
    if not body:
        raise RunError(f"the bench Job of run id {run_id} wrote no result JSON (the bench failed before it)")
    return body


def collect(recipe: str, run_id: str, *, namespace: str | None, kubectl: str, env: Mapping[str, str]) -> NewRun:
    """The row of the Job's run: its result, the recipe's snapshot, DONE or FAILED."""
    from autobench.digits import load_json
    from autobench.record import RecordInput, build_new_run

    body = result_from_log(job_log(run_id, namespace, kubectl, env), run_id)
    try:
        doc = load_json(body)
    except ValueError as exc:
        raise RunError(f"the bench Job of run id {run_id} printed a result that is not JSON: {exc}") from exc
    completed = doc.get("completed") if isinstance(doc, dict) else None
    with tempfile.TemporaryDirectory(prefix="autobench-k8s-") as tmp:
        path = Path(tmp) / f"{run_id}.json"
        path.write_text(body, encoding="utf-8")
        return build_new_run(
            RecordInput(
                recipe_path=recipe,
                status="DONE" if isinstance(completed, int) and completed > 0 else "FAILED",
                root_cause=None
                if isinstance(completed, int) and completed > 0
                else "bench_failed:no request completed",
                metrics_file=str(path),
                notes=[f"k8s run id {run_id}" + (f" in namespace {namespace}" if namespace else "")],
            )
        )


__all__ = ["collect", "job_log", "result_from_log"]

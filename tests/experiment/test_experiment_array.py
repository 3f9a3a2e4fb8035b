"""An experiment's Slurm job array without a cluster: the compiled script (one task per
treatment, --array with the % bound, the ledger only by name), the words each task runs, and
the task states parsed from real `scontrol show job -o` output (slurm-wlm 22.05, captured from
tests/run/slurm_cluster.py: fixtures/scontrol_array.json).  The array on a real cluster is
test_experiment_slurm.py (integration)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_experiment_design import write

from autobench.compile.slurm_array import MAX_TASKS, array_spec
from autobench.errors import RecipeError
from autobench.experiment import load_experiment, plan_experiment
from autobench.experiment.array import TaskState, array_script, job_ledger, parse_tasks, run_args
from autobench.experiment.plan import READY
from autobench.run.outcome import RunOptions

SAMPLE = json.loads((Path(__file__).with_name("fixtures") / "scontrol_array.json").read_text(encoding="utf-8"))


def _plan(tmp_path: Path, body: str = "factors:\n  engine.max_num_seqs: [1, 2, 3]\n"):
    return plan_experiment(load_experiment(write(tmp_path, body)), predictor=lambda loaded: (READY, None, None))


def test_the_array_spec_bounds_the_tasks_at_once() -> None:
    assert array_spec(4, 2) == "0-3%2"
    assert array_spec(4, 3) == "0-3%3"
    assert array_spec(4, 4) == "0-3" and array_spec(4, 9) == "0-3"  # all at once: no bound
    assert array_spec(1, 1) == "0" and array_spec(2, 1) == "0-1%1"
    assert array_spec(MAX_TASKS, 8) == f"0-{MAX_TASKS - 1}%8"
    for count, parallel, words in (
        (0, 1, "a job array of 0 tasks: an experiment array holds 1 to 1000"),
        (MAX_TASKS + 1, 1, "a job array of 1001 tasks"),
        (3, 0, "--max-parallel 0: at least 1 task must run"),
    ):
        with pytest.raises(RecipeError, match=words):
            array_spec(count, parallel)


def test_the_script_runs_treatment_k_in_task_k_and_names_the_ledger_only_by_variable(tmp_path) -> None:
    plan = _plan(tmp_path)
    files = [tmp_path / "exp" / f"t{n}.yaml" for n in (1, 2, 3)]
    options = RunOptions(
        runtime="slurm", ledger="postgresql://team:s3cret@db/ledger", partition="gpu", account="lab", runs_dir="runs"
    )
    text = array_script(plan, plan.treatments, files, options, max_parallel=2)
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env bash" and lines[1] == "#SBATCH --job-name=autobench-exp-exp"
    assert lines[2:6] == [
        "#SBATCH --array=0-2%2",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=1",
    ]
    assert "#SBATCH --partition=gpu" in lines and "#SBATCH --account=lab" in lines
    assert "#SBATCH --output=slurm-%A_%a.out" in lines
    assert "#SBATCH --time=95" in lines  # boot 1,800 s + the uncapped bench 1 h + 5 min, in minutes
    assert f"# plan:       {plan.digest}" in lines
    for n, (planned, path) in enumerate(zip(plan.treatments, files, strict=True)):
        assert f"  {path}  # {n}: t{n + 1} max_num_seqs={n + 1} {planned.digest}" in lines
    runs = str(Path("runs").resolve())
    assert lines[-1] == (
        f'exec autobench run "${{TREATMENTS[$task]}}" --ledger "$AUTOBENCH_LEDGER" --runtime process --runs-dir {runs} --no-live'
    )
    assert "s3cret" not in text and "postgresql" not in text  # the ledger travels in the environment
    # the largest treatment's GPUs, unless given; gres form; a time given
    wide = _plan(tmp_path, "factors:\n  engine.tensor_parallel_size: [1, 4, 2]\n")
    text = array_script(wide, wide.treatments, files, RunOptions(gpu_request="gres", time_limit="1:30:00"), 3)
    assert "#SBATCH --gres=gpu:4" in text and "#SBATCH --time=1:30:00" in text and "--array=0-2\n" in text
    text = array_script(wide, wide.treatments, files, RunOptions(gpus_per_node=0), 3)
    assert "--gpus-per-node" not in text and "--gres" not in text  # 0: a CPU cluster, request none


def test_what_each_task_runs_follows_the_options() -> None:
    assert run_args(RunOptions(runs_dir="/r")) == ["--runtime", "process", "--runs-dir", "/r", "--no-live"]
    full = RunOptions(
        runs_dir="/r",
        container="docker",
        vllm_exec="python -m autobench.run.standin",
        ready_timeout_s=90.0,
        vllm_version="0.23.1",
        allow_unpinned=True,
        force=True,
    )
    assert run_args(full) == [
        "--runtime",
        "docker",
        "--runs-dir",
        "/r",
        "--no-live",
        "--vllm-exec",
        "python -m autobench.run.standin",
        "--ready-timeout",
        "90.0",
        "--vllm-version",
        "0.23.1",
        "--allow-unpinned",
        "--force",
    ]
    for container in ("pyxis", "apptainer"):
        with pytest.raises(RecipeError, match=f"--container {container}: an experiment's array tasks run"):
            run_args(RunOptions(container=container))


def test_the_ledger_the_nodes_are_given(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert job_ledger("book.db") == str(tmp_path / "book.db")  # absolute: the tasks run elsewhere
    assert job_ledger(None) == str(tmp_path / "ledger.db")
    monkeypatch.setenv("AUTOBENCH_LEDGER", "postgresql://team:s3cret@db:5432/ledger")
    assert job_ledger(None) == "postgresql://team:s3cret@db:5432/ledger"  # whole: it goes by environment


def test_a_multi_node_array_asks_for_its_nodes_and_runs_each_job_script_in_its_task(tmp_path) -> None:
    two = "{topology.nodes: 2, topology.gpus_per_node: 1, engine.pipeline_parallel_size: 2}"
    three = "{topology.nodes: 2, topology.gpus_per_node: 3, engine.pipeline_parallel_size: 2}"
    plan = plan_experiment(
        load_experiment(write(tmp_path, f"design: list\ntreatments: [{{topology.nodes: 1}}, {two}, {three}]\n")),
        predictor=lambda loaded: (READY, None, None),
        runtime=None,
    )
    files = [tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"]
    with pytest.raises(RecipeError) as mixed:
        array_script(plan, plan.treatments, files, RunOptions(), 1)  # the caller groups them
    assert str(mixed.value) == "one job array per node count, not [1, 2] (hint: a bug: report it with the experiment)"
    text = array_script(plan, plan.treatments[1:], files[1:], RunOptions(runs_dir="runs", gpu_request="gres"), 1)
    lines = text.splitlines()
    assert "#SBATCH --nodes=2" in lines and "#SBATCH --gres=gpu:3" in lines  # the largest treatment's GPUs per node
    runs = str(Path("runs").resolve())
    assert lines[-1] == (
        'exec autobench run "${TREATMENTS[$task]}" --ledger "$AUTOBENCH_LEDGER" --runtime slurm --in-allocation '
        f"--container none --gpus-per-node 3 --gpu-request gres --runs-dir {runs} --no-live"
    )
    no_gpus = array_script(plan, plan.treatments[1:2], files[1:2], RunOptions(gpus_per_node=0), 1)
    assert "--gpus-per-node 0 --gpu-request gpus-per-node" in no_gpus and "#SBATCH --gpus" not in no_gpus
    with pytest.raises(RecipeError) as info:
        array_script(plan, plan.treatments[1:], files[1:], RunOptions(container="docker"), 1)
    assert str(info.value) == (
        f"{tmp_path / 'exp.yaml'}: treatment t2 (nodes=2 gpus_per_node=1 pipeline_parallel_size=2) runs on 2 nodes: "
        "a multi-node task runs its nodes' servers as srun steps, which --container docker cannot "
        "(hint: use --container none (the server on the nodes), or --runtime docker (the multi-node driver))"
    )
    in_docker = array_script(plan, plan.treatments[:1], files[:1], RunOptions(container="docker", runs_dir="r"), 1)
    assert "#SBATCH --nodes=1\n" in in_docker and "--runtime docker --runs-dir" in in_docker  # one node: fine
    assert run_args(RunOptions(), 1, 3)[:2] == ["--runtime", "process"]  # one node: gpus are the array's
    assert run_args(RunOptions(), 2, None)[5:7] == ["--gpus-per-node", "0"]
    with pytest.raises(RecipeError) as refused:
        run_args(RunOptions(container="pyxis"))
    assert str(refused.value) == (
        "--container pyxis: an experiment's array tasks run `autobench run` on the node, itself or in Docker "
        "(hint: use --container none or docker)"
    )


def test_bad_resources_are_refused_before_anything_is_submitted(tmp_path) -> None:
    files = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    one = _plan(tmp_path)
    for options, words in (
        (RunOptions(partition="gpu;rm"), "--partition must be a Slurm name"),
        (RunOptions(account="a b"), "--account must be a Slurm name"),
        (RunOptions(time_limit="soon"), "--time 'soon' is not a Slurm time"),
        (RunOptions(gpu_request="tres"), "unknown --gpu-request 'tres'"),
    ):
        with pytest.raises(RecipeError, match=words):
            array_script(one, one.treatments, files + [tmp_path / "c.yaml"], options, 1)


def test_task_states_from_real_scontrol_lines() -> None:
    tasks, ended = parse_tasks(SAMPLE["pending"])  # one line: every task still pending
    assert tasks == {} and not ended
    tasks, ended = parse_tasks(SAMPLE["running"])
    assert not ended
    assert tasks[3] == TaskState(3, "RUNNING", "abnode2", 0) and tasks[2] == TaskState(2, "RUNNING", "abnode1", 0)
    assert tasks[1].state == "COMPLETED" and tasks[1].nodes == "abnode2"
    tasks, ended = parse_tasks(SAMPLE["ended"])
    assert ended and sorted(tasks) == [0, 1, 2, 3] and {t.state for t in tasks.values()} == {"COMPLETED"}
    tasks, ended = parse_tasks(SAMPLE["cancelled"])  # cancelled before any task started: none ran
    assert tasks == {} and ended
    assert parse_tasks("") == ({}, False)  # nothing known is not an end
    failed = "JobId=9 ArrayJobId=8 ArrayTaskId=1 JobState=FAILED Reason=NonZeroExitCode ExitCode=2:0 NodeList=(null)"
    assert parse_tasks(failed) == ({1: TaskState(1, "FAILED", None, 2)}, True)
    mixed = failed + "\nJobId=8 ArrayJobId=8 ArrayTaskId=2-3%1 JobState=PENDING Reason=JobArrayTaskLimit\n"
    assert parse_tasks(mixed) == ({1: TaskState(1, "FAILED", None, 2)}, False)


def test_a_busy_controller_is_asked_again_and_a_forgotten_job_has_ended(tmp_path, monkeypatch) -> None:
    from autobench.experiment.array import array_state

    scontrol = tmp_path / "scontrol"
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    for body, expected in (
        ('echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1', ({}, True)),
        ('echo "slurm_load_jobs error: Socket timed out on send/recv operation" >&2; exit 1', ({}, None)),
        (f"cat <<'EOF'\n{SAMPLE['running']}EOF", parse_tasks(SAMPLE["running"])),
    ):
        scontrol.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        scontrol.chmod(0o755)
        assert array_state("7", dict(os.environ)) == expected


def _mixed(tmp_path: Path):  # type: ignore[no-untyped-def]
    two = "{topology.nodes: 2, topology.gpus_per_node: 1, engine.pipeline_parallel_size: 2}"
    body = f"design: list\ntreatments: [{two}, {{topology.nodes: 1}}, {two[:-1]}, engine.max_num_seqs: 4}}]\n"
    return plan_experiment(load_experiment(write(tmp_path, body)), predictor=lambda loaded: (READY, None, None))


def test_the_treatments_are_one_array_per_node_count_fewest_nodes_first(tmp_path) -> None:
    from autobench.experiment.array import SlurmArray
    from autobench.experiment.execute import Booted

    plan = _mixed(tmp_path)
    arrays: list[list[str]] = []

    def one_array(todo):  # type: ignore[no-untyped-def]
        arrays.append([p.treatment.id for p in todo])
        return {p.treatment.id: Booted("DONE", run_uid=p.treatment.id) for p in todo}, False

    fan = SlurmArray(plan, tmp_path, RunOptions(), 2, echo=lambda _: None, env={})
    fan._array = one_array  # type: ignore[method-assign]  # what sbatch would run: the grouping is the unit here
    got = fan(plan.treatments)
    assert arrays == [["t2"], ["t1", "t3"]] and sorted(got) == ["t1", "t2", "t3"]
    arrays.clear()
    assert fan(plan.treatments[::2]) == {"t1": Booted("DONE", run_uid="t1"), "t3": Booted("DONE", run_uid="t3")}
    assert arrays == [["t1", "t3"]]


def test_an_interrupted_array_submits_no_later_one(tmp_path) -> None:
    from autobench.experiment.array import SlurmArray
    from autobench.experiment.execute import Booted

    plan = _mixed(tmp_path)
    arrays: list[list[str]] = []

    def cancelled(todo):  # type: ignore[no-untyped-def]
        arrays.append([p.treatment.id for p in todo])
        return {todo[0].treatment.id: Booted("ABORTED")}, True

    fan = SlurmArray(plan, tmp_path, RunOptions(), 2, echo=lambda _: None, env={})
    fan._array = cancelled  # type: ignore[method-assign]
    assert fan(plan.treatments) == {"t2": Booted("ABORTED")} and arrays == [["t2"]]


def test_each_treatment_is_validated_for_what_its_task_runs(tmp_path) -> None:
    from autobench.experiment.array import task_rules

    plan = _mixed(tmp_path)
    two, one = plan.treatments[0].loaded, plan.treatments[1].loaded
    rules = task_rules(RunOptions(runtime="slurm"))
    assert (rules(two), rules(one)) == ("slurm", "process")  # the job script in the allocation; the node's runtime
    in_docker = task_rules(RunOptions(runtime="slurm", container="docker"))
    assert (in_docker(two), in_docker(one)) == ("docker", "docker")
    unknown = task_rules(RunOptions(runtime="slurm", container="pyxis"))  # refused later, by run_args
    assert unknown(one) == "process"


def test_the_array_asks_for_the_longest_time_any_treatment_needs(tmp_path) -> None:
    body = "design: list\ntreatments: [{bench.ready_timeout_s: 60}, {bench.ready_timeout_s: 600}]\n"
    plan = plan_experiment(load_experiment(write(tmp_path, body)), predictor=lambda loaded: (READY, None, None))
    text = array_script(plan, plan.treatments, [tmp_path / "a.yaml", tmp_path / "b.yaml"], RunOptions(), 1)
    assert "#SBATCH --time=75\n" in text  # 600 s boot + the uncapped bench 1 h + 5 min, in minutes

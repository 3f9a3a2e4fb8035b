"""Multi-node recipes: node scripts + a driver, run end to end with the remote command replaced.

No second machine, Docker engine or GPU exists here: the remote command is a local one
(tests/run/fake_cluster.py) that runs each node script on this machine, the head's "container"
is the REAL synthetic server, and the workers are stub processes.  Everything else -- the
compiled driver and node scripts under real bash, the readiness probes, the bench client, the
teardown trap and the ledger row -- is real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_cluster import install
from run_helpers import free_port, ledger_rows, pid_alive, run_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compile"))
from compile_helpers import shellcheck_path  # noqa: E402

from autobench.cli import main
from autobench.compile.cluster import compile_cluster
from autobench.errors import RecipeError
from autobench.recipe import load_recipe

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


def cluster_recipe(port: int, nodes: int, *, executor: str = "native", hosts: bool = True) -> str:
    # Every "host" is this machine: distinct loopback addresses, so the bench (run from here)
    # reaches the head at http://HEAD:PORT as it would reach a real head.
    names = ", ".join(f"127.0.0.{k + 1}" for k in range(nodes))
    return f"""\
name: cluster-{nodes}
model:
  repo: acme/tiny-model
  revision: {SHA}
  served_name: tiny
container:
  image: vllm/vllm-openai:v0.23.1
engine:
  host: 127.0.0.1
  port: {port}
  tensor_parallel_size: 2
  pipeline_parallel_size: {nodes}
topology:
  nodes: {nodes}
  gpus_per_node: 2
  executor: {executor}
{"  hosts: [" + names + "]" if hosts else ""}
bench:
  dataset: {{kind: random, input_len: 16, output_len: 8}}
  num_prompts: 8
  concurrency: 2
  max_tokens: 8
  ready_timeout_s: 30
"""


def _env(tmp_path: Path, bindir: Path, **extra: str) -> dict[str, str]:
    env = run_env(tmp_path)
    env.update(
        PATH=f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        FAKE_ROOT=str(tmp_path / "hosts"),
        FAKE_HEAD_HOST="127.0.0.1",
        AUTOBENCH_POLL_S="0.2",
        **extra,
    )
    return env


def _run(tmp_path: Path, recipe: Path, env: dict[str, str], timeout: float = 90) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "autobench", "run", str(recipe), "--remote", "remote"]
    argv += ["--ledger", str(tmp_path / "ledger.db"), "--runs-dir", str(tmp_path / "runs")]
    return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _live_containers(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "hosts").glob("*/*.pid"))


@pytest.mark.parametrize("nodes", [2, 4])
def test_compile_writes_a_driver_and_one_script_per_node(tmp_path, nodes):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(cluster_recipe(8000, nodes))
    out = tmp_path / "out"
    assert main(["compile", str(recipe), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["driver.sh", *[f"node-{k}.sh" for k in range(nodes)]]
    for path in out.iterdir():
        assert os.access(path, os.X_OK)
        subprocess.run(["bash", "-n", str(path)], check=True)
        lint = subprocess.run([shellcheck_path(), "-s", "bash", str(path)], capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout
    head = (out / "node-0.sh").read_text()
    worker = (out / f"node-{nodes - 1}.sh").read_text()
    assert f"--nnodes {nodes}" in head and "--node-rank 0" in head and "--headless" not in head
    assert f"--node-rank {nodes - 1}" in worker and "--master-addr 127.0.0.1" in worker and "--headless" in worker
    assert "--network host" in worker and "autobench bench" not in worker
    driver = (out / "driver.sh").read_text()
    assert "ssh -o BatchMode=yes" in driver and f"NODES={nodes}" in driver


def test_ray_executor_starts_ray_nodes_and_serves_from_the_head(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(cluster_recipe(8000, 2, executor="ray"))
    files = compile_cluster(load_recipe(recipe))
    assert "ray start --head --port=6379 --block" in files["node-0.sh"]
    assert "ray start --address=127.0.0.1:6379 --block" in files["node-1.sh"]
    assert "--distributed-executor-backend ray" in files["node-0.sh"]
    assert "--nnodes" not in files["node-0.sh"]
    assert 'on_node 0 cluster "$NODES"' in files["driver.sh"]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        lint = subprocess.run([shellcheck_path(), "-s", "bash", str(tmp_path / name)], capture_output=True, text=True)
        assert lint.returncode == 0, (name, lint.stdout)


def test_hosts_come_from_the_command_line_or_the_recipe(tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(cluster_recipe(8000, 2, hosts=False))
    assert main(["compile", str(recipe), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no hosts are named" in err and f"{recipe}:" in err and not (tmp_path / "o").exists()
    assert main(["compile", str(recipe), "-o", str(tmp_path / "o"), "--hosts", "gpu1,gpu2"]) == 0
    assert "--master-addr gpu1" in (tmp_path / "o" / "node-1.sh").read_text()
    with pytest.raises(RecipeError, match="3 host"):
        compile_cluster(load_recipe(recipe), ["a", "b", "c"])
    capsys.readouterr()
    assert main(["compile", str(recipe), "--hosts", "a,b"]) == 2  # a folder is needed
    assert "-o DIR" in capsys.readouterr().err


def test_four_node_run_reaches_done(tmp_path):
    bindir = install(tmp_path)
    port = free_port()
    recipe = tmp_path / "c4.yaml"
    recipe.write_text(cluster_recipe(port, 4))
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err + out
    assert out.startswith("DONE cluster-4")
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.metrics["completed"] == 8
    assert row.host_facts["hosts"] == ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]
    assert row.script_snapshot.startswith("# ===== driver.sh") and "# ===== node-3.sh" in row.script_snapshot
    run_dir = next((tmp_path / "runs").iterdir())
    assert (run_dir / "status").read_text().startswith("status=READY")  # `driver.sh up`; autobench benched
    # a first-class row: the cell with its raw samples, boot facts from the head's log fetched back
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        (cell,) = book.cells(row.id)
    assert cell.samples is not None and cell.samples.count("ok") == 8
    assert row.boot["architecture"] == "SyntheticForCausalLM" and row.tokenizer
    assert "synthetic" in (run_dir / "server.log").read_text().lower()
    assert json.loads((run_dir / "bench.json").read_text())["completed"] == 8
    # every node was started, then torn down; nothing is left running
    for k, host in enumerate(["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]):
        calls = [json.loads(x) for x in (tmp_path / "hosts" / host / "calls.jsonl").read_text().splitlines()]
        verbs = [c[0] for c in calls]
        assert "run" in verbs and verbs[-1] == "rm", (host, verbs)
        run_call = next(c for c in calls if c[0] == "run")
        assert run_call[run_call.index("--node-rank") + 1] == str(k)
    assert _live_containers(tmp_path) == []


def test_killing_a_worker_tears_every_node_down_and_records_the_cause(tmp_path):
    bindir = install(tmp_path)
    port = free_port()
    recipe = tmp_path / "c2.yaml"
    recipe.write_text(cluster_recipe(port, 2))
    # The head "loads the model" for 20 s; the worker is killed while the driver waits for readiness.
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir, FAKE_BOOT_DELAY="20"))
    worker_pid = tmp_path / "hosts" / "127.0.0.2" / "autobench-cluster-2-node1.pid"
    head_pid = tmp_path / "hosts" / "127.0.0.1" / "autobench-cluster-2-node0.pid"

    def kill_worker() -> None:
        deadline = time.monotonic() + 60
        while not worker_pid.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(int(worker_pid.read_text()), 9)

    killer = threading.Thread(target=kill_worker)
    killer.start()
    head = None
    deadline = time.monotonic() + 60
    while head is None and time.monotonic() < deadline:
        if head_pid.exists():
            head = int(head_pid.read_text())
        time.sleep(0.05)
    out, err = proc.communicate(timeout=120)
    killer.join()
    assert proc.returncode == 6, err + out
    (row,) = ledger_rows(tmp_path)
    assert row.status == "BLOCKED"
    assert row.root_cause_category == "node_lost"
    assert row.root_cause_message == "node 1 (127.0.0.2) stopped before the server was ready"
    assert "root cause: node_lost: node 1 (127.0.0.2) stopped" in out
    # the head was torn down too, long before its 20 s boot ended
    assert head is not None and _live_containers(tmp_path) == []
    assert not pid_alive(head)
    log = next((tmp_path / "runs").iterdir()) / "driver.log"
    assert "teardown node 0 (127.0.0.1)" in log.read_text()


def _wait_for(predicate, what: str, limit: float = 90) -> None:
    """Poll until ``predicate()`` (a generous limit only so a broken run cannot hang the suite)."""
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def _slow_bench(recipe: Path) -> None:
    recipe.write_text(recipe.read_text().replace("num_prompts: 8", "num_prompts: 100000"))


def _benching(port: int) -> bool:
    """The bench is under way: the head has generated tokens (its /metrics says so).  "server
    ready" in driver.log is too early: `up` and the run's step into the bench follow it."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode()
    except OSError:
        return False
    return any(
        line.startswith("vllm:generation_tokens_total") and float(line.split()[-1]) > 0 for line in text.splitlines()
    )


def _driver_processes(run_dir: Path) -> list[int]:
    """Processes whose command line names the run folder (the driver's phases and their children)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(run_dir) in (proc / "cmdline").read_bytes().decode(errors="replace") and pid_alive(
                    int(proc.name)
                ):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.integration
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_the_bench_aborts_and_tears_every_node_down(tmp_path, signame):
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    port = free_port()
    recipe.write_text(cluster_recipe(port, 2))
    _slow_bench(recipe)
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir, FAKE_SERVER_ARGS="--ttft-ms 20 --itl-ms 5"))
    _wait_for(lambda: _benching(port), "the bench started")
    proc.send_signal(getattr(signal, signame))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (row,) = ledger_rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_category == "interrupted"
    assert row.root_cause_message == f"interrupted by {signame} during bench"
    run_dir = next((tmp_path / "runs").iterdir())
    assert _live_containers(tmp_path) == [] and _driver_processes(run_dir) == []
    # nothing writes into the run folder after the row: every file is as it was when recorded
    before = {p: p.stat().st_mtime_ns for p in run_dir.iterdir()}
    time.sleep(1)
    assert {p: p.stat().st_mtime_ns for p in run_dir.iterdir()} == before
    assert "\x00" not in (run_dir / "driver.log").read_text()


@pytest.mark.integration
def test_a_second_run_on_held_nodes_is_refused_naming_the_first(tmp_path):
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    recipe.write_text(cluster_recipe(free_port(), 2))
    env = _env(tmp_path, bindir, FAKE_BOOT_DELAY="60")
    first = _run(tmp_path, recipe, env)
    head_pid = tmp_path / "hosts" / "127.0.0.1" / "autobench-cluster-2-node0.pid"
    _wait_for(head_pid.exists, "the first run's head started")
    second = subprocess.run(
        [sys.executable, "-m", "autobench", "run", str(recipe), "--remote", "remote", "--ledger"]
        + [str(tmp_path / "ledger.db"), "--runs-dir", str(tmp_path / "runs")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    first_dir = min((tmp_path / "runs").iterdir())
    assert second.returncode == 6, second.stderr
    line = second.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: refused: node 0 (127.0.0.1) port {_port(recipe)} is held by cluster-2:")
    assert f"cluster-2:{first_dir.name}@" in line and f":pid{first.pid}" in line
    assert ledger_rows(tmp_path) == []  # refused: nothing ran, nothing recorded
    assert head_pid.exists()  # the first run's head still runs: the second touched nothing
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=120)
    (row,) = ledger_rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_message == "interrupted by SIGTERM during boot"
    assert _live_containers(tmp_path) == []
    assert not list((tmp_path / "hosts").glob("*/locks/*"))  # every lock released


def _port(recipe: Path) -> int:
    return int(next(line for line in recipe.read_text().splitlines() if "port:" in line).split(":")[1])


@pytest.mark.integration
def test_an_unreachable_node_is_not_a_stopped_one_and_the_row_says_what_may_still_run(tmp_path):
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    port = free_port()
    recipe.write_text(cluster_recipe(port, 2))
    _slow_bench(recipe)
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir, FAKE_SERVER_ARGS="--ttft-ms 20 --itl-ms 5"))
    _wait_for(lambda: _benching(port), "the bench started")
    (tmp_path / "hosts" / "127.0.0.2.unreachable").touch()  # the worker's link goes down
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 6, err
    (row,) = ledger_rows(tmp_path)
    left = "node 1 (127.0.0.2): container autobench-cluster-2-node1 may still run (teardown failed: unreachable)"
    assert row.status == "FAILED" and row.root_cause_category == "node_unreachable"
    assert row.root_cause_message.startswith("node 1 (127.0.0.2) unreachable during the bench")
    assert left in row.root_cause_message and f"may still run: {left}" in row.notes
    run_dir = next((tmp_path / "runs").iterdir())
    assert "teardown failed (exit 255, try 3 of 3)" in (run_dir / "driver.log").read_text()
    # the head was torn down; the worker really is still running where it could not be reached
    assert [p.parent.name for p in _live_containers(tmp_path)] == ["127.0.0.2"]
    worker = tmp_path / "hosts" / "127.0.0.2" / "autobench-cluster-2-node1.pid"
    os.killpg(int(worker.read_text()), signal.SIGKILL)


@pytest.mark.integration
def test_secrets_reach_every_node_on_stdin_without_ssh_configuration(tmp_path):
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    recipe.write_text(cluster_recipe(free_port(), 2).replace("container:", "secrets: [HF_TOKEN]\ncontainer:"))
    token = "hf_" + "Q" * 34
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir, HF_TOKEN=token))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err + out
    for host, k in (("127.0.0.1", 0), ("127.0.0.2", 1)):
        seen = json.loads((tmp_path / "hosts" / host / f"autobench-cluster-2-node{k}.env").read_text())
        assert seen == {"HF_TOKEN": True}  # set on the node, though the "ssh" session's env is empty
    run_dir = next((tmp_path / "runs").iterdir())
    for path in run_dir.iterdir():
        assert token not in path.read_text(errors="replace"), path


@pytest.mark.integration
def test_a_grid_runs_on_one_boot_across_nodes(tmp_path):
    """concurrency [1, 2] x repeat 2: four cells benched in-process against the one head, each
    with its raw samples; every node started once.  `compile` (driver.sh run by hand benches one
    cell) still refuses the grid."""
    bindir = install(tmp_path)
    recipe = tmp_path / "grid.yaml"
    text = cluster_recipe(free_port(), 2).replace("  concurrency: 2\n", "  concurrency: [1, 2]\n  repeat: 2\n")
    recipe.write_text(text)
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir))
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err + out
    (row,) = ledger_rows(tmp_path)
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        cells = book.cells(row.id)
    assert sorted((c.params["concurrency"], c.params["repeat"]) for c in cells) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all(c.samples is not None and c.samples.count("ok") == 8 for c in cells)
    for host in ("127.0.0.1", "127.0.0.2"):
        calls = [json.loads(x) for x in (tmp_path / "hosts" / host / "calls.jsonl").read_text().splitlines()]
        assert [c[0] for c in calls].count("run") == 1  # one boot
    assert main(["compile", str(recipe), "-o", str(tmp_path / "o")]) == 2


@pytest.mark.integration
def test_nodes_status_and_stop_show_and_clear_what_a_dead_run_left(tmp_path, capsys):
    """autobench killed with SIGKILL mid-bench (no teardown): the nodes keep running and stay
    claimed; `nodes status` names the holder, `nodes stop` clears them, and the next run is DONE."""
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    port = free_port()
    recipe.write_text(cluster_recipe(port, 2))
    _slow_bench(recipe)
    env = _env(tmp_path, bindir, FAKE_SERVER_ARGS="--ttft-ms 20 --itl-ms 5")
    proc = _run(tmp_path, recipe, env)
    _wait_for(lambda: _benching(port), "the bench started")
    proc.kill()
    proc.communicate(timeout=60)
    run_dir = next((tmp_path / "runs").iterdir())
    _wait_for(lambda: _driver_processes(run_dir) == [], "the watch ended with its run")
    nodes_cli = [sys.executable, "-m", "autobench", "nodes"]
    status = subprocess.run(
        [*nodes_cli, "status", str(recipe), "--remote", "remote", "--json"], env=env, capture_output=True, text=True
    )
    assert status.returncode == 0, status.stderr
    states = json.loads(status.stdout)
    assert [s["running"] for s in states] == [True, True]
    assert all(s["holder"].startswith(f"cluster-2:{run_dir.name}@") for s in states)
    stop = subprocess.run(
        [*nodes_cli, "stop", str(recipe), "--remote", "remote", "--json"], env=env, capture_output=True, text=True
    )
    assert stop.returncode == 0, stop.stderr
    assert [(s["running"], s["holder"]) for s in json.loads(stop.stdout)] == [(False, None), (False, None)]
    assert _live_containers(tmp_path) == []
    recipe.write_text(recipe.read_text().replace("num_prompts: 100000", "num_prompts: 8"))
    again = _run(tmp_path, recipe, env)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err + out


@pytest.mark.integration
def test_a_bad_flag_on_the_head_is_vllms_refusal_from_the_heads_log_not_a_lost_node(tmp_path):
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    recipe.write_text(cluster_recipe(free_port(), 2))
    log = tmp_path / "vllm.log"
    log.write_text(
        "usage: vllm serve [model_tag] [options]\nvllm: error: unrecognized arguments: --max-model-length 4096\n"
    )
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir, FAKE_HEAD_LOG=str(log)))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 6, err
    (row,) = ledger_rows(tmp_path)
    assert row.status == "BLOCKED" and row.root_cause_category == "launcher_usage"
    assert "--max-model-length" in row.root_cause_message
    assert "node 0 (127.0.0.1) stopped before the server was ready" in row.notes  # the driver's view, kept
    run_dir = next((tmp_path / "runs").iterdir())
    assert "unrecognized arguments" in (run_dir / "server.log").read_text()  # fetched back from the head
    assert _live_containers(tmp_path) == []


def test_a_slow_boot_prints_the_drivers_step_and_the_heads_last_line(tmp_path):
    """Boot progress (issue #31) on the multi-node driver: the head "loads the model" for 13 s;
    every 10 s of `up` the run prints the time elapsed, the driver's step and the head's last
    log line, fetched with `driver.sh serverlog` through the remote command."""
    bindir = install(tmp_path)
    recipe = tmp_path / "c2.yaml"
    recipe.write_text(cluster_recipe(free_port(), 2))
    proc = _run(tmp_path, recipe, _env(tmp_path, bindir, FAKE_BOOT_DELAY="13"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err + out
    boot = [line for line in err.splitlines() if line.startswith("boot: ")]
    assert boot and boot[0].startswith("boot: 0:10 elapsed, driver: start node 1 (127.0.0.2); server: "), err
    assert "Starting to load model (synthetic boot delay 13 s)" in boot[0]
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and _live_containers(tmp_path) == []


def test_fetching_the_heads_log_never_outlives_its_timeout(tmp_path):
    """cluster._fetch, which asks `driver.sh serverlog` for the head's log during the boot: its
    stdout (undecodable bytes replaced, stderr dropped); "" when the command is missing or
    slower than the timeout, and then its whole process group is gone (an ssh child included)."""
    from autobench.run.cluster import _fetch

    env = dict(os.environ)
    assert _fetch(["bash", "-c", "printf 'hi \\377\\n'; echo noise >&2"], env, 30) == "hi \ufffd\n"
    assert _fetch([str(tmp_path / "no-such-command")], env, 30) == ""
    pids = tmp_path / "pids"
    slow = f"sleep 600 & echo $! > {pids}; echo $$ >> {pids}; echo partial; wait"  # not killed: a hang
    assert _fetch(["bash", "-c", slow], env, 1.0) == ""
    child, shell = (int(p) for p in pids.read_text().split())
    _wait_for(lambda: not pid_alive(child), "the slow command's child killed with its group")  # SIGKILL lands
    assert not Path(f"/proc/{shell}").exists()  # and the command reaped: not even a zombie left

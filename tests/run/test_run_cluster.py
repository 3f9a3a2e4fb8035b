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

pytestmark = (
    pytest.mark.integration
)  # every test starts real processes: autobench run, a server, the fake docker or ssh

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


def cluster_recipe(port: int, nodes: int, *, executor: str = "native", hosts: bool = True) -> str:
    names = ", ".join(f"node-{chr(97 + k)}" for k in range(nodes))
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
        FAKE_HEAD_HOST="node-a",
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
    assert f"--node-rank {nodes - 1}" in worker and "--master-addr node-a" in worker and "--headless" in worker
    assert "--network host" in worker and "autobench bench" not in worker
    driver = (out / "driver.sh").read_text()
    assert "ssh -o BatchMode=yes" in driver and f"NODES={nodes}" in driver


def test_ray_executor_starts_ray_nodes_and_serves_from_the_head(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(cluster_recipe(8000, 2, executor="ray"))
    files = compile_cluster(load_recipe(recipe))
    assert "ray start --head --port=6379 --block" in files["node-0.sh"]
    assert "ray start --address=node-a:6379 --block" in files["node-1.sh"]
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
    assert row.host_facts["hosts"] == ["node-a", "node-b", "node-c", "node-d"]
    assert row.script_snapshot.startswith("# ===== driver.sh") and "# ===== node-3.sh" in row.script_snapshot
    run_dir = next((tmp_path / "runs").iterdir())
    assert (run_dir / "status").read_text().startswith("status=DONE")
    assert json.loads((run_dir / "bench.json").read_text())["completed"] == 8
    # every node was started, then torn down; nothing is left running
    for k, host in enumerate(["node-a", "node-b", "node-c", "node-d"]):
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
    worker_pid = tmp_path / "hosts" / "node-b" / "autobench-cluster-2-node1.pid"
    head_pid = tmp_path / "hosts" / "node-a" / "autobench-cluster-2-node0.pid"

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
    assert row.root_cause_message == "node 1 (node-b) stopped before the server was ready"
    assert "root cause: node_lost: node 1 (node-b) stopped" in out
    # the head was torn down too, long before its 20 s boot ended
    assert head is not None and _live_containers(tmp_path) == []
    assert not pid_alive(head)
    log = next((tmp_path / "runs").iterdir()) / "driver.log"
    assert "teardown node 0 (node-a)" in log.read_text()

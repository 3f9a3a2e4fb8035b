"""A 2-node recipe on real nodes: two network namespaces, each with its own address and a real
OpenSSH server with key auth (tests/run/ssh_nodes.py), reached by the compiled driver over ssh
from this machine.  On the nodes, ``docker`` is the fake of tests/run/fake_cluster.py (no Docker
engine or GPU here): the head's "container" is the real synthetic server, listening on the
node's address; the worker's is a stub process.  Everything else is real: ssh, the node
scripts under bash on each node, the node guard's lock folders, the links that go down, the
bench from this machine to the head, the teardown and the ledger row."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_cluster import install
from run_helpers import free_port, ledger_rows, run_env
from ssh_nodes import SshNodes, running_nodes

pytestmark = pytest.mark.integration

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("ssh-nodes")
    with running_nodes(root, install(root), "--host 0.0.0.0 --ttft-ms 20 --itl-ms 5") as n:
        yield n


def _recipe(tmp_path: Path, nodes: SshNodes, num_prompts: int) -> Path:
    path = tmp_path / "two.yaml"
    path.write_text(
        f"""\
name: two-ssh
model:
  repo: acme/tiny-model
  revision: {SHA}
  served_name: tiny
container:
  image: vllm/vllm-openai:v0.23.1
secrets: [HF_TOKEN]
engine:
  host: 0.0.0.0
  port: {free_port()}
  tensor_parallel_size: 1
  pipeline_parallel_size: 2
topology:
  nodes: 2
  gpus_per_node: 1
  hosts: [{", ".join(nodes.hosts)}]
bench:
  dataset: {{kind: random, input_len: 16, output_len: 8}}
  num_prompts: {num_prompts}
  concurrency: 2
  max_tokens: 8
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    return path


def _start(tmp_path: Path, recipe: Path, nodes: SshNodes, runs: str = "runs") -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "autobench", "run", str(recipe), "--remote", nodes.remote]
    argv += ["--ledger", str(tmp_path / "ledger.db"), "--runs-dir", str(tmp_path / runs)]
    env = run_env(tmp_path, HF_TOKEN="hf_" + "Z" * 34, AUTOBENCH_POLL_S="1")
    return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_bench(tmp_path: Path, proc: subprocess.Popen[str], runs: str = "runs") -> Path:
    deadline = time.monotonic() + 120  # only so a broken run cannot hang the suite
    while True:
        logs = list((tmp_path / runs).glob("*/driver.log"))
        if logs and "server ready" in logs[0].read_text():
            return logs[0].parent
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the bench never started"
        time.sleep(0.1)


def _nothing_runs(nodes: SshNodes) -> None:
    for k in range(nodes.count):
        assert nodes.pids(k) == [], (k, [Path(f"/proc/{p}/cmdline").read_bytes() for p in nodes.pids(k)])
    assert not list(nodes.fake_root.glob("*/locks/*")), "a node guard lock was left behind"


def test_done_over_real_ssh_with_cells_samples_and_boot_facts(nodes, tmp_path):
    proc = _start(tmp_path, _recipe(tmp_path, nodes, 16), nodes)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err + out + nodes.logs()
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.metrics["completed"] == 16
    assert row.host_facts["hosts"] == nodes.hosts and row.host_facts["remote"] == "ssh"
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        (cell,) = book.cells(row.id)
    assert cell.samples is not None and cell.samples.count("ok") == 16
    assert row.boot["architecture"] == "SyntheticForCausalLM"
    # the secret reached both nodes over ssh (no SendEnv anywhere), and no file kept its value
    for k, host in enumerate(nodes.hosts):
        assert (nodes.fake_root / host / f"autobench-two-ssh-node{k}.env").read_text() == '{"HF_TOKEN": true}'
    run_dir = next((tmp_path / "runs").iterdir())
    for path in run_dir.iterdir():
        assert "Z" * 34 not in path.read_text(errors="replace"), path
    _nothing_runs(nodes)


def test_sigterm_aborts_and_a_second_run_meanwhile_is_refused_naming_the_first(nodes, tmp_path):
    recipe = _recipe(tmp_path, nodes, 100000)
    first = _start(tmp_path, recipe, nodes)
    first_dir = _wait_bench(tmp_path, first)
    second = _start(tmp_path, recipe, nodes, runs="runs-2")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 6, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: refused: node 0 ({nodes.hosts[0]}) port ")
    assert f"is held by two-ssh:{first_dir.name}@" in line and f":pid{first.pid}" in line
    assert first.poll() is None and ledger_rows(tmp_path) == []  # the first benches on; nothing recorded

    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 130, err
    (row,) = ledger_rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_message == "interrupted by SIGTERM during bench"
    _nothing_runs(nodes)


def test_a_link_down_mid_bench_is_unreachable_and_the_row_says_what_may_still_run(nodes, tmp_path):
    proc = _start(tmp_path, _recipe(tmp_path, nodes, 100000), nodes)
    run_dir = _wait_bench(tmp_path, proc)
    nodes.link(1, up=False)
    down_at = time.monotonic()
    try:
        noticed = None
        while proc.poll() is None and noticed is None:
            if "unreachable during the bench" in (run_dir / "driver.log").read_text():
                noticed = time.monotonic() - down_at
            time.sleep(0.1)
        out, err = proc.communicate(timeout=300)
    finally:
        nodes.link(1, up=True)
    # Measured, not asserted (no wall-clock bounds in tests): docs/run.md quotes it.
    print(f"link down -> 'unreachable' in {noticed:.1f} s" if noticed is not None else "not noticed")
    assert proc.returncode == 6, err
    (row,) = ledger_rows(tmp_path)
    worker = nodes.hosts[1]
    left = f"node 1 ({worker}): container autobench-two-ssh-node1 may still run (teardown failed: unreachable)"
    assert row.status == "FAILED" and row.root_cause_category == "node_unreachable"
    assert row.root_cause_message.startswith(f"node 1 ({worker}) unreachable during the bench")
    assert left in row.root_cause_message and f"may still run: {left}" in row.notes
    # what the row says is true: the worker's stub still runs in its namespace, the head's does not
    assert nodes.pids(0) == [] and nodes.pids(1) != []
    for pid in nodes.pids(1):
        os.kill(pid, signal.SIGKILL)
    for lock in nodes.fake_root.glob("*/locks/*"):  # the worker's claim, never released
        shutil.rmtree(lock)

"""A recipe's bench.worker_hosts in ``autobench run``, for real: two network namespaces, each with
its own OpenSSH server (tests/run/ssh_nodes.py), each running one load generator started over ssh
through ``run --remote``.  A list of hosts: the server (the fake ``vllm``: the real synthetic
server) runs here on this machine's address on the first node's link, which both nodes reach.
``nodes``: a 2-node recipe run by the cluster runtime over the same ssh (the head's "container"
is the synthetic server on the head's address: tests/run/fake_cluster.py's ``docker``), a load
generator on each node.  The run's ledger cell holds the raw samples of both load generators;
its bench.json names the host of each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_cluster import install
from run_helpers import SHA, free_port, ledger_rows, only_run_dir, recipe_text, run_cli, run_env
from ssh_nodes import SshNodes, running_nodes

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("run-load-nodes")
    # route_here: the nodes reach this machine; forward: the second node's load generator
    # reaches the head's server
    args = "--host 0.0.0.0 --ttft-ms 2 --itl-ms 1"
    with running_nodes(root, install(root), args, route_here=True, forward=True) as n:
        yield n


def test_a_recipe_spreads_its_bench_over_two_hosts_and_the_cell_keeps_both(nodes: SshNodes, tmp_path: Path) -> None:
    hosts = ", ".join(nodes.hosts)
    more = f"  worker_hosts: [{hosts}]\n  worker_python: {json.dumps(sys.executable)}\n"  # the nodes share our files
    text = recipe_text(free_port(), num_prompts=40, concurrency=8, max_tokens=6, extra=more)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(text.replace("host: 127.0.0.1", f"host: {nodes.here(0)}"), encoding="utf-8")
    res = run_cli(recipe, tmp_path, "--remote", nodes.remote, timeout=180, FAKE_VLLM_ARGS="--ttft-ms 2 --itl-ms 1")
    assert res.returncode == 0, res.stderr + res.stdout + nodes.logs()
    assert f"concurrency 8, max_tokens 6, a load generator on each of {hosts}\n" in res.stdout + res.stderr
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.metrics["completed"] == 40
    assert row.recipe_snapshot["bench"]["worker_hosts"] == nodes.hosts  # and so in the recipe's digest
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        (cell,) = book.cells(row.id)
    assert cell.samples is not None and cell.samples.count("ok") == 40  # every request of both hosts
    result = json.loads((only_run_dir(tmp_path) / "bench.json").read_text(encoding="utf-8"))
    gens = result["workers"]["generators"]
    assert [g["host"] for g in gens] == nodes.hosts
    assert [g["requests"] for g in gens] == [20, 20] and sum(g["requests"] for g in gens) == cell.samples.count("ok")
    assert all(abs(g["clock_offset_ms"]) <= g["clock_round_trip_ms"] / 2 + 1e-6 for g in gens)
    plan = json.loads((only_run_dir(tmp_path) / "plan.json").read_text(encoding="utf-8"))
    assert plan["load_generators"] == {"hosts": nodes.hosts, "remote": "ssh"}


def _cells_and_result(tmp_path: Path, run_dir: Path, row_id: int) -> tuple[object, dict]:
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        (cell,) = book.cells(row_id)
    return cell.samples, json.loads((run_dir / "bench.json").read_text(encoding="utf-8"))


def test_nodes_put_one_load_generator_on_each_node_of_a_cluster_run(nodes: SshNodes, tmp_path: Path) -> None:
    recipe = tmp_path / "two.yaml"
    recipe.write_text(
        f"""\
name: two-load
model: {{repo: acme/tiny-model, revision: {SHA}, served_name: tiny}}
container: {{image: vllm/vllm-openai:v0.23.1}}
engine: {{host: 0.0.0.0, port: {free_port()}, tensor_parallel_size: 1, pipeline_parallel_size: 2}}
topology: {{nodes: 2, gpus_per_node: 1, hosts: [{", ".join(nodes.hosts)}]}}
bench:
  dataset: {{kind: random, input_len: 16, output_len: 6}}
  num_prompts: 16
  concurrency: 4
  max_tokens: 6
  ready_timeout_s: 60
  worker_hosts: nodes
  worker_python: {json.dumps(sys.executable)}
""",
        encoding="utf-8",
    )
    argv = [sys.executable, "-m", "autobench", "run", str(recipe), "--remote", nodes.remote]
    argv += ["--ledger", str(tmp_path / "ledger.db"), "--runs-dir", str(tmp_path / "runs")]
    res = subprocess.run(argv, cwd=tmp_path, env=run_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr + res.stdout + nodes.logs()
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.host_facts["hosts"] == nodes.hosts
    assert row.recipe_snapshot["bench"]["worker_hosts"] == "nodes"
    samples, result = _cells_and_result(tmp_path, only_run_dir(tmp_path), row.id)
    assert samples.count("ok") == 16  # type: ignore[attr-defined]
    gens = result["workers"]["generators"]
    assert [g["host"] for g in gens] == nodes.hosts and [g["requests"] for g in gens] == [8, 8]

"""`autobench experiment run` of a multi-node recipe: each treatment boots on the multi-node
driver (autobench.run.cluster, picked by the run pipeline for topology.nodes > 1) over REAL
ssh to two network namespaces with their own sshd (tests/run/ssh_nodes.py).  On the nodes,
`docker` is the fake of tests/run/fake_cluster.py (no Docker engine or GPU here): the head's
"container" is the real synthetic server; everything else (ssh, the node scripts, the bench,
the teardown, the ledger rows, the experiment record) is real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUN_TESTS = Path(__file__).resolve().parent.parent / "run"
if str(RUN_TESTS) not in sys.path:
    sys.path.insert(0, str(RUN_TESTS))

from fake_cluster import install  # noqa: E402
from run_helpers import free_port, run_env  # noqa: E402
from ssh_nodes import running_nodes  # noqa: E402

from autobench.ledger import open_ledger  # noqa: E402

pytestmark = pytest.mark.integration

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("ssh-nodes")
    with running_nodes(root, install(root), "--host 0.0.0.0 --ttft-ms 20 --itl-ms 5") as n:
        yield n


def test_each_treatment_of_a_two_node_recipe_boots_on_the_multi_node_driver(nodes, tmp_path) -> None:
    (tmp_path / "two.yaml").write_text(
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
  num_prompts: 8
  concurrency: 2
  max_tokens: 8
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    exp = tmp_path / "exp.yaml"
    # two treatments; a bench grid: the driver benches every cell on one boot of the nodes
    exp.write_text(
        "recipe: two.yaml\nfactors:\n  engine.max_num_seqs: [4, 8]\nbench: {concurrency: [1, 2]}\n", encoding="utf-8"
    )
    argv = [sys.executable, "-m", "autobench", "experiment", "run", str(exp), "--remote", nodes.remote, "--json"]
    argv += ["--ledger", str(tmp_path / "ledger.db"), "--runs-dir", str(tmp_path / "runs")]
    env = run_env(tmp_path, HF_TOKEN="hf_" + "Z" * 34, AUTOBENCH_POLL_S="1")
    res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr + nodes.logs()
    doc = json.loads(res.stdout)
    assert [(t["label"], t["action"], t["status"]) for t in doc["treatments"]] == [
        ("max_num_seqs=4", "ran", "DONE"),
        ("max_num_seqs=8", "ran", "DONE"),
    ]
    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        runs = book.runs()
        (record,) = book.experiments(name="exp")
        cells = [book.cells(r.id) for r in runs]
    assert [r.recipe_digest for r in runs] == [t["digest"] for t in doc["treatments"]]
    for run in runs:  # the multi-node driver ran it, over ssh, on both hosts
        assert run.host_facts["hosts"] == nodes.hosts and run.host_facts["remote"] == "ssh"
    assert [len(c) for c in cells] == [2, 2]  # the grid's two cells, each on its treatment's one boot
    assert [t["run_uid"] for t in record.treatments] == [r.run_uid for r in runs]
    # each treatment's level reached the head node's server command
    calls = [json.loads(line) for line in (nodes.fake_root / nodes.hosts[0] / "calls.jsonl").read_text().splitlines()]
    seqs = [c[c.index("--max-num-seqs") + 1] for c in calls if c[0] == "run" and "--max-num-seqs" in c]
    assert seqs == ["4", "8"]

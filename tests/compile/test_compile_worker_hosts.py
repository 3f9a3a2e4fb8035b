"""bench.worker_hosts in compiled scripts: ``autobench bench --worker-host H ...`` (the CLI follows
the hosts' number), a multi-node recipe's ``nodes`` as its hosts in the head's bench, and the
targets that cannot know the nodes refusing ``nodes`` in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.compile import bench_argv
from autobench.compile.cluster import compile_cluster
from autobench.compile.k8s import compile_k8s
from autobench.compile.slurm import compile_slurm
from autobench.errors import RecipeError
from autobench.recipe import load_recipe

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


def _load(tmp_path: Path, bench: str, topology: str = ""):
    path = tmp_path / "w.yaml"
    path.write_text(
        f"""\
name: w
model: {{repo: acme/tiny, revision: "{SHA}"}}
container: {{image: "vllm/vllm-openai:v0.23.1"}}
engine: {{tensor_parallel_size: 1, pipeline_parallel_size: 2}}
{topology}bench:
  concurrency: 8
{bench}""",
        encoding="utf-8",
    )
    return load_recipe(path)


def _after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == flag]


def test_hosts_become_worker_host_options_and_python_only_when_not_the_default(tmp_path: Path) -> None:
    argv = bench_argv(_load(tmp_path, "  worker_hosts: [u@10.0.0.2, gpu1]\n"))
    assert _after(argv, "--worker-host") == ["u@10.0.0.2", "gpu1"]
    assert "--workers" not in argv and "--worker-python" not in argv  # the CLI's --workers follows the hosts
    assert argv.index("--worker-host") == argv.index("--concurrency") + 2
    argv = bench_argv(_load(tmp_path, "  workers: 2\n  worker_hosts: [a, b]\n  worker_python: env X=1 /v/python\n"))
    assert _after(argv, "--workers") == ["2"] and _after(argv, "--worker-python") == ["env X=1 /v/python"]
    plain = bench_argv(_load(tmp_path, "  worker_python: /v/python\n"))  # no hosts: nothing to say
    assert "--worker-host" not in plain and "--worker-python" not in plain


def test_a_cluster_recipe_puts_one_load_generator_on_each_node_in_the_heads_bench(tmp_path: Path) -> None:
    topology = "topology: {nodes: 2, gpus_per_node: 1, hosts: [root@10.0.0.1, root@10.0.0.2]}\n"
    files = compile_cluster(_load(tmp_path, "  worker_hosts: nodes\n", topology), check=False)
    head, worker = files["node-0.sh"], files["node-1.sh"]
    assert "--worker-host root@10.0.0.1 \\\n" in head and "--worker-host root@10.0.0.2 \\\n" in head
    assert "--worker-host" not in worker
    given = compile_cluster(_load(tmp_path, "  worker_hosts: nodes\n", topology), ["h0", "h1"], check=False)
    assert "--worker-host h0 " in given["node-0.sh"] and "root@10.0.0.1" not in given["node-0.sh"]
    listed = compile_cluster(_load(tmp_path, "  worker_hosts: [client]\n", topology), check=False)
    assert listed["node-0.sh"].count("--worker-host") == 1 and "--worker-host client" in listed["node-0.sh"]


@pytest.mark.parametrize("target", ["slurm", "k8s"])
def test_targets_that_do_not_know_the_nodes_refuse_nodes(tmp_path: Path, target: str) -> None:
    topology = "topology: {nodes: 2, gpus_per_node: 1}\n"
    loaded = _load(tmp_path, "  worker_hosts: nodes\n", topology)
    with pytest.raises(RecipeError) as e:
        compile_slurm(loaded, check=False) if target == "slurm" else compile_k8s(loaded, run_id="t", check=False)
    assert e.value.message.startswith("bench.worker_hosts: nodes is for multi-node runs of the cluster runtime")
    assert e.value.hint == "name the hosts: bench.worker_hosts: [user@host, ...]"

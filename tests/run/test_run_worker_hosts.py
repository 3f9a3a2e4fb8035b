"""bench.worker_hosts through ``autobench run`` (in-process, nothing started): the plan's hosts
and remote command, the bench config each cell gets, a multi-node run's ``nodes``, the dry run's
line, and the refusal of a server address that each host would read as itself."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import inprocess
import pytest
from run_helpers import FAKE_VLLM, recipe_text, run_env

from autobench.compile.cluster import DEFAULT_REMOTE
from autobench.errors import RunError
from autobench.recipe import load_recipe
from autobench.recipe.grid import cells
from autobench.run.cluster import ClusterRuntime, cluster_plan
from autobench.run.local import LocalRuntime, bench_config
from autobench.run.outcome import RunOptions
from autobench.run.plan import build_plan

NOW = datetime(2026, 6, 24, 9, 30, 5, tzinfo=UTC)
HOSTS = "  worker_hosts: [u@10.0.0.2, gpu1]\n"
REMOTE = "ssh -i /secret/key -o BatchMode=yes"


def _recipe(tmp_path: Path, bench: str = HOSTS, host: str = "10.9.8.7", **more: object) -> Path:
    path = tmp_path / "r.yaml"
    text = recipe_text(18123, extra=bench, concurrency=4, **more)  # type: ignore[arg-type]
    path.write_text(text.replace("host: 127.0.0.1", f"host: {host}"), encoding="utf-8")
    return path


def test_the_plan_and_every_cells_bench_have_the_hosts_and_the_remote(tmp_path: Path) -> None:
    loaded = load_recipe(_recipe(tmp_path, HOSTS + "  worker_python: /v/bin/python\n"))
    plan = build_plan(loaded, runtime="process", now=NOW, remote=REMOTE)
    assert plan.base_url == "http://10.9.8.7:18123"
    assert (plan.worker_hosts, plan.remote) == (("u@10.0.0.2", "gpu1"), REMOTE)
    cfg = bench_config(loaded, plan)
    assert (cfg.worker_hosts, cfg.workers, cfg.remote) == (("u@10.0.0.2", "gpu1"), 2, REMOTE)
    assert cfg.worker_python == "/v/bin/python" and cfg.base_url == plan.base_url
    cfg.check()  # what the bench client itself accepts
    # the plan's file names the remote program only (its other words may hold a key's path)
    doc = plan.to_json_dict()
    assert doc["load_generators"] == {"hosts": ["u@10.0.0.2", "gpu1"], "remote": "ssh"}
    assert doc["bench"]["worker_hosts"] == ["u@10.0.0.2", "gpu1"] and "/secret/key" not in json.dumps(doc)
    assert "load gen   one on each of u@10.0.0.2, gpu1 (through ssh)\n" in plan.render_text()
    # no remote known (a Slurm job's bench reaches the hosts with its own): none named
    unsaid = build_plan(loaded, runtime="process", now=NOW)
    assert unsaid.to_json_dict()["load_generators"] == {"hosts": ["u@10.0.0.2", "gpu1"], "remote": None}
    assert "load gen   one on each of u@10.0.0.2, gpu1\n" in unsaid.render_text()
    local = build_plan(load_recipe(_recipe(tmp_path, "")), runtime="process", now=NOW, remote=REMOTE)
    assert (local.worker_hosts, local.remote) == ((), None) and "load_generators" not in local.to_json_dict()
    assert (
        "load gen" not in local.render_text() and bench_config(load_recipe(_recipe(tmp_path, "")), local).workers == 1
    )


def test_a_grid_benches_every_cell_on_the_hosts(tmp_path: Path) -> None:
    loaded = load_recipe(_recipe(tmp_path))
    grid = loaded.with_changes({"bench.concurrency": [2, 8]})
    plan = build_plan(grid, runtime="process", now=NOW, remote=REMOTE)
    configs = [bench_config(grid, plan, cell) for cell in cells(grid.recipe)]
    assert [(c.concurrency, c.workers, c.worker_hosts) for c in configs] == [
        (2, 2, ("u@10.0.0.2", "gpu1")),
        (8, 2, ("u@10.0.0.2", "gpu1")),
    ]


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::1", "localhost"])
def test_a_server_each_host_would_read_as_itself_is_refused(tmp_path: Path, host: str) -> None:
    loaded = load_recipe(_recipe(tmp_path, host=host))
    with pytest.raises(RunError) as e:
        build_plan(loaded, runtime="process", now=NOW, remote=REMOTE)
    assert e.value.message.startswith("the load generators on bench.worker_hosts would reach the server at http://")
    assert e.value.message.endswith(": on each host, that is the host itself")
    assert "engine.host" in (e.value.hint or "")
    build_plan(load_recipe(_recipe(tmp_path, "", host=host)), runtime="process", now=NOW)  # local ones: fine


def test_runtimes_reach_hosts_through_remote_then_the_environment_then_ssh() -> None:
    def remote(options: RunOptions, env: dict[str, str]) -> str:
        return LocalRuntime("process", options, print, env).remote

    assert remote(RunOptions(remote="rsh -l u"), {"AUTOBENCH_REMOTE": "ssh -p 2"}) == "rsh -l u"
    assert remote(RunOptions(), {"AUTOBENCH_REMOTE": "ssh -p 2"}) == "ssh -p 2"
    assert remote(RunOptions(), {}) == DEFAULT_REMOTE
    assert ClusterRuntime("cluster", RunOptions(), print, {"AUTOBENCH_REMOTE": "x y"}).remote == "x y"


def test_a_multi_node_run_puts_one_load_generator_on_each_of_its_nodes(tmp_path: Path) -> None:
    nodes = "topology: {nodes: 2, gpus_per_node: 1, hosts: [root@10.0.0.1, root@10.0.0.2]}\n"
    path = tmp_path / "c.yaml"
    text = recipe_text(18123, extra=nodes, concurrency=4).replace("bench:\n", "bench:\n  worker_hosts: nodes\n")
    text = text.replace("  max_model_len: 4096\n", "  max_model_len: 4096\n  pipeline_parallel_size: 2\n")
    path.write_text(text, encoding="utf-8")
    loaded = load_recipe(path)
    runtime = ClusterRuntime("cluster", RunOptions(runs_dir=tmp_path, remote=REMOTE), print, {})
    plan = runtime.compile(loaded).plan
    assert (plan.worker_hosts, plan.remote) == (("root@10.0.0.1", "root@10.0.0.2"), REMOTE)
    cfg = bench_config(loaded, plan)
    assert (cfg.base_url, cfg.workers, cfg.worker_hosts) == ("http://10.0.0.1:18123", 2, plan.worker_hosts)
    given = ClusterRuntime("cluster", RunOptions(runs_dir=tmp_path, hosts=("a@h0", "h1")), print, {})
    assert given.compile(loaded).plan.worker_hosts == ("a@h0", "h1")  # --hosts win, as for the nodes
    listed = load_recipe(path).with_changes({"bench.worker_hosts": ["client"]})
    assert cluster_plan(listed, RunOptions(runs_dir=tmp_path), ["root@10.0.0.1", "b"], REMOTE).worker_hosts == (
        "client",
    )


def test_the_dry_run_shows_where_the_load_generators_run(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    res = inprocess.autobench(
        "run",
        str(recipe),
        "--dry-run",
        "--runtime",
        "process",
        "--vllm-exec",
        f"{sys.executable} {FAKE_VLLM}",
        "--remote",
        "rsh -l bench",
        cwd=tmp_path,
        env=run_env(tmp_path),
    )
    assert res.returncode == 0, res.stderr
    assert "load gen   one on each of u@10.0.0.2, gpu1 (through rsh)" in res.stdout
    # the equivalent bench command in the stored script names them too
    assert "--worker-host u@10.0.0.2 --worker-host gpu1" in res.stdout
    refused = inprocess.autobench(
        "run",
        str(_recipe(tmp_path, host="127.0.0.1")),
        "--dry-run",
        "--runtime",
        "process",
        cwd=tmp_path,
        env=run_env(tmp_path),
    )
    assert refused.returncode == 6 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("error: ") and "would reach the server at http://127.0.0.1:18123" in refused.stderr

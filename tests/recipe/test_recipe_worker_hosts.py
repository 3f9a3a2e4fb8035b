"""``bench.worker_hosts`` / ``bench.worker_python`` (issue #34): load generators on other hosts in a
recipe, checked by the one rule ``autobench bench --worker-host`` follows
(autobench.recipe.workerhosts), each refusal one line at the file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.workerhosts import WorkerHostsError, follow_hosts, host_problem, python_problem

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
HEAD = f"""\
name: w
model: {{repo: acme/tiny, revision: "{SHA}"}}
container: {{image: "vllm/vllm-openai:v0.23.1"}}
"""
TWO_NODES = "topology: {nodes: 2, gpus_per_node: 1, hosts: [h0, h1]}\n"


def _load(tmp_path: Path, text: str):
    path = tmp_path / "w.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return load_recipe(path)


def _refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(RecipeError) as e:
        _load(tmp_path, text)
    return str(e.value)


def test_the_one_rule_names_each_problem_and_follows_the_hosts() -> None:
    assert [host_problem(h) for h in ("h", "u@10.0.0.2", "gpu-1.example")] == [None, None, None]
    assert host_problem("") == host_problem("  ") == "is empty"
    assert host_problem("-oProxyCommand=x") == "starts with '-' (the remote command would read it as an option)"
    assert host_problem("a b") == host_problem("a\tb") == "has a space in it"
    assert python_problem("python3") is None and python_problem("env X=1 /v/bin/python") is None
    assert python_problem(" ") == "is empty" and python_problem("-c x") == "starts with '-'"
    assert python_problem("'x").startswith("is not shell words (")  # type: ignore[union-attr]
    assert [follow_hosts(1, 0), follow_hosts(4, 0), follow_hosts(1, 3), follow_hosts(3, 3)] == [1, 4, 3, 3]
    assert follow_hosts(2, 2, resolved=True) == 2
    for workers, hosts, resolved in [(2, 3, False), (1, 3, True), (4, 3, False)]:
        with pytest.raises(WorkerHostsError) as e:
            follow_hosts(
                workers,
                hosts,
                workers_name="bench.workers",
                hosts_name="hosts in bench.worker_hosts",
                resolved=resolved,
            )
        gens = f"{workers} load generator{'s' if workers > 1 else ''}"
        assert e.value.message == f"{gens} for {hosts} hosts in bench.worker_hosts: one runs on each host"
        assert e.value.hint == f"drop bench.workers (it follows the hosts), or give it as {hosts}"
        assert str(e.value) == e.value.message


def test_hosts_in_a_recipe_set_the_load_generators_and_its_digest(tmp_path: Path) -> None:
    plain = _load(tmp_path, "bench: {concurrency: 8}\n")
    assert plain.recipe.load_generators == 1 and "worker_hosts" not in plain.data["bench"]
    assert "worker_python" not in plain.data["bench"]  # defaults left out: an old recipe keeps its digest
    two = _load(tmp_path, "bench:\n  concurrency: 8\n  worker_hosts: [u@10.0.0.2, gpu1]\n")
    assert two.recipe.bench.worker_hosts == ["u@10.0.0.2", "gpu1"] and two.recipe.bench.workers == 1
    assert two.recipe.load_generators == 2  # bench.workers left at 1 follows the hosts
    assert two.data["bench"]["worker_hosts"] == ["u@10.0.0.2", "gpu1"] and two.digest != plain.digest
    same = _load(tmp_path, "bench:\n  concurrency: 8\n  workers: 2\n  worker_hosts: [u@10.0.0.2, gpu1]\n")
    assert same.recipe.load_generators == 2
    python = _load(tmp_path, "bench:\n  concurrency: 8\n  worker_hosts: [gpu1]\n  worker_python: /v/bin/python\n")
    assert python.data["bench"]["worker_python"] == "/v/bin/python" and python.digest != two.digest
    nodes = _load(tmp_path, TWO_NODES + "bench:\n  worker_hosts: nodes\n")
    assert nodes.recipe.load_generators == 2 and nodes.data["bench"]["worker_hosts"] == "nodes"
    assert nodes.recipe.bench.load_generators(5) == 5 and two.recipe.bench.load_generators(5) == 2
    assert plain.recipe.bench.load_generators(5) == 1
    # one load generator keeps a conversation whole: a single host (or none) with multi_turn loads
    for hosts in ("[gpu1]", "[]"):
        one = _load(tmp_path, f"bench:\n  worker_hosts: {hosts}\n  dataset: {{multi_turn: true}}\n")
        assert one.recipe.load_generators == 1
    # resolved data loads again as it is (an experiment's with_changes starts from it)
    assert nodes.with_changes({"bench.concurrency": 4}).recipe.load_generators == 2
    assert two.with_changes({"bench.worker_hosts": ["a", "b", "c"]}).recipe.load_generators == 3


@pytest.mark.parametrize(
    ("bench", "where", "message"),
    [
        (
            "  concurrency: 8\n  worker_hosts:\n    - a@h1\n    - -oProxyCommand=x\n",
            ":8:7: bench.worker_hosts[1]:",
            "\"-oProxyCommand=x\" is not a host name: it starts with '-' (the remote command would read it as an option) "
            "(hint: write [user@]host, e.g. user@10.0.0.2)",
        ),
        (
            "  worker_hosts: ['a b']\n",
            ":5:18: bench.worker_hosts[0]:",
            '"a b" is not a host name: it has a space in it',
        ),
        ("  worker_hosts: ['']\n", ":5:18: bench.worker_hosts[0]:", '"" is not a host name: it is empty'),
        (
            "  worker_hosts: gpu1\n",
            ":5:17: bench.worker_hosts:",
            '"gpu1" is neither a list of hosts nor nodes (hint: write a list, [user@host, ...], or nodes',
        ),
        (
            "  concurrency: 8\n  workers: 3\n  worker_hosts: [a, b]\n",
            ":6:12: bench.workers:",
            "3 load generators for 2 hosts in bench.worker_hosts: one runs on each host "
            "(hint: drop bench.workers (it follows the hosts), or give it as 2)",
        ),
        (
            "  concurrency: 2\n  worker_hosts: [a, b, c]\n",
            ":6:3: bench.worker_hosts:",
            "3 load generators for concurrency 2: each needs at least one request in flight "
            "(hint: fewer hosts (bench.worker_hosts), or bench.concurrency 3 or more)",
        ),
        (
            "  client: vllm\n  worker_hosts: [a]\n",
            ":6:3: bench.worker_hosts:",
            "1 load generator on other hosts needs client autobench "
            "(vllm bench serve is one process on this machine) (hint: set bench.client: autobench, or drop",
        ),
        (
            "  concurrency: 4\n  worker_hosts: [a, b]\n  dataset: {multi_turn: true}\n",
            ":6:3: bench.worker_hosts:",
            "2 load generators with a multi-turn dataset: a conversation's turns run in one load generator "
            "(hint: one host in bench.worker_hosts (a conversation's turns are not dealt to several processes "
            "yet), or drop bench.dataset.multi_turn)",
        ),
        ('  worker_hosts: [a]\n  worker_python: "\'x"\n', ":6:18: bench.worker_python:", '"\'x" is not a command'),
        (
            "  worker_hosts: [a]\n  worker_python: ' '\n",
            ":6:18: bench.worker_python:",
            '" " is not a command: it is empty (hint: e.g. python3 or /opt/venv/bin/python)',
        ),
        (
            "  worker_hosts: ['" + "h" * 40 + " x']\n",
            ":5:18: bench.worker_hosts[0]:",
            '"' + "h" * 36 + "... is not a host name: it has a space in it",
        ),
        # shown as written (JSON, not ASCII-escaped), whole up to 40 characters with its quotes
        ("  worker_hosts: ['é x']\n", ":5:18: bench.worker_hosts[0]:", '"é x" is not a host name'),
        ("  worker_hosts: ['" + "h" * 36 + " x']\n", ":5:18: bench.worker_hosts[0]:", '"' + "h" * 36 + ' x" is not'),
        ("  worker_hosts: ['" + "h" * 37 + " x']\n", ":5:18: bench.worker_hosts[0]:", '"' + "h" * 36 + "... is not"),
        (
            "  concurrency: 4\n  workers: 2\n  dataset: {multi_turn: true}\n",
            ":6:12: bench.workers:",
            "2 load generators with a multi-turn dataset: a conversation's turns run in one load generator "
            "(hint: drop bench.workers (a conversation's turns",
        ),
        (
            "  concurrency: 2\n  workers: 4\n",
            ":6:12: bench.workers:",
            "4 load generators for concurrency 2: each needs at least one request in flight "
            "(hint: fewer bench.workers, or bench.concurrency 4 or more)",
        ),
        (
            "  worker_hosts: nodes\n",
            ":5:17: bench.worker_hosts:",
            "nodes puts one load generator on each node of a multi-node run; this recipe has one node "
            "(hint: list the hosts instead: bench.worker_hosts: [user@host, ...])",
        ),
    ],
)
def test_a_bad_host_list_is_one_line_at_its_place(tmp_path: Path, bench: str, where: str, message: str) -> None:
    line = _refused(tmp_path, "bench:\n" + bench)
    assert "\n" not in line and f"w.yaml{where} {message}" in line


def test_nodes_follow_the_topology(tmp_path: Path) -> None:
    line = _refused(tmp_path, TWO_NODES + "bench:\n  worker_hosts: nodes\n  workers: 3\n")
    assert "w.yaml:7:12: bench.workers: 3 load generators for 2 nodes (topology.nodes): one runs on each host" in line
    line = _refused(tmp_path, TWO_NODES + "bench:\n  worker_hosts: nodes\n  concurrency: 1\n")
    assert "w.yaml:6:17: bench.worker_hosts: 2 load generators for concurrency 1: each needs at least one" in line
    assert _load(tmp_path, TWO_NODES + "bench:\n  worker_hosts: nodes\n  workers: 2\n").recipe.load_generators == 2

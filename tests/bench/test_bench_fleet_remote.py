"""Load generators on other hosts (``bench --worker-host``), for real: two network namespaces with
their own OpenSSH server (tests/run/ssh_nodes.py), each running one load generator started over
ssh (``REMOTE HOST 'PYTHON -m autobench.bench.worker'``), both against the synthetic server on
this machine, their records merged into one result.  The namespaces share this machine's clock,
so the measured clock offsets must be ~0 within their round trips; what a remote host adds is
the ssh hop in the protocol's pipes and a network between the load generator and the server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

RUN_TESTS = Path(__file__).resolve().parent.parent / "run"
if str(RUN_TESTS) not in sys.path:
    sys.path.insert(0, str(RUN_TESTS))

from ssh_nodes import SshNodes, running_nodes  # noqa: E402

from autobench.bench.client import BenchConfig, run_bench  # noqa: E402
from autobench.bench.record import OK  # noqa: E402
from autobench.bench.synthetic import SyntheticConfig, ThreadedServer  # noqa: E402
from autobench.errors import BenchError  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: Any) -> Any:
    root = tmp_path_factory.mktemp("bench-nodes")
    bindir = root / "bin"
    bindir.mkdir()
    # Each node reaches this machine's addresses through its own link (the server listens on the
    # first node's side of it, as a head node's server would on its own address).
    with running_nodes(root, bindir, "", route_here=True) as n:
        yield n


def config(nodes: SshNodes, base_url: str, **more: Any) -> BenchConfig:
    settings: dict[str, Any] = {
        "base_url": base_url,
        "model": "m",
        "num_prompts": 40,
        "concurrency": 8,
        "max_tokens": 6,
        "random_input_len": 16,
        "warmup": 2,
        "tokenizer": "estimated",
        "worker_hosts": tuple(nodes.hosts),
        "workers": len(nodes.hosts),
        "remote": nodes.remote,
        "worker_python": sys.executable,  # the nodes share this machine's files (and PYTHONPATH, by SetEnv)
    }
    return BenchConfig(**{**settings, **more})


def test_two_load_generators_on_two_hosts_over_ssh_make_one_result(nodes: SshNodes) -> None:
    here = nodes.here(0)
    with ThreadedServer(SyntheticConfig(host="0.0.0.0", port=0, model="m", ttft_ms=2, itl_ms=1)) as srv:
        res = run_bench(config(nodes, f"http://{here}:{srv.port}"))
        served = srv.server.counters.requests
    d = res.to_json_dict()
    assert (d["completed"], d["failed"], d["incomplete"]) == (40, 0, 0)
    assert served == 40 + 2  # the measured requests and the warm-up, all from the two hosts
    assert d["total_output_tokens"] == 40 * 6
    gens = d["workers"]["generators"]  # type: ignore[index]
    assert [g["host"] for g in gens] == nodes.hosts
    assert [g["requests"] for g in gens] == [20, 20] and [g["concurrency"] for g in gens] == [4, 4]
    assert all(g["cpu_seconds"] > 0 for g in gens)
    # one machine's clock under both namespaces: the offsets measure ~0, within their bound
    assert all(abs(g["clock_offset_ms"]) <= g["clock_round_trip_ms"] / 2 + 1e-6 for g in gens)
    assert res.samples is not None and res.samples.count(OK) == 40


def test_a_host_without_autobench_is_one_error_naming_it(nodes: SshNodes) -> None:
    here = nodes.here(0)
    cfg = config(nodes, f"http://{here}:9", worker_python="/nonexistent/python3")
    with pytest.raises(BenchError) as e:
        run_bench(cfg)
    assert e.value.message.startswith(f"load generator 0 on {nodes.hosts[0]} ")
    assert "/nonexistent/python3" in e.value.message  # the remote shell's own words

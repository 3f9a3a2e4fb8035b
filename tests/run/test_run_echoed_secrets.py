"""Secrets echoed back by the server never land in a run's files or output (issue 12, item 3).

The server is tests/run/hostile_vllm.py: it echoes the Authorization header (the API key, passed
by name as VLLM_API_KEY) into its error bodies, its /metrics text and its log, as some proxies
do.  Every file of the run folder, the ledger row, stdout and stderr are searched for the key.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest
from run_helpers import HERE, ledger_rows, only_run_dir, run_cli

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration

KEY = "k3y-VALUE-that-is-no-known-token-shape-42"


def test_a_key_the_server_echoes_is_redacted_everywhere(tmp_path, make_recipe):
    recipe = make_recipe(secrets="[VLLM_API_KEY]", num_prompts=4)
    proc = run_cli(
        recipe,
        tmp_path,
        "--vllm-exec",
        f"{sys.executable} {HERE / 'hostile_vllm.py'}",
        VLLM_API_KEY=KEY,
        HOSTILE_LOG_KEY="1",
    )
    assert proc.returncode == 6, proc.stderr  # FAILED: every request got a 500
    assert KEY not in proc.stdout and KEY not in proc.stderr
    assert "root cause:" in proc.stdout
    run_dir = only_run_dir(tmp_path)
    names = {p.name for p in run_dir.iterdir()}
    assert {"bench.json", "outcome.json", "metrics.prom", "server.log"} <= names, names
    for path in run_dir.iterdir():
        assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path.name
    bench = json.loads((run_dir / "bench.json").read_text())
    assert "[REDACTED:VLLM_API_KEY]" in json.dumps(bench)  # the error sample is kept, the key is not
    assert "[REDACTED:VLLM_API_KEY]" in (run_dir / "metrics.prom").read_text()
    (row,) = ledger_rows(tmp_path)
    assert KEY not in json.dumps(dataclasses.asdict(row), default=str)


def test_bench_alone_redacts_a_key_echoed_under_any_variable_name(tmp_path):
    """`autobench bench --api-key-env SERVICE_KEY_X`: the variable is not named like a secret, so
    only the name given to the bench marks its value as one."""
    import subprocess
    import time
    import urllib.request

    from run_helpers import free_port, run_env

    port = free_port()
    env = run_env(tmp_path, VLLM_API_KEY=KEY, SERVICE_KEY_X=KEY)
    server = subprocess.Popen(
        [sys.executable, str(HERE / "hostile_vllm.py"), "serve", "m", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "hostile server did not start"
                time.sleep(0.05)
        env.pop("VLLM_API_KEY")
        result = tmp_path / "r.json"
        proc = subprocess.run(
            [sys.executable, "-m", "autobench", "bench", "--base-url", f"http://127.0.0.1:{port}", "--model", "m"]
            + ["--dataset-kind", "random", "--num-prompts", "3", "--api-key-env", "SERVICE_KEY_X"]
            + ["--result", str(result)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert proc.returncode != 0  # every request failed
        assert KEY not in proc.stdout + proc.stderr
        assert result.exists() and KEY not in result.read_text()
        assert "[REDACTED:SERVICE_KEY_X]" in result.read_text()
    finally:
        server.terminate()
        server.wait(timeout=10)

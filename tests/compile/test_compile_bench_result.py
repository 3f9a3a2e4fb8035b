"""The compiled script's bench writes a result file that `record --metrics` takes as it is, and
the script finds autobench with its venv not activated (./.venv/bin/autobench).

Real parts: the compiled bash script (target bench), the real synthetic server on loopback, the
real `autobench bench` and `autobench record` into a real SQLite ledger."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autobench.compile import compile_recipe
from autobench.recipe import load_recipe

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "autobench", "synthetic-server", "--port", str(port), "--model", "tiny"]
        + ["--ttft-ms", "1", "--itl-ms", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    yield port
    proc.terminate()
    proc.wait(10)


@pytest.mark.integration
def test_script_result_feeds_record_and_needs_no_activated_venv(server: int, tmp_path: Path) -> None:
    recipe = tmp_path / "tiny-bench.yaml"
    recipe.write_text(
        f"""\
name: tiny-bench
model: {{repo: acme/tiny, revision: {SHA}, served_name: tiny}}
container: {{image: "vllm/vllm-openai:v0.23.1", name: ab-tiny, ports: ["{server}:{server}"]}}
engine: {{host: 127.0.0.1, port: {server}, max_model_len: 4096}}
bench:
  dataset: {{kind: random, input_len: 16, output_len: 8}}
  num_prompts: 6
  concurrency: 2
"""
    )
    script = tmp_path / "bench.sh"
    script.write_text(compile_recipe(load_recipe(recipe), "bench"))
    # A checkout whose venv is not activated: autobench only as ./.venv/bin/autobench.
    work = tmp_path / "work"
    venv_bin = work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    shim = venv_bin / "autobench"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m autobench "$@"\n')
    shim.chmod(0o755)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "LANG": "C.UTF-8",
    }
    proc = subprocess.run(["bash", str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = work / "tiny-bench.bench.json"
    assert result.is_file() and f"bench result in {result.name}" in proc.stderr
    assert json.loads(result.read_text())["completed"] == 6

    ledger = tmp_path / "ledger.db"
    rec = subprocess.run(
        [sys.executable, "-m", "autobench", "record", str(recipe), "--status", "DONE", "--metrics", str(result)]
        + ["--ledger", str(ledger)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=60,
    )
    assert rec.returncode == 0, rec.stderr
    from autobench.ledger import open_ledger

    with open_ledger(ledger, create=False) as book:
        (run,) = list(book.runs())
    assert run.status == "DONE" and run.metrics and run.metrics.get("completed") == 6
    assert run.started_at and run.ended_at and run.started_at <= run.ended_at  # from the result's date


def test_script_says_how_to_find_autobench_when_it_is_nowhere(tmp_path: Path) -> None:
    recipe = Path(__file__).resolve().parents[2] / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
    script = tmp_path / "bench.sh"
    script.write_text(compile_recipe(load_recipe(recipe), "bench"))
    proc = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 127
    assert "activate its venv or set AUTOBENCH=/path/to/autobench" in proc.stderr

"""Replays on real runs: ``autobench run --runtime process`` against the synthetic server (through
the fake ``vllm``), recorded in a tmp ledger, then ``replay --run`` through the CLI (integration:
every run starts real processes).  The verdicts themselves (a server 10 % slower is a regression,
per cell and over repeats) are tested on seeded samples, the same at any load:
tests/ledger/test_ledger_compare_samples.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import FAKE_VLLM, ledger_rows, run_cli, run_env

FAST = "--ttft-ms 20 --itl-ms 2"

pytestmark = pytest.mark.integration


def cli(tmp_path: Path, *args: str, timeout: float = 90, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autobench", *args, "--ledger", str(tmp_path / "ledger.db")],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=run_env(tmp_path, **env),
        cwd=tmp_path,
    )


@pytest.fixture
def recipe(make_recipe) -> Path:
    return make_recipe(num_prompts=24, concurrency=4, max_tokens=16)  # replay, not statistics: a small run


def test_replay_run_records_a_run_pointing_back_and_compares(recipe, tmp_path):
    done = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=FAST)
    assert done.returncode == 0, done.stderr
    (original,) = ledger_rows(tmp_path)
    vllm = f"{sys.executable} {FAKE_VLLM}"

    # A replay whose script would differ (another vllm executable) is refused before anything runs.
    done = cli(tmp_path, "replay", str(original.id), "--run", "--vllm-exec", "vllm", "--runs-dir", "runs")
    assert done.returncode == 6 and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "compiles to another script now" in done.stderr
    assert len(ledger_rows(tmp_path)) == 1

    done = cli(
        tmp_path, "replay", str(original.id), "--run", "--vllm-exec", vllm, "--runs-dir", "runs", FAKE_VLLM_ARGS=FAST
    )
    assert done.returncode == 0, done.stderr
    assert f"compare {original.display_id} (A) with its replay #2-" in done.stdout
    assert "pins differ" not in done.stdout and "verdict" in done.stdout
    replayed = max(ledger_rows(tmp_path), key=lambda r: r.id)
    assert replayed.id == 2 and replayed.replay_of == original.id and replayed.status == "DONE"
    assert replayed.script_snapshot == original.script_snapshot
    assert replayed.recipe_digest == original.recipe_digest
    assert cli(tmp_path, "ledger", "verify").returncode == 0

    done = cli(tmp_path, "replay", "2", "--run", "--vllm-exec", vllm, "--runs-dir", "runs", "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["replay_of"] == 2 and doc["outcome"]["status"] == "DONE"
    assert doc["b"]["id"] == 3 and doc["verdicts"]["cells"]

"""`run` predicts the boot before anything starts: a predicted failure is refused (exit 6, one line,
nothing recorded) unless --force.  The server is the fake `vllm` of tests/run (no GPU here); the
configs come from the isolated HF cache that `autobench lock` filled from the loopback fake Hub."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import inprocess
import preflight_configs as c
import pytest

from autobench.cli import main

REPO = Path(__file__).resolve().parents[2]
FAKE_VLLM = REPO / "tests" / "run" / "fake_vllm.py"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _recipe(tmp_path: Path, draft: str, nspec: int) -> Path:
    port = _port()
    path = tmp_path / "seed-run.yaml"
    path.write_text(
        f"""\
name: seed-run
model:
  repo: {c.BASE_REPO}
  revision: {c.BASE_SHA}
  served_name: qwen
speculative:
  method: dflash
  model: {c.DRAFT_REPO}
  revision: {draft}
  num_speculative_tokens: {nspec}
container:
  image: vllm/vllm-openai:v0.23.1
  ports: ["{port}:{port}"]
engine:
  host: 127.0.0.1
  port: {port}
  max_model_len: 262144
  enable_prefix_caching: true
bench:
  dataset: {{kind: random, input_len: 16, output_len: 8}}
  num_prompts: 4
  concurrency: 2
  max_tokens: 8
  ready_timeout_s: 20
""",
        encoding="utf-8",
    )
    return path


def _run(recipe: Path, tmp_path: Path, *more: str, here: bool = False) -> subprocess.CompletedProcess[str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # the gate reads the HF cache only
    argv = [sys.executable, "-m", "autobench", "run", str(recipe), "--runtime", "process"]
    argv += ["--vllm-exec", f"{sys.executable} {FAKE_VLLM}", "--ledger", str(tmp_path / "ledger.db")]
    argv += ["--runs-dir", str(tmp_path / "runs"), "--grace", "3", *more]
    if here:  # the CLI's entry point in this process (tests/inprocess.py)
        return inprocess.autobench(*argv[3:], env=env, cwd=tmp_path)
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env, cwd=tmp_path)


def test_predicted_failure_is_refused_and_nothing_is_recorded(hub, tmp_path: Path, capsys) -> None:
    recipe = _recipe(tmp_path, c.DRAFT_NEW, 8)
    assert main(["lock", "--no-images", str(recipe)]) == 0
    capsys.readouterr()
    proc = _run(recipe, tmp_path, here=True)  # refused before anything starts: no child needed
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "refused: predicted boot failure on vLLM 0.23.1" in last
    assert "assert new_spec.page_size_bytes == max_page_size" in last and "--force" in last
    assert not (tmp_path / "ledger.db").exists() and not (tmp_path / "runs").exists()


@pytest.mark.integration
def test_force_runs_anyway_and_says_so(hub, tmp_path: Path, capsys) -> None:
    recipe = _recipe(tmp_path, c.DRAFT_NEW, 8)
    assert main(["lock", "--no-images", str(recipe)]) == 0
    capsys.readouterr()
    proc = _run(recipe, tmp_path, "--force")
    assert proc.returncode == 0, proc.stderr
    assert "running anyway (--force)" in proc.stderr
    assert proc.stdout.startswith("DONE seed-run")


@pytest.mark.integration
def test_good_draft_passes_the_gate(hub, tmp_path: Path, capsys) -> None:
    recipe = _recipe(tmp_path, c.DRAFT_OLD, 5)
    assert main(["lock", "--no-images", str(recipe)]) == 0
    capsys.readouterr()
    proc = _run(recipe, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "preflight: boots on vLLM 0.23.1 (ok; attention block size 2144)" in proc.stderr


@pytest.mark.integration
def test_the_ledger_keeps_the_prediction_and_the_report_compares_it(hub, tmp_path: Path, capsys) -> None:
    from autobench.ledger import open_ledger

    recipe = _recipe(tmp_path, c.DRAFT_OLD, 5)
    assert main(["lock", "--no-images", str(recipe)]) == 0
    capsys.readouterr()
    proc = _run(recipe, tmp_path)
    assert proc.returncode == 0, proc.stderr
    with open_ledger(tmp_path / "ledger.db", create=False) as ledger:
        (run,) = list(ledger.runs())
        assert ledger.verify().ok
    assert run.preflight is not None and run.preflight["attention_block_size"] == 2144
    assert run.preflight["blocks_per_request"] == 555 and run.preflight["status"] == "ok"
    code = main(["preflight-report", "--ledger", str(tmp_path / "ledger.db"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["disagreements"] == 0
    (entry,) = doc["runs"]
    assert {"fact": "boot", "predicted": "boots", "logged": "booted", "agrees": True} in entry["rows"]


@pytest.mark.integration
def test_a_forced_run_keeps_the_failed_prediction_and_the_report_flags_it(hub, tmp_path: Path, capsys) -> None:
    recipe = _recipe(tmp_path, c.DRAFT_NEW, 8)
    assert main(["lock", "--no-images", str(recipe)]) == 0
    capsys.readouterr()
    assert _run(recipe, tmp_path, "--force").returncode == 0
    # The fake server booted where vLLM 0.23 would assert: the report says the prediction differs.
    code = main(["preflight-report", "--ledger", str(tmp_path / "ledger.db")])
    out = capsys.readouterr().out
    assert code == 1 and "boot" in out and "fails (assertion)" in out and "DIFFERS" in out


@pytest.mark.integration
def test_configs_not_cached_the_run_goes_on_and_says_why(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, c.DRAFT_NEW, 8)  # never locked: no config in the HF cache
    proc = _run(recipe, tmp_path, "--allow-unpinned")
    assert proc.returncode == 0, proc.stderr
    note = next(line for line in proc.stdout.splitlines() if "note: preflight:" in line)
    assert "not in the local HF cache" in note

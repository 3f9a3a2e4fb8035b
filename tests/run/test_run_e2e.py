"""`autobench run` end to end: real CLI subprocesses, the real synthetic server behind a
fake `vllm` executable (tests/run/fake_vllm.py), real signals, a real SQLite ledger.
No GPU or vLLM exists here; that is the only thing stood in for."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from run_helpers import ledger_rows, only_run_dir, pid_alive, run_args, run_cli, run_env, run_here

FAST = "--ttft-ms 5 --itl-ms 2 --log-stats-interval 0.2"


def _server_pid(log_text: str) -> int:
    m = re.search(r"Started server process \[(\d+)\]", log_text)
    assert m, log_text
    return int(m.group(1))


@pytest.mark.integration
def test_done_row_with_metrics(make_recipe, tmp_path: Path):
    recipe = make_recipe()
    res = run_cli(recipe, tmp_path, "--json", FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    outcome = json.loads(res.stdout)
    assert outcome["status"] == "DONE"
    [row] = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.source == "run"
    assert row.recipe_name == "synth-run" and row.model_repo == "acme/tiny-model"
    assert row.model_sha == "6c7242c934a9870d7c59c05240bdbb2467cc1394"
    assert row.metrics["completed"] == 8 and row.metrics["errors"] == 0
    assert row.metrics["decode_tok_s"] > 0 and row.metrics["ttft_median_ms"] > 0
    assert row.boot["vllm_version"] == "0.23.1" and row.engine_version == "0.23.1"
    assert row.boot["architecture"] == "SyntheticForCausalLM"
    assert row.script_snapshot and "acme/tiny-model" in row.script_snapshot
    assert row.recipe_snapshot["name"] == "synth-run"
    assert row.root_cause_category is None
    assert row.started_at <= row.ended_at
    # The bench measured prompts with the model's tokenizer when it could: the Hub is unreachable
    # here, so the estimate, said so and recorded (schema v7).
    assert row.tokenizer == "estimated" and outcome["tokenizer"] == "estimated"
    run_dir = only_run_dir(tmp_path)
    bench = json.loads((run_dir / "bench.json").read_text())
    assert "acme/tiny-model" in bench["tokenizer_fallback"] and bench["tokenizer_id"] == "estimated"
    assert outcome["run_dir"] == str(run_dir) and outcome["run_id"] == row.id
    for name in (
        "server.log",
        "plan.json",
        "script.sh",
        "recipe.json",
        "bench.json",
        "metrics.prom",
        "log.json",
        "outcome.json",
    ):
        assert (run_dir / name).is_file(), name
    log = (run_dir / "server.log").read_text()
    assert "[autobench] readiness: ready after" in log and "[autobench] server torn down" in log
    # the server really got the compiled vllm argv (exec replaced), and it is gone now
    assert not pid_alive(_server_pid(log))
    assert "vllm:" in (run_dir / "metrics.prom").read_text()


@pytest.mark.integration
def test_server_that_never_becomes_ready_is_blocked_with_the_log_root_cause(make_recipe, tmp_path: Path):
    recipe = make_recipe()
    args = '--fail-boot-with "new_spec.page_size_bytes == max_page_size"'
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=args)
    assert res.returncode == 6, res.stderr
    assert res.stdout.startswith("BLOCKED synth-run")
    [row] = ledger_rows(tmp_path)
    assert row.status == "BLOCKED"
    assert row.root_cause_category == "kv_page_size"
    assert "page_size_bytes == max_page_size" in row.root_cause_message
    assert "at kv_cache_utils.py:1077" in row.root_cause_message  # the innermost frame, not core.py
    assert "EngineCore failed to start" not in row.root_cause_message
    assert "server exited with code 1 before it became ready" in row.notes
    assert row.metrics == {} or all(v is None for v in row.metrics.values())


@pytest.mark.integration
def test_boot_timeout_is_blocked_and_the_server_is_killed(make_recipe, tmp_path: Path):
    recipe = make_recipe(ready_timeout=1.5)
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS="--boot-delay 60")
    assert res.returncode == 6, res.stderr
    [row] = ledger_rows(tmp_path)
    assert row.status == "BLOCKED"
    assert row.root_cause_category == "not_ready"
    assert "boot timeout" in row.root_cause_message
    log = (only_run_dir(tmp_path) / "server.log").read_text()
    assert "synthetic boot delay" in log and "[autobench] server torn down" in log


@pytest.mark.integration
def test_server_dying_mid_bench_is_failed(make_recipe, tmp_path: Path):
    recipe = make_recipe(num_prompts=12)
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=f"{FAST} --die-after-requests 3")
    log = (only_run_dir(tmp_path) / "server.log").read_text()
    assert res.returncode == 6, res.stdout + res.stderr + log
    [row] = ledger_rows(tmp_path)
    assert row.status == "FAILED"
    assert 3 <= row.metrics["completed"] < 12
    assert row.metrics["errors"] > 0
    assert "died unexpectedly" in (only_run_dir(tmp_path) / "server.log").read_text()
    assert "server exited with code 1 during the bench" in (row.notes + (row.root_cause_message or ""))


def _interrupt_during_bench(make_recipe, tmp_path: Path, signum: int):
    recipe = make_recipe(num_prompts=40)
    env = run_env(tmp_path, FAKE_VLLM_ARGS="--ttft-ms 5 --itl-ms 150", PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen(
        run_args(recipe, tmp_path, "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 30
        log_path = None
        while time.monotonic() < deadline:
            runs = tmp_path / "runs"
            if runs.exists() and any(runs.iterdir()):
                log_path = next(runs.iterdir()) / "server.log"
                if log_path.exists() and "readiness: ready" in log_path.read_text():
                    break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        else:
            raise AssertionError("the server never became ready")
        time.sleep(0.6)  # inside the bench: 40 requests of ~1.2 s at concurrency 2
        proc.send_signal(signum)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: dump every thread's stack
            out, err = proc.communicate(timeout=10)
            raise AssertionError(f"autobench run did not stop after the signal:\n{err}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err, log_path


@pytest.mark.integration
def test_sigint_during_bench_is_aborted_server_gone_row_recorded(make_recipe, tmp_path: Path):
    code, out, err, log_path = _interrupt_during_bench(make_recipe, tmp_path, signal.SIGINT)
    assert code == 130, err
    outcome = json.loads(out)
    assert outcome["status"] == "ABORTED" and outcome["signal"] == "SIGINT"
    [row] = ledger_rows(tmp_path)
    assert row.status == "ABORTED"
    assert row.root_cause_category == "interrupted"
    assert "interrupted by SIGINT during bench" in row.notes
    log = log_path.read_text()
    assert not pid_alive(_server_pid(log))
    assert "[autobench] server torn down" in log


@pytest.mark.integration
def test_sigterm_during_bench_is_aborted_too(make_recipe, tmp_path: Path):
    code, out, err, log_path = _interrupt_during_bench(make_recipe, tmp_path, signal.SIGTERM)
    assert code == 130, err
    [row] = ledger_rows(tmp_path)
    assert row.status == "ABORTED" and "SIGTERM" in row.notes
    assert not pid_alive(_server_pid(log_path.read_text()))


@pytest.mark.integration
def test_secret_values_never_reach_the_log_or_the_ledger(make_recipe, tmp_path: Path):
    token = "zz-secret-9f8e7d6c5b4a"  # not hf_-shaped: only the recipe's declared name catches it
    recipe = make_recipe()
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=FAST, FAKE_VLLM_ECHO_TOKEN="1", HF_TOKEN=token)
    assert res.returncode == 0, res.stderr
    run_dir = only_run_dir(tmp_path)
    log = (run_dir / "server.log").read_text()
    assert "HF_TOKEN=[REDACTED:HF_TOKEN]" in log  # the server did print it ...
    assert token not in log  # ... and it was redacted as it was written
    for path in [*run_dir.iterdir(), tmp_path / "ledger.db"]:
        assert token.encode() not in path.read_bytes(), path
    assert token not in res.stdout + res.stderr
    [row] = ledger_rows(tmp_path)
    assert token not in json.dumps(row.to_json_dict(), default=str)


@pytest.mark.integration
def test_a_server_api_key_is_sent_by_the_bench_and_never_stored(make_recipe, tmp_path: Path):
    key = "zz-apikey-1a2b3c4d5e6f"
    recipe = make_recipe(secrets="[HF_TOKEN, VLLM_API_KEY]")
    # The synthetic server, like vllm serve, demands the key when VLLM_API_KEY is set.
    res = run_cli(recipe, tmp_path, "--json", FAKE_VLLM_ARGS=FAST, VLLM_API_KEY=key)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["status"] == "DONE"
    [row] = ledger_rows(tmp_path)
    assert row.metrics["completed"] == 8 and row.metrics["errors"] == 0
    run_dir = only_run_dir(tmp_path)
    for path in [*run_dir.iterdir(), tmp_path / "ledger.db"]:
        assert key.encode() not in path.read_bytes(), path
    assert json.loads((run_dir / "bench.json").read_text())["api_key_env"] == "VLLM_API_KEY"


def test_unpinned_recipe_is_refused_before_anything_runs(make_recipe, tmp_path: Path):
    recipe = make_recipe(revision="main")
    res = run_here(recipe, tmp_path)
    assert res.returncode == 6
    assert "unpinned Hub revisions: model.revision (acme/tiny-model@main)" in res.stderr
    assert "--allow-unpinned" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ledger.db").exists()


@pytest.mark.integration
def test_allow_unpinned_runs_and_notes_it(make_recipe, tmp_path: Path):
    recipe = make_recipe(revision="main")
    res = run_cli(recipe, tmp_path, "--allow-unpinned", FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    [row] = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.model_sha is None
    assert "unpinned: model.revision (acme/tiny-model@main)" in row.notes


@pytest.mark.integration
def test_sigint_during_boot_and_again_during_teardown_still_tears_down_and_records(make_recipe, tmp_path: Path):
    recipe = make_recipe()
    env = run_env(tmp_path, FAKE_VLLM_ARGS="--boot-delay 60", FAKE_VLLM_IGNORE_SIGTERM="1")
    proc = subprocess.Popen(
        run_args(recipe, tmp_path, "--grace", "1.5"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            runs = tmp_path / "runs"
            logs = list(runs.glob("*/server.log")) if runs.exists() else []
            if (
                logs
                and "Started server process" not in logs[0].read_text()
                and "synthetic boot delay" in logs[0].read_text()
            ):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the server never started booting")
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)  # teardown is now waiting out the grace period (the server ignores SIGTERM)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out + err
    [row] = ledger_rows(tmp_path)
    assert row.status == "ABORTED"
    assert "interrupted by SIGINT during boot" in row.notes
    log = logs[0].read_text()
    assert "[autobench] server torn down" in log
    m = re.search(r"\[fake_vllm\] pid (\d+)", log)
    assert m and not pid_alive(int(m.group(1)))  # it ignored SIGTERM, so it was SIGKILLed

"""`autobench run` and the log's root cause (issue 16): a server that dies after its
startup line is BLOCKED with the true cause, a DONE run whose server logs its engine's
death while autobench tears it down has no cause, and a ValidationError boot carries
its detail line into the ledger row and the printed outcome.  The server is the fake
`vllm` (tests/run/fake_vllm.py): no GPU or vLLM exists here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_helpers import ledger_rows, only_run_dir, run_cli

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration

FAST = "--ttft-ms 5 --itl-ms 2 --log-stats-interval 0.2"

BIND_FAILURE = """\
(APIServer pid=1) INFO 11-02 10:00:00 [api_server.py:1] vLLM API server version 0.10.1
(APIServer pid=1) INFO:     Started server process [1]
(APIServer pid=1) INFO:     Waiting for application startup.
(APIServer pid=1) INFO:     Application startup complete.
(APIServer pid=1) ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use
(APIServer pid=1) INFO:     Waiting for application shutdown.
(APIServer pid=1) INFO:     Application shutdown complete.
"""

VALIDATION = """\
(APIServer pid=1) INFO 11-02 10:00:00 [api_server.py:1] vLLM API server version 0.10.2
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1092, in create_model_config
(APIServer pid=1)     return ModelConfig(
(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
(APIServer pid=1)   Value error, User-specified max_model_len (1000000) is greater than the derived max_model_len (max_position_embeddings=40960 or model_max_length=None in model's config.json). [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]
(APIServer pid=1)     For further information visit https://errors.pydantic.dev/2.11/v/value_error
"""

SHUTDOWN = """\
(EngineCore_DP0 pid=9) ERROR 11-02 10:05:00 [core.py:710] EngineCore encountered a fatal error.
(APIServer pid=1) ERROR 11-02 10:05:00 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
(EngineCore_DP0 pid=9) ERROR 11-02 10:05:00 [core.py:710] RuntimeError: cancelled by the shutdown
"""


def test_a_server_that_fails_to_bind_after_startup_is_blocked_with_that_cause(make_recipe, tmp_path: Path):
    log = tmp_path / "vllm.log"
    log.write_text(BIND_FAILURE, encoding="utf-8")
    res = run_cli(make_recipe(), tmp_path, FAKE_VLLM_LOG=str(log))
    assert res.returncode == 6, res.stderr
    assert res.stdout.startswith("BLOCKED synth-run")
    [row] = ledger_rows(tmp_path)
    assert row.status == "BLOCKED" and row.root_cause_category == "port_in_use"
    assert row.root_cause_message.startswith("[Errno 98] error while attempting to bind")
    doc = json.loads((only_run_dir(tmp_path) / "log.json").read_text())
    assert doc["ready"] is False  # it said it was up, then never served


def test_a_validation_error_boot_carries_its_detail_into_the_row_and_the_outcome(make_recipe, tmp_path: Path):
    log = tmp_path / "vllm.log"
    log.write_text(VALIDATION, encoding="utf-8")
    res = run_cli(make_recipe(), tmp_path, FAKE_VLLM_LOG=str(log))
    assert res.returncode == 6, res.stderr
    detail = "Value error, User-specified max_model_len (1000000) is greater than the derived max_model_len"
    assert "  root cause: config_validation: pydantic_core._pydantic_core.ValidationError" in res.stdout
    assert f"  detail: {detail}" in res.stdout
    [row] = ledger_rows(tmp_path)
    assert row.root_cause_category == "config_validation"
    assert row.root_cause_detail.startswith(detail) and "[type=" not in row.root_cause_detail
    # history shows it next to the cause
    hist = run_cli_history(tmp_path)
    assert detail in hist


def run_cli_history(tmp_path: Path) -> str:
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autobench",
            "history",
            "--recipe",
            "synth-run",
            "--ledger",
            str(tmp_path / "ledger.db"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def test_a_done_run_has_no_cause_from_the_shutdown_autobench_caused(make_recipe, tmp_path: Path):
    shutdown = tmp_path / "shutdown.log"
    shutdown.write_text(SHUTDOWN, encoding="utf-8")
    res = run_cli(make_recipe(), tmp_path, "--json", FAKE_VLLM_ARGS=FAST, FAKE_VLLM_ON_SIGTERM=str(shutdown))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["root_cause"] is None
    [row] = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.root_cause_category is None
    run_dir = only_run_dir(tmp_path)
    text = (run_dir / "server.log").read_text()
    assert "EngineDeadError" in text and "[autobench] teardown: stopping the server" in text
    assert json.loads((run_dir / "log.json").read_text())["root_cause"] is None

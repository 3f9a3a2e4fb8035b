"""`autobench logs parse` never prints a secret value that a server echoed into its log."""

from __future__ import annotations

import subprocess
import sys

import pytest

TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123456789"
API_KEY = "s3cr3t-value-not-hf-shaped"


@pytest.mark.integration
def test_logs_parse_redacts_secret_values_in_text_and_json(tmp_path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "INFO 06-24 10:00:00 [api_server.py:1880] vLLM API server version 0.23.1\n"
        f"INFO 06-24 10:00:01 [utils.py:328] non-default args: {{'hf_token': '{TOKEN}'}}\n"
        f"AssertionError: bad credentials {TOKEN} key={API_KEY}\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HF_TOKEN": TOKEN, "MY_API_KEY": API_KEY}
    for extra in ([], ["--json"]):
        run = subprocess.run(
            [sys.executable, "-m", "autobench", "logs", "parse", *extra, str(log)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert run.returncode == 0, run.stderr
        out = run.stdout + run.stderr
        assert "bad credentials" in out  # the root cause is still reported ...
        assert TOKEN not in out and API_KEY not in out  # ... without the values
        assert "[REDACTED:HF_TOKEN]" in out and "[REDACTED:MY_API_KEY]" in out

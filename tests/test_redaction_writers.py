"""Every writer goes through ``autobench.redaction``: one table of secrets, one test per writer.

The table holds an ``hf_`` token of 25 characters after the prefix (shorter than the 30 the
redactors once required, so it slipped into the ledger) and the value of a variable that is
only *named* like a secret.  ``validate`` refuses both in a recipe; the stored server log,
``logs parse`` (text and JSON), the ledger row, ``ledger export``, report pages and lock
files never hold either.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger import open_ledger

REPO = Path(__file__).resolve().parent.parent
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"

HF_25 = "hf_" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Y"  # hf_ + 25 letters/digits
PASSWORD = "pw-7Kq2xVb9Lm-not-token-shaped"

# (id, the secret, the environment that makes it one, what replaces it)
SECRETS = [
    pytest.param(HF_25, {}, "[REDACTED:hf_token]", id="hf_token-25"),
    pytest.param(PASSWORD, {"MY_SERVICE_PASSWORD": PASSWORD}, "[REDACTED:MY_SERVICE_PASSWORD]", id="secret-named"),
]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _setenv(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _server_log(tmp_path: Path, secret: str) -> Path:
    log = tmp_path / "server.log"
    log.write_text(
        "INFO 06-24 10:00:00 [api_server.py:1880] vLLM API server version 0.23.1\n"
        f"INFO 06-24 10:00:01 [utils.py:328] non-default args: {{'api_key': '{secret}'}}\n"
        "ERROR 06-23 10:00:07 [core.py:586] EngineCore failed to start.\n"
        "ERROR 06-23 10:00:07 [core.py:586] huggingface_hub.errors.HfHubHTTPError: 401 Client Error: "
        f"Unauthorized for token {secret}\n",
        encoding="utf-8",
    )
    return log


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
def test_validate_refuses_the_secret_in_a_recipe(capsys, monkeypatch, tmp_path, secret, env, label):
    _setenv(monkeypatch, env)
    recipe = tmp_path / "leak.yaml"
    recipe.write_text(f"extends: {DFLASH}\nname: leak\nmeta:\n  notes: left in by mistake {secret}\n")
    code, out, err = _cli(capsys, "validate", str(recipe))
    assert code == 2, (out, err)
    assert "AB030" in out and "meta.notes" in out
    assert secret not in out + err


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
def test_stored_server_log_is_redacted_as_written(monkeypatch, tmp_path, secret, env, label):
    from autobench.redaction import environment_secrets
    from autobench.run.runtimes import LogFile

    _setenv(monkeypatch, env)
    log = LogFile(tmp_path / "server.log", environment_secrets(()))
    # a real child process echoing the secret, copied by the log pump as `run` does
    child = subprocess.Popen(["printf", "%s\\n", f"args: token={secret} end"], stdout=subprocess.PIPE)
    assert child.stdout is not None
    pump = log.pump(child.stdout)
    child.wait(timeout=10)
    pump.join(10)
    log.note(f"autobench saw {secret}")
    log.close()
    text = (tmp_path / "server.log").read_text()
    assert secret not in text
    assert text.count(label) == 2 and f"args: token={label} end" in text


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_logs_parse_output_is_redacted(capsys, monkeypatch, tmp_path, secret, env, label, as_json):
    _setenv(monkeypatch, env)
    log = _server_log(tmp_path, secret)
    code, out, err = _cli(capsys, "logs", "parse", *(["--json"] if as_json else []), str(log))
    assert code == 0, err
    assert "401" in out and label in out  # the cause is kept, the value is not
    assert secret not in out + err
    if as_json:
        assert label in json.loads(out)["root_cause"]["message"]


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
def test_ledger_row_from_a_log_is_redacted(capsys, monkeypatch, tmp_path, secret, env, label):
    _setenv(monkeypatch, env)
    db = tmp_path / "ledger.db"
    log = _server_log(tmp_path, secret)
    code, _, err = _cli(capsys, "record", str(DFLASH), "--status", "BLOCKED", "--log", str(log), "--ledger", str(db))
    assert code == 0, err
    rec = open_ledger(db).get(1)
    assert label in (rec.root_cause_message or "")
    for path in tmp_path.glob("ledger.db*"):  # the database and its write-ahead log
        assert secret.encode() not in path.read_bytes(), path


def _ledger_holding(tmp_path: Path, capsys: pytest.CaptureFixture[str], secret: str) -> Path:
    """A ledger whose row holds ``secret`` in its notes, as a ledger written before the store
    refused such values (or by another tool) does: the column is changed under the store."""
    db = tmp_path / "ledger.db"
    code, _, err = _cli(capsys, "record", str(DFLASH), "--status", "DONE", "--note", "placeholder", "--ledger", str(db))
    assert code == 0, err
    with sqlite3.connect(db) as conn:  # lift the append-only trigger for this one edit
        conn.execute("DROP TRIGGER runs_no_update")
        conn.execute("UPDATE runs SET notes = ?, root_cause_message = ?", (f"note {secret}", f"cause {secret}"))
        assert conn.execute("SELECT notes FROM runs").fetchone() == (f"note {secret}",)
    return db


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_ledger_export_is_redacted(capsys, monkeypatch, tmp_path, secret, env, label, fmt):
    _setenv(monkeypatch, env)
    db = _ledger_holding(tmp_path, capsys, secret)
    out_file = tmp_path / f"runs.{fmt}"
    code, _, err = _cli(capsys, "ledger", "export", "--format", fmt, "-o", str(out_file), "--ledger", str(db))
    assert code == 0, err
    text = out_file.read_text()
    assert secret not in text and f"note {label}" in text


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
def test_report_pages_are_redacted(capsys, monkeypatch, tmp_path, secret, env, label):
    _setenv(monkeypatch, env)
    db = _ledger_holding(tmp_path, capsys, secret)
    docs = tmp_path / "docs"
    code, _, err = _cli(
        capsys,
        "report",
        "--index",
        "--no-plots",
        "--ledger",
        str(db),
        "-o",
        str(docs),
        "--recipes",
        str(REPO / "recipes"),
    )
    assert code == 0, err
    pages = [p for p in docs.rglob("*.md")]
    text = "".join(p.read_text() for p in pages)
    assert pages and secret not in text and label in text


@pytest.mark.parametrize(("secret", "env", "label"), SECRETS)
def test_lock_files_are_redacted(monkeypatch, secret, env, label):
    from autobench.hub.lockfile import dump_lock

    _setenv(monkeypatch, env)
    data = {"references": {"model": {"repo": "acme/m", "label": f"branch-{secret}", "sha": "a" * 40}}}
    text = dump_lock(data)
    assert secret not in text
    assert json.loads(text)["references"]["model"]["label"] == f"branch-{label}"


@pytest.mark.integration
def test_logs_parse_in_a_subprocess_sees_the_environment(tmp_path):
    """The CLI's own process: the variables it redacts are those it was started with."""
    log = _server_log(tmp_path, PASSWORD)
    env = {"PATH": "/usr/bin:/bin", "MY_SERVICE_PASSWORD": PASSWORD}
    run = subprocess.run(
        [sys.executable, "-m", "autobench", "logs", "parse", "--json", str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert PASSWORD not in run.stdout and "[REDACTED:MY_SERVICE_PASSWORD]" in run.stdout

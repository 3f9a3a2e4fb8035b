"""redact_files: the logs a Slurm job or a multi-node driver wrote are redacted in place,
streamed (a long run's log is GBs), and a FIFO left where a log should be is skipped."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from autobench.run import collect
from autobench.run import plan as P
from autobench.runrow import RootCause

SECRET = "s3cr3t-value-that-is-long"


def test_a_secret_across_a_read_block_is_redacted_and_nuls_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "_BLOCK", 64)  # the secret straddles several reads
    log = tmp_path / "server.log"
    head = "x" * 50
    log.write_text(f"{head} token={SECRET}\nok\x00 line\nhf_{'a' * 34}\nlast line without newline {SECRET}")
    collect.redact_files([log], {"API_KEY": SECRET})
    text = log.read_text()
    assert text.splitlines()[1] == "ok line"  # the NUL dropped, nothing in its place
    assert SECRET not in text and "\x00" not in text
    assert text.count("[REDACTED:API_KEY]") == 2
    assert "hf_" + "a" * 34 not in text
    assert text.endswith("last line without newline [REDACTED:API_KEY]")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.log"]


def test_a_clean_log_is_left_as_it_was(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("INFO nothing secret\r\nline two\n")
    os.utime(log, (1_000_000, 1_000_000))
    collect.redact_files([log], {"API_KEY": SECRET})
    assert log.stat().st_mtime == 1_000_000
    assert log.read_bytes() == b"INFO nothing secret\r\nline two\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["server.log"]  # no scratch copy left


def test_bytes_that_are_not_utf8_are_replaced_and_the_secret_still_redacted(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"bad \xff\xfe bytes " + SECRET.encode() + b"\n")
    collect.redact_files([log], {"K": SECRET})
    assert log.read_text() == "bad \ufffd\ufffd bytes [REDACTED:K]\n"


def test_a_fifo_or_a_missing_file_is_skipped(tmp_path):
    os.mkfifo(tmp_path / "server.log")
    log = tmp_path / "driver.log"
    log.write_text(f"key {SECRET}\n")
    collect.redact_files([tmp_path / "server.log", tmp_path / "missing.log", log], {"K": SECRET})
    assert log.read_text() == "key [REDACTED:K]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["driver.log", "server.log"]


# -- log_facts / log_cause: what a runtime that did not write its own log learns from it --------

CORPUS = Path(__file__).resolve().parent.parent / "logs" / "corpus"


def _outcome(status: str = "FAILED", category: str | None = "not_ready", message: str | None = "server not ready"):
    return SimpleNamespace(
        status=status,
        root_cause_category=category,
        root_cause_message=message,
        root_cause_detail=None,
        notes=[],
        boot={},
    )


def test_the_log_gives_boot_facts_a_log_json_and_the_root_cause(tmp_path):
    shutil.copy(CORPUS / "006_v1-kv-too-small-wrapped-paste.log", tmp_path / P.SERVER_LOG)
    outcome = _outcome()
    rc = collect.log_facts(tmp_path, outcome)
    assert rc is not None and rc.category == "gpu_memory"
    assert rc.message.startswith("ValueError: To serve at least one request with the model's max seq len (100000)")
    doc = json.loads((tmp_path / P.LOG_JSON).read_text())
    keys = [k for k, _ in json.loads((tmp_path / P.LOG_JSON).read_text(), object_pairs_hook=lambda kv: kv)]
    assert keys == sorted(keys)  # written with its keys sorted: the same log, the same bytes
    assert doc["root_cause"]["category"] == "gpu_memory" and (tmp_path / P.LOG_JSON).read_text().endswith("}\n")
    assert outcome.notes == [] and isinstance(outcome.boot, dict)


def test_no_log_is_no_cause_and_a_binary_log_is_a_note(tmp_path):
    outcome = _outcome()
    assert collect.log_facts(tmp_path, outcome) is None and outcome.notes == []
    (tmp_path / P.SERVER_LOG).write_bytes(b"\x00\x01\x02" * 4000)
    assert collect.log_facts(tmp_path, outcome) is None
    assert len(outcome.notes) == 1 and outcome.notes[0].startswith("log not parsed: ")
    assert not (tmp_path / P.LOG_JSON).exists()


def test_a_vague_cause_gives_way_to_the_logs_and_stays_a_note():
    outcome = _outcome()
    collect.log_cause(outcome, RootCause("gpu_memory", "KV cache too small", "detail line"), ["not_ready"])
    assert (outcome.root_cause_category, outcome.root_cause_message) == ("gpu_memory", "KV cache too small")
    assert outcome.root_cause_detail == "detail line" and outcome.notes == ["server not ready"]


@pytest.mark.parametrize(
    ("status", "category", "rc"),
    [
        ("DONE", "not_ready", RootCause("gpu_memory", "m")),  # a run that ended well keeps no cause
        ("FAILED", "assertion", RootCause("gpu_memory", "m")),  # a precise cause is kept
        ("FAILED", "not_ready", None),  # the log states none
    ],
)
def test_a_cause_is_kept_when_it_is_not_vague_or_the_log_has_none(status, category, rc):
    outcome = _outcome(status, category)
    collect.log_cause(outcome, rc, ["not_ready"])
    assert (outcome.root_cause_category, outcome.notes) == (category, [])


def test_a_blocked_run_without_a_message_takes_the_cause_and_adds_no_note():
    outcome = _outcome("BLOCKED", "not_ready", None)
    collect.log_cause(outcome, RootCause("assertion", "page size"), ["not_ready"])
    assert outcome.root_cause_category == "assertion" and outcome.notes == []

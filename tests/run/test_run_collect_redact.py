"""redact_files: the logs a Slurm job or a multi-node driver wrote are redacted in place,
streamed (a long run's log is GBs), and a FIFO left where a log should be is skipped."""

from __future__ import annotations

import os

from autobench.run import collect

SECRET = "s3cr3t-value-that-is-long"


def test_a_secret_across_a_read_block_is_redacted_and_nuls_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "_BLOCK", 64)  # the secret straddles several reads
    log = tmp_path / "server.log"
    head = "x" * 50
    log.write_text(f"{head} token={SECRET}\nok\x00 line\nhf_{'a' * 34}\nlast line without newline {SECRET}")
    collect.redact_files([log], {"API_KEY": SECRET})
    text = log.read_text()
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


def test_a_fifo_or_a_missing_file_is_skipped(tmp_path):
    os.mkfifo(tmp_path / "server.log")
    log = tmp_path / "driver.log"
    log.write_text(f"key {SECRET}\n")
    collect.redact_files([tmp_path / "server.log", tmp_path / "missing.log", log], {"K": SECRET})
    assert log.read_text() == "key [REDACTED:K]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["driver.log", "server.log"]

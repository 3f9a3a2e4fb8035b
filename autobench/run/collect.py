"""Collect logs: the files a runtime did not write through autobench's own redacting writer
(a Slurm job's server.log and slurm-*.out, a multi-node run's head log and driver.log), made
safe and read once the run has ended.

    redact_files(paths, secrets)       secret values and token shapes out, in place
    log_facts(run_dir, outcome)        server.log -> log.json, the outcome's boot facts; the log's root cause
    log_cause(outcome, rc, categories) the log's root cause replaces a vaguer one (kept as a note)
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.errors import AutobenchError
from autobench.files import open_regular, sha256_regular
from autobench.run import plan as P
from autobench.run.outcome import RunOutcome, write_text

if TYPE_CHECKING:
    from autobench.runrow import RootCause


def redact_files(paths: Iterable[Path], secrets: Mapping[str, str]) -> None:
    """Redact each file in place before anything reads or keeps it (secret values, token shapes).

    Streamed a block at a time through the same line-wise :class:`~autobench.redaction.Redactor`
    the local runtime writes its logs with, into a new file that then replaces the old one (only
    if it differs): a server log of a long run (GBs) costs bounded memory, and a FIFO or device
    left where a log should be is skipped rather than read for ever."""
    for path in paths:
        try:
            _redact_file(path, secrets)
        except (AutobenchError, OSError):
            continue


_BLOCK = 1 << 20  # characters per read


def _redact_file(path: Path, secrets: Mapping[str, str]) -> None:
    from autobench.redaction import Redactor

    redactor = Redactor(secrets)
    tmp = path.with_name(path.name + ".redacting")
    try:
        with open_regular(path, what="log") as raw, open(tmp, "w", encoding="utf-8", newline="") as out:
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            while block := text.read(_BLOCK):
                out.write(redactor.feed(block.replace("\x00", "")))
            out.write(redactor.flush())
        if sha256_regular(path, what="log") != sha256_regular(tmp, what="log"):
            tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def log_facts(run_dir: Path, outcome: RunOutcome) -> RootCause | None:
    """Boot facts into the outcome; the log's root cause (or None)."""
    from autobench.logs import parse_log
    from autobench.runrow import boot_columns, log_root_cause

    log = run_dir / P.SERVER_LOG
    if not log.is_file():
        return None
    try:
        doc = parse_log(log).to_json_dict()
    except AutobenchError as exc:
        outcome.notes.append(f"log not parsed: {exc}")
        return None
    write_text(run_dir / P.LOG_JSON, json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    outcome.boot = boot_columns(doc)
    return log_root_cause(doc)


def log_cause(outcome: RunOutcome, rc: RootCause | None, vague: Iterable[str]) -> None:
    """A BLOCKED or FAILED run whose cause is one of ``vague`` (not ready, a node stopped, the
    bench failed) takes the log's root cause when it states one; the vaguer cause stays a note."""
    if outcome.status not in ("BLOCKED", "FAILED") or rc is None or outcome.root_cause_category not in set(vague):
        return
    if outcome.root_cause_message:
        outcome.notes.append(outcome.root_cause_message)
    outcome.root_cause_category, outcome.root_cause_message = rc.category, rc.message
    outcome.root_cause_detail = rc.detail


__all__ = ["log_cause", "log_facts", "redact_files"]

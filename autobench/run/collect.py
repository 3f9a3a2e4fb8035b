"""Collect logs: the files a runtime did not write through autobench's own redacting writer
(a Slurm job's server.log and slurm-*.out, a multi-node run's head log and driver.log), made
safe and read once the run has ended.

    redact_files(paths, secrets)       secret values and token shapes out, in place
    log_facts(run_dir, outcome)        server.log -> log.json, the outcome's boot facts; the log's root cause
    log_cause(outcome, rc, categories) the log's root cause replaces a vaguer one (kept as a note)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.run import plan as P
from autobench.run.outcome import RunOutcome, write_text

if TYPE_CHECKING:
    from autobench.runrow import RootCause


def redact_files(paths: Iterable[Path], secrets: Mapping[str, str]) -> None:
    """Redact each file in place before anything reads or keeps it (secret values, token shapes)."""
    from autobench.redaction import redact

    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        clean = redact(text.replace("\x00", ""), secrets)
        if clean != text:
            write_text(path, clean)


def log_facts(run_dir: Path, outcome: RunOutcome) -> RootCause | None:
    """Boot facts into the outcome; the log's root cause (or None)."""
    from autobench.errors import AutobenchError
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

"""vLLM server log intelligence: boot facts, runtime stats, root causes, redaction.

Public API::

    parse_log(path_or_lines) -> LogReport      # streaming, constant memory
    LogReport.to_json_dict() -> dict           # flat, JSON-safe
    redact(text, secrets) -> str               # secret values and hf_ tokens
    Redactor(secrets)                          # the same, streaming (feed/flush)
"""

from __future__ import annotations

from autobench.logs.parse import LogReport, parse_log
from autobench.logs.redact import Redactor, redact
from autobench.logs.rootcause import CATEGORIES, RootCause

__all__ = ["CATEGORIES", "LogReport", "Redactor", "RootCause", "parse_log", "redact"]

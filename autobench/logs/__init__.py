"""vLLM server log intelligence: boot facts, runtime stats, root causes.

Public API::

    parse_log(path_or_lines) -> LogReport      # streaming, constant memory
    LogReport.to_json_dict() -> dict           # flat, JSON-safe

Redaction of what a log holds is ``autobench.redaction``'s.
"""

from __future__ import annotations

from autobench.logs.parse import LogReport, parse_log
from autobench.logs.rootcause import CATEGORIES, RootCause

__all__ = ["CATEGORIES", "LogReport", "RootCause", "parse_log"]

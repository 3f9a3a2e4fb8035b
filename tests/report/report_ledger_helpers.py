"""Build real SQLite ledgers from the fixture records (helpers for report tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autobench.ledger import NewRun, open_ledger


def build_ledger(path: Path, records: list[dict[str, Any]]) -> Path:
    with open_ledger(path) as ledger:
        for rec in sorted(records, key=lambda r: r["id"]):
            rec = dict(rec)
            rec.pop("id")
            ledger.append(NewRun(**rec))
    return path

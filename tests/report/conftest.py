"""Fixtures for report tests (data lives in report_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_fixtures import seed_records

from autobench.report.model import Run, run_from_record


@pytest.fixture
def seed_runs() -> list[Run]:
    return [run_from_record(r) for r in seed_records()]


@pytest.fixture
def seed_ledger(tmp_path: Path) -> Path:
    """A real SQLite ledger holding the seed's three runs."""
    from report_ledger_helpers import build_ledger

    return build_ledger(tmp_path / "ledger.db", seed_records())

"""Fixtures for the ledger tests: real SQLite files in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.ledger import open_ledger


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(db_path: Path):
    with open_ledger(db_path) as book:
        yield book

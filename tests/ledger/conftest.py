"""Fixtures for the ledger tests: real SQLite files in tmp_path, and (``backend``) the same
tests against a fresh schema on the real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest
from ledger_backends import BACKENDS, make_backend

from autobench.ledger import open_ledger


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


@pytest.fixture
def ledger(db_path: Path):
    with open_ledger(db_path) as book:
        yield book


@pytest.fixture(params=[pytest.param(b, marks=pytest.mark.integration) if b == "postgresql" else b for b in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path: Path):
    """A fresh, empty ledger location on each backend (the database itself, not opened)."""
    with make_backend(request.param, tmp_path) as where:
        yield where


@pytest.fixture
def book(backend):
    """An open ledger on each backend."""
    with open_ledger(backend.url) as opened:
        yield opened

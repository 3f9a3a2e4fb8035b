"""The migrations themselves, on real databases: each version recorded once with its own
description and time, only the pending ones applied, a newer ledger refused with what to do."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import create_engine, insert, select
from sqlalchemy.schema import CreateTable

from autobench.errors import LedgerError
from autobench.ledger.migrations import LATEST, MIGRATIONS, VERSIONS, check_not_newer, current_version, migrate


def versions(conn) -> list[tuple[int, str, str]]:
    rows = conn.execute(select(VERSIONS.c.version, VERSIONS.c.description, VERSIONS.c.applied_at))
    return sorted(tuple(r) for r in rows)


def test_a_fresh_database_gets_every_version_once_with_its_description(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    with engine.begin() as conn:
        assert migrate(conn, "l.db") == LATEST
        assert current_version(conn) == LATEST
    with engine.begin() as conn:
        assert migrate(conn, "l.db") == LATEST  # nothing pending: nothing applied again
        rows = versions(conn)
    engine.dispose()
    assert [(v, d) for v, d, _ in rows] == [(v, d) for v, d, _ in MIGRATIONS]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at) for _, _, at in rows)


def test_only_the_pending_migrations_are_applied(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    with engine.begin() as conn:  # a ledger as v2 left it
        conn.execute(CreateTable(VERSIONS))
        for number, description, apply in MIGRATIONS[:2]:
            apply(conn)
            conn.execute(insert(VERSIONS).values(version=number, description=description, applied_at="old"))
        assert current_version(conn) == 2
    with engine.begin() as conn:
        assert migrate(conn, "l.db") == LATEST
        rows = versions(conn)
        columns = {r[1] for r in conn.exec_driver_sql("PRAGMA table_info(runs)")}
        indexes = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='index'")}
        tables = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
    engine.dispose()
    assert [at for _, _, at in rows][:2] == ["old", "old"] and "old" not in [at for _, _, at in rows][2:]
    assert [v for v, _, _ in rows] == list(range(1, LATEST + 1))
    assert {"max_model_len", "run_uid", "root_cause_detail", "preflight", "tokenizer", "replay_of"} <= columns
    assert "cells_digest" in columns and "cells" in tables
    assert {"ix_runs_hist_recipe", "ix_runs_hist_draft", "ix_runs_hist_model", "ix_runs_run_uid"} <= indexes
    assert {"ix_runs_status", "ix_runs_started_at"} <= indexes
    assert not {"ix_runs_recipe_name", "ix_runs_draft", "ix_runs_model"} & indexes


def test_an_empty_versions_table_is_version_0(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    with engine.begin() as conn:
        conn.execute(CreateTable(VERSIONS))
        assert current_version(conn) == 0
    engine.dispose()


def test_the_latest_version_is_the_last_migration():
    assert LATEST == MIGRATIONS[-1][0] == len(MIGRATIONS)
    check_not_newer(LATEST, "l.db")  # no error


def test_a_newer_schema_is_refused_with_what_to_do():
    with pytest.raises(LedgerError) as info:
        check_not_newer(LATEST + 1, "where.db")
    assert str(info.value).startswith(
        f"where.db: ledger schema v{LATEST + 1} was written by a newer autobench (this one knows v{LATEST})"
    )
    assert info.value.hint == "upgrade autobench; the ledger was left unchanged"


def test_migrate_itself_refuses_a_newer_schema_and_applies_nothing(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'l.db'}")
    with engine.begin() as conn:
        conn.execute(CreateTable(VERSIONS))
        conn.execute(insert(VERSIONS).values(version=LATEST + 1, description="future", applied_at="x"))
    with engine.begin() as conn, pytest.raises(LedgerError, match=f"schema v{LATEST + 1} was written by a newer"):
        migrate(conn, "l.db")
    with engine.begin() as conn:
        tables = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
    engine.dispose()
    assert tables == {"schema_version"}

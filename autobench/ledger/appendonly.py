"""The database's own refusal of changes: append-only triggers, per backend, on ``runs``,
``schema_version``, (schema v8) ``cells`` and (schema v10) ``experiments``.

SQLite: ``BEFORE UPDATE`` / ``BEFORE DELETE`` triggers that ``RAISE(ABORT, ...)`` (SQLite
has no TRUNCATE; its ``DELETE FROM t`` fires the delete trigger).  PostgreSQL: one
PL/pgSQL function raising the same message, called by statement-level ``BEFORE UPDATE``,
``BEFORE DELETE`` and ``BEFORE TRUNCATE`` triggers.  ``missing(conn)`` names the triggers a
ledger should have and does not (dropped, or disabled on PostgreSQL), so ``verify`` can
report a ledger that no longer refuses changes even while its chain still verifies.
"""

from __future__ import annotations

from sqlalchemy import Connection

APPEND_ONLY_MESSAGE = (
    "ledger rows are append-only: record a correction as a new run (autobench record --corrects ID / --supersedes ID)"
)
PG_FUNCTION = "autobench_refuse_change"
TABLES = ("runs", "schema_version", "cells", "experiments")


def _ops(dialect: str) -> tuple[str, ...]:
    return ("UPDATE", "DELETE", "TRUNCATE") if dialect == "postgresql" else ("UPDATE", "DELETE")


def trigger_names(dialect: str, tables: tuple[str, ...] = TABLES) -> list[str]:
    return [f"{table}_no_{op.lower()}" for table in tables for op in _ops(dialect)]


def create(conn: Connection, *tables: str) -> None:
    """Make the database itself refuse UPDATE, DELETE (and TRUNCATE) on ``tables``."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        for table in tables:
            for op in _ops(dialect):
                conn.exec_driver_sql(
                    f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END"
                )
        return
    if dialect != "postgresql":
        # Other backends: grants only (REVOKE UPDATE, DELETE); the hash chain still detects
        # any change.  See docs/ledger.md.
        return
    conn.exec_driver_sql(
        f"CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN RAISE EXCEPTION '{APPEND_ONLY_MESSAGE}' USING ERRCODE = 'insufficient_privilege'; END $$"
    )
    for table in tables:
        for op in _ops(dialect):
            name = f"{table}_no_{op.lower()}"
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            conn.exec_driver_sql(
                f"CREATE TRIGGER {name} BEFORE {op} ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {PG_FUNCTION}()"
            )


def missing(conn: Connection) -> list[str]:
    """The append-only triggers this ledger lacks (or has disabled); empty when all guard it.

    Backends without triggers (anything but SQLite and PostgreSQL) report nothing: they
    rely on grants, which a database does not let us check portably.
    """
    dialect = conn.dialect.name
    expected = trigger_names(dialect)
    if dialect == "sqlite":
        rows = conn.exec_driver_sql("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
        present = {
            name
            for name, table, sql in rows
            if name.startswith(f"{table}_no_") and "RAISE(ABORT" in (sql or "").upper().replace(" ", "")
        }
    elif dialect == "postgresql":
        rows = conn.exec_driver_sql(
            "SELECT t.tgname, c.relname FROM pg_trigger t "
            "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal "
            f"AND t.tgenabled <> 'D' AND p.proname = '{PG_FUNCTION}'"
        )
        present = {name for name, _table in rows}
    else:
        return []
    return [name for name in expected if name not in present]

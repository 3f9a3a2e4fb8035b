"""The two ledger backends the ledger tests run against: a real SQLite file and a fresh
schema on the real PostgreSQL server (127.0.0.1:5432, trust auth, database ``test``).

Each test gets its own database: a file in tmp_path, or a schema ``ab_<random>`` dropped
afterwards.  ``Backend.sql`` changes the database behind autobench's back (the sqlite3
shell or a psycopg connection), as a user with the database's own tools would.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PG_HOST = os.environ.get("AUTOBENCH_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("AUTOBENCH_TEST_PG_PORT", "5432"))
PG_DB = os.environ.get("AUTOBENCH_TEST_PG_DB", "test")
PG_USER = os.environ.get("AUTOBENCH_TEST_PG_USER", "postgres")
BACKENDS = ("sqlite", "postgresql")


def pg_connect(**kwargs: Any) -> Any:
    import psycopg

    params = {"host": PG_HOST, "port": PG_PORT, "dbname": PG_DB, "user": PG_USER, "connect_timeout": 5}
    params.update(kwargs)
    try:
        return psycopg.connect(autocommit=True, **params)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"the test PostgreSQL at {PG_HOST}:{PG_PORT}/{PG_DB} is not reachable ({exc}); "
            "start it (pg_ctlcluster --skip-systemctl-redirect 15 main start) as .ci/run does"
        )


def pg_url(schema: str, user: str = PG_USER) -> str:
    return f"postgresql://{user}@{PG_HOST}:{PG_PORT}/{PG_DB}?options=-csearch_path%3D{schema}"


@contextmanager
def pg_schema(prefix: str = "ab") -> Iterator[str]:
    """A fresh, empty schema; dropped (with everything in it) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with pg_connect() as con:
        con.execute(f"CREATE SCHEMA {name}")
    try:
        yield name
    finally:
        with pg_connect() as con:
            con.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@dataclass
class Backend:
    name: str  # sqlite | postgresql
    url: str  # what --ledger / open_ledger takes
    path: Path | None = None  # the SQLite file
    schema: str | None = None  # the PostgreSQL schema

    def __str__(self) -> str:
        return self.name

    def sql(self, script: str) -> None:
        """Run statements behind autobench's back (they must succeed)."""
        if self.path is not None:
            shell = shutil.which("sqlite3")
            if shell:
                subprocess.run([shell, str(self.path)], input=script, text=True, check=True, capture_output=True)
            else:
                con = sqlite3.connect(self.path)
                con.executescript(script)
                con.close()
            return
        with pg_connect(options=f"-csearch_path={self.schema}") as con:
            con.execute(script)

    def query(self, statement: str) -> list[tuple[Any, ...]]:
        if self.path is not None:
            con = sqlite3.connect(self.path)
            try:
                return con.execute(statement).fetchall()
            finally:
                con.close()
        with pg_connect(options=f"-csearch_path={self.schema}") as con:
            return con.execute(statement).fetchall()

    def refused(self, statement: str) -> str:
        """Run one statement that the database must refuse; return its error text."""
        if self.path is not None:
            con = sqlite3.connect(self.path)
            try:
                with pytest.raises(sqlite3.DatabaseError) as info:
                    con.execute(statement)
                    con.commit()
            finally:
                con.close()
            return str(info.value)
        import psycopg

        with pg_connect(options=f"-csearch_path={self.schema}") as con, pytest.raises(psycopg.Error) as info:
            con.execute(statement)
        return str(info.value)

    @property
    def drop_triggers(self) -> str:
        """SQL that removes the runs table's append-only triggers."""
        if self.path is not None:
            return "DROP TRIGGER runs_no_update; DROP TRIGGER runs_no_delete;"
        return "DROP TRIGGER runs_no_update ON runs; DROP TRIGGER runs_no_delete ON runs; DROP TRIGGER runs_no_truncate ON runs;"


@contextmanager
def make_backend(name: str, tmp_path: Path, stem: str = "ledger") -> Iterator[Backend]:
    if name == "sqlite":
        path = tmp_path / f"{stem}.db"
        yield Backend("sqlite", str(path), path=path)
        return
    with pg_schema() as schema:
        yield Backend("postgresql", pg_url(schema), schema=schema)

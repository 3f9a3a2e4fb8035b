"""Issue 12 item 13 and issue 18's bad input: a damaged SQLite file refuses appends, special
files and in-memory URLs are refused before anything is opened, PostgreSQL connections are
bounded in time and fail with one line, and the documented append-only role can append
but cannot change or unprotect the ledger."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from ledger_backends import PG_DB, PG_HOST, PG_PORT, pg_connect, pg_schema, pg_url
from ledger_helpers import make_run

from autobench.cli import main
from autobench.errors import LedgerError
from autobench.ledger import open_ledger

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ damaged SQLite file
def test_garbage_mid_file_refuses_record_and_leaves_the_file_unchanged(capsys, tmp_path):
    """64 KiB of garbage in the middle of the file: verify said "malformed", record still appended."""
    db = tmp_path / "ledger.db"
    with open_ledger(db) as book:
        for i in range(60):
            book.append(make_run(notes=f"run {i}", script_snapshot="#!/usr/bin/env bash\n" + "echo x\n" * 400))
    size = db.stat().st_size
    assert size > 3 * 65536
    with db.open("r+b") as fh:  # past the schema pages, inside the runs table's b-tree
        fh.seek(size // 2 - 32768)
        fh.write(os.urandom(65536))
    before = _digest(db)
    code, out, err = _cli(capsys, "record", str(BASE), "--status", "DONE", "--ledger", str(db))
    assert code == 4, (out, err)
    assert "integrity check" in err and "nothing was appended" in err and err.count("\n") == 1
    assert _digest(db) == before
    code, _, err = _cli(capsys, "ledger", "verify", "--ledger", str(db))
    assert code == 4 and err.count("\n") == 1


# ------------------------------------------------------------------ special files, memory
@pytest.mark.integration
@pytest.mark.parametrize("command", [["ledger", "list"], ["record", str(BASE), "--status", "DONE"]])
def test_a_fifo_as_ledger_is_refused_without_opening_it(tmp_path, command):
    """`--ledger` at a FIFO hung forever (opening it for reading blocks until a writer comes)."""
    fifo = tmp_path / "ledger.fifo"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "autobench", *command, "--ledger", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,  # the old behaviour never returned
    )
    assert proc.returncode == 4 and "is a FIFO, not a ledger database" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_a_character_device_is_refused(capsys):
    code, _, err = _cli(capsys, "ledger", "list", "--ledger", "/dev/zero")
    assert code == 4 and "is a device" in err


def test_record_refuses_an_in_memory_ledger(capsys):
    code, out, err = _cli(capsys, "record", str(BASE), "--status", "DONE", "--ledger", "sqlite://")
    assert code == 4 and out == "" and "in-memory SQLite database is not a ledger" in err


# ------------------------------------------------------------------ PostgreSQL connections
class _SilentServer:
    """A loopback TCP server that accepts connections and never answers (a hung host)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent_server():
    server = _SilentServer()
    yield server
    server.close()


def test_a_postgres_host_that_never_answers_times_out_with_one_line(silent_server):
    url = f"postgresql://postgres@127.0.0.1:{silent_server.port}/test?connect_timeout=1"
    with pytest.raises(LedgerError, match="cannot open ledger database: connection timeout expired") as info:
        open_ledger(url)
    assert "\n" not in str(info.value)


@pytest.mark.integration
def test_the_default_connect_timeout_bounds_a_hung_postgres_host(silent_server):
    """No connect_timeout in the URL: the store's default (10 s) still ends the wait."""
    url = f"postgresql://postgres@127.0.0.1:{silent_server.port}/test"
    proc = subprocess.run(
        [sys.executable, "-m", "autobench", "ledger", "list", "--ledger", url],
        capture_output=True,
        text=True,
        timeout=60,  # before the fix this hung for minutes
    )
    assert proc.returncode == 4 and "connection timeout expired" in proc.stderr
    assert proc.stderr.count("\n") == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.integration
def test_nothing_listening_and_unknown_role_are_one_line_each(capsys):
    for url, words in (
        (f"postgresql://postgres@127.0.0.1:{_free_port()}/test", "refused"),
        (f"postgresql://no_such_role_{uuid.uuid4().hex[:6]}@{PG_HOST}:{PG_PORT}/{PG_DB}", "does not exist"),
        (f"postgresql://postgres:s3cret-pw@{PG_HOST}:{PG_PORT}/no_such_db_{uuid.uuid4().hex[:6]}", "does not exist"),
    ):
        code, out, err = _cli(capsys, "ledger", "list", "--ledger", url)
        assert code == 4 and out == "" and words in err and err.count("\n") == 1, err
        assert "s3cret-pw" not in err  # a password in the URL is never repeated


@pytest.fixture
def pg_role():
    """A login role of its own (roles are cluster-wide: unique name, dropped afterwards)."""
    name = f"ab_role_{uuid.uuid4().hex[:10]}"
    with pg_connect() as con:
        con.execute(f"CREATE ROLE {name} LOGIN")
    yield name
    with pg_connect() as con:
        con.execute(f"DROP OWNED BY {name}")
        con.execute(f"DROP ROLE {name}")


@pytest.mark.integration
def test_a_schema_without_the_right_to_create_tables_is_one_line_and_nothing_is_created(capsys, pg_role):
    with pg_schema() as schema:
        with pg_connect() as con:
            con.execute(f"GRANT USAGE ON SCHEMA {schema} TO {pg_role}")
        code, out, err = _cli(capsys, "record", str(BASE), "--status", "DONE", "--ledger", pg_url(schema, pg_role))
        assert code == 4 and out == "" and err.count("\n") == 1
        assert "cannot create the ledger's tables: permission denied" in err
        with pg_connect() as con:
            tables = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (schema,)
            ).fetchone()
        assert tables == (0,)


@pytest.mark.integration
def test_documented_append_only_role_appends_but_cannot_change_or_unprotect(pg_role):
    """docs/ledger.md's grants: an appender role with SELECT, INSERT only."""
    import psycopg

    with pg_schema() as schema:
        with open_ledger(pg_url(schema)) as admin:  # the owner creates the ledger
            admin.append(make_run(notes="by the owner"))
        with pg_connect() as con:  # the grants, as documented
            con.execute(f"GRANT USAGE ON SCHEMA {schema} TO {pg_role}")
            tables = ", ".join(f"{schema}.{t}" for t in ("runs", "schema_version", "cells", "experiments"))
            con.execute(f"GRANT SELECT, INSERT ON {tables} TO {pg_role}")
        with open_ledger(pg_url(schema, pg_role), create=False) as book:
            book.append(make_run(notes="by the appender"))
            assert book.verify().ok and book.count() == 2
        with pg_connect(user=pg_role, options=f"-csearch_path={schema}") as con:
            for statement in (
                "UPDATE runs SET notes = 'x'",
                "DELETE FROM runs",
                "TRUNCATE runs",
                "DROP TRIGGER runs_no_update ON runs",
                "ALTER TABLE runs DISABLE TRIGGER ALL",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    con.execute(statement)

"""What the ledger store promises beyond the round trip (issue #21, mutation testing of
autobench/ledger/store.py): where a location points, the exact refusals of things that are not
ledgers, the write lock every append and migration holds from its first statement, the retry
policy, the once-per-ledger integrity check, the file handles a closed ledger leaves (none),
and the exact answers and errors of the queries."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc
from ledger_backends import PG_HOST, PG_PORT, pg_connect
from ledger_helpers import DRAFT, SHA_A, make_run
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

from autobench.errors import LedgerError
from autobench.ledger import open_ledger, store
from autobench.ledger.models import GENESIS_HASH, RUNS
from autobench.ledger.postgres import LOCK_CLASS


def _refusal(where: Any, **kwargs: Any) -> str:
    with pytest.raises(LedgerError) as info:
        open_ledger(where, **kwargs)
    return str(info.value)


def _open_fds_to(*paths: Path) -> list[str]:
    """This process's descriptors open on any of ``paths``."""
    wanted = {str(p) for p in paths}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target in wanted:
            found.append(target)
    return found


# ------------------------------------------------------------------ locations
def test_locations_resolve_to_the_file_they_name(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert store.resolve_location("~/a.db")[1] == tmp_path / "a.db"
    assert store.resolve_location("sqlite:///rel/b.db")[1] == Path("rel/b.db")
    assert store.resolve_location("sqlite:///~/c.db")[1] == tmp_path / "c.db"
    assert store.resolve_location(f"sqlite:///file:{tmp_path}/d.db?uri=true")[1] == tmp_path / "d.db"
    assert store.resolve_location(f"sqlite:///file://{tmp_path}/e%20f.db?uri=true")[1] == tmp_path / "e f.db"
    url, path = store.resolve_location("postgresql://bench:pw@db.example/ledgers")
    assert path is None and url == make_url("postgresql://bench:pw@db.example/ledgers")


def test_a_bad_url_is_one_line_with_a_hint():
    assert _refusal("://nothing") == "not a database URL: '://nothing' (hint: use a path or e.g. sqlite:///ledger.db)"


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///file:shared?mode=memory&uri=true",
        "sqlite:///file:shared?mode=ro&mode=memory&uri=true",
        "sqlite:///file:x%3Fmode%3Dmemory?uri=true",
        "sqlite:///file::memory:?cache=shared&uri=true",
        "sqlite:///file:?uri=true",
    ],
)
def test_every_in_memory_uri_is_refused(url):
    """docs/ledger.md: "a `mode=memory` URI is refused" -- SQLAlchemy moves ``?mode=memory``
    out of the database name into the URL's query, where the old check never looked: the run
    was "recorded" into a database gone when the command exited."""
    where = make_url(url).render_as_string(hide_password=True)
    assert _refusal(url) == (
        f"{where}: an in-memory SQLite database is not a ledger: every run recorded there is lost when the"
        " command exits (hint: give a file path (e.g. --ledger ledger.db) or a database server URL)"
    )


def test_a_file_uri_opens_the_file_it_names(tmp_path):
    """``sqlite:///file:/abs/path?uri=true`` was refused ("the ledger's directory does not exist")."""
    path = tmp_path / "a b.db"
    with open_ledger(f"sqlite:///file:{tmp_path}/a%20b.db?uri=true") as book:
        book.append(make_run())
        assert book.where == str(path)
    with open_ledger(path) as book:
        assert book.count() == 1
    with open_ledger(f"sqlite:///file:{path}?mode=ro&uri=true", create=False) as book:  # read-only is not in-memory
        assert book.count() == 1


# ------------------------------------------------------------------ refusals on open
def test_an_unreadable_file_is_refused_with_the_reason():
    assert _refusal("/proc/self/mem") == "/proc/self/mem: cannot read ledger: Input/output error"


def test_a_socket_is_refused_without_opening_it(tmp_path):
    import socket

    path = tmp_path / "ledger.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert _refusal(path) == (
            f"{path}: is a socket or other special file, not a ledger database"
            " (hint: point --ledger / AUTOBENCH_LEDGER at a regular file; nothing was read from it)"
        )


def test_a_block_device_is_refused_without_opening_it(tmp_path):
    path = tmp_path / "disk"
    try:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    except PermissionError:
        pytest.skip("no right to make a device node here")
    assert _refusal(path).startswith(f"{path}: is a device, not a ledger database (hint:")


def test_a_file_that_is_not_sqlite_and_a_missing_ledger_say_what_to_do(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    assert _refusal(path) == (
        f"{path}: not a ledger database (not an SQLite file) (hint: point --ledger / AUTOBENCH_LEDGER at a"
        " ledger.db or a new path; the file was left unchanged)"
    )
    missing = tmp_path / "nope.db"
    assert _refusal(missing, create=False) == (
        f"{missing}: no ledger database here (hint: record a run first (autobench record ...) or set"
        " --ledger / AUTOBENCH_LEDGER)"
    )
    assert _refusal(tmp_path) == f"{tmp_path}: is a directory, not a ledger database"


def test_a_missing_directory_is_refused_and_nothing_is_created(tmp_path):
    path = tmp_path / "no" / "ledger.db"
    assert _refusal(path) == f"{path}: the ledger's directory does not exist"
    assert not (tmp_path / "no").exists()


def test_an_empty_file_is_not_a_ledger_to_read_but_becomes_one_to_record(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    assert _refusal(path, create=False) == f"{path}: the database is empty, not a ledger"
    assert path.read_bytes() == b""
    with open_ledger(path) as book:
        assert book.head() == (0, GENESIS_HASH) and book.count() == 0


def test_an_sqlite_header_over_garbage_is_refused_and_left_unchanged(tmp_path):
    path = tmp_path / "ledger.db"
    data = b"SQLite format 3\x00" + bytes(range(256)) * 16
    path.write_bytes(data)
    assert _refusal(path) == (
        f"{path}: not a ledger database (file is not a database) (hint: the file was left unchanged)"
    )
    assert path.read_bytes() == data


def test_a_foreign_database_names_its_first_five_tables(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    for name in ("f", "e", "d", "c", "b", "a"):
        con.execute(f"CREATE TABLE {name} (x)")
    con.close()
    assert _refusal(path) == (
        f"{path}: not a ledger database (it has tables a, b, c, d, e but no schema_version)"
        " (hint: use another path for the ledger; this database was left unchanged)"
    )


def _schema_version_only(path: Path, *versions: int) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT, applied_at TEXT)")
    con.executemany("INSERT INTO schema_version VALUES (?, 'x', 'y')", [(v,) for v in versions])
    con.commit()
    con.close()


def test_a_ledger_from_a_newer_schema_is_refused_before_anything_is_written(db_path):
    """Refused before the journal is switched to WAL: the file keeps every byte (here a copy
    in rollback-journal mode, as e.g. ``sqlite3 .backup`` may leave it)."""
    from autobench.ledger.migrations import LATEST

    with open_ledger(db_path) as book:
        book.append(make_run())
    con = sqlite3.connect(db_path)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("INSERT INTO schema_version VALUES (?, 'from the future', 'x')", (LATEST + 1,))
    con.commit()
    con.close()
    before = db_path.read_bytes()
    assert _refusal(db_path) == (
        f"{db_path}: ledger schema v{LATEST + 1} was written by a newer autobench (this one knows v{LATEST})"
        " (hint: upgrade autobench; the ledger was left unchanged)"
    )
    assert db_path.read_bytes() == before


def test_a_ledger_without_its_runs_table_is_refused(tmp_path):
    path = tmp_path / "ledger.db"
    _schema_version_only(path, 1)
    assert _refusal(path) == f"{path}: ledger is missing its runs table"


def test_an_empty_schema_version_table_is_a_ledger_not_yet_created(tmp_path):
    """Version 0 (the table, no versions): a ledger whose creation never got further; it is created."""
    path = tmp_path / "ledger.db"
    _schema_version_only(path)
    with open_ledger(path) as book:
        assert book.append(make_run()).id == 1


def test_an_unknown_backend_without_its_driver_is_one_line_without_the_password():
    assert _refusal("mysql://bench:s3cret@db.example/ledgers") == (
        "mysql://bench:***@db.example/ledgers: cannot open ledger database: No module named 'MySQLdb'"
    )


def test_postgres_without_psycopg_says_how_to_install_it(monkeypatch):
    def no_psycopg(url):
        raise ImportError("No module named 'psycopg'")

    monkeypatch.setattr(store.postgres, "engine", no_psycopg)
    assert _refusal("postgresql://bench@db.example/ledgers") == (
        "postgresql://bench@db.example/ledgers: cannot open ledger database: No module named 'psycopg'"
        " (hint: PostgreSQL needs psycopg: pip install 'autobench[postgres]')"
    )


def test_other_backends_ping_pooled_connections(monkeypatch):
    """A shared server's pooled connection may have died: the generic engine pings it first."""
    seen: dict[str, Any] = {}

    def fake_engine(url, **kwargs):
        seen.update(kwargs)
        raise sqlalchemy.exc.ArgumentError("stop here")

    monkeypatch.setattr(store, "create_engine", fake_engine)
    assert _refusal("mysql://bench@db.example/ledgers") == (
        "mysql://bench@db.example/ledgers: cannot open ledger database: stop here"
    )
    assert seen == {"pool_pre_ping": True}


def test_a_postgres_search_path_without_a_schema_says_so(backend):
    if backend.name != "postgresql":
        pytest.skip("PostgreSQL only")
    url = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test?options=-csearch_path%3Dno_such_schema_here"
    text = _refusal(url)
    assert "cannot create the ledger's tables: no schema has been selected to create in" in text
    assert text.endswith("existing schema; nothing was created)") and "\n" not in text


def test_a_server_error_on_open_is_the_drivers_message(tmp_path):
    with pytest.raises(LedgerError) as info:
        open_ledger(f"postgresql://postgres@127.0.0.1:{_free_port()}/test")
    orig = info.value.__cause__.orig
    assert info.value.message == f"cannot open ledger database: {orig}"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_library_error_while_preparing_is_one_line_and_closes_the_database(tmp_path, monkeypatch):
    def broken(conn, where):
        raise sqlalchemy.exc.InvalidRequestError("the migration broke")

    monkeypatch.setattr(store, "migrate", broken)
    path = tmp_path / "ledger.db"
    with pytest.raises(LedgerError) as info:
        open_ledger(path)
    assert str(info.value) == f"{path}: cannot open ledger database: the migration broke"
    assert _open_fds_to(path) == []


def test_a_refused_database_is_closed(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE things (x)")
    con.close()
    with pytest.raises(LedgerError):
        open_ledger(path)
    assert _open_fds_to(path) == []


# ------------------------------------------------------------------ lifecycle
def test_a_closed_ledger_leaves_no_file_open_and_no_wal(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = tmp_path / "ledger.db"
    with open_ledger(path) as book:
        assert repr(book) == f"Ledger({str(path)!r})"
        for _ in range(3):
            book.append(make_run())
        locks = list((tmp_path / "tmp").glob("*/*.lock"))
        assert len(locks) == 1 and len(_open_fds_to(*locks)) == 1  # one descriptor, however many appends
    assert _open_fds_to(path, Path(f"{path}-wal"), *locks) == []
    assert not Path(f"{path}-wal").exists()


def test_appenders_queue_on_a_private_lock_file(tmp_path, monkeypatch):
    """docs/ledger.md: a kernel flock on a lock file in ``autobench-ledger-locks-<uid>/`` of
    the temp directory, held through each append and released after it."""
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    path = tmp_path / "ledger.db"
    with open_ledger(path) as first:
        first.append(make_run())
    folder = tmp_path / f"autobench-ledger-locks-{os.getuid()}"
    (lock,) = folder.iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert lock.suffix == ".lock"
    held: list[bool] = []
    with open_ledger(path) as book:  # a second appender: the folder and the file exist already

        @event.listens_for(book.engine, "before_cursor_execute")
        def probe(conn, cursor, statement, *args):
            if statement.startswith("INSERT INTO runs"):
                held.append(_flock_taken(lock))

        book.append(make_run())
        assert not _flock_taken(lock)  # released after the append, with the ledger still open
        assert list(folder.iterdir()) == [lock]
    assert held == [True]


def _flock_taken(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_without_flock_appends_still_work_and_take_no_lock_file(tmp_path, monkeypatch):
    """Windows has no fcntl: BEGIN IMMEDIATE alone orders the appenders."""
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(store, "fcntl", None)
    with open_ledger(tmp_path / "ledger.db") as book:
        assert [book.append(make_run()).id for _ in range(2)] == [1, 2]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_postgres_takes_no_lock_file(backend, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with open_ledger(backend.url) as book:
        book.append(make_run())
    made = [p.name for p in (tmp_path / "tmp").iterdir()]
    assert made == ([] if backend.name == "postgresql" else [f"autobench-ledger-locks-{os.getuid()}"])


def test_sqlite_connection_settings(db_path):
    """docs/ledger.md: WAL journal, busy_timeout 60 s, synchronous=NORMAL."""
    with open_ledger(db_path) as book, book.engine.connect() as conn:
        settings = [
            conn.exec_driver_sql(f"PRAGMA {name}").scalar() for name in ("journal_mode", "busy_timeout", "synchronous")
        ]
    assert settings == ["wal", 60_000, 1]


# ------------------------------------------------------------------ the write lock from the first statement
def _sqlite_write_locked(path: Path) -> bool:
    con = sqlite3.connect(path, timeout=0)
    try:
        con.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc)
        return True
    finally:
        con.close()
    return False


def _pg_chain_locked(schema: str) -> bool:
    with pg_connect() as con:
        (count,) = con.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid::bigint = %s"
            " AND objid::bigint = (hashtext(%s)::bigint & 4294967295) AND objsubid = 2",
            (LOCK_CLASS, schema),
        ).fetchone()
    return count == 1


@pytest.fixture
def every_statement():
    """Calls ``probe(statement)`` before each statement any engine executes."""
    probes: list[Any] = []

    def listener(conn, cursor, statement, *args):
        for probe in probes:
            probe(statement)

    event.listen(Engine, "before_cursor_execute", listener)
    yield probes
    event.remove(Engine, "before_cursor_execute", listener)


def _locked_probe(backend, seen: list[tuple[str, bool]]):
    def probe(statement: str) -> None:
        statement = statement.lstrip()
        if statement.startswith(("CREATE TABLE", "SELECT runs.id, runs.row_hash", "INSERT INTO runs")):
            if backend.name == "sqlite":
                locked = _sqlite_write_locked(backend.path)
            else:
                locked = _pg_chain_locked(backend.schema)
            seen.append((statement.split("(")[0].split(",")[0].strip(), locked))

    return probe


def test_creating_a_ledger_holds_the_write_lock_from_its_first_statement(backend, every_statement):
    """Two processes creating one ledger at once: one creates it, the other then sees it done."""
    seen: list[tuple[str, bool]] = []
    every_statement.append(_locked_probe(backend, seen))
    with open_ledger(backend.url):
        pass
    assert seen and all(locked for _, locked in seen), seen
    assert seen[0][0].startswith("CREATE TABLE")


def test_an_append_reads_the_chain_head_under_the_write_lock(book, backend, every_statement):
    """docs/ledger.md: BEGIN IMMEDIATE (SQLite) / the advisory lock (PostgreSQL) -> read the
    chain head -> insert -> commit; no other appender can read the same head."""
    book.append(make_run())
    seen: list[tuple[str, bool]] = []
    every_statement.append(_locked_probe(backend, seen))
    book.append(make_run())
    assert seen == [("SELECT runs.id", True), ("INSERT INTO runs", True)]


def test_an_import_reads_the_chain_head_under_the_write_lock(book, backend, tmp_path):
    from autobench.ledger.sync import copy_runs

    with open_ledger(tmp_path / "source.db") as source:
        source.append(make_run(notes="from elsewhere"))
        seen: list[tuple[str, bool]] = []
        probe = _locked_probe(backend, seen)
        event.listen(book.engine, "before_cursor_execute", lambda conn, cursor, statement, *args: probe(statement))
        copy_runs(source, book)
    assert seen[:2] == [("SELECT runs.id", True), ("INSERT INTO runs", True)]


# ------------------------------------------------------------------ retries
def _locked() -> sqlalchemy.exc.OperationalError:
    return sqlalchemy.exc.OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))


@pytest.fixture
def no_sleep(monkeypatch):
    """The waits between attempts, with the jitter at its top."""
    import threading

    waits: list[float] = []
    real_sleep, me = store.time.sleep, threading.current_thread()

    def sleep(seconds: float) -> None:
        # time.sleep is the module's, shared by every thread: another test's server thread still
        # polling (0.25 s) under load must neither be recorded here nor made to spin
        if threading.current_thread() is me:
            waits.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(store.time, "sleep", sleep)
    monkeypatch.setattr(store.random, "uniform", lambda a, b: (a, b) == (0.005, 0.05) and b)
    return waits


def _failing(monkeypatch, *errors: Exception) -> list[int]:
    """``_append_once`` raises ``errors`` one by one, then appends."""
    calls: list[int] = []
    real = store.Ledger._append_once

    def once(self, values, cell_rows):
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return real(self, values, cell_rows)

    monkeypatch.setattr(store.Ledger, "_append_once", once)
    return calls


@pytest.mark.parametrize(
    "error",
    [
        _locked(),
        sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed: runs.prev_hash")),
        sqlalchemy.exc.IntegrityError(
            "INSERT", {}, Exception('duplicate key value violates unique constraint "runs_prev_hash_key"')
        ),
        sqlalchemy.exc.IntegrityError(
            "INSERT", {}, Exception("(1062, \"Duplicate entry '0f3a' for key 'runs.prev_hash'\")")
        ),
    ],
    ids=["sqlite-locked", "sqlite-fork", "postgres-fork", "mysql-fork"],
)
def test_a_locked_database_or_a_forked_head_is_tried_again(ledger, monkeypatch, no_sleep, error):
    calls = _failing(monkeypatch, error, error)
    assert ledger.append(make_run()).id == 1
    assert len(calls) == 3 and no_sleep == [0.05, 0.1]


@pytest.mark.parametrize(
    "error",
    [
        sqlalchemy.exc.OperationalError("INSERT", {}, sqlite3.OperationalError("disk I/O error")),
        sqlalchemy.exc.OperationalError("INSERT", {}, Exception("UNIQUE index on a read-only database")),
        sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("NOT NULL constraint failed: runs.recipe_name")),
        sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("the ledger is locked: runs are append-only")),
    ],
    ids=["io", "operational-unique", "not-null", "integrity-locked"],
)
def test_any_other_database_error_is_reported_at_once(ledger, monkeypatch, no_sleep, error):
    calls = _failing(monkeypatch, error)
    with pytest.raises(LedgerError) as info:
        ledger.append(make_run())
    assert str(info.value) == f"{ledger.where}: database error: {error.orig}"
    assert len(calls) == 1 and no_sleep == [] and ledger.count() == 0


def test_an_appender_gives_up_after_twenty_attempts(ledger, monkeypatch, no_sleep):
    calls = _failing(monkeypatch, *[_locked()] * 30)
    with pytest.raises(LedgerError) as info:
        ledger.append(make_run())
    assert str(info.value) == f"{ledger.where}: database error: database is locked"
    assert len(calls) == 20 and no_sleep == pytest.approx([0.05 * k for k in range(1, 20)])


def test_a_refusal_is_not_tried_again(ledger, monkeypatch, no_sleep):
    calls = _failing(monkeypatch, LedgerError("no"))
    with pytest.raises(LedgerError, match="^no$"):
        ledger.append(make_run())
    assert len(calls) == 1 and no_sleep == []


# ------------------------------------------------------------------ the integrity check
def test_the_integrity_check_runs_once_per_open_sqlite_ledger(book, backend, every_statement):
    checks: list[str] = []
    every_statement.append(lambda statement: "quick_check" in statement and checks.append(statement))
    for _ in range(3):
        book.append(make_run())
    assert checks == (["PRAGMA quick_check(5)"] if backend.name == "sqlite" else [])


def _damage_header(book, path: Path) -> None:
    """The file replaced by something that is not a database after the ledger was opened."""
    book.engine.dispose()
    with path.open("r+b") as fh:
        fh.seek(16)
        fh.write(b"\x00\x07\xff\xff")


def test_a_file_damaged_after_opening_refuses_an_append(db_path):
    with open_ledger(db_path) as book:
        book.append(make_run())
    with open_ledger(db_path) as book:
        _damage_header(book, db_path)
        before = db_path.read_bytes()
        with pytest.raises(LedgerError) as info:
            book.append(make_run())
        assert str(info.value) == (
            f"{db_path}: the database fails SQLite's integrity check (file is not a database); nothing was"
            " appended (hint: restore the ledger from a copy or record to a new one; autobench ledger verify"
            " shows the damage)"
        )
        assert db_path.read_bytes() == before


def test_a_file_damaged_after_opening_refuses_an_import(db_path):
    with open_ledger(db_path) as book:
        book.append(make_run())
    with open_ledger(db_path) as book:
        _damage_header(book, db_path)
        with pytest.raises(LedgerError, match="fails SQLite's integrity check"):
            book.import_runs([], {})


# ------------------------------------------------------------------ references between runs
@pytest.mark.parametrize("key", ["corrects", "supersedes", "replay_of"])
def test_a_reference_to_a_missing_run_is_refused(ledger, key):
    ledger.append(make_run())
    with pytest.raises(LedgerError) as info:
        ledger.append(make_run(**{key: 99}))
    assert (
        str(info.value)
        == f"{ledger.where}: {key}: no run #99 in the ledger (hint: autobench ledger list shows the run ids)"
    )
    assert getattr(ledger.append(make_run(**{key: 1})), key) == 1 and ledger.count() == 2


# ------------------------------------------------------------------ queries
def test_get_of_a_missing_run(ledger):
    ledger.append(make_run())
    with pytest.raises(LedgerError) as info:
        ledger.get(2)
    assert str(info.value) == f"{ledger.where}: no run #2 in the ledger (hint: autobench ledger list shows the run ids)"
    with pytest.raises(LedgerError, match="no run #2 in the ledger"):
        ledger.cells(2)
    assert ledger.cells(1) == []


def test_head_and_count(ledger):
    assert ledger.head() == (0, GENESIS_HASH) and ledger.count() == 0
    recs = [ledger.append(make_run()) for _ in range(3)]
    assert ledger.head() == (3, recs[-1].row_hash) and ledger.count() == 3
    assert recs[0].prev_hash == GENESIS_HASH and recs[1].prev_hash == recs[0].row_hash


def _crafted_hashes(ledger, *hashes: str) -> None:
    """More runs with the given row hashes (inserted behind autobench's back: two hashes
    sharing six hex digits take thousands of appends; a random hash may start with digits)."""
    names = [c.name for c in RUNS.columns]
    set_here = ("id", "prev_hash", "row_hash", "run_uid")
    exprs = ", ".join("?" if n in set_here else n for n in names)
    con = sqlite3.connect(ledger.engine.url.database)
    last_id, last_hash = ledger.head()
    for i, row_hash in enumerate(hashes, 1):
        values = {"id": last_id + i, "prev_hash": last_hash, "row_hash": row_hash, "run_uid": f"crafted-{i}"}
        last_hash = row_hash
        params = [values[n] for n in names if n in set_here]
        con.execute(f"INSERT INTO runs ({', '.join(names)}) SELECT {exprs} FROM runs WHERE id = 1", params)
    con.commit()
    con.close()


def test_run_references_exactly(ledger):
    a = ledger.append(make_run())
    b = ledger.append(make_run())
    _crafted_hashes(ledger, "c0ffee" + "1" * 58, "c0ffee" + "2" * 58, "abcdef" + "3" * 58)
    assert ledger.resolve(" #2 ") == 2 and ledger.resolve(2) == 2
    assert ledger.resolve(f"#1-{a.row_hash[:8]}") == 1 and ledger.resolve(b.display_id) == 2
    assert ledger.resolve("ABCDEF") == 5 and ledger.resolve(b.row_hash) == 2  # six hex digits, any case
    assert ledger.resolve("c0ffee1") == 3 and ledger.resolve("c0ffee2") == 4
    with pytest.raises(LedgerError) as info:
        ledger.resolve("c0ffee")
    assert str(info.value) == "run reference 'c0ffee' is ambiguous (hint: give more hex digits or the id)"
    unused = next(
        p for p in ("fedcba", "edcbaf", "dcbafe") if not a.row_hash.startswith(p) and not b.row_hash.startswith(p)
    )
    with pytest.raises(LedgerError) as info:
        ledger.resolve(unused)
    assert str(info.value) == f"{ledger.where}: no run with hash prefix {unused!r}"
    for ref in ("abcde", "latest", "#x1", "-2", "abcdeg"):
        with pytest.raises(LedgerError) as info:
            ledger.resolve(ref)
        assert str(info.value) == f"not a run reference: {ref!r} (hint: use a run id (12 or #12) or a row-hash prefix)"


def test_runs_by_model_and_the_default_order(ledger):
    ledger.append(make_run(model_repo="org/a"))
    ledger.append(make_run(model_repo="org/b", draft_repo=DRAFT, draft_sha=SHA_A))
    ledger.append(make_run(model_repo="org/a", status="FAILED"))
    assert [r.id for r in ledger.runs(model="org/a")] == [1, 3]
    assert [r.id for r in ledger.runs(model="org/a", status="failed")] == [3]
    assert [r.id for r in ledger.runs(draft=DRAFT)] == [2]
    assert [r.id for r in ledger.runs(recipe="demo-recipe", limit=1)] == [3]
    assert ledger.runs(model="org/c") == []
    with pytest.raises(LedgerError) as info:
        ledger.runs(status="GOOD")
    assert str(info.value) == "unknown status 'GOOD' (hint: use one of DONE, BLOCKED, FAILED, ABORTED)"


def test_history_needs_exactly_one_subject(ledger):
    ledger.append(make_run())
    for kwargs in ({}, {"draft": DRAFT, "recipe": "demo-recipe"}):
        with pytest.raises(LedgerError) as info:
            ledger.history(**kwargs)
        assert str(info.value) == "history needs exactly one of draft=, model= or recipe="
    assert ledger.history(recipe="demo-recipe").runs == 1 and ledger.history(model="org/model").runs == 1
    assert ledger.known("model") == ["org/model"] and ledger.known("draft") == []


def test_export_defaults_to_jsonl(ledger):
    import io
    import json

    ledger.append(make_run())
    out = io.StringIO()
    assert ledger.export(out) == 1
    assert json.loads(out.getvalue())["id"] == 1
    with pytest.raises(LedgerError) as info:
        ledger.export(io.StringIO(), "xml")
    assert str(info.value) == "unknown export format 'xml' (hint: use jsonl or csv)"


def test_a_database_error_while_reading_is_the_drivers_message(ledger, db_path):
    ledger.append(make_run())
    con = sqlite3.connect(db_path)
    con.execute("ALTER TABLE runs RENAME TO old_runs")
    con.close()
    for read in (ledger.count, lambda: ledger.get(1), ledger.runs):
        with pytest.raises(LedgerError) as info:
            read()
        assert str(info.value) == f"{db_path}: database error: no such table: runs"


def test_a_library_error_while_reading_is_one_line(ledger, monkeypatch):
    ledger.append(make_run())

    def broken(row):
        raise sqlalchemy.exc.InvalidRequestError("cannot read that row")

    monkeypatch.setattr(store, "record_from_row", broken)
    with pytest.raises(LedgerError) as info:
        ledger.runs()
    assert str(info.value) == f"{ledger.where}: database error: cannot read that row"


def test_postgres_reads_the_whole_chain_through_server_side_cursors(book, backend):
    """verify and push stream every run and every cell; on PostgreSQL never the whole table in memory."""
    if backend.name != "postgresql":
        pytest.skip("PostgreSQL only")
    kinds: dict[str, str] = {}

    @event.listens_for(book.engine, "after_cursor_execute")
    def record(conn, cursor, statement, *args):
        if statement.startswith("SELECT") and (
            "FROM runs ORDER BY id" in statement or "FROM cells ORDER BY" in statement
        ):
            kinds[statement.split(" FROM ")[1].split()[0]] = type(cursor).__name__

    book.append(make_run())
    assert book.verify().ok
    assert kinds == {"runs": "ServerCursor", "cells": "ServerCursor"}
    kinds.clear()
    with book.raw_rows() as rows:  # ledger push reads the runs alone
        assert [r["id"] for r in rows] == [1]
    assert kinds == {"runs": "ServerCursor"}


def test_a_damaged_schema_page_is_not_a_ledger_and_is_left_unchanged(db_path):
    with open_ledger(db_path) as book:
        book.append(make_run())
    data = bytearray(db_path.read_bytes())
    data[100:4096] = (b"\x0d" + bytes(range(256)) * 16)[: 4096 - 100]  # page 1's b-tree: the schema
    db_path.write_bytes(data)
    assert _refusal(db_path) == (
        f"{db_path}: not a ledger database (database disk image is malformed) (hint: the file was left unchanged)"
    )
    assert db_path.read_bytes() == data


# ------------------------------------------------------------------ imports (ledger push / pull)
def test_pushed_references_point_at_the_same_runs_here_across_batches(book, tmp_path):
    """Each reference (corrects / supersedes / replay_of) is carried as a stable id and lands
    on the destination's id of the same run, also when it was copied in an earlier batch."""
    from autobench.ledger.sync import copy_runs

    book.append(make_run(notes="already here"))
    with open_ledger(tmp_path / "source.db") as source:
        first = source.append(make_run(notes="first"))
        source.append(make_run(notes="fix", corrects=first.id))
        source.append(make_run(notes="again", replay_of=first.id))
        source.append(make_run(notes="better", supersedes=2))
        result = copy_runs(source, book, batch=1)
        assert (result.runs, result.copied, result.present) == (4, 4, 0)
        assert copy_runs(source, book, batch=1).copied == 0
    got = {r.notes: (r.id, r.corrects, r.replay_of, r.supersedes) for r in book.runs()}
    assert got == {
        "already here": (1, None, None, None),
        "first": (2, None, None, None),
        "fix": (3, 2, None, None),
        "again": (4, None, 2, None),
        "better": (5, None, None, 3),
    }
    assert book.verify().ok


def _content_of(book, run_id: int, **changes: Any) -> dict[str, Any]:
    from autobench.ledger.sync import _content

    with book.raw_rows() as rows:
        raw = next(r for r in rows if r["id"] == run_id)
    return {**_content(raw, {run_id: raw["run_uid"]}), "cells": [], **changes}


def test_an_import_refuses_a_reference_to_a_run_it_does_not_have(book):
    book.append(make_run())
    values = _content_of(book, 1, run_uid="u-new", corrects="u-elsewhere")
    with pytest.raises(LedgerError) as info:
        book.import_runs([values], {})
    assert str(info.value) == f"{book.where}: run u-new corrects a run that is not in this ledger (u-elsewhere)"
    assert book.count() == 1


def test_an_import_appends_in_order_and_tells_the_caller_the_new_ids(book):
    book.append(make_run())
    known: dict[str, int] = {}
    runs = [_content_of(book, 1, run_uid="u-a"), _content_of(book, 1, run_uid="u-b", supersedes="u-a")]
    assert book.import_runs(runs, known) == 2
    assert known == {"u-a": 2, "u-b": 3}
    assert book.import_runs(runs, known) == 0 and book.count() == 3
    assert [(r.id, r.run_uid, r.supersedes) for r in book.runs()][1:] == [(2, "u-a", None), (3, "u-b", 2)]
    assert book.verify().ok and book.stable_ids() == {book.get(1).run_uid: 1, "u-a": 2, "u-b": 3}

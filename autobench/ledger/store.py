"""The ledger store: open a database, append runs (one transaction each), read them.

SQLite discipline: WAL journal, ``busy_timeout``, ``synchronous=NORMAL`` (a killed
process never corrupts or loses a committed run; a power cut may lose the last few
commits, never the chain), and every append runs inside ``BEGIN IMMEDIATE`` so the
read of the chain head and the insert are serialized across processes.  A UNIQUE
``prev_hash`` makes a forked chain impossible on any backend.
"""

from __future__ import annotations

import contextlib
import os
import random
import stat

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import unquote, urlsplit

from sqlalchemy import Connection, Engine, create_engine, event, insert, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from autobench.digits import is_digits
from autobench.errors import LedgerError
from autobench.ledger import appendonly, cells, chain, export, postgres, queries
from autobench.ledger.experiments import ExperimentRecord
from autobench.ledger.migrations import LATEST, check_not_newer, current_version, migrate
from autobench.ledger.models import CELLS, GENESIS_HASH, RUNS, STATUSES, CellRecord, NewRun, RunRecord, legacy_uid
from autobench.ledger.rows import new_run_rows, record_from_row
from autobench.redaction import scrub_url

DEFAULT_PATH = "ledger.db"
ENV_VAR = "AUTOBENCH_LEDGER"
BUSY_TIMEOUT_MS = 60_000
SQLITE_MAGIC = b"SQLite format 3\x00"
APPEND_ATTEMPTS = 20


def resolve_location(url_or_path: str | os.PathLike[str] | None = None) -> tuple[URL, Path | None]:
    """``None`` -> $AUTOBENCH_LEDGER -> ./ledger.db.  A plain path means sqlite:///path."""
    raw: str | os.PathLike[str] = url_or_path or os.environ.get(ENV_VAR) or DEFAULT_PATH
    text = os.fspath(raw)
    if "://" not in text:
        path = Path(text).expanduser()
        return URL.create("sqlite", database=str(path)), path
    try:
        url = make_url(text)
    except ArgumentError as exc:
        raise LedgerError(f"not a database URL: {text!r}", hint="use a path or e.g. sqlite:///ledger.db") from exc
    if url.get_backend_name() == "sqlite":
        return url, _sqlite_file(url)
    return url, None


def _sqlite_file(url: URL) -> Path | None:
    """The file an SQLite URL names; None for an in-memory database: no name, ``:memory:``,
    or a ``file:`` URI that is ``:memory:`` or has ``mode=memory`` (SQLAlchemy keeps the URI's
    query in the URL's and hands it back to SQLite with ``?uri=true``)."""
    database = url.database or ""
    if not database.startswith("file:"):
        return None if database in ("", ":memory:") else Path(database).expanduser()
    uri = urlsplit(database)
    if uri.path in ("", ":memory:") or "memory" in url.query.get("mode", ()) or "mode=memory" in uri.query:
        return None
    return Path(unquote(uri.path))


def _check_file(path: Path, create: bool) -> None:
    """Refuse anything that is not (or cannot become) a ledger, before touching it."""
    if path.is_dir():
        raise LedgerError("is a directory, not a ledger database", location=str(path))
    if path.exists():
        kind = path.stat().st_mode
        if not stat.S_ISREG(kind):
            what = (
                "a FIFO"
                if stat.S_ISFIFO(kind)
                else "a device"
                if stat.S_ISCHR(kind) or stat.S_ISBLK(kind)
                else "a socket or other special file"
            )
            raise LedgerError(
                f"is {what}, not a ledger database",
                location=str(path),
                hint="point --ledger / AUTOBENCH_LEDGER at a regular file; nothing was read from it",
            )
        try:
            with path.open("rb") as fh:
                head = fh.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise LedgerError(f"cannot read ledger: {exc.strerror}", location=str(path)) from exc
        if head and head != SQLITE_MAGIC:
            raise LedgerError(
                "not a ledger database (not an SQLite file)",
                location=str(path),
                hint="point --ledger / AUTOBENCH_LEDGER at a ledger.db or a new path; the file was left unchanged",
            )
        return
    if not create:
        raise LedgerError(
            "no ledger database here",
            location=str(path),
            hint="record a run first (autobench record ...) or set --ledger / AUTOBENCH_LEDGER",
        )
    if not path.parent.is_dir():
        raise LedgerError("the ledger's directory does not exist", location=str(path))


def _sqlite_engine(url: URL) -> Engine:
    # sqlite3's ``timeout`` is SQLite's busy_timeout
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("ledger_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def _open_lock_file(path: Path) -> int | None:
    import hashlib
    import tempfile

    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / f"autobench-ledger-locks-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        return os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None


def _user_tables(conn: Connection) -> set[str]:
    from sqlalchemy import inspect

    return set(inspect(conn).get_table_names())  # (SQLite's own sqlite_* tables are not listed)


def open_ledger(url_or_path: str | os.PathLike[str] | None = None, *, create: bool = True) -> Ledger:
    """Open (and with ``create``, initialise or migrate) the ledger at a path or URL.

    Raises LedgerError -- without modifying anything -- for a file that is not a
    ledger, a non-empty database without the ledger's tables, or a ledger written
    by a newer schema.
    """
    url, path = resolve_location(url_or_path)
    # A URL is shown with its secrets masked (the password, and query parameters such as
    # password= / sslpassword= / passfile= / options=, which hide_password leaves in clear).
    where = str(path) if path is not None else scrub_url(url.render_as_string(hide_password=False))
    if url.get_backend_name() == "sqlite" and path is None:
        raise LedgerError(
            "an in-memory SQLite database is not a ledger: every run recorded there is lost when the command exits",
            location=where,
            hint="give a file path (e.g. --ledger ledger.db) or a database server URL",
        )
    if path is not None:
        _check_file(path, create)
    try:
        if url.get_backend_name() == "sqlite":
            engine = _sqlite_engine(url)
        elif postgres.is_postgres(url):
            engine = postgres.engine(url)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except ImportError as exc:
        raise LedgerError(
            f"cannot open ledger database: {exc}",
            location=where,
            hint="PostgreSQL needs psycopg: pip install 'autobench[postgres]'" if postgres.is_postgres(url) else None,
        ) from exc
    except (ArgumentError, SQLAlchemyError) as exc:
        raise LedgerError(f"cannot open ledger database: {exc}", location=where) from exc
    try:
        _prepare(engine, where, create)
    except BaseException:
        engine.dispose()
        raise
    return Ledger(engine, where, path)


def _prepare(engine: Engine, where: str, create: bool) -> None:
    try:
        with engine.connect() as conn:
            tables = _user_tables(conn)
            version = current_version(conn) if "schema_version" in tables else None
        if version is None:
            if tables:
                shown = ", ".join(sorted(tables)[:5])
                raise LedgerError(
                    f"not a ledger database (it has tables {shown} but no schema_version)",
                    location=where,
                    hint="use another path for the ledger; this database was left unchanged",
                )
            if not create:
                raise LedgerError("the database is empty, not a ledger", location=where)
        else:
            check_not_newer(version, where)
            if "runs" not in tables and version >= 1:
                raise LedgerError("ledger is missing its runs table", location=where)
        if version == LATEST:
            return
        if engine.dialect.name == "sqlite":
            raw = engine.raw_connection()  # outside any transaction (a PRAGMA rule)
            try:
                raw.cursor().execute("PRAGMA journal_mode=WAL")
            finally:
                raw.close()
        with engine.connect() as conn:
            conn = conn.execution_options(ledger_begin="IMMEDIATE")
            with conn.begin():
                if engine.dialect.name == "postgresql":
                    postgres.lock_chain(conn)  # one migrator at a time; the others then see LATEST
                migrate(conn, where)
    except LedgerError:
        raise
    except DBAPIError as exc:
        message = str(exc.orig) if exc.orig is not None else str(exc)
        if "not a database" in message or "malformed" in message:
            raise LedgerError(
                f"not a ledger database ({message})",
                location=where,
                hint="the file was left unchanged",
            ) from exc
        if "permission denied" in message or "no schema has been selected" in message:
            raise LedgerError(
                f"cannot create the ledger's tables: {message}",
                location=where,
                hint="create the ledger once as a role that may (see docs/ledger.md, PostgreSQL), "
                "or point ?options=-csearch_path%3DSCHEMA at an existing schema; nothing was created",
            ) from exc
        raise LedgerError(f"cannot open ledger database: {message}", location=where) from exc
    except SQLAlchemyError as exc:
        raise LedgerError(f"cannot open ledger database: {exc}", location=where) from exc


def _retryable(exc: IntegrityError | OperationalError) -> bool:
    """Whether an append that failed so is worth another try: the database stayed locked
    past the busy timeout, or (not SQLite) another appender took the same chain head first
    and the UNIQUE id / prev_hash refused the fork."""
    text = str(exc.orig).lower()
    if isinstance(exc, OperationalError):
        return "locked" in text  # SQLite's SQLITE_BUSY: "database is locked"
    return "unique" in text or "duplicate" in text  # PostgreSQL: "duplicate key ... unique"; MySQL: "Duplicate entry"


def _head(conn: Connection) -> tuple[int, str]:
    """The id and row hash of the last run; (0, GENESIS_HASH) for an empty ledger."""
    last = conn.execute(select(RUNS.c.id, RUNS.c.row_hash).order_by(RUNS.c.id.desc()).limit(1)).first()
    return (last.id, last.row_hash) if last else (0, GENESIS_HASH)


class Ledger:
    """An open ledger.  Only appends and reads; there is no update or delete."""

    def __init__(self, engine: Engine, where: str, path: Path | None = None):
        self.engine = engine
        self.where = where
        self._path = path
        self._lock_fd: int | None = None
        self._checked = False

    # -- lifecycle
    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        self.engine.dispose()

    @contextmanager
    def _writer_turn(self) -> Iterator[None]:
        """Queue this host's appenders of one SQLite file in the kernel (flock).

        SQLite's busy handler backs off to 100 ms sleeps, leaving the write lock idle
        while 8 appenders wait; flock wakes the next one at once.  The lock is a
        separate file in the temp dir (never the database: closing another descriptor
        of the database would drop SQLite's POSIX locks).  It only orders appenders;
        BEGIN IMMEDIATE remains the guarantee, so without it nothing is lost.
        """
        if self._lock_fd is None and self._path is not None and fcntl is not None:
            self._lock_fd = _open_lock_file(self._path)
        if self._lock_fd is None:
            yield
            return
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.where!r})"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except LedgerError:
            raise
        except DBAPIError as exc:
            message = str(exc.orig) if exc.orig is not None else str(exc)
            raise LedgerError(f"database error: {message}", location=self.where) from exc
        except SQLAlchemyError as exc:
            raise LedgerError(f"database error: {exc}", location=self.where) from exc

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._errors(), self.engine.connect() as conn:
            yield conn

    # -- writing
    def append(self, run: NewRun) -> RunRecord:
        """Append one run and its cells in one transaction; return the run as stored (with id
        and hashes)."""
        values, cell_rows = new_run_rows(run)
        for attempt in range(1, APPEND_ATTEMPTS):
            with self._errors():
                try:
                    return self._append_once(values, cell_rows)
                except (IntegrityError, OperationalError) as exc:
                    if not _retryable(exc):
                        raise
            time.sleep(random.uniform(0.005, 0.05) * attempt)
        with self._errors():  # the last attempt: its error is the caller's
            return self._append_once(values, cell_rows)

    def _check_before_writing(self) -> None:
        """Once per open ledger, before its first append: refuse a damaged SQLite file
        (``PRAGMA quick_check``) rather than chain a new run onto it."""
        if self._checked or self.engine.dialect.name != "sqlite":
            return
        try:
            with self.engine.connect() as conn:
                found = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check(5)")]
        except DBAPIError as exc:
            found = [str(exc.orig) if exc.orig is not None else str(exc)]
        if found != ["ok"]:
            raise LedgerError(
                f"the database fails SQLite's integrity check ({'; '.join(found)[:200]}); nothing was appended",
                location=self.where,
                hint="restore the ledger from a copy or record to a new one; autobench ledger verify shows the damage",
            )
        self._checked = True

    def _append_once(self, values: dict[str, object], cell_rows: list[dict[str, object]]) -> RunRecord:
        self._check_before_writing()
        with self._writer_turn(), self.engine.connect() as conn:
            conn = conn.execution_options(ledger_begin="IMMEDIATE")
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    postgres.lock_chain(conn)
                last_id, last_hash = _head(conn)
                for key in ("corrects", "supersedes", "replay_of"):
                    ref = values.get(key)
                    if ref is not None and conn.execute(select(RUNS.c.id).where(RUNS.c.id == ref)).first() is None:
                        raise LedgerError(
                            f"{key}: no run #{ref} in the ledger",
                            location=self.where,
                            hint="autobench ledger list shows the run ids",
                        )
                row = dict(values)
                row["id"] = last_id + 1
                row["prev_hash"] = last_hash
                row["row_hash"] = chain.row_hash(row)
                conn.execute(insert(RUNS), row)
                if cell_rows:
                    conn.execute(insert(CELLS), [{**cell, "run_id": row["id"]} for cell in cell_rows])
        return record_from_row(row)

    def record_experiment(self, values: dict[str, object]) -> int:
        """Append one experiment record (``experiments.new_experiment_values``); return its id."""
        from sqlalchemy import func

        from autobench.ledger.models import EXPERIMENTS

        self._check_before_writing()
        with self._errors(), self._writer_turn(), self.engine.connect() as conn:
            conn = conn.execution_options(ledger_begin="IMMEDIATE")
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    postgres.lock_chain(conn)  # the one append lock: ids stay dense under concurrent writers
                new_id = int(conn.execute(select(func.max(EXPERIMENTS.c.id))).scalar() or 0) + 1
                conn.execute(insert(EXPERIMENTS), {**values, "id": new_id})
        return new_id

    def raw_experiments(self) -> list[dict[str, object]]:
        """Every experiment record as stored (its JSON columns as text), in id order."""
        from autobench.ledger.models import EXPERIMENTS

        with self._read() as conn:
            return [dict(r) for r in conn.execute(select(EXPERIMENTS).order_by(EXPERIMENTS.c.id)).mappings()]

    def import_experiments(self, rows: list[dict[str, object]]) -> int:
        """Append experiment records copied from another ledger (``ledger push``), each with
        its content and content hash as there, the next ids here, in one transaction under the
        append lock; a row whose content hash does not match its content is refused."""
        from sqlalchemy import func

        from autobench.ledger.experiments import problem
        from autobench.ledger.models import EXPERIMENT_CONTENT, EXPERIMENTS

        if not rows:
            return 0
        self._check_before_writing()
        with self._errors(), self._writer_turn(), self.engine.connect() as conn:
            conn = conn.execution_options(ledger_begin="IMMEDIATE")
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    postgres.lock_chain(conn)
                last = int(conn.execute(select(func.max(EXPERIMENTS.c.id))).scalar() or 0)
                new = []
                for n, row in enumerate(rows, last + 1):
                    values = {key: row[key] for key in (*EXPERIMENT_CONTENT, "content_hash")}
                    found = problem({**values, "id": row.get("id", n)})
                    if found is not None:
                        raise LedgerError(found, location=self.where)
                    new.append({**values, "id": n})
                conn.execute(insert(EXPERIMENTS), new)
        return len(new)

    def experiments(self, *, name: str | None = None, plan_digest: str | None = None) -> list[ExperimentRecord]:
        """Experiment records in the order they were recorded, optionally of one name or plan."""
        from autobench.ledger.experiments import record_from_row as experiment_from_row
        from autobench.ledger.models import EXPERIMENTS

        query = select(EXPERIMENTS).order_by(EXPERIMENTS.c.id)
        if name is not None:
            query = query.where(EXPERIMENTS.c.name == name)
        if plan_digest is not None:
            query = query.where(EXPERIMENTS.c.plan_digest == plan_digest)
        with self._read() as conn:
            return [experiment_from_row(dict(r)) for r in conn.execute(query).mappings()]

    # -- reading
    def get(self, run_id: int) -> RunRecord:
        with self._read() as conn:
            row = conn.execute(select(RUNS).where(RUNS.c.id == run_id)).mappings().first()
        if row is None:
            raise LedgerError(
                f"no run #{run_id} in the ledger",
                location=self.where,
                hint="autobench ledger list shows the run ids",
            )
        return record_from_row(row)

    def cells(self, run_id: int, *, samples: bool = True) -> list[CellRecord]:
        """The cells of run ``run_id`` in index order (empty for a run without cells, e.g.
        one recorded before schema v8).  Each cell's samples are decoded on first access of
        ``CellRecord.samples``; ``samples=False`` does not even read their bytes."""
        columns = [CELLS.c.run_id, CELLS.c.cell_index, CELLS.c.params, CELLS.c.metrics]
        if samples:
            columns.append(CELLS.c.samples)
        query = select(*columns).where(CELLS.c.run_id == run_id).order_by(CELLS.c.cell_index)
        with self._read() as conn:
            rows = conn.execute(query).mappings().all()
        if not rows:
            self.get(run_id)  # no such run: say so
        return [cells.record_from_row(r, samples=samples) for r in rows]

    def resolve(self, ref: str | int) -> int:
        """A run reference -> id: ``12``, ``#12``, ``#12-1a2b3c4d`` or a row-hash prefix (>= 6 hex)."""
        text = str(ref).strip().lstrip("#")
        head = text.partition("-")[0]
        if is_digits(head):
            if head != text or len(text) < 6:
                return self.get(int(head)).id
            # Six or more digits alone: a run id, or a row-hash prefix that happens to hold no
            # letter ((10/16)**n of n-hex prefixes: 6 % of six-hex ones, 0.9 % of ten-hex ones);
            # the id first, then the prefix.
            if int(text) < 2**63:
                with contextlib.suppress(LedgerError):
                    return self.get(int(text)).id
        if len(text) >= 6 and all(c in "0123456789abcdef" for c in text.lower()):
            prefix = text.lower()
            # row hashes are lowercase hex, so [prefix, prefix + "g") is exactly the prefix range
            # (an index range scan on every backend whose text order is byte order).
            match = RUNS.c.row_hash.between(prefix, prefix + "g") & RUNS.c.row_hash.startswith(prefix)
            with self._read() as conn:
                ids = conn.execute(select(RUNS.c.id).where(match).limit(2)).scalars().all()
            if len(ids) > 1:
                raise LedgerError(f"run reference {ref!r} is ambiguous", hint="give more hex digits or the id")
            if ids:
                return int(ids[0])
            raise LedgerError(f"no run with hash prefix {ref!r}", location=self.where)
        raise LedgerError(f"not a run reference: {ref!r}", hint="use a run id (12 or #12) or a row-hash prefix")

    def count(self) -> int:
        from sqlalchemy import func

        with self._read() as conn:
            return conn.execute(select(func.count()).select_from(RUNS)).scalar_one()

    def runs(
        self,
        recipe: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        *,
        model: str | None = None,
        draft: str | None = None,
        digest: str | None = None,
        newest_first: bool = False,
        by_time: bool = False,
    ) -> list[RunRecord]:
        """Runs matching the filters, in id (append) order, or with ``by_time`` in the order
        the runs started (``started_at``, then id; a run without a start time counts as the oldest): a team
        ledger's ids are push order, not run order.  ``limit`` keeps the most recent N;
        ``newest_first`` reverses the order."""
        query = select(RUNS)
        if recipe is not None:
            query = query.where(RUNS.c.recipe_name == recipe)
        if status is not None:
            wanted = status.upper()
            if wanted not in STATUSES:
                raise LedgerError(f"unknown status {status!r}", hint=f"use one of {', '.join(STATUSES)}")
            query = query.where(RUNS.c.status == wanted)
        if model is not None:
            query = query.where(RUNS.c.model_repo == model)
        if draft is not None:
            query = query.where(RUNS.c.draft_repo == draft)
        if digest is not None:  # the runs of one exact recipe (an experiment's treatment)
            query = query.where(RUNS.c.recipe_digest == digest)
        if by_time:
            query = query.order_by(RUNS.c.started_at.desc().nulls_last(), RUNS.c.id.desc())
        else:
            query = query.order_by(RUNS.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._read() as conn:
            records = [record_from_row(r) for r in conn.execute(query).mappings()]
        return records if newest_first else records[::-1]

    def history(
        self, *, draft: str | None = None, model: str | None = None, recipe: str | None = None
    ) -> queries.History:
        """Runs grouped per revision of a draft repo, a model repo, or a recipe (per digest)."""
        asked = [(k, v) for k, v in (("draft", draft), ("model", model), ("recipe", recipe)) if v]
        if len(asked) != 1:
            raise LedgerError("history needs exactly one of draft=, model= or recipe=")
        kind, subject = asked[0]
        with self._read() as conn:
            return queries.history(conn, kind, subject)

    def known(self, kind: str) -> list[str]:
        with self._read() as conn:
            return queries.known_subjects(conn, kind)

    def compare(self, a: int | str, b: int | str) -> queries.Comparison:
        return queries.compare(self.get(self.resolve(a)), self.get(self.resolve(b)))

    def head(self) -> tuple[int, str]:
        with self._read() as conn:
            return _head(conn)

    def _raw_rows(self, conn: Connection) -> Iterator[dict[str, object]]:
        """All rows, ascending id, as the driver returns them (no type processing)."""
        names = [c.name for c in RUNS.columns]
        if conn.dialect.name == "postgresql":  # a server-side cursor: never the whole table in memory
            conn = conn.execution_options(stream_results=True, max_row_buffer=1000)
        cursor = conn.exec_driver_sql(
            f"SELECT {', '.join(names)} FROM runs ORDER BY id"  # noqa: S608 (fixed column names)
        )
        for raw in cursor:
            yield dict(raw._mapping)

    def _cells_digests(self, conn: Connection) -> dict[int, str]:
        """run id -> the digest of its stored cells (``cells.digest``), for every run with cells;
        the rows are streamed, one run's cells in memory at a time."""
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(stream_results=True, max_row_buffer=100)
        cursor = conn.exec_driver_sql(
            "SELECT run_id, cell_index, params, metrics, samples FROM cells ORDER BY run_id, cell_index"
        )
        out: dict[int, str] = {}
        current: int | None = None
        rows: list[dict[str, object]] = []
        for run_id, index, params, metrics, blob in cursor:
            if run_id != current:
                if current is not None:
                    out[current] = cells.digest(rows)
                current, rows = run_id, []
            rows.append({"cell_index": index, "params": params, "metrics": metrics, "samples": blob})
        if current is not None:
            out[current] = cells.digest(rows)
        return out

    @contextmanager
    def raw_rows(self) -> Iterator[Iterator[dict[str, object]]]:
        """Every row in id order as stored (for ``ledger push``), read in one transaction."""
        with self._read() as conn:
            yield self._raw_rows(conn)

    def raw_rows_by_id(self, run_ids: list[int], chunk: int = 500) -> Iterator[dict[str, object]]:
        """The rows of ``run_ids`` as stored (no type processing, as ``raw_rows``), read
        ``chunk`` ids per query so a long list never becomes one statement."""
        from sqlalchemy import bindparam, text

        names = ", ".join(c.name for c in RUNS.columns)
        query = text(f"SELECT {names} FROM runs WHERE id IN :ids ORDER BY id").bindparams(  # noqa: S608
            bindparam("ids", expanding=True)
        )
        for start in range(0, len(run_ids), chunk):
            with self._read() as conn:
                rows = [dict(r._mapping) for r in conn.execute(query, {"ids": run_ids[start : start + chunk]})]
            yield from rows

    def raw_cells(self, run_ids: list[int]) -> dict[int, list[dict[str, object]]]:
        """The stored cell rows of ``run_ids`` (for ``ledger push``): run id -> rows in index
        order, each ``cell_index``, ``params``, ``metrics``, ``samples`` exactly as stored."""
        out: dict[int, list[dict[str, object]]] = {}
        if not run_ids:
            return out
        query = select(CELLS).where(CELLS.c.run_id.in_(run_ids)).order_by(CELLS.c.run_id, CELLS.c.cell_index)
        with self._read() as conn:
            for row in conn.execute(query).mappings():
                # (LargeBinary already hands samples back as bytes on every driver)
                cell = {k: row[k] for k in ("cell_index", "params", "metrics", "samples")}
                out.setdefault(row["run_id"], []).append(cell)
        return out

    def stable_ids(self) -> dict[str, int]:
        """The stable id (``run_uid``, or derived from the row hash before v4) -> id of every run."""
        with self._read() as conn:
            rows = conn.execute(select(RUNS.c.id, RUNS.c.run_uid, RUNS.c.row_hash)).all()
        return {uid or legacy_uid(row_hash): rid for rid, uid, row_hash in rows}

    def import_runs(self, runs: list[dict[str, object]], known: dict[str, int]) -> int:
        """Append runs copied from another ledger, in order, in ONE transaction; return how
        many were new.  Each run is its content values with ``run_uid`` set, ``corrects``
        / ``supersedes`` / ``replay_of`` given as stable ids and its stored cell rows under
        ``"cells"`` (``raw_cells``; none when absent); ``known`` maps stable ids to ids here and is
        updated once the transaction commits.  A run already here (by ``run_uid``, also one
        that a concurrent push stored a moment ago) is skipped."""
        self._check_before_writing()
        uids = [values["run_uid"] for values in runs]
        with self._errors(), self._writer_turn(), self.engine.connect() as conn:
            conn = conn.execution_options(ledger_begin="IMMEDIATE")
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    postgres.lock_chain(conn)
                here = dict(known)
                for uid, rid in conn.execute(select(RUNS.c.run_uid, RUNS.c.id).where(RUNS.c.run_uid.in_(uids))):
                    here[uid] = rid
                last_id, last_hash = _head(conn)
                new_rows = []
                new_cells: list[dict[str, object]] = []
                for values in runs:
                    uid = values["run_uid"]
                    if uid in here:
                        continue
                    row = dict(values)
                    run_cells = row.pop("cells", [])
                    if not isinstance(uid, str) or not isinstance(run_cells, list):
                        raise LedgerError(f"a run to import needs a run_uid and a list of cells, got {uid!r}")
                    for key in ("corrects", "supersedes", "replay_of"):
                        ref = row.get(key)
                        if ref is not None:
                            if ref not in here:
                                raise LedgerError(
                                    f"run {values['run_uid']} {key} a run that is not in this ledger ({ref})",
                                    location=self.where,
                                )
                            row[key] = here[ref]
                    last_id += 1
                    row["id"] = last_id
                    row["prev_hash"] = last_hash
                    row["row_hash"] = last_hash = chain.row_hash(row)
                    here[uid] = last_id
                    new_rows.append(row)
                    new_cells.extend({**cell, "run_id": last_id} for cell in run_cells)
                if new_rows:
                    conn.execute(insert(RUNS), new_rows)
                if new_cells:
                    conn.execute(insert(CELLS), new_cells)
        known.update(here)
        return len(new_rows)

    def verify(self, known_head: str | None = None) -> chain.VerifyResult:
        """Recompute the hash chain and report the first broken row; then check that the
        append-only triggers are in place and, given ``known_head`` (a ``head_hash`` kept
        elsewhere earlier), that the chain still contains it (a truncated or rewritten
        tail does not)."""
        if known_head is not None:
            known_head = chain.check_head(known_head)
        with self._read() as conn:
            digests = self._cells_digests(conn)
            result = chain.verify_rows(self._raw_rows(conn), known_head=known_head, cells_digests=digests)
            lacking = appendonly.missing(conn)
            if result.ok:
                result = self._verify_experiments(conn, result)
        if result.ok and lacking:
            return chain.VerifyResult(
                False,
                result.runs,
                result.head_hash,
                problem=(
                    f"the append-only triggers {', '.join(lacking)} are missing or disabled: the chain verifies "
                    f"({result.runs} runs), but the database no longer refuses changes"
                ),
                missing_triggers=tuple(lacking),
                known_head_at=result.known_head_at,
            )
        return result

    @staticmethod
    def _verify_experiments(conn: Connection, result: chain.VerifyResult) -> chain.VerifyResult:
        """The runs verify: now every experiment record's content hash (schema v10)."""
        from autobench.ledger.experiments import problem
        from autobench.ledger.models import EXPERIMENTS

        for row in conn.execute(select(EXPERIMENTS).order_by(EXPERIMENTS.c.id)).mappings():
            found = problem(dict(row))
            if found is not None:
                return chain.VerifyResult(False, result.runs, result.head_hash, problem=found)
        return result

    def export(self, out: TextIO, fmt: str = "jsonl") -> int:
        """Write every run to ``out`` as JSONL or CSV (``export.write`` refuses any other format);
        return the number of runs."""
        with self._read() as conn:
            rows = conn.execute(select(RUNS).order_by(RUNS.c.id)).mappings()
            return export.write(rows, out, fmt, cells_of=self.raw_cells)

"""PostgreSQL specifics of the ledger store: the engine (psycopg 3, bounded connects)
and the lock that serialises appenders of one ledger across hosts.

A ledger is the ``runs`` / ``schema_version`` tables of one schema (the connection's
``current_schema()``; pick it with ``?options=-csearch_path%3Dteam``).  Every append and
every migration runs inside a transaction that first takes
``pg_advisory_xact_lock(LOCK_CLASS, hashtext(current_schema()))``: the read of the chain
head and the insert are serialised across every process and host that appends to the
same schema, and the lock is released by the commit, the rollback, or the server when a
client dies (a SIGKILLed appender never leaves it held).  ``lock_timeout`` bounds the
wait behind an appender that hangs inside its transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL

#: Seconds to establish a connection (libpq ``connect_timeout``); the URL's own wins.
CONNECT_TIMEOUT_S = 10
#: Longest wait for the ledger's append lock (another appender inside its transaction).
LOCK_TIMEOUT = "60s"
#: First key of the two-key advisory lock: "ab" "le" (autobench ledger) in ASCII.
LOCK_CLASS = 0x61626C65


def normalise_url(url: URL) -> URL:
    """``postgresql://`` and ``postgres://`` mean psycopg 3 (SQLAlchemy's default is psycopg2)."""
    if url.drivername in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    return url


def is_postgres(url: URL) -> bool:
    return url.drivername.split("+", 1)[0] in ("postgresql", "postgres")


def engine(url: URL) -> Engine:
    url = normalise_url(url)
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    # A small pool: one connection per appender, reused across appends (a new connection
    # per append costs a TCP and startup round trip); Ledger.close() disposes of it.
    return create_engine(url, pool_size=1, max_overflow=4, pool_pre_ping=True, connect_args=connect_args)


def lock_chain(conn: Connection) -> None:
    """Serialise with every other appender of this schema until the transaction ends."""
    # one round trip (the lock is held through the commit, so every one counts)
    conn.exec_driver_sql(
        f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'; "
        f"SELECT pg_advisory_xact_lock({LOCK_CLASS}, hashtext(current_schema()))"
    )

"""Schema versions: an ordered list of migrations, each recorded in ``schema_version``
in the same transaction that applies it.

A ledger whose recorded version is newer than ``LATEST`` was written by a newer
autobench; it is refused (never "downgraded"), and nothing is changed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Float, Integer, MetaData, Table, insert, select
from sqlalchemy.schema import CreateTable
from sqlalchemy.types import TypeEngine

from autobench.errors import LedgerError
from autobench.ledger import appendonly
from autobench.ledger.appendonly import APPEND_ONLY_MESSAGE
from autobench.ledger.models import ADDED_IN, CELLS, EXPERIMENTS, RUNS, SchemaVersion

VERSIONS = SchemaVersion.__table__  # type: ignore[attr-defined]


def _append_only_triggers(conn: Connection, *tables: str) -> None:
    """Make the database itself refuse UPDATE and DELETE (PostgreSQL: and TRUNCATE)."""
    appendonly.create(conn, *tables)


def _v1_table() -> Table:
    """The runs table as v1 created it: the model's columns minus those a later migration
    added (``models.ADDED_IN``).  v1's columns are never edited in the model, so this is
    frozen; tests/ledger checks a fresh ledger against one the v2 code wrote."""
    columns = [c._copy() for c in RUNS.columns if c.name not in ADDED_IN]
    return Table(RUNS.name, MetaData(), *columns)


def _v1_runs_table(conn: Connection) -> None:
    conn.execute(CreateTable(_v1_table()))
    for name, columns in (
        ("ix_runs_recipe_name", "recipe_name"),
        ("ix_runs_draft", "draft_repo, draft_sha"),
        ("ix_runs_model", "model_repo, model_sha"),
        ("ix_runs_status", "status"),
        ("ix_runs_started_at", "started_at"),
    ):
        conn.exec_driver_sql(f"CREATE INDEX {name} ON runs ({columns})")
    _append_only_triggers(conn, "runs")


_HIST_TAIL = "status, root_cause_category, root_cause_message, recipe_name, started_at, decode_tok_s"


def _v2_covering_history_indexes(conn: Connection) -> None:
    for old in ("ix_runs_recipe_name", "ix_runs_draft", "ix_runs_model"):
        conn.exec_driver_sql(f"DROP INDEX {old}" + (" ON runs" if conn.dialect.name == "mysql" else ""))
    for name, lead in (
        ("ix_runs_hist_recipe", "recipe_name, recipe_digest"),
        ("ix_runs_hist_draft", "draft_repo, draft_sha"),
        ("ix_runs_hist_model", "model_repo, model_sha"),
    ):
        conn.exec_driver_sql(f"CREATE INDEX {name} ON runs ({lead}, {_HIST_TAIL})")


# v3: the boot facts the log parser states beyond v2's twelve (autobench/logs/facts.py
# names).  Frozen here: a later change to the model never alters what v3 added.
V3_COLUMNS: tuple[tuple[str, type[TypeEngine[Any]]], ...] = (
    ("max_model_len", Integer),
    ("weights_load_s", Float),
    ("torch_compile_s", Float),
    ("num_gpu_blocks", Integer),
    ("num_cpu_blocks", Integer),
    ("mamba_padding_pct", Float),
    ("cuda_graph_s", Float),
    ("cuda_graph_gib", Float),
    ("engine_init_s", Float),
)


def _v3_more_boot_facts(conn: Connection) -> None:
    # Nullable columns, so every existing row reads NULL (unknown) for them; the hash chain
    # leaves a NULL added column out of a row's content, so old rows still verify.
    for name, kind in V3_COLUMNS:
        ddl = kind().compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE runs ADD COLUMN {name} {ddl}")


def _v4_run_uid(conn: Connection) -> None:
    # Nullable, so the rows written before v4 keep their content and hashes (a NULL added
    # column is left out of the hashed content); UNIQUE, so a run pushed twice is stored once.
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN run_uid TEXT")
    conn.exec_driver_sql("CREATE UNIQUE INDEX ix_runs_run_uid ON runs (run_uid)")


def _v5_root_cause_detail(conn: Connection) -> None:
    # Nullable: every existing row reads NULL, and the hash chain leaves a NULL added
    # column out of a row's content, so old rows still verify.
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN root_cause_detail TEXT")


def _v6_preflight(conn: Connection) -> None:
    # Nullable: rows written before v6 keep their content and hashes (a NULL added column is
    # left out of the hashed content).
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN preflight TEXT")


def _v7_tokenizer(conn: Connection) -> None:
    # Nullable: runs recorded before v7 keep their content and hashes (NULL added columns are
    # left out of the hashed content).
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN tokenizer TEXT")


def _v8_cells(conn: Connection) -> None:
    # The two run columns are nullable: runs recorded before v8 keep their content and hashes
    # (NULL added columns are left out of the hashed content).  The cells table is new and,
    # like runs, append-only; a run's cells_digest (autobench.ledger.cells) covers its cells.
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN replay_of INTEGER")
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN cells_digest TEXT")
    conn.execute(CreateTable(CELLS))
    _append_only_triggers(conn, "cells")


def _v9_more_metrics(conn: Connection) -> None:
    # Nullable: runs recorded before v9 keep their content and hashes (NULL added columns are
    # left out of the hashed content).  Metrics the catalogue adds later live here until (if
    # ever) a migration gives them a column.
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN more_metrics TEXT")


def _v10_experiments(conn: Connection) -> None:
    # A new table, append-only like runs; runs are untouched (every hash unchanged).
    conn.execute(CreateTable(EXPERIMENTS))
    for index in EXPERIMENTS.indexes:
        index.create(conn)
    _append_only_triggers(conn, "experiments")


def _v11_dataset(conn: Connection) -> None:
    # Nullable: runs recorded before v11 keep their content and hashes (a NULL added column is
    # left out of the hashed content).
    conn.exec_driver_sql("ALTER TABLE runs ADD COLUMN dataset TEXT")


# (version, description, apply).  Append new migrations; never edit an applied one.
MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "runs table with metrics and boot facts, indexes, append-only triggers", _v1_runs_table),
    (2, "covering indexes for history by recipe, draft and model", _v2_covering_history_indexes),
    (
        3,
        "boot facts: max_model_len, weights/torch.compile/CUDA graph/engine init times, GPU/CPU blocks, "
        "mamba padding, CUDA graph pool",
        _v3_more_boot_facts,
    ),
    (4, "run_uid: a run's stable id across ledgers (push / pull)", _v4_run_uid),
    (5, "root_cause_detail: the line that says what is wrong (a ValidationError's detail)", _v5_root_cause_detail),
    (6, "preflight: the KV-cache layout prediction made before the run started", _v6_preflight),
    (7, "tokenizer: what measured the bench's prompt lengths (repo@sha, a file, or estimated)", _v7_tokenizer),
    (8, "cells: a run's cells with their raw per-request samples; runs.cells_digest and runs.replay_of", _v8_cells),
    (9, "more_metrics: a run's metrics without a column of their own (autobench.metric_catalogue)", _v9_more_metrics),
    (
        10,
        "experiments: each experiment run's definition, plan digest and treatments (autobench.experiment)",
        _v10_experiments,
    ),
    (11, "dataset: the bench's dataset file (a Hub dataset's repo@sha:file, or a path) and its sha256", _v11_dataset),
]
LATEST = MIGRATIONS[-1][0]


def current_version(conn: Connection) -> int:
    value = conn.execute(select(VERSIONS.c.version).order_by(VERSIONS.c.version.desc()).limit(1))
    return value.scalar() or 0


def check_not_newer(version: int, where: str) -> None:
    if version > LATEST:
        raise LedgerError(
            f"ledger schema v{version} was written by a newer autobench (this one knows v{LATEST})",
            location=where,
            hint="upgrade autobench; the ledger was left unchanged",
        )


def migrate(conn: Connection, where: str) -> int:
    """Apply pending migrations inside the caller's (write-locked) transaction."""
    if conn.dialect.name == "sqlite":
        present = {r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")}
        if "schema_version" not in present:
            conn.execute(CreateTable(VERSIONS))
            _append_only_triggers(conn, "schema_version")
    elif not conn.dialect.has_table(conn, VERSIONS.name):
        conn.execute(CreateTable(VERSIONS))
        _append_only_triggers(conn, "schema_version")
    version = current_version(conn)
    check_not_newer(version, where)
    for number, description, apply in MIGRATIONS:
        if number <= version:
            continue
        apply(conn)
        conn.execute(
            insert(VERSIONS).values(
                version=number,
                description=description,
                applied_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
        )
        version = number
    return version


__all__ = ["APPEND_ONLY_MESSAGE", "LATEST", "MIGRATIONS", "check_not_newer", "current_version", "migrate"]

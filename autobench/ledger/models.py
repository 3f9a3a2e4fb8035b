"""The ledger's tables (sqlmodel) and the plain records the library hands out.

``runs`` holds a run with its metrics and boot facts as real columns (queryable and
indexable, never an opaque blob).  ``cells`` (schema v8) holds the cells of a run -- one
per bench point (concurrency, lengths, repeat) -- with their parameters, metrics and raw
per-request samples (``autobench.samples``); the run's ``cells_digest`` covers them in the
hash chain (``autobench.ledger.cells``).  ``schema_version`` records the migrations
applied.  Values that are not known are NULL, never 0.

``NewRun`` (with its ``NewCell``s) is what callers append; ``RunRecord`` and ``CellRecord``
are what queries return (a RunRecord carries everything of the row, including ``metrics``
and ``boot`` dicts keyed by the column names; ``Ledger.cells(id)`` gives its cells).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from typing import Any, Protocol, TypeVar

from sqlalchemy import Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

from autobench import metric_catalogue as catalogue
from autobench.digits import load_json
from autobench.errors import LedgerError
from autobench.samples import Samples, decode

STATUSES = ("DONE", "BLOCKED", "FAILED", "ABORTED")
SOURCES = ("seed", "manual", "run")
GENESIS_HASH = "0" * 64

#: Every metric the ledger keeps (``autobench.metric_catalogue``: ``stored``), in catalogue order.
METRIC_KEYS: tuple[str, ...] = catalogue.keys(stored=True)
#: The metrics with their own ``runs`` column (schema v1's); the others a run keeps in its
#: ``more_metrics`` JSON column (schema v9), and every cell in its ``metrics``.
COLUMN_METRIC_KEYS: tuple[str, ...] = catalogue.keys(column=True)
MORE_METRICS = "more_metrics"

#: Boot-fact columns added by schema v3 (the log parser's names: autobench/logs/facts.py).
V3_BOOT_KEYS: tuple[str, ...] = (
    "max_model_len",
    "weights_load_s",
    "torch_compile_s",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "mamba_padding_pct",
    "cuda_graph_s",
    "cuda_graph_gib",
    "engine_init_s",
)

#: Boot-fact columns (normalized key names, shared with autobench.logs).
BOOT_KEYS: tuple[str, ...] = (
    "kv_cache_tokens",
    "kv_cache_gib",
    "max_concurrency",
    "max_concurrency_tokens",
    "model_load_gib",
    "model_load_s",
    "attention_block_size",
    "architecture",
    "attention_backend",
    "linear_kernel",
    "moe_backend",
    "vllm_version",
    *V3_BOOT_KEYS,
)

#: Columns added to ``runs`` by a migration after v1 -> the schema version that added them.
#: The hash chain's rule for them (autobench.ledger.chain): such a column enters a row's
#: canonical content only when it is not NULL, so rows written before it existed hash
#: exactly as they did.  Add every new column here with its migration's number.
ADDED_IN: dict[str, int] = {
    **{key: 3 for key in V3_BOOT_KEYS},
    "run_uid": 4,
    "root_cause_detail": 5,
    "preflight": 6,
    "tokenizer": 7,
    "cells_digest": 8,
    "replay_of": 8,
    MORE_METRICS: 9,
    "dataset": 11,
}

#: Run columns other than metrics, boot facts and the chain.
CORE_KEYS: tuple[str, ...] = (
    "recipe_name",
    "recipe_digest",
    "recipe_snapshot",
    "script_snapshot",
    "model_repo",
    "model_sha",
    "draft_repo",
    "draft_sha",
    "image",
    "image_digest",
    "engine_version",
    "host_facts",
    "status",
    "root_cause_category",
    "root_cause_message",
    "root_cause_detail",
    "started_at",
    "ended_at",
    "notes",
    "corrects",
    "supersedes",
    "source",
    "run_uid",
    "preflight",
    "tokenizer",
    "replay_of",
    "cells_digest",
    "dataset",
)

#: JSON-encoded text columns (decoded in RunRecord).
JSON_KEYS = frozenset({"recipe_snapshot", "host_facts", "spec_per_position", "preflight", MORE_METRICS})


class SchemaVersion(SQLModel, table=True):
    __tablename__ = "schema_version"

    version: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    description: str
    applied_at: str


# Columns the history query groups by / aggregates, after (subject, revision).
_HIST_TAIL = ("status", "root_cause_category", "root_cause_message", "recipe_name", "started_at", "decode_tok_s")


def _text(nullable: bool = True) -> Any:
    return Field(default=None, sa_column=Column(Text, nullable=nullable))


class RunRow(SQLModel, table=True):
    """One run.  Appended once, never updated or deleted (triggers refuse it)."""

    __tablename__ = "runs"
    # Schema v2 indexes.  The three history indexes *cover* the history query (index-only
    # scan in GROUP BY order) and also serve plain lookups by recipe / draft / model.
    __table_args__ = (
        Index("ix_runs_hist_recipe", "recipe_name", "recipe_digest", *_HIST_TAIL),
        Index("ix_runs_hist_draft", "draft_repo", "draft_sha", *_HIST_TAIL),
        Index("ix_runs_hist_model", "model_repo", "model_sha", *_HIST_TAIL),
        Index("ix_runs_status", "status"),
        Index("ix_runs_started_at", "started_at"),
        Index("ix_runs_run_uid", "run_uid", unique=True),  # schema v4
    )

    id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    # -- what ran
    recipe_name: str = Field(nullable=False)
    recipe_digest: str | None = None
    recipe_snapshot: str | None = _text()
    script_snapshot: str | None = _text()
    model_repo: str = Field(nullable=False)
    model_sha: str | None = None
    draft_repo: str | None = None
    draft_sha: str | None = None
    image: str | None = None
    image_digest: str | None = None
    engine_version: str | None = None
    host_facts: str | None = _text()
    # -- how it ended
    status: str = Field(nullable=False)
    root_cause_category: str | None = None
    root_cause_message: str | None = _text()
    root_cause_detail: str | None = _text()  # v5: the line that says what is wrong (pydantic detail)
    started_at: str | None = None
    ended_at: str | None = None
    notes: str | None = _text()
    corrects: int | None = None
    supersedes: int | None = None
    source: str = Field(nullable=False)
    # -- metrics
    prefill_tok_s: float | None = None
    decode_tok_s: float | None = None
    total_tok_s: float | None = None
    completed: int | None = None
    errors: int | None = None
    incomplete: int | None = None
    duration_s: float | None = None
    time_cap_hit: bool | None = None
    concurrency: int | None = None
    num_prompts: int | None = None
    ttft_median_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_median_ms: float | None = None
    tpot_p99_ms: float | None = None
    itl_median_ms: float | None = None
    itl_p99_ms: float | None = None
    e2el_median_ms: float | None = None
    e2el_p99_ms: float | None = None
    spec_acceptance_length: float | None = None
    spec_per_position: str | None = _text()
    spec_draft_acceptance_rate: float | None = None
    # -- boot facts
    kv_cache_tokens: int | None = None
    kv_cache_gib: float | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    model_load_gib: float | None = None
    model_load_s: float | None = None
    attention_block_size: int | None = None
    architecture: str | None = None
    attention_backend: str | None = None
    linear_kernel: str | None = None
    moe_backend: str | None = None
    vllm_version: str | None = None
    # -- boot facts added by schema v3 (ALTER TABLE ADD COLUMN: in the database they come
    #    after row_hash; the order of columns is not part of the hash)
    max_model_len: int | None = None
    weights_load_s: float | None = None
    torch_compile_s: float | None = None
    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None
    mamba_padding_pct: float | None = None
    cuda_graph_s: float | None = None
    cuda_graph_gib: float | None = None
    engine_init_s: float | None = None
    # -- schema v4: the run's stable id across ledgers (32 hex; NULL on runs appended before v4)
    run_uid: str | None = _text()
    # -- schema v6: the preflight prediction made before the run started (autobench.preflight,
    #    JSON; NULL when none was made).  Part of the hashed content when set.
    preflight: str | None = _text()
    # -- schema v7: the tokenizer that measured the bench's prompts ("repo@sha", "path@sha256:...",
    #    or "estimated"); NULL on runs recorded before v7 or without a bench result
    tokenizer: str | None = _text()
    # -- schema v8: the run this one replays (``autobench replay N --run``), and the sha256 of
    #    its cells (autobench.ledger.cells.digest; NULL for a run without cells)
    replay_of: int | None = None
    cells_digest: str | None = _text()
    # -- schema v9: the run's metrics without a column of their own (autobench.metric_catalogue;
    #    canonical JSON, NULL when it has none)
    more_metrics: str | None = _text()
    # -- schema v11: the bench's dataset file ("repo@sha:file sha256:<hex>" for a Hub dataset,
    #    "<path> sha256:<hex>" for a local file); NULL for random prompts or before v11
    dataset: str | None = _text()
    # -- hash chain
    prev_hash: str = Field(nullable=False, unique=True)
    row_hash: str = Field(nullable=False, unique=True)


class CellRow(SQLModel, table=True):
    """One cell of a run (schema v8): appended with its run in one transaction, never updated
    or deleted (triggers refuse it).  ``params`` and ``metrics`` are canonical JSON text;
    ``samples`` is ``autobench.samples.encode``'s bytes (NULL when none were kept)."""

    __tablename__ = "cells"

    run_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    cell_index: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    params: str = Field(sa_column=Column(Text, nullable=False))
    metrics: str = Field(sa_column=Column(Text, nullable=False))
    samples: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))


class ExperimentRow(SQLModel, table=True):
    """An experiment's record (schema v10): one row per ``autobench experiment run``, with the
    definition, the plan's digest and every treatment (its recipe digest, its plan status --
    pruned with the predicted cause -- and what the run did with it: ran, skipped, left).  Its
    runs are the runs of those digests.  Appended, never updated or deleted (triggers refuse
    it); ``content_hash`` covers the other columns, so ``verify`` finds an edited row."""

    __tablename__ = "experiments"

    # given at append (the next after the largest, under the append lock): no sequence to grant
    id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    name: str = Field(sa_column=Column(Text, nullable=False))
    plan_digest: str = Field(sa_column=Column(Text, nullable=False, index=True))
    recorded_at: str = Field(sa_column=Column(Text, nullable=False))
    definition: str = Field(sa_column=Column(Text, nullable=False))  # canonical JSON of the file's data
    treatments: str = Field(sa_column=Column(Text, nullable=False))  # canonical JSON list
    content_hash: str = Field(sa_column=Column(Text, nullable=False))


RUNS = RunRow.__table__  # type: ignore[attr-defined]
CELLS = CellRow.__table__  # type: ignore[attr-defined]
EXPERIMENTS = ExperimentRow.__table__  # type: ignore[attr-defined]
EXPERIMENT_CONTENT = ("name", "plan_digest", "recorded_at", "definition", "treatments")
#: Every content column, in table order (what the row hash covers, with prev_hash).
CONTENT_KEYS: tuple[str, ...] = tuple(c.name for c in RUNS.columns if c.name != "row_hash")

assert set(CONTENT_KEYS) == {"id", "prev_hash", *CORE_KEYS, *COLUMN_METRIC_KEYS, MORE_METRICS, *BOOT_KEYS}
assert set(ADDED_IN) <= set(CONTENT_KEYS)


def legacy_uid(row_hash: str) -> str:
    """The stable id of a run appended before schema v4 (no ``run_uid``): derived from its
    row hash, which never changes in an append-only ledger.  ``ledger push`` stores it as
    the run's ``run_uid`` in the destination, so the run is found there again."""
    import hashlib

    return hashlib.sha256(f"autobench-legacy-run:{row_hash}".encode()).hexdigest()[:32]


@dataclass
class NewRun:
    """A run to append.  ``metrics`` and ``boot`` use the column names above.

    Timestamps are ``datetime`` or ISO 8601 strings (a date alone is kept as a date:
    the ledger never invents a time).  ``recipe_snapshot`` and ``host_facts`` may be
    dicts (stored as canonical JSON text).  Unknown values are None (stored as NULL).
    """

    recipe_name: str
    model_repo: str
    status: str
    recipe_digest: str | None = None
    recipe_snapshot: dict[str, object] | str | None = None
    script_snapshot: str | None = None
    model_sha: str | None = None
    draft_repo: str | None = None
    draft_sha: str | None = None
    image: str | None = None
    image_digest: str | None = None
    engine_version: str | None = None
    host_facts: dict[str, object] | str | None = None
    root_cause_category: str | None = None
    root_cause_message: str | None = None
    root_cause_detail: str | None = None
    started_at: datetime | date | str | None = None
    ended_at: datetime | date | str | None = None
    notes: str | None = None
    corrects: int | None = None
    supersedes: int | None = None
    source: str = "manual"
    metrics: dict[str, object] = field(default_factory=dict)
    boot: dict[str, object] = field(default_factory=dict)
    #: The run's stable id (32 lowercase hex); None -> a new random one at append.
    run_uid: str | None = None
    #: The preflight prediction (``autobench.preflight.predict.Prediction.to_dict()``), if one was made.
    preflight: dict[str, object] | str | None = None
    #: The bench result's ``tokenizer_id``: ``repo@sha``, ``path@sha256:...`` or "estimated".
    tokenizer: str | None = None
    #: The bench's dataset file: ``repo@sha:file sha256:<hex>`` (Hub) or ``<path> sha256:<hex>``.
    dataset: str | None = None
    #: The run's cells, appended with it in one transaction (index = position).
    cells: tuple[NewCell, ...] = ()
    #: The id of the run this one replays (``autobench replay N --run``).
    replay_of: int | None = None


@dataclass(frozen=True)
class NewCell:
    """One cell of a run to append: its parameters (``concurrency``, ``request_rate``,
    ``input_len``, ``output_len``, ``prefix_len``, ``repeat`` -- whatever the cell had),
    its metrics (the ``METRIC_KEYS`` it has, plus extra keys such as ``goodput_rps`` or
    ``client_bound``) and its raw samples, if kept.  Stored as canonical JSON; values must
    be JSON (finite numbers, text, booleans, null, lists, objects)."""

    params: dict[str, object]
    metrics: dict[str, object]
    samples: Samples | None = None


class StoredRow(Protocol):
    """A row as read from the store, by column name: SQLAlchemy's ``RowMapping`` or a plain
    dict.  A value is what the driver returned; :func:`stored` narrows it to the column's type."""

    def __getitem__(self, key: str, /) -> object: ...
    def get(self, key: str, /) -> object: ...


T = TypeVar("T")


def stored(row: StoredRow, key: str, kind: type[T]) -> T:
    """Column ``key`` of ``row`` as a ``kind`` (LedgerError if the store holds anything else: a
    row autobench did not write)."""
    value = row[key]
    if isinstance(value, kind):
        return value
    raise LedgerError(
        f"{_where(row)}: column {key} holds {type(value).__name__}, not {kind.__name__}",
        hint="the row was not written by autobench: autobench ledger verify",
    )


def _where(row: StoredRow) -> str:
    rid = row.get("id")
    return f"run #{rid}" if rid is not None else f"run #{row.get('run_id')} cell {row.get('cell_index')}"


def stored_blob(row: StoredRow, key: str) -> bytes | None:
    """A binary column as bytes (psycopg hands ``bytea`` back as a memoryview), or None."""
    value = row.get(key)
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise LedgerError(f"{_where(row)}: column {key} holds {type(value).__name__}, not bytes")


def stored_or_none(row: StoredRow, key: str, kind: type[T]) -> T | None:
    """Column ``key`` of ``row`` as a ``kind``, or None (NULL)."""
    return None if row[key] is None else stored(row, key, kind)


def stored_json(row: StoredRow, key: str) -> object:
    """A JSON text column decoded (None for NULL, or when ``row`` has no such column)."""
    text = row.get(key)
    if text is None:
        return None
    try:
        return load_json(stored(row, key, str))
    except ValueError as exc:  # not JSON, or nested past digits.MAX_JSON_DEPTH: a forged row
        raise LedgerError(
            f"{_where(row)}: column {key} holds a value that cannot be read ({' '.join(str(exc).split())[:120]})",
            hint="the row was not written by autobench: autobench ledger verify; use a ledger you trust",
        ) from exc


def stored_object(row: StoredRow, key: str) -> dict[str, object] | None:
    """A JSON text column holding an object (None for NULL)."""
    value = stored_json(row, key)
    if value is None or isinstance(value, dict):
        return value
    raise LedgerError(f"{_where(row)}: column {key} holds JSON {type(value).__name__}, not an object")


@dataclass(frozen=True)
class CellRecord:
    """A stored cell.  ``samples`` is decoded lazily, on first access (``samples_blob`` is
    the stored bytes; None when the cell kept none, or when read with ``samples=False``)."""

    run_id: int
    index: int
    params: dict[str, object]
    metrics: dict[str, object]
    samples_blob: bytes | None = field(default=None, repr=False)

    @cached_property
    def samples(self) -> Samples | None:
        if self.samples_blob is None:
            return None
        return decode(self.samples_blob, where=f"run #{self.run_id} cell {self.index}")

    def to_json_dict(self) -> dict[str, object]:
        """Parameters and metrics (the samples are bytes: see ``ledger export``)."""
        return {"index": self.index, "params": dict(self.params), "metrics": dict(self.metrics)}


@dataclass
class RunRecord:
    """A run as stored, with JSON columns decoded and metrics/boot facts grouped."""

    id: int
    recipe_name: str
    recipe_digest: str | None
    recipe_snapshot: dict[str, object] | None
    script_snapshot: str | None
    model_repo: str
    model_sha: str | None
    draft_repo: str | None
    draft_sha: str | None
    image: str | None
    image_digest: str | None
    engine_version: str | None
    host_facts: dict[str, object] | None
    status: str
    root_cause_category: str | None
    root_cause_message: str | None
    started_at: str | None
    ended_at: str | None
    notes: str | None
    corrects: int | None
    supersedes: int | None
    source: str
    metrics: dict[str, object]
    boot: dict[str, object]
    prev_hash: str
    row_hash: str
    run_uid: str | None = None
    root_cause_detail: str | None = None
    preflight: dict[str, object] | None = None
    tokenizer: str | None = None
    replay_of: int | None = None
    cells_digest: str | None = None
    dataset: str | None = None

    @property
    def stable_id(self) -> str:
        """``run_uid``, or for a run appended before schema v4 one derived from its row hash."""
        return self.run_uid or legacy_uid(self.row_hash)

    @property
    def display_id(self) -> str:
        """Short id for people: ``#<id>-<first 8 hex of the row hash>``."""
        return f"#{self.id}-{self.row_hash[:8]}"

    @property
    def root_cause(self) -> str | None:
        if not (self.root_cause_category or self.root_cause_message):
            return None
        return f"{self.root_cause_category or 'unknown'}: {self.root_cause_message or ''}".strip()

    def to_json_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "display_id": self.display_id}
        for key in CORE_KEYS:
            out[key] = getattr(self, key)
        out["metrics"] = dict(self.metrics)
        out["boot"] = dict(self.boot)
        out["prev_hash"] = self.prev_hash
        out["row_hash"] = self.row_hash
        return out

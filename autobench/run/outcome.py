"""A run's options and outcome, and the one way an outcome becomes a ledger row.

    RunOptions                    what ``autobench run`` was asked (runtime, ledger, Slurm resources, hosts...)
    RunOutcome                    what happened: status, root cause, metrics, cells, boot facts, notes
    record_run(ledger, run, ...)  the row, through ``autobench.runrow.new_run`` (the path ``record`` takes too)

Every runtime (autobench.run.pipeline's table) fills a :class:`RunOutcome`; none writes its own row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.errors import RunError
from autobench.recipe import LoadedRecipe
from autobench.run.plan import RunPlan

if TYPE_CHECKING:
    from autobench.bench.result import BenchResult
    from autobench.ledger.models import NewCell
    from autobench.ledger.store import Ledger
    from autobench.recipe.grid import Cell

Echo = Callable[[str], None]


@dataclass
class RunOptions:
    runtime: str = "docker"
    runs_dir: str | Path = "runs"
    ledger: str | None = None
    allow_unpinned: bool = False
    vllm_exec: str | None = None
    ready_timeout_s: float | None = None
    grace_s: float = 10.0
    dry_run: bool = False
    pull: bool = False  # docker runtime: pull the pinned image digest when docker lacks it
    # slurm runtime (autobench.run.slurm): sbatch resources and how the node runs the server
    partition: str | None = None
    gpus_per_node: int | None = None  # None: the recipe's topology.gpus_per_node; 0: request none
    gpu_request: str = "gpus-per-node"  # slurm: how GPUs are asked for (--gpus-per-node or --gres=gpu:N)
    account: str | None = None
    time_limit: str | None = None
    container: str = "none"
    force: bool = False  # run even when preflight predicts a boot failure
    vllm_version: str | None = None  # for preflight when the image tag does not say it
    hosts: tuple[str, ...] = ()  # multi-node: head first (overrides topology.hosts)
    remote: str | None = None  # multi-node: how the driver reaches a host (default ssh)
    profile: str | Path | None = None  # a bench profile file merged onto the recipe's bench:
    live: bool | None = None  # progress: a live display (True), plain lines (False), None: on a terminal
    replay_of: int | None = None  # the run this one replays (autobench replay RUN --run)
    require_tokenizer: bool = False  # the bench refuses to estimate prompt lengths
    in_allocation: bool = False  # slurm: run the job's script in this Slurm job (an array task), not sbatch it


@dataclass
class RunOutcome:
    status: str  # DONE | BLOCKED | FAILED | ABORTED | PLANNED (dry run)
    plan: RunPlan
    run_id: int | None = None
    display_id: str | None = None
    run_uid: str | None = None  # the run's stable id: the same in every ledger it is pushed to
    root_cause_category: str | None = None
    root_cause_message: str | None = None
    root_cause_detail: str | None = None  # the line that says what is wrong (a ValidationError's detail)
    metrics: dict[str, object] = field(default_factory=dict)
    boot: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    script: str | None = None
    signal: str | None = None
    image_digest: str | None = None  # docker runtime: the registry digest of the image that ran
    preflight: dict[str, object] | None = None  # the preflight prediction (autobench.preflight)
    tokenizer: str | None = None  # the bench result's tokenizer_id (repo@sha, a file, "estimated")
    dataset: str | None = None  # the bench result's dataset_id (repo@sha:file sha256:..., a path)
    #: Every cell benched to its end, in run order.
    cells: list[tuple[Cell, BenchResult]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return {"DONE": 0, "PLANNED": 0, "ABORTED": 130}.get(self.status, RunError.exit_code)

    def to_json_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "run_id": self.run_id,
            "display_id": self.display_id,
            "run_uid": self.run_uid,
            "recipe": self.plan.recipe_name,
            "run_dir": str(self.plan.run_dir),
            "root_cause": (
                {
                    "category": self.root_cause_category,
                    "message": self.root_cause_message,
                    "detail": self.root_cause_detail,
                }
                if self.root_cause_category or self.root_cause_message
                else None
            ),
            "metrics": self.metrics,
            "boot": self.boot,
            "notes": self.notes,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "signal": self.signal,
            "image_digest": self.image_digest,
            "tokenizer": self.tokenizer,
            "dataset": self.dataset,
            "cells": [
                {"index": c.index, "params": c.params, "repeat": c.repeat, "metrics": cell_metrics(r)}
                for c, r in self.cells
            ],
            "plan": self.plan.to_json_dict(),
        }


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


#: A cell's metrics beyond the run columns: SLO goodput and the client self-check (docs/bench.md).
CELL_ONLY = ("goodput", "good_requests", "client_bound")


def cell_metrics(result: BenchResult) -> dict[str, object]:
    """One bench result's ledger metric columns, and :data:`CELL_ONLY`."""
    from autobench.runrow import metric_columns

    normalized = result.normalized()
    extra = {k: normalized[k] for k in CELL_ONLY if normalized.get(k) is not None}
    return {**metric_columns(normalized), **extra}


def sweep_metrics(benched: list[tuple[Cell, BenchResult]]) -> dict[str, object]:
    """A run's row metrics from its benched (grid cell, BenchResult) pairs: one cell's own;
    for a grid, the headline cell (highest concurrency, then request rate) merged over its
    repeats from the raw samples (``autobench.ledger.cells.headline_metrics``), so
    ``history`` and every query over run columns keep a figure for sweeps."""
    if len(benched) == 1:
        return cell_metrics(benched[0][1])
    from autobench.ledger.cells import headline_metrics

    return headline_metrics(ledger_cells(benched))


def ledger_cells(benched: list[tuple[Cell, BenchResult]]) -> list[NewCell]:
    """The run's cells for the ledger: each benched (grid cell, BenchResult) with its
    parameters (``repeat`` 1-based, as the grid numbers it), its metric columns and the raw
    per-request samples of its bench (schema v8: ``autobench.ledger.models.NewCell``)."""
    from autobench.ledger.models import NewCell

    return [
        NewCell({**cell.params, "repeat": cell.repeat}, cell_metrics(result), result.samples)
        for cell, result in benched
    ]


def redact_outcome(outcome: RunOutcome, redact: Callable[[str], str]) -> None:
    """Secrets out of everything in the outcome that came from the server or the bench: the root
    cause, the notes (bench errors quote response bodies) and any text metric."""
    if outcome.root_cause_message:
        outcome.root_cause_message = redact(outcome.root_cause_message)
    if outcome.root_cause_detail:
        outcome.root_cause_detail = redact(outcome.root_cause_detail)
    outcome.notes = [redact(n) for n in outcome.notes]
    outcome.metrics = {k: redact(v) if isinstance(v, str) else v for k, v in outcome.metrics.items()}


@dataclass(frozen=True)
class RowFacts:
    """What a runtime adds to the row beyond the outcome: where it ran and which image."""

    host_facts: Mapping[str, object]
    image: str | None = None
    image_digest: str | None = None


def record_run(
    ledger: Ledger,
    loaded: LoadedRecipe,
    outcome: RunOutcome,
    script: str,
    env: Mapping[str, str],
    row: RowFacts,
    *,
    replay_of: int | None = None,
) -> None:
    """Append the run's row (``autobench.runrow.new_run``: the path ``record`` takes too)."""
    from autobench.runrow import RootCause, RunFacts, new_run

    facts = RunFacts(
        status=outcome.status,
        source="run",
        metrics=outcome.metrics,
        root_cause=RootCause(outcome.root_cause_category, outcome.root_cause_message, outcome.root_cause_detail),
        notes=[f"run folder {outcome.plan.run_dir}", *outcome.notes],
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
        image=row.image,
        image_digest=row.image_digest,
        engine_version=version if isinstance(version := outcome.boot.get("vllm_version"), str) else None,
        host_facts=row.host_facts,
        log={**outcome.boot},
        preflight=outcome.preflight,
        tokenizer=outcome.tokenizer,
        dataset=outcome.dataset,
        replay_of=replay_of,
        cells=ledger_cells(outcome.cells),
    )
    rec = ledger.append(new_run(loaded, script, facts, env=env))
    outcome.run_id = getattr(rec, "id", None)
    outcome.display_id = getattr(rec, "display_id", None)
    outcome.run_uid = getattr(rec, "stable_id", None)


__all__ = [
    "Echo",
    "RowFacts",
    "RunOptions",
    "RunOutcome",
    "cell_metrics",
    "ledger_cells",
    "now",
    "record_run",
    "redact_outcome",
    "sweep_metrics",
]

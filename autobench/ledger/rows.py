"""Between Python and rows: validate a ``NewRun`` into column values, and decode a
stored row into a ``RunRecord``.  Bad input raises ``LedgerError`` naming the field."""

from __future__ import annotations

import difflib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import fields
from datetime import UTC, date, datetime

from autobench.digits import load_json
from autobench.errors import LedgerError
from autobench.ledger.cells import cell_values, digest, headline_metrics
from autobench.ledger.chain import coerce, coerce_metric
from autobench.ledger.models import (
    BOOT_KEYS,
    COLUMN_METRIC_KEYS,
    JSON_KEYS,
    METRIC_KEYS,
    MORE_METRICS,
    SOURCES,
    STATUSES,
    NewRun,
    RunRecord,
    StoredRow,
    stored,
    stored_json,
    stored_object,
    stored_or_none,
)
from autobench.recipe.facts import is_full_sha
from autobench.redaction import find_token

_UID_RE = re.compile(r"[0-9a-f]{32}")
_SHAPE_WORDS = {"hf_token": "a Hugging Face token"}


def _json_text(value: object, key: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            load_json(value)
        except ValueError as exc:
            raise LedgerError(f"{key} is not valid JSON text: {exc}") from exc
        return value
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"{key} cannot be stored as JSON: {exc}") from exc


def normalize_time(value: object, key: str = "time") -> str | None:
    """UTC ISO 8601 (``2026-06-24T10:00:00Z``); a bare date stays a date; naive means UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            try:
                return date.fromisoformat(text).isoformat()
            except ValueError as exc:
                raise LedgerError(f"{key}: not a valid date: {value!r}") from exc
        try:
            value = datetime.fromisoformat(text)
        except ValueError as exc:
            raise LedgerError(
                f"{key}: not an ISO 8601 time: {value!r}",
                hint="use e.g. 2026-06-24T10:00:00Z or 2026-06-24",
            ) from exc
    if not isinstance(value, datetime):
        raise LedgerError(f"{key}: expected a datetime or ISO 8601 string, got {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    stamp = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        stamp += f".{value.microsecond:06d}"
    return stamp + "Z"


def _check_keys(given: Mapping[str, object], known: tuple[str, ...], what: str) -> None:
    for key in given:
        if key not in known:
            close = difflib.get_close_matches(key, known, 1, 0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            raise LedgerError(f"unknown {what} key {key!r}", hint=hint)


def _value(key: str, value: object) -> object:
    if key in JSON_KEYS:
        if key == "spec_per_position" and value is not None:
            if isinstance(value, str):
                value = load_json(value)
            if not isinstance(value, list | tuple):
                raise LedgerError(f"spec_per_position must be a list of numbers, got {value!r}")
            try:
                value = [coerce("spec_acceptance_length", v) for v in value]
            except (TypeError, ValueError) as exc:
                raise LedgerError(f"spec_per_position: {exc}") from exc
        return _json_text(value, key)
    try:
        return coerce(key, value)
    except (TypeError, ValueError) as exc:
        raise LedgerError(f"{key}: {exc}") from exc


def _more_metrics(metrics: Mapping[str, object]) -> dict[str, object] | None:
    """The metrics without a column of their own, coerced to their kinds (None: there are none)."""
    more = {}
    for key in METRIC_KEYS:
        if key in COLUMN_METRIC_KEYS or metrics.get(key) is None:
            continue
        try:
            more[key] = coerce_metric(key, metrics[key])
        except (TypeError, ValueError) as exc:
            raise LedgerError(f"{key}: {exc}") from exc
    return more or None


def new_run_rows(run: NewRun) -> tuple[dict[str, object], list[dict[str, object]]]:
    """Validate ``run`` and its cells: the run's column values (without id and chain columns,
    with ``cells_digest``) and its cells' rows (without ``run_id``)."""
    if not isinstance(run.cells, tuple | list):
        raise LedgerError(f"cells must be a tuple of NewCell, got {type(run.cells).__name__}")
    cells = cell_values(run.cells)
    values = new_run_values(run)
    values["cells_digest"] = digest(cells) if cells else None
    return values, cells


def new_run_values(run: NewRun) -> dict[str, object]:
    """Validate ``run`` and return its column values (without id and chain columns; its
    ``metrics``, when empty, are those of its cells (``cells.headline_metrics``)).  The
    cells themselves: :func:`new_run_rows`."""
    status = (run.status or "").strip().upper()
    if status not in STATUSES:
        raise LedgerError(f"unknown status {run.status!r}", hint=f"use one of {', '.join(STATUSES)}")
    if run.source not in SOURCES:
        raise LedgerError(f"unknown source {run.source!r}", hint=f"use one of {', '.join(SOURCES)}")
    if not run.recipe_name or not run.model_repo:
        raise LedgerError("a run needs a recipe name and a model repo")
    for key in ("model_sha", "draft_sha"):
        sha = getattr(run, key)
        if sha is not None and not is_full_sha(sha):
            raise LedgerError(
                f"{key} {sha!r} is not a full 40-hex commit sha",
                hint="give the full sha, or leave it unknown",
            )
    if run.draft_sha and not run.draft_repo:
        raise LedgerError("draft_sha given without draft_repo")
    for key in ("corrects", "supersedes", "replay_of"):
        ref = getattr(run, key)
        if ref is not None and (isinstance(ref, bool) or not isinstance(ref, int) or ref < 1):
            raise LedgerError(f"{key} must be a run id (a positive integer), got {ref!r}")
    _check_keys(run.metrics, METRIC_KEYS, "metrics")
    _check_keys(run.boot, BOOT_KEYS, "boot")
    if run.run_uid is not None and not _UID_RE.fullmatch(str(run.run_uid)):
        raise LedgerError(f"run_uid must be 32 lowercase hex digits, got {str(run.run_uid)[:40]!r}")

    values: dict[str, object] = {}
    for f in fields(NewRun):
        if f.name in ("metrics", "boot", "cells"):
            continue
        values[f.name] = getattr(run, f.name)
    values["status"] = status
    values["run_uid"] = run.run_uid or uuid.uuid4().hex
    values["started_at"] = normalize_time(run.started_at, "started_at")
    values["ended_at"] = normalize_time(run.ended_at, "ended_at")
    if run.root_cause_category is not None:
        values["root_cause_category"] = run.root_cause_category.strip().lower() or None
    metrics = run.metrics if run.metrics or not run.cells else headline_metrics(run.cells)
    for key in COLUMN_METRIC_KEYS:
        values[key] = metrics.get(key)
    values[MORE_METRICS] = _more_metrics(metrics)
    for key in BOOT_KEYS:
        values[key] = run.boot.get(key)
    out = {key: _value(key, value) for key, value in values.items()}
    for key, value in out.items():
        shape = find_token(value) if isinstance(value, str) else None
        if shape is not None:  # secrets travel by name, never by value
            raise LedgerError(
                f"{key} contains what looks like {_SHAPE_WORDS.get(shape, 'a secret token')}; refusing to store it",
                hint="secrets travel by name (e.g. HF_TOKEN), never by value",
            )
    return out


def record_from_row(row: StoredRow) -> RunRecord:
    metrics = {key: row[key] for key in COLUMN_METRIC_KEYS}
    metrics["spec_per_position"] = stored_json(row, "spec_per_position")
    if metrics["time_cap_hit"] is not None:
        metrics["time_cap_hit"] = bool(metrics["time_cap_hit"])
    more = stored_object(row, MORE_METRICS) or {}
    metrics.update({key: more.get(key) for key in METRIC_KEYS if key not in COLUMN_METRIC_KEYS})

    def text(key: str) -> str | None:
        return stored_or_none(row, key, str)

    def number(key: str) -> int | None:
        return stored_or_none(row, key, int)

    return RunRecord(
        id=stored(row, "id", int),
        recipe_name=stored(row, "recipe_name", str),
        recipe_digest=text("recipe_digest"),
        recipe_snapshot=stored_object(row, "recipe_snapshot"),
        script_snapshot=text("script_snapshot"),
        model_repo=stored(row, "model_repo", str),
        model_sha=text("model_sha"),
        draft_repo=text("draft_repo"),
        draft_sha=text("draft_sha"),
        image=text("image"),
        image_digest=text("image_digest"),
        engine_version=text("engine_version"),
        host_facts=stored_object(row, "host_facts"),
        status=stored(row, "status", str),
        root_cause_category=text("root_cause_category"),
        root_cause_message=text("root_cause_message"),
        root_cause_detail=text("root_cause_detail"),
        started_at=text("started_at"),
        ended_at=text("ended_at"),
        notes=text("notes"),
        corrects=number("corrects"),
        supersedes=number("supersedes"),
        source=stored(row, "source", str),
        run_uid=text("run_uid"),
        preflight=stored_object(row, "preflight"),
        tokenizer=text("tokenizer"),
        dataset=text("dataset"),
        replay_of=number("replay_of"),
        cells_digest=text("cells_digest"),
        metrics=metrics,
        boot={key: row[key] for key in BOOT_KEYS},
        prev_hash=stored(row, "prev_hash", str),
        row_hash=stored(row, "row_hash", str),
    )

"""Questions asked of the ledger: history per draft / model / recipe, and comparisons.

History aggregates in SQL (one indexed GROUP BY), so it stays fast at 100k runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy import Connection, func, select

from autobench.errors import LedgerError
from autobench.ledger.models import BOOT_KEYS, METRIC_KEYS, RUNS, STATUSES, RunRecord
from autobench.ledger.pins import PinCheck, check_pins
from autobench.metric_catalogue import flags_text

T = TypeVar("T")

# history(kind=...) -> (column selecting the runs, column grouping them, label of a group)
HISTORY_KINDS = {
    "draft": ("draft_repo", "draft_sha", "draft revision"),
    "model": ("model_repo", "model_sha", "model revision"),
    "recipe": ("recipe_name", "recipe_digest", "recipe digest"),
}
ROOT_CAUSES_PER_GROUP = 5


@dataclass
class RootCause:
    category: str | None
    message: str | None
    runs: int
    last_run: int
    detail: str | None = None  # the detail line of the latest run with this cause

    def __str__(self) -> str:
        text = f"{self.category or 'unknown'}: {self.message or ''}".rstrip(": ")
        return f"{text} -- {self.detail}" if self.detail else text


@dataclass
class HistoryGroup:
    """Runs sharing one revision (draft sha, model sha or recipe digest; None = unknown)."""

    key: str | None
    runs: int
    by_status: dict[str, int]
    first_seen: str | None
    last_seen: str | None
    first_run: int
    last_run: int
    best_decode_tok_s: float | None
    recipes: list[str]
    root_causes: list[RootCause] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "runs": self.runs,
            "by_status": dict(self.by_status),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "first_run": self.first_run,
            "last_run": self.last_run,
            "best_decode_tok_s": self.best_decode_tok_s,
            "recipes": list(self.recipes),
            "root_causes": [rc.__dict__ for rc in self.root_causes],
        }


@dataclass
class History:
    kind: str  # draft | model | recipe
    subject: str  # the repo or recipe name asked about
    group_label: str
    groups: list[HistoryGroup]

    @property
    def runs(self) -> int:
        return sum(g.runs for g in self.groups)

    def to_json_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "group_by": self.group_label,
            "runs": self.runs,
            "groups": [g.to_json_dict() for g in self.groups],
        }


def history(conn: Connection, kind: str, subject: str) -> History:
    """One pass: an index-only scan of the covering history index, in GROUP BY order;
    the per-revision groups are folded here from the (few) distinct combinations."""
    if kind not in HISTORY_KINDS:
        raise LedgerError(f"unknown history kind {kind!r}", hint="use draft, model or recipe")
    where_col, group_col, label = HISTORY_KINDS[kind]
    key = RUNS.c[group_col]
    where = RUNS.c[where_col] == subject
    parts = (key, RUNS.c.status, RUNS.c.root_cause_category, RUNS.c.root_cause_message)
    dialect = conn.dialect.name
    joined = dialect in ("sqlite", "postgresql")  # both aggregate a comma-joined list in SQL
    # recipe names match [a-z0-9._-]+, so a comma-joined list is unambiguous
    if dialect == "sqlite":
        recipes = func.group_concat(RUNS.c.recipe_name.distinct())
    elif dialect == "postgresql":
        recipes = func.string_agg(RUNS.c.recipe_name.distinct(), ",")
    else:
        recipes = func.min(RUNS.c.recipe_name)
    rows = conn.execute(
        select(
            *parts,
            recipes.label("recipes"),
            func.count().label("n"),
            func.min(RUNS.c.started_at).label("first_seen"),
            func.max(RUNS.c.started_at).label("last_seen"),
            func.min(RUNS.c.id).label("first_run"),
            func.max(RUNS.c.id).label("last_run"),
            func.max(RUNS.c.decode_tok_s).label("best_decode"),
        )
        .where(where)
        .group_by(*parts)
    ).all()
    if not joined:  # portable fallback: the recipes of each revision in a second query
        names: dict[object, set[str]] = {}
        for k, name in conn.execute(select(key, RUNS.c.recipe_name).where(where).distinct()):
            names.setdefault(k, set()).add(name)
    groups: dict[str | None, HistoryGroup] = {}
    causes: dict[str | None, dict[tuple[str | None, str | None], RootCause]] = {}
    for r in rows:
        k = r[0]
        g = groups.get(k)
        if g is None:
            g = groups[k] = HistoryGroup(
                key=k,
                runs=0,
                by_status=dict.fromkeys(STATUSES, 0),
                first_seen=None,
                last_seen=None,
                first_run=r.first_run,
                last_run=r.last_run,
                best_decode_tok_s=None,
                recipes=[],
            )
            causes[k] = {}
        g.runs += r.n
        g.by_status[r.status] = g.by_status.get(r.status, 0) + r.n
        g.first_seen = _pick(min, g.first_seen, r.first_seen)
        g.last_seen = _pick(max, g.last_seen, r.last_seen)
        g.first_run = min(g.first_run, r.first_run)
        g.last_run = max(g.last_run, r.last_run)
        g.best_decode_tok_s = _pick(max, g.best_decode_tok_s, r.best_decode)
        found = (r.recipes or "").split(",") if joined else names.get(k, ())
        for name in found:
            if name and name not in g.recipes:
                g.recipes.append(name)
        category, message = r.root_cause_category, r.root_cause_message
        if category is not None or message is not None:
            rc = causes[k].get((category, message))
            if rc is None:
                causes[k][(category, message)] = RootCause(category, message, r.n, r.last_run)
            else:
                rc.runs += r.n
                rc.last_run = max(rc.last_run, r.last_run)
    for k, g in groups.items():
        ranked = sorted(causes[k].values(), key=lambda c: (-c.runs, -c.last_run))
        g.root_causes = ranked[:ROOT_CAUSES_PER_GROUP]
        g.recipes.sort()
    _fill_details(conn, [rc for g in groups.values() for rc in g.root_causes])
    ordered = sorted(groups.values(), key=lambda g: g.first_run)
    return History(kind, subject, label, ordered)


def _fill_details(conn: Connection, causes: list[RootCause]) -> None:
    """Each shown cause's detail line, from its latest run (a primary-key lookup per
    cause: the detail is not in the covering history index)."""
    ids = sorted({rc.last_run for rc in causes})
    if not ids:
        return
    details: dict[int, str | None] = dict(
        conn.execute(select(RUNS.c.id, RUNS.c.root_cause_detail).where(RUNS.c.id.in_(ids))).all()
    )
    for rc in causes:
        rc.detail = details.get(rc.last_run)


def _pick(choose: Callable[[T, T], T], a: T | None, b: T | None) -> T | None:
    if a is None:
        return b
    if b is None:
        return a
    return choose(a, b)


def known_subjects(conn: Connection, kind: str) -> list[str]:
    """Distinct draft repos / model repos / recipe names (for "did you mean")."""
    col = RUNS.c[HISTORY_KINDS[kind][0]]
    return [v for (v,) in conn.execute(select(col).where(col.is_not(None)).distinct()) if v]


# ---------------------------------------------------------------- compare

COMPARE_METRICS = METRIC_KEYS
COMPARE_BOOT = BOOT_KEYS


@dataclass
class CompareRow:
    section: str  # metrics | boot | run
    key: str
    a: object
    b: object
    ratio: float | None  # b / a, when both are non-zero numbers

    def to_json_dict(self) -> dict[str, object]:
        return {"section": self.section, "key": self.key, "a": self.a, "b": self.b, "ratio": self.ratio}


@dataclass
class Comparison:
    a: RunRecord
    b: RunRecord
    rows: list[CompareRow]
    warnings: list[str]
    #: The pins on which the runs differ (autobench.ledger.pins); ``compare`` refuses unless --anyway.
    pins: PinCheck

    @property
    def decode_speedup(self) -> float | None:
        return next((r.ratio for r in self.rows if r.key == "decode_tok_s"), None)

    def to_json_dict(self) -> dict[str, object]:
        return {
            "a": {
                "id": self.a.id,
                "display_id": self.a.display_id,
                "recipe": self.a.recipe_name,
                "status": self.a.status,
            },
            "b": {
                "id": self.b.id,
                "display_id": self.b.display_id,
                "recipe": self.b.recipe_name,
                "status": self.b.status,
            },
            "decode_speedup": self.decode_speedup,
            "pin_differences": [d.to_json_dict() for d in self.pins.differences],
            "rows": [r.to_json_dict() for r in self.rows],
            "warnings": list(self.warnings),
        }


def _ratio(a: object, b: object) -> float | None:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if isinstance(a, numbers) and isinstance(b, numbers) and a != 0:
        return b / a
    return None


def compare(a: RunRecord, b: RunRecord) -> Comparison:
    rows: list[CompareRow] = []
    for key in (
        "recipe_name",
        "status",
        "model_repo",
        "model_sha",
        "draft_repo",
        "draft_sha",
        "image",
        "engine_version",
        "started_at",
    ):
        rows.append(CompareRow("run", key, getattr(a, key), getattr(b, key), None))
    for key in COMPARE_METRICS:
        if key == "flags":  # said in the warnings, with why
            continue
        va, vb = a.metrics.get(key), b.metrics.get(key)
        if va is None and vb is None:
            continue
        rows.append(CompareRow("metrics", key, va, vb, _ratio(va, vb)))
    for key in COMPARE_BOOT:
        va, vb = a.boot.get(key), b.boot.get(key)
        if va is None and vb is None:
            continue
        rows.append(CompareRow("boot", key, va, vb, _ratio(va, vb)))
    pins = check_pins(a, b)  # concurrency and num_prompts are pins: differing or unknown is said there
    warnings: list[str] = list(pins.notes)
    for side, run in (("A", a), ("B", b)):
        if run.status != "DONE":
            warnings.append(f"run {run.display_id} is {run.status}, not DONE")
        flagged = flags_text(run.metrics.get("flags"))
        if flagged:
            warnings.append(f"{side} {run.display_id}'s figures are flagged: {flagged}")
    return Comparison(a, b, rows, warnings, pins)

"""Questions asked of the ledger: history per draft / model / recipe, and comparisons.

History aggregates in SQL (one indexed GROUP BY), so it stays fast at 100k runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, and_, case, func, select

from autobench.errors import LedgerError
from autobench.ledger.models import BOOT_KEYS, METRIC_KEYS, RUNS, STATUSES, RunRecord

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

    def __str__(self) -> str:
        return f"{self.category or 'unknown'}: {self.message or ''}".rstrip(": ")


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

    def to_json_dict(self) -> dict[str, Any]:
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

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "group_by": self.group_label,
            "runs": self.runs,
            "groups": [g.to_json_dict() for g in self.groups],
        }


def history(conn: Connection, kind: str, subject: str) -> History:
    if kind not in HISTORY_KINDS:
        raise LedgerError(f"unknown history kind {kind!r}", hint="use draft, model or recipe")
    where_col, group_col, label = HISTORY_KINDS[kind]
    where = RUNS.c[where_col] == subject
    key = RUNS.c[group_col]
    status_counts = [
        func.sum(case((RUNS.c.status == s, 1), else_=0)).label(s) for s in STATUSES
    ]
    rows = conn.execute(
        select(
            key.label("key"),
            func.count().label("runs"),
            *status_counts,
            func.min(RUNS.c.started_at).label("first_seen"),
            func.max(RUNS.c.started_at).label("last_seen"),
            func.min(RUNS.c.id).label("first_run"),
            func.max(RUNS.c.id).label("last_run"),
            func.max(RUNS.c.decode_tok_s).label("best_decode"),
        )
        .where(where)
        .group_by(key)
        .order_by(func.min(RUNS.c.id))
    ).all()
    groups: dict[str | None, HistoryGroup] = {}
    for r in rows:
        groups[r.key] = HistoryGroup(
            key=r.key,
            runs=r.runs,
            by_status={s: int(getattr(r, s) or 0) for s in STATUSES},
            first_seen=r.first_seen,
            last_seen=r.last_seen,
            first_run=r.first_run,
            last_run=r.last_run,
            best_decode_tok_s=r.best_decode,
            recipes=[],
        )
    if not groups:
        return History(kind, subject, label, [])
    recipes = conn.execute(
        select(key, RUNS.c.recipe_name).where(where).group_by(key, RUNS.c.recipe_name)
    ).all()
    for k, name in recipes:
        groups[k].recipes.append(name)
    causes = conn.execute(
        select(
            key,
            RUNS.c.root_cause_category,
            RUNS.c.root_cause_message,
            func.count().label("n"),
            func.max(RUNS.c.id).label("last"),
        )
        .where(
            and_(
                where,
                (RUNS.c.root_cause_category.is_not(None)) | (RUNS.c.root_cause_message.is_not(None)),
            )
        )
        .group_by(key, RUNS.c.root_cause_category, RUNS.c.root_cause_message)
    ).all()
    for k, category, message, n, last in sorted(causes, key=lambda c: (-c.n, -c.last)):
        group = groups[k]
        if len(group.root_causes) < ROOT_CAUSES_PER_GROUP:
            group.root_causes.append(RootCause(category, message, n, last))
    return History(kind, subject, label, list(groups.values()))


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
    a: Any
    b: Any
    ratio: float | None  # b / a, when both are non-zero numbers

    def to_json_dict(self) -> dict[str, Any]:
        return {"section": self.section, "key": self.key, "a": self.a, "b": self.b, "ratio": self.ratio}


@dataclass
class Comparison:
    a: RunRecord
    b: RunRecord
    rows: list[CompareRow]
    warnings: list[str]

    @property
    def decode_speedup(self) -> float | None:
        return next((r.ratio for r in self.rows if r.key == "decode_tok_s"), None)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "a": {"id": self.a.id, "display_id": self.a.display_id, "recipe": self.a.recipe_name,
                  "status": self.a.status},
            "b": {"id": self.b.id, "display_id": self.b.display_id, "recipe": self.b.recipe_name,
                  "status": self.b.status},
            "decode_speedup": self.decode_speedup,
            "rows": [r.to_json_dict() for r in self.rows],
            "warnings": list(self.warnings),
        }


def _ratio(a: Any, b: Any) -> float | None:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if isinstance(a, numbers) and isinstance(b, numbers) and a != 0:
        return b / a
    return None


def compare(a: RunRecord, b: RunRecord) -> Comparison:
    rows: list[CompareRow] = []
    for key in ("recipe_name", "status", "model_repo", "model_sha", "draft_repo", "draft_sha",
                "image", "engine_version", "started_at"):
        rows.append(CompareRow("run", key, getattr(a, key), getattr(b, key), None))
    for key in COMPARE_METRICS:
        va, vb = a.metrics.get(key), b.metrics.get(key)
        if va is None and vb is None:
            continue
        rows.append(CompareRow("metrics", key, va, vb, _ratio(va, vb)))
    for key in COMPARE_BOOT:
        va, vb = a.boot.get(key), b.boot.get(key)
        if va is None and vb is None:
            continue
        rows.append(CompareRow("boot", key, va, vb, _ratio(va, vb)))
    warnings: list[str] = []
    ca, cb = a.metrics.get("concurrency"), b.metrics.get("concurrency")
    if ca != cb:
        if ca is None or cb is None:
            warnings.append(
                f"concurrency is unknown for run {a.display_id if ca is None else b.display_id}; "
                "ratios may not compare like with like"
            )
        else:
            warnings.append(f"concurrency differs ({ca} vs {cb}); throughput ratios are not like for like")
    for run in (a, b):
        if run.status != "DONE":
            warnings.append(f"run {run.display_id} is {run.status}, not DONE")
    if a.metrics.get("num_prompts") != b.metrics.get("num_prompts") and None not in (
        a.metrics.get("num_prompts"), b.metrics.get("num_prompts")
    ):
        warnings.append("num_prompts differs between the runs")
    return Comparison(a, b, rows, warnings)

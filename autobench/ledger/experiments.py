"""The ledger's experiment records (schema v10): what ``autobench experiment run`` planned and
did, one row per invocation.  A treatment's runs are the runs of its recipe digest; the record
keeps what no run can: the definition, the plan's digest, and the treatments that were pruned
(with the predicted cause) or left after an abort.

Pure: the rows' values and content hash.  ``Ledger.record_experiment`` / ``experiments`` store
and read them; ``Ledger.verify`` recomputes every row's content hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from autobench.ledger.models import EXPERIMENT_CONTENT
from autobench.redaction import redact


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(row: Mapping[str, object]) -> str:
    """sha256 hex of the record's content columns (all but id and the hash itself)."""
    return hashlib.sha256(canonical({k: row[k] for k in EXPERIMENT_CONTENT}).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ExperimentRecord:
    id: int
    name: str
    plan_digest: str
    recorded_at: str
    definition: dict[str, object]
    treatments: list[dict[str, object]]
    content_hash: str

    def to_json_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "plan_digest": self.plan_digest,
            "recorded_at": self.recorded_at,
            "definition": self.definition,
            "treatments": self.treatments,
            "content_hash": self.content_hash,
        }


def new_experiment_values(
    name: str, plan_digest: str, definition: Mapping[str, object], treatments: Sequence[Mapping[str, object]]
) -> dict[str, object]:
    """The row to append (every string redacted, as a run's are)."""
    row: dict[str, object] = {
        "name": redact(name),
        "plan_digest": plan_digest,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "definition": redact(canonical(definition)),
        "treatments": redact(canonical(list(treatments))),
    }
    row["content_hash"] = content_hash(row)
    return row


def record_from_row(row: Mapping[str, object]) -> ExperimentRecord:
    definition = json.loads(str(row["definition"]))
    treatments = json.loads(str(row["treatments"]))
    return ExperimentRecord(
        id=int(str(row["id"])),
        name=str(row["name"]),
        plan_digest=str(row["plan_digest"]),
        recorded_at=str(row["recorded_at"]),
        definition=definition if isinstance(definition, dict) else {},
        treatments=treatments if isinstance(treatments, list) else [],
        content_hash=str(row["content_hash"]),
    )


def problem(row: Mapping[str, object]) -> str | None:
    """Why a stored experiment row does not verify (None when it does)."""
    if row["content_hash"] != content_hash(row):
        return f"experiment record #{row['id']} does not match its content_hash: it was changed after it was recorded"
    return None

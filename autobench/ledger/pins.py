"""Whether two runs ran the same thing: the pins ``compare`` (and ``regress``) insist on.

A pin is what fixes a run's outcome besides the code under test: the model and draft repos
and shas, the image (its digest when both runs know one), the engine version, the engine
arguments and bench parameters of the recipe snapshot (``engine``, ``speculative`` other
than the draft's repo and revision, ``env``, ``bench``), and the bench's concurrency and
prompt count as the results state them.

Only pins both runs know are compared.  A pin one run does not know (a sha recorded as
unknown, a run stored without a recipe snapshot) cannot be shown to match: it becomes a
note, not a difference.  A draft repo is known on both sides (no draft is a fact).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from autobench.errors import LedgerError
from autobench.ledger.models import RunRecord

#: Recipe-snapshot sections that are engine arguments or bench parameters.
SNAPSHOT_SECTIONS = ("engine", "speculative", "env", "bench")
#: Speculative keys that are pinned by the run's own columns (draft_repo, draft_sha).
_DRAFT_KEYS = frozenset({"model", "revision"})
#: Bench parameters the result itself states (metric columns).
RESULT_PARAMS = ("concurrency", "num_prompts")

UNSET = "(unset)"
NONE = "(none)"


@dataclass(frozen=True)
class PinDiff:
    pin: str
    a: object
    b: object

    def text(self) -> str:
        return f"{self.pin}: {show(self.a)} vs {show(self.b)}"

    def to_json_dict(self) -> dict[str, object]:
        return {"pin": self.pin, "a": self.a, "b": self.b}


@dataclass
class PinCheck:
    differences: list[PinDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # pins that could not be compared

    @property
    def same(self) -> bool:
        return not self.differences


def show(value: object) -> str:
    if value is None:
        return NONE
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def _flat(prefix: str, value: object, out: dict[str, object]) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flat(f"{prefix}.{key}", value[key], out)
    else:
        out[prefix] = value


def snapshot_params(rec: RunRecord) -> dict[str, object] | None:
    """The engine arguments and bench parameters of ``rec``'s recipe snapshot, flattened
    (``engine.max_num_seqs``, ``bench.dataset.kind``); None when no snapshot was stored."""
    snap = rec.recipe_snapshot
    if not isinstance(snap, dict):
        return None
    out: dict[str, object] = {}
    for section in SNAPSHOT_SECTIONS:
        value = snap.get(section)
        if value is None:
            continue
        if section == "speculative" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in _DRAFT_KEYS}
        _flat(section, value, out)
    return out


def check_pins(a: RunRecord, b: RunRecord) -> PinCheck:
    """The pins on which runs ``a`` and ``b`` differ, and the ones that could not be compared."""
    check = PinCheck()

    def both(pin: str, va: object, vb: object) -> None:
        if va is None or vb is None:
            if va is not None or vb is not None:
                who = a if va is None else b
                check.notes.append(f"{pin} is unknown for run {who.display_id}; not checked")
            return
        if va != vb:
            check.differences.append(PinDiff(pin, va, vb))

    both("model_repo", a.model_repo, b.model_repo)
    both("model_sha", a.model_sha, b.model_sha)
    if a.draft_repo != b.draft_repo:  # None is "no draft", a fact
        check.differences.append(PinDiff("draft_repo", a.draft_repo, b.draft_repo))
    elif a.draft_repo is not None:
        both("draft_sha", a.draft_sha, b.draft_sha)
    if a.image_digest and b.image_digest:
        both("image_digest", a.image_digest, b.image_digest)
    else:
        both("image", a.image, b.image)
    both("engine_version", a.engine_version, b.engine_version)
    pa, pb = snapshot_params(a), snapshot_params(b)
    if pa is not None and pb is not None:
        for key in sorted(pa.keys() | pb.keys()):
            va, vb = pa.get(key, UNSET), pb.get(key, UNSET)
            if va != vb:
                check.differences.append(PinDiff(key, va, vb))
    elif pa is not None or pb is not None:
        who = a if pa is None else b
        check.notes.append(
            f"run {who.display_id} stored no recipe snapshot; engine arguments and bench parameters not checked"
        )
    for key in RESULT_PARAMS:
        both(key, a.metrics.get(key), b.metrics.get(key))
    return check


def require_same_pins(a: RunRecord, b: RunRecord, check: PinCheck) -> None:
    """Refuse (one line, exit 4) to compare runs whose pins differ, naming every difference."""
    if check.same:
        return
    listed = "; ".join(d.text() for d in check.differences)
    raise LedgerError(
        f"runs {a.display_id} and {b.display_id} do not share their pins "
        f"({len(check.differences)} differ, A vs B): {listed}",
        hint="compare runs of the same pins, or pass --anyway to compare them regardless",
    )


__all__ = ["PinCheck", "PinDiff", "check_pins", "require_same_pins", "snapshot_params", "show"]

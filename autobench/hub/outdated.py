"""``autobench outdated``: has the branch a pin was taken from moved, and what changed?

For each reference of a recipe: the pinned sha (the recipe's full-sha revision, or the lock file's
sha for the same key, label and repo) and its label (``# frozen:`` comment, else the lock file,
else ``main``, assumed and said).  Where the label points now comes from the Hub (or, offline,
from ``refs/<label>`` in the local HF cache).  If it moved, both commits' config.json are compared
field by field; attention/KV geometry changes are flagged breaking (see diff.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.errors import HubError
from autobench.hub.diff import ABSENT, Change, diff_configs
from autobench.hub.lockfile import lock_entry, pin_label, read_lock, references
from autobench.hub.resolve import Resolver, is_sha


@dataclass
class Outdated:
    recipe: Path
    kind: str
    repo: str
    label: str
    label_assumed: bool
    pinned: str | None  # None: not pinned (follows a branch)
    current: str
    status: str  # "up-to-date" | "moved" | "unpinned"
    changes: list[Change] = field(default_factory=list)
    note: str | None = None

    @property
    def breaking(self) -> bool:
        return any(c.breaking for c in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": str(self.recipe),
            "kind": self.kind,
            "repo": self.repo,
            "label": self.label,
            "label_assumed": self.label_assumed,
            "pinned": self.pinned,
            "current": self.current,
            "status": self.status,
            "breaking": self.breaking,
            "note": self.note,
            "changes": [c.to_json() for c in self.changes],
        }


def _dataset_changes(item: Outdated, file: str | None, resolver: Resolver) -> None:
    """A moved dataset: did the recipe's file change between the two commits?  Its identity at
    each (the Hub's LFS sha256, else the git blob id) comes from ``dataset_info``; offline the
    comparison is unavailable and said so."""
    from autobench.hub.datasets import file_ids

    assert item.pinned is not None and file is not None
    if resolver.settings.offline:
        item.note = f"whether {file} changed is unknown offline"
        return
    old, new = file_ids(resolver, item.repo, file, item.pinned, item.current)
    if old == new:
        item.note = f"{file} is the same at both commits"
    else:
        item.changes = [Change(file, ABSENT if old is None else old, ABSENT if new is None else new, False)]


def check_recipe(recipe_path: str | Path, resolver: Resolver) -> list[Outdated]:
    from autobench.recipe.loader import load_recipe

    recipe_path = Path(recipe_path)
    loaded = load_recipe(recipe_path)
    lock = read_lock(recipe_path)
    out: list[Outdated] = []
    for spec in references(loaded.recipe):
        revision = spec.revision or "main"
        note = None
        if is_sha(revision):
            pinned: str | None = revision
            label, assumed = pin_label(loaded, spec, lock)
        else:
            entry = lock_entry(lock, spec)
            label, assumed = revision, False
            if entry and entry.get("label") == revision and is_sha(entry.get("sha")):
                pinned, note = entry["sha"], "pinned in the lock file only (the recipe still says the branch)"
            else:
                pinned = None
        if assumed:
            note = "no label recorded for this sha: assuming it was taken from main"
        try:
            current = resolver.sha(spec.repo, label, spec.repo_type)
            item = Outdated(recipe_path, spec.kind, spec.repo, label, assumed, pinned, current, "unpinned", note=note)
            if pinned is None:
                item.note = f"not pinned: follows {label}; run `autobench lock {recipe_path}`"
            elif pinned == current:
                item.status = "up-to-date"
            elif spec.kind == "dataset":
                item.status = "moved"
                _dataset_changes(item, loaded.recipe.bench.dataset.file, resolver)
            else:
                item.status = "moved"
                try:
                    old = resolver.config(spec.repo, pinned, label=pinned)
                    new = resolver.config(spec.repo, current, label=label)
                except HubError as exc:
                    if not resolver.settings.offline:
                        raise
                    item.note = f"config diff unavailable offline: {exc}"
                else:
                    item.changes = diff_configs(old, new)
        except HubError as exc:
            where = loaded.position(*spec.rev_key) or loaded.position(*spec.repo_key)
            exc.location = exc.location or (str(where) if where else str(recipe_path))
            raise
        out.append(item)
    return out

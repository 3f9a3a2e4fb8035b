"""The catalogue as rows (``autobench recipes``): each recipe's model, draft, pins and last run.

    catalogue(paths, ledger) -> list[Entry]

A recipe that does not load is still listed, with the error that stops it, so the table
shows the whole folder.  Pin status comes from :func:`autobench.recipe.facts.pins` (the
same answer ``lock``, ``compile --frozen`` and ``run`` use); the last run is the newest row
the ledger holds for the recipe's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.errors import AutobenchError

if TYPE_CHECKING:
    from autobench.ledger.store import Ledger


@dataclass
class Entry:
    file: str
    name: str
    model: str | None = None
    draft: str | None = None
    pinned: bool | None = None  # None: the recipe does not load
    unpinned: tuple[str, ...] = ()  # kinds not pinned to a full sha ("model", "draft", ...)
    last_run: str | None = None  # display id
    last_status: str | None = None
    last_at: str | None = None
    error: str | None = None

    @property
    def pin_text(self) -> str:
        if self.pinned is None:
            return "-"
        return "yes" if self.pinned else "no: " + ", ".join(self.unpinned)

    @property
    def run_text(self) -> str:
        if self.error:
            return f"invalid: {self.error}"
        if self.last_run is None:
            return "never run"
        when = (self.last_at or "")[:16].replace("T", " ")
        return f"{self.last_status} {self.last_run}" + (f" {when}" if when else "")

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "name": self.name,
            "model": self.model,
            "draft": self.draft,
            "pinned": self.pinned,
            "unpinned": list(self.unpinned),
            "last_run": self.last_run,
            "last_status": self.last_status,
            "last_at": self.last_at,
            "error": self.error,
        }


def entry(path: Path) -> Entry:
    """One recipe file as a catalogue entry (without its last run)."""
    from autobench.recipe import load_recipe
    from autobench.recipe.facts import pins

    try:
        recipe = load_recipe(path).recipe
    except AutobenchError as exc:
        return Entry(file=str(path), name=path.stem, error=exc.message)
    spec = recipe.speculative
    wanted = pins(recipe)
    loose = tuple(dict.fromkeys(p.kind for p in wanted if not p.full_sha))
    return Entry(
        file=str(path),
        name=recipe.name,
        model=recipe.model.repo,
        draft=spec.model if spec is not None else None,
        pinned=not loose,
        unpinned=loose,
    )


def catalogue(paths: list[Path], ledger: Ledger | None) -> list[Entry]:
    """Entries for ``paths`` (recipe files), with each one's last run from ``ledger`` (or none)."""
    out = [entry(p) for p in paths]
    if ledger is not None:
        for e in out:
            if e.error:
                continue
            runs = ledger.runs(recipe=e.name, limit=1, newest_first=True)
            if runs:
                last = runs[0]
                e.last_run, e.last_status = last.display_id, last.status
                e.last_at = last.started_at or last.ended_at
    return out


__all__ = ["Entry", "catalogue", "entry"]

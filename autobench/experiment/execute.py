"""Run an experiment: one boot per treatment, in design order, resumable from the ledger.

A treatment that already has a DONE run of its recipe digest in the ledger is skipped (``rerun``
runs it again), so an experiment interrupted after some treatments completes when run again.
A pruned treatment is not booted unless ``force``.  An ABORTED treatment (Ctrl-C, SIGTERM) stops
the experiment: the treatments after it are left for the next run.  The boot itself is the run
pipeline's (``run_one``: docker, process, multi-node or Slurm), so each treatment is recorded
like any run, under its own digest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autobench.errors import RunError
from autobench.experiment.plan import PRUNED, ExperimentPlan, PlannedTreatment
from autobench.recipe.loader import LoadedRecipe, load_recipe

RAN, SKIPPED, NOT_BOOTED, LEFT = "ran", "skipped", "pruned", "left"


@dataclass(frozen=True)
class Booted:
    """What ``run_one`` reports back: the run's status and its ledger reference."""

    status: str  # DONE | BLOCKED | FAILED | ABORTED
    display_id: str | None = None


@dataclass(frozen=True)
class TreatmentOutcome:
    planned: PlannedTreatment
    action: str  # ran | skipped (a DONE run of its digest was there) | pruned | left (after an abort)
    status: str | None  # the run's status (or the existing run's); None when not run
    display_id: str | None = None
    cause: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.planned.treatment.id,
            "label": self.planned.treatment.label(),
            "digest": self.planned.digest,
            "action": self.action,
            "status": self.status,
            "run": self.display_id,
            "cause": self.cause,
        }


def run_experiment(
    plan: ExperimentPlan,
    run_one: Callable[[PlannedTreatment], Booted],
    done_run: Callable[[LoadedRecipe], str | None],
    *,
    rerun: bool = False,
    force: bool = False,
    echo: Callable[[str], None] = print,
) -> list[TreatmentOutcome]:
    """Boot each treatment of ``plan`` that needs it (see the module doc); ``done_run`` names
    the DONE run of a treatment's digest already in the ledger, or None."""
    out: list[TreatmentOutcome] = []
    total = len(plan.treatments)
    aborted = False
    for n, planned in enumerate(plan.treatments, 1):
        t = planned.treatment
        head = f"[{n}/{total}] {t.id} {t.label()}"
        if aborted:
            out.append(TreatmentOutcome(planned, LEFT, None))
            continue
        if planned.status == PRUNED and not force:
            echo(f"{head}: pruned, not booted: {planned.cause}")
            out.append(TreatmentOutcome(planned, NOT_BOOTED, None, cause=planned.cause))
            continue
        existing = None if rerun else done_run(planned.loaded)
        if existing is not None:
            echo(f"{head}: DONE already ({existing}), skipped")
            out.append(TreatmentOutcome(planned, SKIPPED, "DONE", existing))
            continue
        echo(f"{head}: booting")
        booted = run_one(planned)
        echo(f"{head}: {booted.status}" + (f" ({booted.display_id})" if booted.display_id else ""))
        out.append(TreatmentOutcome(planned, RAN, booted.status, booted.display_id))
        aborted = booted.status == "ABORTED"
    return out


def exit_code(outcomes: list[TreatmentOutcome]) -> int:
    """0 when every treatment that was to run is DONE; 130 after an abort; 6 otherwise."""
    if any(o.status == "ABORTED" for o in outcomes):  # the treatments after it were left
        return 130
    if any(o.action == RAN and o.status != "DONE" for o in outcomes):
        return 6
    return 0


def _nest(path: tuple[str, ...], value: Any, into: dict[str, Any]) -> None:
    node = into
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def materialize(plan: ExperimentPlan, planned: PlannedTreatment, folder: Path) -> Path:
    """The treatment as a recipe file any runtime can run: ``extends:`` the experiment's recipe,
    its levels (and the experiment's bench keys) on top, the recipe's name kept; written as JSON
    (valid YAML) under ``folder``.  Loaded back, it must have the treatment's digest."""
    exp = plan.experiment
    doc: dict[str, Any] = {
        "extends": str(exp.recipe.resolve()),
        "name": planned.loaded.recipe.name,
    }
    for key, value in exp.bench.items():
        _nest(("bench", key), value, doc)
    for key, level, _ in planned.treatment.levels:
        _nest(tuple(key.split(".")), level, doc)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{planned.treatment.id}-{planned.digest.removeprefix('sha256:')[:12]}.yaml"
    text = f"# {exp.name} {planned.treatment.id}: {planned.treatment.label()} (autobench experiment run)\n"
    path.write_text(text + json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written = load_recipe(path).digest
    if written != planned.digest:  # the file would run another recipe than the plan holds
        raise RunError(
            f"{path}: the treatment file loads with digest {written[:19]}, not the planned {planned.digest[:19]}",
            hint="a bug: report it with the experiment file",
        )
    return path

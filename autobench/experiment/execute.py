"""Run an experiment: one boot per treatment, resumable from the ledger.

A treatment that already has a DONE run of its recipe digest in the ledger is skipped (``rerun``
runs it again), so an experiment interrupted after some treatments completes when run again.
A pruned treatment is not booted unless ``force``.

``run_experiment`` boots the treatments one after another, in design order: an ABORTED
treatment (Ctrl-C, SIGTERM) stops the experiment and the treatments after it are left for the
next run.  ``fan_out`` hands every treatment to boot to one call at once (a Slurm job array,
``autobench.experiment.array``) and takes back what each did.  Either way the boot itself is
the run pipeline's (``boot``: ``autobench.run.run_recipe``, which picks the runtime from
``autobench.run.pipeline.RUNTIMES``: docker, process, the multi-node driver for a recipe with
``topology.nodes`` > 1, Slurm), so each treatment is recorded like any run, under its own digest,
and the experiment's record names each run by its ``run_uid``: the same in every ledger the
run is pushed to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.errors import RunError
from autobench.experiment.plan import PRUNED, ExperimentPlan, PlannedTreatment
from autobench.recipe.loader import LoadedRecipe, load_recipe

if TYPE_CHECKING:
    from autobench.run.outcome import Echo, RunOptions

RAN, SKIPPED, NOT_BOOTED, LEFT = "ran", "skipped", "pruned", "left"


@dataclass(frozen=True)
class Booted:
    """A treatment's run: its status and its ledger references (the local display id, and the
    ``run_uid`` every ledger knows it by)."""

    status: str  # DONE | BLOCKED | FAILED | ABORTED
    display_id: str | None = None
    run_uid: str | None = None
    cause: str | None = None  # why there is no run (a task that ended before recording one)


@dataclass(frozen=True)
class TreatmentOutcome:
    planned: PlannedTreatment
    action: str  # ran | skipped (a DONE run of its digest was there) | pruned | left (after an abort)
    status: str | None  # the run's status (or the existing run's); None when not run
    display_id: str | None = None
    cause: str | None = None
    run_uid: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.planned.treatment.id,
            "label": self.planned.treatment.label(),
            "digest": self.planned.digest,
            "action": self.action,
            "status": self.status,
            "run": self.display_id,
            "run_uid": self.run_uid,
            "cause": self.cause,
        }

    def to_ledger_dict(self) -> dict[str, Any]:
        """The treatment as the experiment record keeps it: the plan's view (levels, digest, the
        prediction as ``plan``) and what was done, the run named by its ``run_uid`` alone (a
        display id is local to one ledger; ``ledger push`` carries the record as it is)."""
        planned = self.planned.to_json_dict()
        planned["plan"] = planned.pop("status")
        done = self.to_json_dict()
        del done["run"]
        return {**planned, **done}


Done = Callable[[LoadedRecipe], Booted | None]


def _head(n: int, total: int, planned: PlannedTreatment) -> str:
    t = planned.treatment
    return f"[{n}/{total}] {t.id} {t.label()}"


def settled(
    planned: PlannedTreatment, head: str, done_run: Done, *, rerun: bool, force: bool, echo: Echo
) -> TreatmentOutcome | None:
    """The outcome of a treatment that is not to boot -- pruned (unless ``force``), or with a
    DONE run of its digest already (unless ``rerun``) -- said on ``echo``; None: boot it."""
    if planned.status == PRUNED and not force:
        echo(f"{head}: pruned, not booted: {planned.cause}")
        return TreatmentOutcome(planned, NOT_BOOTED, None, cause=planned.cause)
    existing = None if rerun else done_run(planned.loaded)
    if existing is not None:
        echo(f"{head}: DONE already ({existing.display_id}), skipped")
        return TreatmentOutcome(planned, SKIPPED, "DONE", existing.display_id, run_uid=existing.run_uid)
    return None


def _ran(planned: PlannedTreatment, booted: Booted) -> TreatmentOutcome:
    return TreatmentOutcome(planned, RAN, booted.status, booted.display_id, booted.cause, booted.run_uid)


def said(booted: Booted) -> str:
    """A run's status as a progress line ends: ``DONE (#3-1a2b3c4d)``, ``FAILED: why``."""
    return (
        booted.status
        + (f" ({booted.display_id})" if booted.display_id else "")
        + (f": {booted.cause}" if booted.cause else "")
    )


def run_experiment(
    plan: ExperimentPlan,
    run_one: Callable[[PlannedTreatment], Booted],
    done_run: Done,
    *,
    rerun: bool = False,
    force: bool = False,
    echo: Echo = print,
) -> list[TreatmentOutcome]:
    """Boot each treatment of ``plan`` that needs it, one after another (see the module doc);
    ``done_run`` gives the DONE run of a treatment's digest already in the ledger, or None."""
    out: list[TreatmentOutcome] = []
    total = len(plan.treatments)
    aborted = False
    for n, planned in enumerate(plan.treatments, 1):
        head = _head(n, total, planned)
        if aborted:
            out.append(TreatmentOutcome(planned, LEFT, None))
            continue
        known = settled(planned, head, done_run, rerun=rerun, force=force, echo=echo)
        if known is not None:
            out.append(known)
            continue
        echo(f"{head}: booting")
        booted = run_one(planned)
        echo(f"{head}: {said(booted)}")
        out.append(_ran(planned, booted))
        aborted = booted.status == "ABORTED"
    return out


def fan_out(
    plan: ExperimentPlan,
    boot_all: Callable[[Sequence[PlannedTreatment]], Mapping[str, Booted]],
    done_run: Done,
    *,
    rerun: bool = False,
    force: bool = False,
    echo: Echo = print,
) -> list[TreatmentOutcome]:
    """Hand every treatment of ``plan`` that needs a boot to ``boot_all`` at once (a job array)
    and merge what it reports, by treatment id, into the outcomes in design order; a treatment
    it does not report was never started (the array was cancelled first): left for the next run."""
    total = len(plan.treatments)
    known: dict[str, TreatmentOutcome] = {}
    todo: list[PlannedTreatment] = []
    for n, planned in enumerate(plan.treatments, 1):
        outcome = settled(planned, _head(n, total, planned), done_run, rerun=rerun, force=force, echo=echo)
        if outcome is None:
            todo.append(planned)
        else:
            known[planned.treatment.id] = outcome
    booted = boot_all(todo) if todo else {}
    out: list[TreatmentOutcome] = []
    for planned in plan.treatments:
        tid = planned.treatment.id
        if tid in known:
            out.append(known[tid])
        elif tid in booted:
            out.append(_ran(planned, booted[tid]))
        else:
            out.append(TreatmentOutcome(planned, LEFT, None))
    return out


def boot(plan: ExperimentPlan, planned: PlannedTreatment, folder: Path, options: RunOptions, echo: Echo) -> Booted:
    """Boot one treatment through the run pipeline: written as a recipe file (``materialize``)
    and run by ``autobench.run.run_recipe`` on the runtime ``options`` and its topology pick."""
    from autobench.run import run_recipe

    outcome = run_recipe(materialize(plan, planned, folder), options, echo=echo)
    return Booted(outcome.status, outcome.display_id, outcome.run_uid)


def rules_runtime(options: RunOptions) -> Callable[[LoadedRecipe], str]:
    """The runtime whose rules each treatment is validated for: the one the run pipeline will
    boot it on (``cluster`` for a multi-node treatment unless Slurm runs its nodes)."""
    from autobench.run.pipeline import runtime_for

    def rules(loaded: LoadedRecipe) -> str:
        return runtime_for(loaded, options, lambda _: None, {}).rules

    return rules


def exit_code(outcomes: list[TreatmentOutcome]) -> int:
    """0 when every treatment that was to run is DONE; 130 after an abort (treatments left); 6 otherwise."""
    if any(o.status == "ABORTED" or o.action == LEFT for o in outcomes):
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

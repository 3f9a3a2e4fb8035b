"""Confirmation boots: the verdict between the best and the runner-up judged across boots.

One boot per treatment screens the design; its verdict's band comes from the requests of one
boot, so it cannot see what moves between boots (a server's warm-up, the machine's load, a
GPU's clocks).  ``experiment run --confirm N`` then boots the top treatments of each bench cell
again, ``N`` times each, **interleaved** (round 1: A, B; round 2: A, B; ...: a drift in time
falls on both sides alike), and the report judges the best against the runner-up on those
boots alone: each boot's value of the metric is one observation, and the band is Student's t
interval across boots (``ledger.verdict.log_t_band``), so boot-to-boot noise is in it.

The confirmation boots are fresh data, taken after the screening chose which treatments to
confirm: the screening boot is left out of the verdict, so the winner's curse of picking the
top of many (its boot read fast by luck) does not enter the band.  Among the confirmed
treatments the best and the runner-up are picked again, by their confirmation boots, and the
band is corrected for that pick (``analysis.band_level`` over the confirmed ones).

The experiment record keeps, per treatment, its confirmation boots (``confirm``: run_uid,
status, round); a run of the treatment's digest named there is a confirmation boot, any other
DONE run of it a screening boot.  Resumable like the screening: a treatment with N DONE
confirmation boots recorded is not booted again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autobench.experiment.execute import Booted
from autobench.experiment.plan import ExperimentPlan, PlannedTreatment

if TYPE_CHECKING:
    from autobench.experiment.analysis import Analysis, TreatmentRun
    from autobench.ledger.experiments import ExperimentRecord
    from autobench.ledger.store import Ledger
    from autobench.run.outcome import Echo

#: The key of a treatment's confirmation boots in an experiment record's treatment entry.
CONFIRM = "confirm"


@dataclass(frozen=True)
class Confirmation:
    """One confirmation boot of a treatment: the round it was booted in (1-based) and its run."""

    planned: PlannedTreatment
    round: int
    booted: Booted

    def to_ledger_dict(self) -> dict[str, Any]:
        return {"run_uid": self.booted.run_uid, "status": self.booted.status, "round": self.round}


def confirmed_uids(records: Iterable[ExperimentRecord]) -> dict[str, set[str]]:
    """Treatment digest -> the run_uids of its DONE confirmation boots, over ``records`` (the
    records of one plan)."""
    out: dict[str, set[str]] = {}
    for record in records:
        for entry in record.treatments:
            boots = entry.get(CONFIRM)
            digest = entry.get("digest")
            if not isinstance(boots, list) or not isinstance(digest, str):
                continue
            for boot in boots:
                if isinstance(boot, dict) and boot.get("status") == "DONE" and isinstance(boot.get("run_uid"), str):
                    out.setdefault(digest, set()).add(boot["run_uid"])
    return out


def treatment_runs(book: Ledger, plan: ExperimentPlan, records: Sequence[ExperimentRecord]) -> list[TreatmentRun]:
    """Each treatment's screening run (its latest DONE run that is no confirmation boot) and its
    confirmation boots (oldest first), with their cells, from ``book``."""
    from autobench.experiment.analysis import TreatmentRun

    uids = confirmed_uids(records)
    out = []
    for planned in plan.treatments:
        done = book.runs(status="DONE", digest=planned.digest, newest_first=True)
        mine = uids.get(planned.digest, set())
        screening = next((r for r in done if r.stable_id not in mine), None)
        boots = [(r, book.cells(r.id)) for r in reversed(done) if r.stable_id in mine]
        cells = book.cells(screening.id) if screening is not None else ()
        out.append(TreatmentRun(planned, screening, cells, tuple(boots)))
    return out


def select(analysis: Analysis, top: int) -> list[PlannedTreatment]:
    """The treatments to confirm: in every bench cell, the first ``top`` of the ranking that
    meet the SLOs (confirmed ones lead it, so a resumed confirmation picks the same), in design
    order."""
    chosen: set[str] = set()
    for cell in analysis.cells:
        eligible = [p for p in cell.points if p.value is not None and p.meets_slo]
        chosen.update(p.treatment.planned.treatment.id for p in eligible[:top])
    return [p for p in analysis.plan.treatments if p.treatment.id in chosen]


def confirm(
    selected: Sequence[PlannedTreatment],
    have: Mapping[str, int],
    boots: int,
    boot_round: Callable[[Sequence[PlannedTreatment]], Mapping[str, Booted]],
    *,
    echo: Echo = print,
) -> tuple[list[Confirmation], bool]:
    """Boot each of ``selected`` up to ``boots`` DONE confirmation boots (``have``: the DONE
    ones recorded already, by digest), in rounds: round r boots every treatment that had fewer
    than r when the call began, in design order, through ``boot_round`` (one call a round: a
    job array on Slurm); a treatment booted in a round is booted in every later one, so a
    failed boot is not made up for beyond the ``boots`` rounds.  Stops after an ABORTED boot or
    a treatment the round did not report (cancelled before it started).  The boots made, and
    whether it stopped early."""
    done = {p.digest: have.get(p.digest, 0) for p in selected}  # the recorded ones decide the rounds
    out: list[Confirmation] = []
    for r in range(1, boots + 1):
        todo = [p for p in selected if done[p.digest] < r]
        if not todo:
            continue
        echo(f"confirmation round {r}/{boots}: {', '.join(p.treatment.id for p in todo)}")
        got = boot_round(todo)
        for p in todo:
            booted = got.get(p.treatment.id)
            if booted is None:
                return out, True
            out.append(Confirmation(p, r, booted))
            if booted.status == "ABORTED":
                return out, True
    return out, False


def one_by_one(
    run_one: Callable[[PlannedTreatment], Booted], echo: Echo = print
) -> Callable[[Sequence[PlannedTreatment]], dict[str, Booted]]:
    """A round for a runtime that boots one treatment at a time: each in order, said on
    ``echo``, stopping after an ABORTED one (the rest are not reported: left)."""

    def boot_round(todo: Sequence[PlannedTreatment]) -> dict[str, Booted]:
        got: dict[str, Booted] = {}
        for p in todo:
            echo(f"{p.treatment.id} {p.treatment.label()}: confirmation boot")
            booted = run_one(p)
            got[p.treatment.id] = booted
            echo(f"{p.treatment.id} {p.treatment.label()}: {booted.status}")
            if booted.status == "ABORTED":
                break
        return got

    return boot_round


__all__ = [
    "CONFIRM",
    "Confirmation",
    "confirm",
    "confirmed_uids",
    "one_by_one",
    "select",
    "treatment_runs",
]

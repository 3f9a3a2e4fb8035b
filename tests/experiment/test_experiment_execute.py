"""run_experiment's decisions, with the boot itself stood in (a GPU cannot exist here; the
process runtime's real boots are in test_experiment_run.py): pruned treatments are not booted,
DONE treatments are skipped on a re-run, an abort leaves the rest for the next run."""

from __future__ import annotations

from pathlib import Path

from test_experiment_design import write

from autobench.experiment import load_experiment, plan_experiment
from autobench.experiment.execute import LEFT, NOT_BOOTED, RAN, SKIPPED, Booted, exit_code, run_experiment
from autobench.experiment.plan import PRUNED, READY


def _plan(tmp_path: Path, prune: set[int] = frozenset()):  # type: ignore[assignment]
    path = write(tmp_path, "factors:\n  engine.max_num_seqs: [1, 2, 3, 4]\n")

    def predict(loaded):
        seqs = loaded.recipe.engine.max_num_seqs
        return (PRUNED, f"predicted failure at {seqs}", "fix") if seqs in prune else (READY, None, None)

    return plan_experiment(load_experiment(path), predictor=predict)


def test_pruned_treatments_are_not_booted_and_the_rest_run_in_order(tmp_path) -> None:
    plan = _plan(tmp_path, prune={2})
    booted: list[str] = []
    lines: list[str] = []

    def run_one(planned):
        booted.append(planned.treatment.id)
        return Booted("DONE", f"#{len(booted)}")

    out = run_experiment(plan, run_one, lambda loaded: None, echo=lines.append)
    assert booted == ["t1", "t3", "t4"]
    assert [o.action for o in out] == [RAN, NOT_BOOTED, RAN, RAN]
    assert out[1].cause == "predicted failure at 2"
    assert lines[:3] == [
        "[1/4] t1 max_num_seqs=1: booting",
        "[1/4] t1 max_num_seqs=1: DONE (#1)",
        "[2/4] t2 max_num_seqs=2: pruned, not booted: predicted failure at 2",
    ]
    assert exit_code(out) == 0
    # --force boots the pruned one too
    booted.clear()
    run_experiment(plan, run_one, lambda loaded: None, force=True, echo=lines.append)
    assert booted == ["t1", "t2", "t3", "t4"]


def test_a_rerun_skips_the_treatments_with_a_done_run_of_their_digest(tmp_path) -> None:
    plan = _plan(tmp_path)
    done = {plan.treatments[0].digest: "#7", plan.treatments[2].digest: "#9"}
    booted: list[str] = []

    def run_one(planned):
        booted.append(planned.treatment.id)
        return Booted("DONE")

    out = run_experiment(plan, run_one, lambda loaded: done.get(loaded.digest), echo=lambda _: None)
    assert booted == ["t2", "t4"]
    assert [(o.action, o.display_id) for o in out] == [(SKIPPED, "#7"), (RAN, None), (SKIPPED, "#9"), (RAN, None)]
    booted.clear()
    run_experiment(plan, run_one, lambda loaded: done.get(loaded.digest), rerun=True, echo=lambda _: None)
    assert booted == ["t1", "t2", "t3", "t4"]


def test_an_abort_stops_the_experiment_and_leaves_the_rest(tmp_path) -> None:
    plan = _plan(tmp_path)
    statuses = iter(["DONE", "ABORTED"])
    out = run_experiment(plan, lambda p: Booted(next(statuses)), lambda loaded: None, echo=lambda _: None)
    assert [o.action for o in out] == [RAN, RAN, LEFT, LEFT]
    assert exit_code(out) == 130


def test_a_failed_treatment_does_not_stop_the_others_but_the_exit_says_so(tmp_path) -> None:
    plan = _plan(tmp_path)
    statuses = iter(["DONE", "BLOCKED", "DONE", "FAILED"])
    out = run_experiment(plan, lambda p: Booted(next(statuses)), lambda loaded: None, echo=lambda _: None)
    assert [o.status for o in out] == ["DONE", "BLOCKED", "DONE", "FAILED"]
    assert exit_code(out) == 6

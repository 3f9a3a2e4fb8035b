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
    done = {plan.treatments[0].digest: Booted("DONE", "#7"), plan.treatments[2].digest: Booted("DONE", "#9")}
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


def test_what_each_treatment_did_is_said_and_reported(tmp_path) -> None:
    plan = _plan(tmp_path, prune={4})
    lines: list[str] = []
    done = {plan.treatments[0].digest: Booted("DONE", "#7-1a2b3c4d", "7" * 32)}
    statuses = iter([Booted("DONE", "#8-2b3c4d5e", "8" * 32), Booted("FAILED", cause="no request completed")])
    out = run_experiment(plan, lambda p: next(statuses), lambda loaded: done.get(loaded.digest), echo=lines.append)
    assert lines == [
        "[1/4] t1 max_num_seqs=1: DONE already (#7-1a2b3c4d), skipped",
        "[2/4] t2 max_num_seqs=2: booting",
        "[2/4] t2 max_num_seqs=2: DONE (#8-2b3c4d5e)",
        "[3/4] t3 max_num_seqs=3: booting",
        "[3/4] t3 max_num_seqs=3: FAILED: no request completed",
        "[4/4] t4 max_num_seqs=4: pruned, not booted: predicted failure at 4",
    ]
    assert [o.to_json_dict() for o in out] == [
        {
            "id": "t1",
            "label": "max_num_seqs=1",
            "digest": plan.treatments[0].digest,
            "action": SKIPPED,
            "status": "DONE",
            "run": "#7-1a2b3c4d",
            "run_uid": "7" * 32,
            "cause": None,
        },
        {
            "id": "t2",
            "label": "max_num_seqs=2",
            "digest": plan.treatments[1].digest,
            "action": RAN,
            "status": "DONE",
            "run": "#8-2b3c4d5e",
            "run_uid": "8" * 32,
            "cause": None,
        },
        {
            "id": "t3",
            "label": "max_num_seqs=3",
            "digest": plan.treatments[2].digest,
            "action": RAN,
            "status": "FAILED",
            "run": None,
            "run_uid": None,
            "cause": "no request completed",
        },
        {
            "id": "t4",
            "label": "max_num_seqs=4",
            "digest": plan.treatments[3].digest,
            "action": NOT_BOOTED,
            "status": None,
            "run": None,
            "run_uid": None,
            "cause": "predicted failure at 4",
        },
    ]
    assert exit_code(out) == 6


def test_an_abort_of_the_last_treatment_exits_130(tmp_path) -> None:
    plan = _plan(tmp_path)
    statuses = iter(["DONE", "DONE", "DONE", "ABORTED"])
    out = run_experiment(plan, lambda p: Booted(next(statuses)), lambda loaded: None, echo=lambda _: None)
    assert LEFT not in [o.action for o in out] and exit_code(out) == 130


def test_a_treatment_is_written_as_a_recipe_with_the_planned_digest(tmp_path) -> None:
    import json

    import pytest

    from autobench.errors import RunError
    from autobench.experiment.execute import materialize
    from autobench.recipe import load_recipe

    path = write(
        tmp_path,
        "name: sweep-\u00e9t\u00e9\nbench: {concurrency: [1, 8]}\n"
        "factors:\n  engine.max_num_seqs: [4]\n  env.NOTE: ['caf\u00e9']\n",
    )
    plan = plan_experiment(load_experiment(path), predictor=lambda loaded: (READY, None, None))
    (planned,) = plan.treatments
    written = materialize(plan, planned, tmp_path / "runs")
    assert written == tmp_path / "runs" / f"t1-{planned.digest.removeprefix('sha256:')[:12]}.yaml"
    text = written.read_text(encoding="utf-8")
    assert text.startswith("# sweep-\u00e9t\u00e9 t1: max_num_seqs=4 NOTE=caf\u00e9 (autobench experiment run)\n{\n  ")
    assert text.endswith("}\n") and "caf\u00e9" in text  # UTF-8 as written, not \\u escapes
    doc = json.loads(text.split("\n", 1)[1])
    assert text.split("\n", 1)[1] == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"  # as written, no escapes
    assert doc["bench"] == {"concurrency": [1, 8]} and doc["engine"] == {"max_num_seqs": 4}
    assert doc["extends"] == str((tmp_path / "r.yaml").resolve()) and doc["name"] == "small"
    loaded = load_recipe(written)
    assert loaded.digest == planned.digest and loaded.recipe.bench.concurrency == [1, 8]
    # a plan whose digest the written file does not have is refused, not run
    from dataclasses import replace

    wrong = replace(planned, loaded=load_recipe(tmp_path / "r.yaml"))
    with pytest.raises(RunError) as info:
        materialize(plan, wrong, tmp_path / "runs")
    assert "the treatment file loads with digest sha256:" in str(info.value)
    assert "not the planned sha256:" in str(info.value) and "a bug: report it" in str(info.value)


def test_fan_out_boots_every_treatment_left_at_once_and_merges_them_in_design_order(tmp_path) -> None:
    from autobench.experiment.execute import fan_out

    plan = _plan(tmp_path, prune={2})
    done = {plan.treatments[3].digest: Booted("DONE", "#4-4d4d4d4d", "4" * 32)}
    handed: list[list[str]] = []
    lines: list[str] = []

    def boot_all(todo):
        handed.append([p.treatment.id for p in todo])
        return {"t1": Booted("DONE", "#9-9a9a9a9a", "9" * 32)}  # t3 never started: the array was cancelled

    out = fan_out(plan, boot_all, lambda loaded: done.get(loaded.digest), echo=lines.append)
    assert handed == [["t1", "t3"]]  # once, with the treatments to boot only
    assert [(o.planned.treatment.id, o.action, o.status, o.run_uid) for o in out] == [
        ("t1", RAN, "DONE", "9" * 32),
        ("t2", NOT_BOOTED, None, None),
        ("t3", LEFT, None, None),
        ("t4", SKIPPED, "DONE", "4" * 32),
    ]
    assert lines == [
        "[2/4] t2 max_num_seqs=2: pruned, not booted: predicted failure at 2",
        "[4/4] t4 max_num_seqs=4: DONE already (#4-4d4d4d4d), skipped",
    ]
    assert exit_code(out) == 130  # a treatment was left for the next run
    # --rerun and --force hand every treatment over; with nothing to boot, boot_all is not called
    handed.clear()
    fan_out(plan, boot_all, lambda loaded: done.get(loaded.digest), rerun=True, force=True, echo=lines.append)
    assert handed == [["t1", "t2", "t3", "t4"]]
    handed.clear()
    every = {p.digest: Booted("DONE", "#1-00000000", "1" * 32) for p in plan.treatments}
    out = fan_out(plan, boot_all, lambda loaded: every.get(loaded.digest), force=True, echo=lines.append)
    assert handed == [] and [o.action for o in out] == [SKIPPED] * 4 and exit_code(out) == 0


def test_a_task_that_recorded_nothing_says_why_and_fails_the_exit(tmp_path) -> None:
    from autobench.experiment.execute import fan_out, said

    plan = _plan(tmp_path)
    why = "slurm task 7_0 ended FAILED (exit 2) without a run in the ledger; see slurm-7_0.out"
    reports = {p.treatment.id: Booted("DONE", f"#{n}-0", f"{n}" * 32) for n, p in enumerate(plan.treatments, 1)}
    reports["t1"] = Booted("FAILED", cause=why)
    out = fan_out(plan, lambda todo: reports, lambda loaded: None, echo=lambda _: None)
    assert out[0].to_json_dict()["cause"] == why and exit_code(out) == 6
    assert said(reports["t1"]) == f"FAILED: {why}"
    assert said(Booted("DONE", "#3-1a2b3c4d")) == "DONE (#3-1a2b3c4d)" and said(Booted("BLOCKED")) == "BLOCKED"


def test_the_record_keeps_each_treatment_with_its_run_uid_not_a_local_display_id(tmp_path) -> None:
    plan = _plan(tmp_path, prune={2})
    statuses = iter([Booted("DONE", "#8-2b3c4d5e", "8" * 32), Booted("ABORTED", "#9-3c4d5e6f", "9" * 32)])
    out = run_experiment(plan, lambda p: next(statuses), lambda loaded: None, echo=lambda _: None)
    ran, pruned, aborted, left = (o.to_ledger_dict() for o in out)
    assert ran == {
        "id": "t1",
        "label": "max_num_seqs=1",
        "levels": {"engine.max_num_seqs": 1},
        "digest": plan.treatments[0].digest,
        "plan": "ready",
        "cause": None,
        "fix": None,
        "unpinned": [],
        "action": RAN,
        "status": "DONE",
        "run_uid": "8" * 32,
    }
    assert (pruned["plan"], pruned["action"], pruned["status"], pruned["cause"]) == (
        "pruned",
        NOT_BOOTED,
        None,
        "predicted failure at 2",
    )
    assert pruned["fix"] == "fix" and pruned["run_uid"] is None
    assert (aborted["action"], aborted["status"], aborted["run_uid"]) == (RAN, "ABORTED", "9" * 32)
    assert (left["action"], left["status"], left["run_uid"]) == (LEFT, None, None)


def test_each_treatment_is_validated_for_the_runtime_the_pipeline_boots_it_on(tmp_path) -> None:
    from dataclasses import replace

    import pytest

    from autobench.errors import RecipeError
    from autobench.experiment.execute import rules_runtime
    from autobench.run.outcome import RunOptions

    two_nodes = "{topology.nodes: 2, topology.gpus_per_node: 1, engine.pipeline_parallel_size: 2}"
    path = write(tmp_path, f"design: list\ntreatments: [{{topology.nodes: 1}}, {two_nodes}]\n")
    plan = plan_experiment(load_experiment(path), predictor=lambda loaded: (READY, None, None), runtime=None)
    one, two = (p.loaded for p in plan.treatments)
    for runtime in ("docker", "process"):
        rules = rules_runtime(RunOptions(runtime=runtime))
        assert (rules(one), rules(two)) == (runtime, "cluster")  # two nodes: the multi-node driver
    slurm = RunOptions(runtime="slurm")
    assert rules_runtime(slurm)(two) == "slurm"  # Slurm runs the nodes itself
    assert rules_runtime(replace(slurm, container="docker"))(two) == "docker"
    # plan_experiment checks each treatment with its own: a two-node grid runs on one boot of the
    # multi-node driver, which the docker runtime's rules (one node, one cell per boot) refuse
    grid = load_experiment(
        write(
            tmp_path,
            f"design: list\ntreatments: [{{topology.nodes: 1}}, {two_nodes}]\nbench: {{concurrency: [1, 2]}}\n",
        )
    )
    with pytest.raises(RecipeError, match="treatment t2 .*AB081 bench.concurrency: 2 bench cells, but 2 nodes"):
        plan_experiment(grid, predictor=lambda loaded: (READY, None, None), runtime="docker")
    checked = plan_experiment(grid, predictor=lambda loaded: (READY, None, None), runtime=rules_runtime(RunOptions()))
    assert [p.loaded.recipe.topology.nodes for p in checked.treatments] == [1, 2]


def test_boot_goes_through_the_run_pipeline_with_the_treatment_file(tmp_path) -> None:
    from autobench.experiment.execute import boot
    from autobench.run.outcome import RunOptions

    plan = _plan(tmp_path)
    lines: list[str] = []
    options = RunOptions(runtime="process", dry_run=True, allow_unpinned=True, runs_dir=tmp_path / "runs")
    booted = boot(plan, plan.treatments[1], tmp_path / "exp", options, lines.append)
    assert booted == Booted("PLANNED", None, None)  # a dry run: planned by the pipeline, nothing recorded
    (written,) = (tmp_path / "exp").iterdir()
    assert written.name.startswith("t2-") and not (tmp_path / "runs").exists()


def test_the_report_lists_the_pruned_treatments_of_the_last_record(tmp_path, capsys) -> None:
    import json

    from autobench.cli import main
    from autobench.ledger import open_ledger
    from autobench.ledger.experiments import new_experiment_values

    path = write(tmp_path, "factors:\n  engine.max_num_seqs: [1, 2, 3, 4]\n")
    plan = _plan(tmp_path, prune={2})
    out = run_experiment(plan, lambda p: Booted("FAILED"), lambda loaded: None, echo=lambda _: None)
    ledger = str(tmp_path / "ledger.db")
    with open_ledger(ledger) as book:
        book.record_experiment(new_experiment_values("exp", plan.digest, {}, [o.to_ledger_dict() for o in out]))
    assert main(["experiment", "report", str(path), "--ledger", ledger, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pruned"] == [{"id": "t2", "label": "max_num_seqs=2", "cause": "predicted failure at 2"}]

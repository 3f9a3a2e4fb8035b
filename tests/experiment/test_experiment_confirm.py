"""Confirmation boots (autobench.experiment.confirm) and the verdict judged across them
(autobench.experiment.analysis): which treatments are confirmed, the interleaved rounds, what the
experiment record keeps, how the report tells screening boots from confirmation boots, and the
verdict's band across boots -- built in-process on a real ledger, each boot's samples seeded
draws around a known TPOT, so every verdict's truth is known."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from experiment_world import cell, plan, record, write

from autobench.experiment.analysis import TreatmentRun, analyse, to_json_dict
from autobench.experiment.confirm import (
    Confirmation,
    confirm,
    confirmed_uids,
    one_by_one,
    select,
    treatment_runs,
)
from autobench.experiment.execute import Booted
from autobench.experiment.plan import ExperimentPlan, PlannedTreatment
from autobench.ledger import open_ledger
from autobench.ledger.experiments import new_experiment_values

K4 = "  speculative.num_speculative_tokens: [1, 2, 3, 4]\n"
ONE_CELL = "bench: {concurrency: 1}\n"


def _ids(points) -> list[str]:  # type: ignore[no-untyped-def]
    return [p.treatment.planned.treatment.id for p in points]


def _uids(db, p: ExperimentPlan, tid: str) -> list[str]:  # type: ignore[no-untyped-def]
    digest = next(t.digest for t in p.treatments if t.treatment.id == tid)
    with open_ledger(db, create=False) as book:
        return [r.stable_id for r in book.runs(status="DONE", digest=digest)]


def _note(db, p: ExperimentPlan, boots: Mapping[str, Sequence[str]], status: str = "DONE") -> None:  # type: ignore[no-untyped-def]
    """An experiment record naming ``boots`` (treatment id -> run_uids) as confirmation boots."""
    entries = []
    for t in p.treatments:
        entry: dict[str, object] = {"id": t.treatment.id, "digest": t.digest, "action": "skipped"}
        if t.treatment.id in boots:
            entry["confirm"] = [
                {"run_uid": u, "status": status, "round": n} for n, u in enumerate(boots[t.treatment.id], 1)
            ]
        entries.append(entry)
    with open_ledger(db) as book:
        book.record_experiment(new_experiment_values(p.experiment.name, p.digest, {}, entries))


def _confirmed(tmp_path, screen: Mapping[str, float], boots: Mapping[str, Sequence[float]], *, noise: float = 0.01):  # type: ignore[no-untyped-def]
    """A plan of four treatments: one screening boot each at ``screen`` TPOT, then the
    confirmation boots of ``boots`` (treatment -> each boot's TPOT), recorded as such."""
    p = plan(write(tmp_path, K4, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {tid: [cell(n, tpot, noise=noise)] for n, (tid, tpot) in enumerate(screen.items())})
    screening = {tid: set(_uids(db, p, tid)) for tid in boots}
    seed = 100
    for tid, values in boots.items():
        for tpot in values:
            seed += 1
            record(db, p, {tid: [cell(seed, tpot, noise=noise)]})
    _note(db, p, {tid: [u for u in _uids(db, p, tid) if u not in screening[tid]] for tid in boots})
    with open_ledger(db, create=False) as book:
        return p, db, treatment_runs(book, p, book.experiments(plan_digest=p.digest))


def test_a_lucky_screening_boot_is_no_claim_once_the_boots_show_the_noise(tmp_path) -> None:
    """t2's screening boot read 10 % fast (a lucky boot: the requests' band cannot tell); its
    four confirmation boots and t1's scatter 2 % around 2.00 and 2.02: across boots, no change."""
    screen = {"t1": 2.0, "t2": 1.8, "t3": 2.6, "t4": 3.0}
    boots = {"t1": [2.00, 2.05, 1.96, 2.01], "t2": [2.06, 1.99, 2.03, 2.02]}
    p, _, runs = _confirmed(tmp_path, screen, boots)
    single = analyse(p, [TreatmentRun(t.planned, t.run, t.cells) for t in runs], metric="tpot_median_ms")
    (one,) = single.cells
    assert _ids([one.best, one.runner_up]) == ["t2", "t1"] and one.verdict == "faster" and one.boots is None
    (c,) = analyse(p, runs, metric="tpot_median_ms").cells
    assert _ids(c.points) == ["t1", "t2", "t3", "t4"]  # the confirmed lead, by their boots' geometric mean
    assert _ids([c.best, c.runner_up]) == ["t1", "t2"]
    assert c.boots == (4, 4) and c.level == pytest.approx(0.95)  # two confirmed: no correction
    assert c.verdict == "no change" and c.band is not None and 0.95 < c.band[0] < 1.0 < c.band[1] < 1.05
    assert c.best is not None and c.best.boot_values("tpot_median_ms") == pytest.approx(boots["t1"], rel=0.02)
    assert c.best.value == pytest.approx(2.0, rel=0.01)  # the table's value stays the screening boot's
    doc = to_json_dict(analyse(p, runs, metric="tpot_median_ms"))["cells"][0]
    assert doc["across_boots"] == [4, 4] and len(doc["best"]["boots"]) == 4 and len(doc["best"]["boot_runs"]) == 4
    assert doc["treatments"][2]["boots"] == [] and doc["treatments"][2]["boot_runs"] == []


def test_boots_apart_beyond_their_noise_are_faster_and_boots_too_noisy_are_inconclusive(tmp_path) -> None:
    screen = {"t1": 2.0, "t2": 2.1, "t3": 2.6, "t4": 3.0}
    apart = {"t1": [2.00, 2.02, 1.98], "t2": [2.40, 2.43, 2.38]}
    (tmp_path / "a").mkdir()
    p, _, runs = _confirmed(tmp_path / "a", screen, apart)
    (c,) = analyse(p, runs, metric="tpot_median_ms").cells
    assert _ids([c.best, c.runner_up]) == ["t1", "t2"] and c.verdict == "faster" and c.boots == (3, 3)
    assert c.band is not None and c.band[1] < 0.95  # best / runner-up: 20 % less TPOT
    # the same means, boots scattered 15 %: two boots each cannot tell
    (tmp_path / "b").mkdir()
    noisy = {"t1": [1.7, 2.3], "t2": [2.0, 2.8]}
    q, _, noisy_runs = _confirmed(tmp_path / "b", screen, noisy)
    (n,) = analyse(q, noisy_runs, metric="tpot_median_ms").cells
    assert n.verdict == "inconclusive" and n.boots == (2, 2) and n.band is not None and n.band[0] < 0.95
    # ranked by a throughput the order and the verdict are the same (decode = 1000 / TPOT)
    (d,) = analyse(p, runs).cells
    assert _ids([d.best, d.runner_up]) == ["t1", "t2"] and d.verdict == "faster"


def test_three_confirmed_treatments_correct_the_band_and_one_boot_is_not_enough(tmp_path) -> None:
    (tmp_path / "three").mkdir()
    screen = {"t1": 2.0, "t2": 2.1, "t3": 2.2, "t4": 3.0}
    boots = {"t1": [2.0, 2.02], "t2": [2.3, 2.31], "t3": [2.1, 2.12]}
    p, _, runs = _confirmed(tmp_path / "three", screen, boots)
    (c,) = analyse(p, runs, metric="tpot_median_ms").cells
    assert _ids(c.points)[:3] == ["t1", "t3", "t2"] and _ids([c.runner_up]) == ["t3"]
    assert c.level == pytest.approx(0.975) and c.boots == (2, 2)
    # one confirmation boot each is no spread: the screening verdict stands
    (tmp_path / "one").mkdir()
    q, _, one_runs = _confirmed(tmp_path / "one", screen, {"t1": [2.0], "t2": [2.3]})
    (o,) = analyse(q, one_runs, metric="tpot_median_ms").cells
    assert o.boots is None and _ids(o.points) == ["t1", "t2", "t3", "t4"] and o.level == pytest.approx(1 - 0.05 / 3)
    # only one treatment with two boots: nothing to judge across, the screening decides
    (tmp_path / "lone").mkdir()
    r, _, lone = _confirmed(tmp_path / "lone", screen, {"t2": [2.3, 2.31]})
    (x,) = analyse(r, lone, metric="tpot_median_ms").cells
    assert x.boots is None and _ids([x.best, x.runner_up]) == ["t1", "t2"]


def test_a_confirmed_treatment_that_misses_the_slo_is_not_judged(tmp_path) -> None:
    from autobench.experiment.analysis import parse_slo

    screen = {"t1": 2.0, "t2": 2.1, "t3": 2.2, "t4": 3.0}
    boots = {"t1": [2.0, 2.02], "t2": [2.1, 2.11], "t3": [2.2, 2.21]}
    p, _, runs = _confirmed(tmp_path, screen, boots)
    (c,) = analyse(p, runs, metric="tpot_median_ms", slos=[parse_slo("tpot_median_ms>2.05")]).cells
    assert _ids([c.best, c.runner_up]) == ["t2", "t3"] and c.level == pytest.approx(0.95) and c.boots == (2, 2)


def test_the_report_tells_screening_boots_from_confirmation_boots(tmp_path) -> None:
    screen = {"t1": 2.0, "t2": 2.1, "t3": 2.6, "t4": 3.0}
    p, db, runs = _confirmed(tmp_path, screen, {"t1": [2.0, 2.01, 2.02]})
    t1 = runs[0]
    assert t1.run is not None and t1.run.stable_id == _uids(db, p, "t1")[0]  # the screening boot, not the latest
    assert [r.stable_id for r, _ in t1.boots] == _uids(db, p, "t1")[1:]  # oldest first
    assert all(len(cells) == 1 for _, cells in t1.boots) and [len(t.boots) for t in runs] == [3, 0, 0, 0]
    # a run of the digest no record names is a screening boot: the latest one is
    record(db, p, {"t1": [cell(7, 1.9)]})
    with open_ledger(db, create=False) as book:
        again = treatment_runs(book, p, book.experiments(plan_digest=p.digest))
    assert again[0].run is not None and again[0].run.stable_id == _uids(db, p, "t1")[-1]
    assert len(again[0].boots) == 3


def test_only_done_confirmation_boots_of_well_formed_entries_count(tmp_path) -> None:
    p = plan(write(tmp_path, K4, bench=ONE_CELL))
    db = tmp_path / "l.db"
    _note(db, p, {"t1": ["u1", "u2"]})
    _note(db, p, {"t1": ["u3"], "t2": ["u4"]}, status="FAILED")
    entries = [
        {"id": "t3", "digest": p.treatments[2].digest, "confirm": "u5"},
        {"id": "t3", "digest": 3, "confirm": [{"run_uid": "u6", "status": "DONE"}]},
        {"id": "t3", "digest": p.treatments[2].digest, "confirm": ["u7", {"run_uid": 8, "status": "DONE"}]},
        {"id": "t4", "digest": p.treatments[3].digest, "confirm": [{"run_uid": "u9", "status": "DONE", "round": 1}]},
    ]
    with open_ledger(db) as book:
        book.record_experiment(new_experiment_values(p.experiment.name, p.digest, {}, entries))
        got = confirmed_uids(book.experiments(plan_digest=p.digest))
    assert got == {p.treatments[0].digest: {"u1", "u2"}, p.treatments[3].digest: {"u9"}}


def test_the_top_of_every_cell_is_confirmed_in_design_order(tmp_path) -> None:
    p = plan(write(tmp_path, K4))  # concurrency 1 and 8
    db = tmp_path / "l.db"
    tpots = {"t1": (2.4, 2.0), "t2": (2.0, 2.5), "t3": (2.1, 2.6), "t4": (3.0, 2.1)}
    record(db, p, {t: [cell(n, a), cell(n + 10, b, concurrency=8)] for n, (t, (a, b)) in enumerate(tpots.items())})
    with open_ledger(db, create=False) as book:
        runs = treatment_runs(book, p, [])
    a = analyse(p, runs, metric="tpot_median_ms")
    assert [t.treatment.id for t in select(a, 2)] == ["t1", "t2", "t3", "t4"]  # {t2, t3} and {t1, t4}
    assert [t.treatment.id for t in select(a, 1)] == ["t1", "t2"]
    assert [t.treatment.id for t in select(a, 3)] == ["t1", "t2", "t3", "t4"]
    from autobench.experiment.analysis import parse_slo

    slo = analyse(p, runs, metric="tpot_median_ms", slos=[parse_slo("tpot_median_ms>=2.05")])
    assert [t.treatment.id for t in select(slo, 1)] == ["t3", "t4"]  # t2 (2.0) and t1 (2.0) miss it


def test_a_resumed_confirmation_picks_the_treatments_it_confirmed(tmp_path) -> None:
    """t3 and t4 were confirmed; their boots lead the ranking, so a later selection picks them
    again even where a screening boot reads faster now."""
    screen = {"t1": 2.0, "t2": 2.1, "t3": 2.2, "t4": 2.3}
    p, _, runs = _confirmed(tmp_path, screen, {"t3": [2.2, 2.21], "t4": [2.3, 2.31]})
    a = analyse(p, runs, metric="tpot_median_ms")
    assert [t.treatment.id for t in select(a, 2)] == ["t3", "t4"]


class _Boots:
    """A round that records what it was asked and answers from a script of statuses."""

    def __init__(
        self, statuses: Mapping[tuple[int, str], str] | None = None, missing: set[tuple[int, str]] | None = None
    ):
        self.calls: list[list[str]] = []
        self.statuses = statuses or {}
        self.missing = missing or set()

    def __call__(self, todo: Sequence[PlannedTreatment]) -> dict[str, Booted]:
        n = len(self.calls) + 1
        self.calls.append([p.treatment.id for p in todo])
        out = {}
        for p in todo:
            tid = p.treatment.id
            if (n, tid) not in self.missing:
                out[tid] = Booted(self.statuses.get((n, tid), "DONE"), f"#{n}{tid}", f"uid-{n}-{tid}")
        return out


def _pair(tmp_path) -> tuple[ExperimentPlan, list[PlannedTreatment]]:  # type: ignore[no-untyped-def]
    p = plan(write(tmp_path, K4, bench=ONE_CELL))
    return p, [p.treatments[1], p.treatments[3]]


def test_confirmation_boots_are_interleaved_in_rounds_and_count_what_is_recorded(tmp_path) -> None:
    p, chosen = _pair(tmp_path)
    said: list[str] = []
    boots = _Boots()
    made, stopped = confirm(chosen, {}, 3, boots, echo=said.append)
    assert boots.calls == [["t2", "t4"]] * 3 and not stopped
    assert [(c.planned.treatment.id, c.round) for c in made] == [
        ("t2", 1),
        ("t4", 1),
        ("t2", 2),
        ("t4", 2),
        ("t2", 3),
        ("t4", 3),
    ]
    assert said[0] == "confirmation round 1/3: t2, t4" and len(said) == 3
    assert made[0].to_ledger_dict() == {"run_uid": "uid-1-t2", "status": "DONE", "round": 1}
    # two of t2's and one of t4's recorded already: t4 in round 2, both in round 3
    resumed = _Boots()
    made, _ = confirm(chosen, {chosen[0].digest: 2, chosen[1].digest: 1}, 3, resumed, echo=said.append)
    assert resumed.calls == [["t4"], ["t2", "t4"]] and [c.round for c in made] == [2, 3, 3]
    done = _Boots()
    assert confirm(chosen, {chosen[0].digest: 3, chosen[1].digest: 4}, 3, done, echo=said.append) == ([], False)
    assert done.calls == [] and confirm(chosen, {}, 0, done) == ([], False)


def test_a_failed_confirmation_boot_is_booted_again_within_the_rounds(tmp_path) -> None:
    p, chosen = _pair(tmp_path)
    boots = _Boots({(1, "t2"): "FAILED", (2, "t2"): "FAILED"})
    made, stopped = confirm(chosen, {}, 2, boots, echo=lambda _: None)
    assert boots.calls == [["t2", "t4"], ["t2", "t4"]] and not stopped  # never a third round
    assert [c.booted.status for c in made] == ["FAILED", "DONE", "FAILED", "DONE"]
    late = _Boots({(1, "t2"): "FAILED"})
    made, _ = confirm(chosen, {}, 3, late, echo=lambda _: None)
    assert late.calls == [["t2", "t4"], ["t2", "t4"], ["t2", "t4"]]  # t2 one short: round 2 still boots it


def test_an_abort_or_a_task_never_started_stops_the_confirmation(tmp_path) -> None:
    p, chosen = _pair(tmp_path)
    aborted = _Boots({(2, "t2"): "ABORTED"})
    made, stopped = confirm(chosen, {}, 3, aborted, echo=lambda _: None)
    assert stopped and aborted.calls == [["t2", "t4"], ["t2", "t4"]]
    assert [(c.planned.treatment.id, c.round, c.booted.status) for c in made] == [
        ("t2", 1, "DONE"),
        ("t4", 1, "DONE"),
        ("t2", 2, "ABORTED"),
    ]
    never = _Boots(missing={(1, "t4")})
    made, stopped = confirm(chosen, {}, 3, never, echo=lambda _: None)
    assert stopped and never.calls == [["t2", "t4"]] and [c.planned.treatment.id for c in made] == ["t2"]


def test_one_by_one_boots_in_order_and_stops_after_an_abort(tmp_path) -> None:
    p, _ = _pair(tmp_path)
    seen: list[str] = []
    said: list[str] = []

    def run_one(planned: PlannedTreatment) -> Booted:
        seen.append(planned.treatment.id)
        return Booted("ABORTED" if planned.treatment.id == "t2" else "DONE", run_uid=planned.treatment.id)

    got = one_by_one(run_one, said.append)(p.treatments)
    assert seen == ["t1", "t2"] and list(got) == ["t1", "t2"] and got["t2"].status == "ABORTED"
    assert said == [
        "t1 num_speculative_tokens=1: confirmation boot",
        "t1 num_speculative_tokens=1: DONE",
        "t2 num_speculative_tokens=2: confirmation boot",
        "t2 num_speculative_tokens=2: ABORTED",
    ]
    assert Confirmation(p.treatments[0], 2, got["t1"]).to_ledger_dict() == {
        "run_uid": "t1",
        "status": "DONE",
        "round": 2,
    }


def test_a_treatment_without_the_metric_is_never_confirmed(tmp_path) -> None:
    p = plan(write(tmp_path, K4, bench=ONE_CELL))
    db = tmp_path / "l.db"
    bare = cell(3, 2.0)
    del bare.metrics["tpot_median_ms"]
    record(db, p, {"t1": [cell(1, 2.2)], "t2": [cell(2, 2.1)], "t3": [bare]})
    with open_ledger(db, create=False) as book:
        a = analyse(p, treatment_runs(book, p, []), metric="tpot_median_ms")
    assert _ids(a.cells[0].points) == ["t2", "t1", "t3"]
    assert [t.treatment.id for t in select(a, 3)] == ["t1", "t2"]


def test_the_boots_centre_is_their_geometric_mean_and_the_plain_mean_without_positive_values() -> None:
    from autobench.experiment.analysis import geometric_mean

    assert geometric_mean([1.0, 100.0]) == pytest.approx(10.0)  # the centre of a band of log values
    assert geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    assert geometric_mean([0.0, 4.0]) == pytest.approx(2.0) and geometric_mean([-1.0, 3.0]) == pytest.approx(1.0)


def test_a_marked_confirmation_boot_marks_the_verdict_across_boots(tmp_path) -> None:
    """A confirmation boot that was client-bound, or whose figures carry a flag, marks the
    verdict judged across the boots, as a marked cell marks `compare`'s."""
    p = plan(write(tmp_path, K4, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {t: [cell(n, 2.0 + n / 10)] for n, t in enumerate(("t1", "t2", "t3", "t4"))})
    screening = {t: set(_uids(db, p, t)) for t in ("t1", "t2")}
    for n, (tid, tpot) in enumerate((("t1", 2.0), ("t2", 2.01), ("t1", 2.02), ("t2", 2.0))):
        boot = cell(200 + n, tpot)
        if n == 1:
            boot.metrics["client_bound"] = True
        if n == 2:
            boot.metrics["flags"] = {"burst_stream": "chunks of 8 tokens"}
        record(db, p, {tid: [boot]})
    _note(db, p, {t: [u for u in _uids(db, p, t) if u not in screening[t]] for t in ("t1", "t2")})
    with open_ledger(db, create=False) as book:
        runs = treatment_runs(book, p, book.experiments(plan_digest=p.digest))
    (c,) = analyse(p, runs, metric="tpot_median_ms").cells
    assert c.boots == (2, 2) and c.verdict == "no change (client-bound; flagged: burst_stream)"


def test_a_treatment_whose_screening_lacks_the_metric_is_not_among_the_confirmed(tmp_path) -> None:
    p = plan(write(tmp_path, K4, bench=ONE_CELL))
    db = tmp_path / "l.db"
    bare = cell(3, 2.0)
    del bare.metrics["tpot_median_ms"]
    record(db, p, {"t1": [cell(1, 2.0)], "t2": [cell(2, 2.1)], "t3": [bare], "t4": [cell(4, 3.0)]})
    screening = {t: set(_uids(db, p, t)) for t in ("t1", "t2", "t3")}
    for n, (tid, tpot) in enumerate([(t, v) for t, v in (("t1", 2.0), ("t2", 2.1), ("t3", 1.9)) for _ in range(2)]):
        record(db, p, {tid: [cell(300 + n, tpot)]})
    _note(db, p, {t: [u for u in _uids(db, p, t) if u not in screening[t]] for t in ("t1", "t2", "t3")})
    with open_ledger(db, create=False) as book:
        runs = treatment_runs(book, p, book.experiments(plan_digest=p.digest))
    (c,) = analyse(p, runs, metric="tpot_median_ms").cells
    assert _ids([c.best, c.runner_up]) == ["t1", "t2"] and c.level == pytest.approx(0.95) and c.boots == (2, 2)

"""The experiment analysis (autobench.experiment.analysis) on runs built in-process: the ranking,
the best under the SLOs against the runner-up with `compare`'s verdict (its band corrected for
the treatments ranked), the Pareto front, the main effects, the treatments not run, the SLO
parser.  Each cell's per-request samples are seeded draws, so every verdict's truth is known."""

from __future__ import annotations

import math

import pytest
from experiment_world import cell, plan, record, runs, write

from autobench.errors import UsageError
from autobench.experiment.analysis import Slo, analyse, band_level, parse_slo, to_json_dict

K3 = "  speculative.num_speculative_tokens: [1, 2, 3]\n"
ONE_CELL = "bench: {concurrency: 1}\n"


def _ids(points) -> list[str]:  # type: ignore[no-untyped-def]
    return [p.treatment.planned.treatment.id for p in points]


def test_the_best_is_judged_faster_than_the_runner_up_beyond_the_threshold(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    # t2 the fastest (TPOT 2.0), t3 20 % slower, t1 slowest; decode as a closed loop at concurrency 1
    record(db, p, {"t1": [cell(1, 3.0)], "t2": [cell(2, 2.0, acceptance=2.5)], "t3": [cell(3, 2.5)]})
    a = analyse(p, runs(db, p), metric="tpot_median_ms")
    (c,) = a.cells
    assert c.params == {"concurrency": 1, "input_len": 16, "output_len": 64}
    assert _ids(c.points) == ["t2", "t3", "t1"]  # lower TPOT first
    assert c.best is c.points[0] and c.runner_up is c.points[1]
    assert c.verdict == "faster" and c.band is not None and c.band[1] < 0.95
    assert c.level == pytest.approx(1 - 0.05 / 2)  # three treatments ranked: two comparisons
    best = c.best
    assert best.value == pytest.approx(2.0, rel=0.01) and best.latency == best.value
    assert best.per_gpu == pytest.approx(1000 / 2.0)  # decode tok/s over one GPU
    assert best.acceptance == 2.5 and best.meets_slo
    # ranked by a throughput, higher first: the same order
    by_decode = analyse(p, runs(db, p))
    assert _ids(by_decode.cells[0].points) == ["t2", "t3", "t1"] and by_decode.cells[0].verdict == "faster"
    assert by_decode.metric == "decode_tok_s" and by_decode.latency == "tpot_median_ms" and a.missing == []


def test_two_treatments_within_the_threshold_are_no_change_and_noisy_ones_inconclusive(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {"t1": [cell(1, 2.0, noise=0.003)], "t2": [cell(2, 2.02, noise=0.003)]})
    (c,) = analyse(p, runs(db, p), metric="tpot_median_ms").cells
    assert _ids(c.points) == ["t1", "t2"] and c.verdict == "no change"
    assert c.band is not None and 0.95 < c.band[0] < c.band[1] < 1.0 and c.level == pytest.approx(0.95)
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    q = plan(write(noisy, K3, bench=ONE_CELL))
    record(noisy / "l.db", q, {"t1": [cell(1, 2.0, noise=0.4)], "t2": [cell(2, 2.1, noise=0.4)]})
    (c,) = analyse(q, runs(noisy / "l.db", q), metric="tpot_median_ms").cells
    assert c.verdict == "inconclusive" and c.band is not None and c.band[0] < 0.95 < 1.05 < c.band[1]


def test_the_band_is_corrected_for_the_treatments_ranked() -> None:
    assert band_level(2) == pytest.approx(0.95)
    assert band_level(3) == pytest.approx(0.975)
    assert band_level(16) == pytest.approx(1 - 0.05 / 15)
    assert band_level(1) == pytest.approx(0.95) and band_level(0) == pytest.approx(0.95)
    assert band_level(5, 0.9) == pytest.approx(1 - 0.1 / 4)


def test_a_wider_band_for_more_treatments_turns_a_near_call_inconclusive(tmp_path) -> None:
    """The same two measurements judged alone and among 12 ranked treatments: the correction
    widens the band (here past the threshold), never narrows it."""
    alone = tmp_path / "alone"
    alone.mkdir()
    p = plan(write(alone, K3, bench=ONE_CELL))
    record(alone / "l.db", p, {"t1": [cell(1, 2.0, noise=0.05)], "t2": [cell(2, 2.04, noise=0.05)]})
    (two,) = analyse(p, runs(alone / "l.db", p), metric="tpot_median_ms").cells
    many = tmp_path / "many"
    many.mkdir()
    q = plan(
        write(many, "  speculative.num_speculative_tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n", bench=ONE_CELL)
    )
    cells = {"t1": [cell(1, 2.0, noise=0.05)], "t2": [cell(2, 2.04, noise=0.05)]}
    cells.update({f"t{i}": [cell(i, 3.0 + i, noise=0.05)] for i in range(3, 13)})
    record(many / "l.db", q, cells)
    (twelve,) = analyse(q, runs(many / "l.db", q), metric="tpot_median_ms").cells
    assert _ids(twelve.points)[:2] == ["t1", "t2"] and twelve.level == pytest.approx(1 - 0.05 / 11)
    assert two.band is not None and twelve.band is not None
    assert twelve.band[0] < two.band[0] and twelve.band[1] > two.band[1]
    assert (two.verdict, twelve.verdict) == ("no change", "inconclusive")


def test_only_treatments_meeting_every_slo_can_be_best(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    # by decode: t1 (1200) > t2 (1000) > t3 (800); t1's TPOT misses tpot_median_ms<=2.2
    record(
        db,
        p,
        {"t1": [cell(1, 3.0, decode=1200.0)], "t2": [cell(2, 2.0, decode=1000.0)], "t3": [cell(3, 2.1, decode=800.0)]},
    )
    a = analyse(p, runs(db, p), slos=[parse_slo("tpot_median_ms<=2.2")])
    (c,) = a.cells
    assert _ids(c.points) == ["t1", "t2", "t3"]  # every treatment ranked, the SLO only picks
    assert [x.meets_slo for x in c.points] == [False, True, True]
    assert _ids([c.best, c.runner_up]) == ["t2", "t3"]
    assert c.level == pytest.approx(0.95)  # two treatments meet the SLO
    only_one = analyse(p, runs(db, p), slos=[parse_slo("tpot_median_ms<2.05")]).cells[0]
    assert _ids([only_one.best]) == ["t2"] and only_one.runner_up is None and only_one.verdict is None
    assert only_one.level is None and only_one.band is None
    none = analyse(p, runs(db, p), slos=[parse_slo("tpot_median_ms<1")]).cells[0]
    assert none.best is None and none.runner_up is None
    both = analyse(p, runs(db, p), slos=[parse_slo("tpot_median_ms<=2.2"), parse_slo("decode_tok_s>900")])
    assert _ids([both.cells[0].best]) == ["t2"] and both.cells[0].runner_up is None


def test_the_pareto_front_is_what_nothing_beats_on_both_axes(tmp_path) -> None:
    factors = "  speculative.num_speculative_tokens: [1, 2, 3, 4, 5]\n"
    p = plan(write(tmp_path, factors, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(
        db,
        p,
        {
            "t1": [cell(1, 2.0, decode=500.0)],  # the lowest TPOT
            "t2": [cell(2, 2.5, decode=600.0)],  # more tok/s, slower: on the front
            "t3": [cell(3, 3.0, decode=550.0)],  # beaten by t2 on both
            "t4": [cell(4, 2.5, decode=590.0)],  # the same TPOT as t2, fewer tok/s: beaten
            "t5": [cell(5, 4.0, decode=700.0)],  # the most tok/s: on the front
        },
    )
    (c,) = analyse(p, runs(db, p)).cells
    assert _ids(c.pareto) == ["t5", "t2", "t1"]  # fastest per GPU first
    assert [x.per_gpu for x in c.pareto] == [700.0, 600.0, 500.0]
    (by_ttft,) = analyse(p, runs(db, p), latency="ttft_median_ms").cells
    assert all(x.latency == pytest.approx(20.0, rel=0.05) for x in by_ttft.points)
    assert _ids(by_ttft.pareto) == ["t5"]  # equal TTFTs: the most tok/s beats the rest


def test_equal_points_are_both_on_the_front() -> None:
    from types import SimpleNamespace

    from autobench.experiment.analysis import Point, _pareto

    def pt(per_gpu: float | None, latency: float | None) -> Point:
        return Point(SimpleNamespace(), SimpleNamespace(), 1.0, per_gpu, latency, None, True)  # type: ignore[arg-type]

    a, b, c, d = pt(10.0, 2.0), pt(10.0, 2.0), pt(None, 1.0), pt(5.0, None)
    assert _pareto([a, b, c, d]) == [a, b]
    better_latency, same_speed = pt(10.0, 1.0), pt(10.0, 3.0)
    assert _pareto([same_speed, better_latency]) == [better_latency]
    faster, same_latency = pt(12.0, 2.0), pt(11.0, 2.0)
    assert _pareto([same_latency, faster]) == [faster]


def test_throughput_per_gpu_counts_every_gpu_of_the_treatment(tmp_path) -> None:
    factors = "  engine.tensor_parallel_size: [1, 2]\n  engine.pipeline_parallel_size: [1, 3]\n"
    p = plan(write(tmp_path, factors, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {t.treatment.id: [cell(i, 2.0, decode=1200.0)] for i, t in enumerate(p.treatments)})
    (c,) = analyse(p, runs(db, p)).cells
    per_gpu = {x.treatment.planned.treatment.label(): x.per_gpu for x in c.points}
    assert per_gpu == {
        "tensor_parallel_size=1 pipeline_parallel_size=1": 1200.0,
        "tensor_parallel_size=1 pipeline_parallel_size=3": 400.0,
        "tensor_parallel_size=2 pipeline_parallel_size=1": 600.0,
        "tensor_parallel_size=2 pipeline_parallel_size=3": 200.0,
    }
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    q = plan(write(nodes, "  topology.gpus_per_node: [4]\n  topology.nodes: [1, 2]\n", bench=ONE_CELL))
    from autobench.experiment.analysis import TreatmentRun

    assert [TreatmentRun(t, None).gpus() for t in q.treatments] == [4, 8]


def test_main_effects_are_the_mean_at_each_level(tmp_path) -> None:
    factors = "  speculative.num_speculative_tokens: [1, 2]\n  engine.max_num_seqs: [8, 16]\n"
    p = plan(write(tmp_path, factors, bench=ONE_CELL))
    db = tmp_path / "l.db"
    decode = {"t1": 100.0, "t2": 200.0, "t3": 400.0, "t4": 1000.0}
    record(db, p, {tid: [cell(i, 2.0, decode=v)] for i, (tid, v) in enumerate(decode.items())})
    (c,) = analyse(p, runs(db, p)).cells
    assert c.effects == {
        "speculative.num_speculative_tokens": {"1": 150.0, "2": 700.0},
        "engine.max_num_seqs": {"8": 250.0, "16": 600.0},
    }


def test_each_bench_cell_is_judged_on_its_own_and_repeats_are_merged(tmp_path) -> None:
    p = plan(write(tmp_path, K3))
    db = tmp_path / "l.db"
    # concurrency 1: t1 faster; concurrency 8: t2 faster. Three repeats a cell: the median ranks
    t1 = [cell(10 + r, tpot, concurrency=1, repeat=r) for r, tpot in enumerate((2.0, 2.1, 9.0))]
    t1 += [cell(20 + r, 3.0, concurrency=8, repeat=r) for r in range(3)]
    t2 = [cell(30 + r, 2.6, concurrency=1, repeat=r) for r in range(3)]
    t2 += [cell(40 + r, tpot, concurrency=8, repeat=r) for r, tpot in enumerate((2.0, 2.02, 1.98))]
    record(db, p, {"t1": t1, "t2": t2})
    a = analyse(p, runs(db, p), metric="tpot_median_ms")
    one, eight = a.cells
    assert one.params["concurrency"] == 1 and eight.params["concurrency"] == 8
    assert "repeat" not in one.params
    assert _ids(one.points) == ["t1", "t2"] and _ids(eight.points) == ["t2", "t1"]
    assert one.points[0].value == pytest.approx(2.1, rel=0.01)  # the median of 2.0, 2.1, 9.0
    assert eight.verdict == "faster"  # judged from the three repeats a side (a t interval)
    assert one.verdict == "inconclusive"  # one wild repeat: the t band is wide
    assert [t.treatment.id for t in a.missing] == ["t3"]


def test_a_treatment_without_the_metric_ranks_last_and_is_never_best(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    no_decode = cell(1, 1.0, acceptance=None)
    no_decode.metrics.pop("decode_tok_s")
    record(db, p, {"t1": [no_decode], "t2": [cell(2, 3.0)], "t3": [cell(3, 4.0)]})
    (c,) = analyse(p, runs(db, p)).cells
    assert _ids(c.points) == ["t2", "t3", "t1"]  # t1 has no decode tok/s: last, whatever its TPOT
    assert (c.points[2].value, c.points[2].per_gpu, c.points[2].acceptance) == (None, None, None)
    assert _ids([c.best, c.runner_up]) == ["t2", "t3"]
    assert _ids(c.pareto) == ["t2"]  # t1 has no throughput per GPU to place it; t3 is beaten
    # a treatment without the metric is no runner-up either
    only = tmp_path / "only"
    only.mkdir()
    q = plan(write(only, K3, bench=ONE_CELL))
    record(only / "l.db", q, {"t1": [no_decode], "t2": [cell(2, 3.0)]})
    (alone,) = analyse(q, runs(only / "l.db", q)).cells
    assert _ids([alone.best]) == ["t2"] and alone.runner_up is None and alone.verdict is None
    # ranked by TPOT (lower first), t1 has it and leads
    (by_tpot,) = analyse(p, runs(db, p), metric="tpot_median_ms").cells
    assert _ids(by_tpot.points) == ["t1", "t2", "t3"]


def test_equal_values_keep_the_treatments_order(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {tid: [cell(1, 2.0, decode=100.0)] for tid in ("t1", "t2", "t3")})
    assert _ids(analyse(p, runs(db, p)).cells[0].points) == ["t1", "t2", "t3"]
    assert _ids(analyse(p, runs(db, p), metric="tpot_median_ms").cells[0].points) == ["t1", "t2", "t3"]


def test_a_run_that_is_not_done_leaves_its_treatment_not_run(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {"t1": [cell(1, 2.0)], "t2": [cell(2, 3.0)]})
    record(db, p, {"t3": [cell(3, 1.0)]}, status="FAILED")
    a = analyse(p, runs(db, p), metric="tpot_median_ms")
    assert [t.treatment.id for t in a.missing] == ["t3"] and _ids(a.cells[0].points) == ["t1", "t2"]


def test_the_json_form_names_every_part(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    db = tmp_path / "l.db"
    record(db, p, {"t1": [cell(1, 2.0)], "t2": [cell(2, 2.5)]})
    a = analyse(p, runs(db, p), metric="tpot_median_ms", slos=[parse_slo("tpot_median_ms<=9")], threshold=0.1)
    doc = to_json_dict(a)
    assert (doc["experiment"], doc["plan"], doc["metric"], doc["latency"]) == (
        "exp",
        p.digest,
        "tpot_median_ms",
        "tpot_median_ms",
    )
    assert doc["slo"] == ["tpot_median_ms<=9"] and doc["threshold"] == 0.1 and doc["not_run"] == ["t3"]
    (c,) = doc["cells"]
    assert c["params"] == {"concurrency": 1, "input_len": 16, "output_len": 64}
    assert c["label"] == "concurrency=1 input_len=16 output_len=64" and c["verdict"] == "faster"
    assert c["level"] == pytest.approx(0.95) and len(c["band"]) == 2
    best = c["best"]
    assert set(best) == {
        "treatment",
        "label",
        "run",
        "tpot_median_ms",
        "output_tok_s_per_gpu",
        "spec_acceptance_length",
        "meets_slo",
        "boots",
        "boot_runs",
    }
    assert best["boots"] == [] and best["boot_runs"] == [] and c["across_boots"] is None
    assert (best["treatment"], best["label"], best["meets_slo"]) == ("t1", "num_speculative_tokens=1", True)
    assert best["run"].startswith("#1-") and best["output_tok_s_per_gpu"] == pytest.approx(500.0)
    assert c["runner_up"]["treatment"] == "t2" and [t["treatment"] for t in c["treatments"]] == ["t1", "t2"]
    assert [t["treatment"] for t in c["pareto"]] == ["t1"]
    assert c["main_effects"] == {
        "speculative.num_speculative_tokens": {"1": pytest.approx(2.0, rel=0.02), "2": pytest.approx(2.5, rel=0.02)}
    }


@pytest.mark.parametrize(
    ("text", "slo"),
    [
        ("tpot_median_ms<=70", Slo("tpot_median_ms", "<=", 70.0)),
        ("tpot_median_ms < 70.5", Slo("tpot_median_ms", "<", 70.5)),
        ("decode_tok_s>=100", Slo("decode_tok_s", ">=", 100.0)),
        ("decode_tok_s>1e3", Slo("decode_tok_s", ">", 1000.0)),
        ("ttft_p99_ms<=-1", Slo("ttft_p99_ms", "<=", -1.0)),
    ],
)
def test_an_slo_is_a_metric_a_comparison_and_a_number(text: str, slo: Slo) -> None:
    assert parse_slo(text) == slo


def test_an_slo_holds_as_its_comparison_says() -> None:
    at = [(op, [Slo("m", op, 2.0).holds(v) for v in (1.0, 2.0, 3.0, None)]) for op in ("<=", "<", ">=", ">")]
    assert at == [
        ("<=", [True, True, False, False]),
        ("<", [True, False, False, False]),
        (">=", [False, True, True, False]),
        (">", [False, False, True, False]),
    ]
    assert str(Slo("tpot_median_ms", "<=", 70.0)) == "tpot_median_ms<=70"
    assert str(Slo("decode_tok_s", ">", 0.25)) == "decode_tok_s>0.25"


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("tpot<=70", "--slo 'tpot<=70': 'tpot' is not a metric", "metrics: "),
        ("tpot_median_ms<=fast", "--slo 'tpot_median_ms<=fast': 'fast' is not a number", "e.g. tpot_median_ms<=70"),
        ("tpot_median_ms<=nan", "'nan' is not a number", "e.g."),
        ("tpot_median_ms<=inf", "'inf' is not a number", "e.g."),
        ("tpot_median_ms>=-inf", "'-inf' is not a number", "e.g."),
        ("tpot_median_ms=70", "--slo 'tpot_median_ms=70': no comparison", "write METRIC<=VALUE"),
    ],
)
def test_a_bad_slo_is_one_line(text: str, message: str, hint: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_slo(text)
    assert message in err.value.message and (err.value.hint or "").startswith(hint)


def test_the_hints_list_every_metric_there_is() -> None:
    from autobench.ledger.verdict import HIGHER_IS_BETTER

    with pytest.raises(UsageError) as err:
        parse_slo("tpot<=70")
    assert err.value.hint == "metrics: " + ", ".join(sorted(HIGHER_IS_BETTER))
    assert "decode_tok_s, e2el_median_ms" in (err.value.hint or "")
    with pytest.raises(UsageError) as err:
        parse_slo("tpot_median_ms<=x")
    assert err.value.hint == "e.g. tpot_median_ms<=70"
    with pytest.raises(UsageError) as err:
        parse_slo("tpot_median_ms")
    assert err.value.hint == "write METRIC<=VALUE, e.g. tpot_median_ms<=70"


def test_the_metric_and_the_latency_are_checked(tmp_path) -> None:
    p = plan(write(tmp_path, K3, bench=ONE_CELL))
    from autobench.ledger.verdict import HIGHER_IS_BETTER

    with pytest.raises(UsageError) as err:
        analyse(p, [], metric="speed")
    assert err.value.message == "'speed' is not a metric"
    assert err.value.hint == "metrics: " + ", ".join(sorted(HIGHER_IS_BETTER))
    with pytest.raises(UsageError, match="'lag' is not a metric"):
        analyse(p, [], latency="lag")
    with pytest.raises(UsageError) as err:
        analyse(p, [], latency="decode_tok_s")
    assert err.value.message == "--latency decode_tok_s: not a latency (higher is better)"
    latencies = sorted(k for k in HIGHER_IS_BETTER if k.endswith("_ms"))
    assert err.value.hint == "latencies: " + ", ".join(latencies) and "tpot_median_ms, tpot_p99_ms" in err.value.hint
    assert math.isclose(analyse(p, []).threshold, 0.05) and analyse(p, []).cells == []

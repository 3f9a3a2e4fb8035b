"""The report view-model: latest runs, speedup (and its refusals), figures with run ids."""

from __future__ import annotations

from typing import Any

import pytest
from report_fixtures import BAD_DRAFT, BASE, DFLASH, GOOD_DRAFT, record, seed_records, snapshot, utc

from autobench.report.model import (
    build_index_view,
    build_recipe_view,
    chronological,
    compute_speedup,
    group_by_recipe,
    latest,
    run_from_record,
    runs_from_records,
    short_root_cause,
    supersession_chain,
)


def _runs(records: list[dict[str, Any]]):
    return group_by_recipe(runs_from_records(records))


def test_seed_speedup_is_the_ratio_of_decode_at_the_same_concurrency_with_both_run_ids(seed_runs):
    view = build_recipe_view(DFLASH, group_by_recipe(seed_runs))
    s = view.speedup
    assert s.ok and s.refused is None
    assert s.baseline == BASE
    assert s.ratio == pytest.approx(107.43 / 85.5)
    assert round(s.ratio, 2) == 1.26
    assert (s.base.value, s.base.run_id) == (85.5, 1)
    assert (s.this.value, s.this.run_id) == (107.43, 3)
    assert s.concurrency == 8


def test_latest_done_and_latest_are_by_start_time_not_ledger_order():
    recs = [
        record(1, DFLASH, "DONE", utc(2026, 6, 25), metrics={"decode_tok_s": 2.0}),
        record(2, DFLASH, "DONE", utc(2026, 6, 24), metrics={"decode_tok_s": 1.0}),  # backfilled
        record(3, DFLASH, "BLOCKED", utc(2026, 6, 20)),
    ]
    runs = _runs(recs)[DFLASH]
    assert [r.id for r in chronological(runs)] == [3, 2, 1]
    assert latest(runs).id == 1
    assert latest(runs, "BLOCKED").id == 3
    view = build_recipe_view(DFLASH, _runs(recs))
    assert view.latest_done.id == 1
    decode = next(r for r in view.result if r.key == "decode_tok_s")
    assert (decode.fig.value, decode.fig.run_id) == (2.0, 1)


def test_bare_dates_stay_dates_and_sort_with_datetimes():
    recs = [record(1, BASE, "DONE", "2026-06-24T10:00:00Z"), record(2, BASE, "DONE", "2026-06-23")]
    runs = runs_from_records(recs)
    assert str(runs[1].started_at) == "2026-06-23"  # no invented time of day
    assert [r.id for r in chronological(runs)] == [2, 1]


def _dflash(decode: float | None = 107.43, conc: int | None = 8, status: str = "DONE") -> dict:
    metrics = {"decode_tok_s": decode, "concurrency": conc}
    snap = snapshot(DFLASH, spec=True, baseline=BASE, conc=conc or 8)
    if conc is None:
        snap["bench"].pop("concurrency")
    return record(10, DFLASH, status, utc(2026, 6, 24), metrics=metrics, recipe_snapshot=snap)


def _base(decode: float | None = 85.5, conc: int | None = 8, status: str = "DONE", id: int = 1):
    return record(
        id,
        BASE,
        status,
        utc(2026, 6, 23, id),
        metrics={"decode_tok_s": decode, "concurrency": conc},
        recipe_snapshot=snapshot(BASE, spec=False, conc=conc or 8),
    )


# Each bad input: the records in the ledger -> the reason the speedup is refused.
REFUSALS = [
    pytest.param([_base()], "this recipe has no DONE run", id="this-recipe-no-runs"),  # recipe file given
    pytest.param([_base(), _dflash(status="BLOCKED")], "this recipe has no DONE run", id="this-recipe-only-blocked"),
    pytest.param([_dflash()], f"baseline {BASE} has no runs", id="baseline-no-runs"),
    pytest.param(
        [_base(status="BLOCKED"), _base(status="FAILED", id=2), _dflash()],
        f"baseline {BASE} has no DONE run",
        id="baseline-no-done-run",
    ),
    pytest.param(
        [_base(conc=4), _base(conc=16, id=2), _dflash()],
        f"baseline {BASE} has DONE runs only at concurrency 4, 16, not at 8",
        id="baseline-different-concurrency",
    ),
    pytest.param([_base(), _dflash(decode=None)], "decode tok/s is missing in run 10", id="this-decode-missing"),
    pytest.param(
        [_base(decode=None), _dflash()], "decode tok/s is missing in baseline run 1", id="baseline-decode-missing"
    ),
    pytest.param([_base(decode=0.0), _dflash()], "decode tok/s is zero in baseline run 1", id="baseline-decode-zero"),
    pytest.param([_base(), _dflash(conc=None)], "the concurrency of run 10 is unknown", id="this-concurrency-unknown"),
]


@pytest.mark.parametrize(("records", "reason"), REFUSALS)
def test_speedup_is_refused_with_a_reason_never_a_wrong_ratio(records, reason):
    runs = _runs(records)
    # With no run of the recipe, its baseline is known only from the recipe file.
    recipe = None if runs.get(DFLASH) else {DFLASH: snapshot(DFLASH, spec=True, baseline=BASE)}
    view = build_recipe_view(DFLASH, runs, recipe)
    assert view.speedup.ratio is None
    assert view.speedup.refused == reason
    assert view.speedup.baseline == BASE


def test_baseline_at_several_levels_uses_the_latest_done_at_the_same_concurrency():
    recs = [
        _base(decode=50.0, conc=4, id=1),
        _base(decode=80.0, conc=8, id=2),
        _base(decode=90.0, conc=8, id=3),
        _base(decode=200.0, conc=16, id=4),
        _dflash(),
    ]
    s = build_recipe_view(DFLASH, _runs(recs)).speedup
    assert (s.base.value, s.base.run_id) == (90.0, 3)
    assert s.ratio == pytest.approx(107.43 / 90.0)


def test_no_baseline_declared_is_not_a_refusal_of_a_ratio():
    s = compute_speedup(None, None, [])
    assert s.baseline is None and s.ratio is None
    assert "meta.baseline" in s.refused
    # a recipe without runs and without a recipe file: its baseline is simply not known
    assert build_recipe_view(DFLASH, _runs([_base()])).speedup.baseline is None


def test_missing_metrics_stay_none_never_zero():
    recs = [
        record(
            1,
            BASE,
            "DONE",
            utc(2026, 6, 23),
            metrics={"decode_tok_s": 85.5, "errors": 0, "ttft_median_ms": float("nan")},
        )
    ]
    view = build_recipe_view(BASE, _runs(recs))
    by_key = {row.key: row.fig for row in view.result}
    assert by_key["errors"].value == 0  # a measured zero stays zero
    assert by_key["prefill_tok_s"].value is None
    assert by_key["ttft_median_ms"].value is None  # NaN is "not measured"
    assert all(f.run_id == 1 for f in by_key.values())
    assert view.acceptance_length.missing and view.acceptance_per_position == []


def test_a_recipe_with_no_runs_has_an_empty_view():
    view = build_recipe_view("nothing-here", _runs(seed_records()))
    assert not view.has_runs
    assert view.latest is None and view.latest_done is None
    assert view.history == [] and view.stack == []
    assert all(row.fig.value is None for row in view.result)


def test_history_holds_every_run_with_root_cause_and_draft(seed_runs):
    view = build_recipe_view(DFLASH, group_by_recipe(seed_runs))
    assert [h.run.id for h in view.history] == [2, 3]
    blocked, done = view.history
    assert blocked.run.status == "BLOCKED" and blocked.run.draft_sha == BAD_DRAFT
    assert "page_size_bytes == max_page_size" in blocked.root_cause
    assert blocked.decode.missing
    assert done.run.draft_sha == GOOD_DRAFT and done.links == "supersedes run 2"


def test_stack_comes_from_the_latest_done_run_and_unknown_shas_say_so(seed_runs):
    view = build_recipe_view(DFLASH, group_by_recipe(seed_runs))
    stack = {i.label: i.value for i in view.stack}
    assert view.stack_run.id == 3
    # the seed never states the base sha: unknown, with what the recipe asked for
    assert stack["model revision"] == "unknown (the recipe asks for main)"
    assert stack["draft revision"] == GOOD_DRAFT
    assert stack["quantization"] == "auto-round 4-bit EC"
    assert "max_num_seqs=8" in stack["engine options"]


def test_supersession_chain_follows_recipes_and_stops_on_cycles():
    recs = [
        record(1, "a", "DONE", utc(2026, 1, 1), recipe_snapshot={"meta": {"superseded_by": "b"}}),
        record(2, "b", "DONE", utc(2026, 1, 2), recipe_snapshot={"meta": {"superseded_by": "c"}}),
        record(3, "c", "DONE", utc(2026, 1, 3), recipe_snapshot={"meta": {"superseded_by": "a"}}),
    ]
    runs = _runs(recs)
    assert supersession_chain("a", runs) == ["b", "c"]
    assert supersession_chain("z", runs) == []
    assert supersession_chain("z", runs, {"z": {"meta": {"superseded_by": "ext"}}}) == ["ext"]


def test_short_root_cause_is_one_line_cut_at_a_word():
    run = run_from_record(
        record(
            1,
            DFLASH,
            "BLOCKED",
            None,
            root_cause_category="assertion",
            root_cause_message="word " * 40 + "\nsecond line",
        )
    )
    text = short_root_cause(run, limit=50)
    assert text.startswith("assertion: word") and text.endswith(" …")
    assert "\n" not in text and len(text) <= 52


def test_index_has_one_row_per_recipe_with_latest_status_and_figures(seed_runs):
    rows = build_index_view(group_by_recipe(seed_runs)).rows
    assert [r.name for r in rows] == [BASE, DFLASH]
    base, dflash = rows
    assert base.decode.value == 85.5 and base.speedup.baseline is None
    assert dflash.latest.status == "DONE" and dflash.root_cause is None
    assert (dflash.decode.value, dflash.prefill.value) == (107.43, 115.66)
    assert (dflash.ttft.value, dflash.tpot.value) == (681.0, 67.5)
    assert round(dflash.speedup.ratio, 2) == 1.26


def test_index_row_of_a_blocked_recipe_carries_its_root_cause_in_short():
    recs = seed_records()[:2]  # base DONE + the BLOCKED DFlash attempt only
    rows = {r.name: r for r in build_index_view(_runs(recs)).rows}
    blocked = rows[DFLASH]
    assert blocked.latest.status == "BLOCKED"
    assert blocked.root_cause.startswith("assertion: AssertionError: page_size_bytes")
    assert blocked.decode.missing and blocked.speedup.refused == "this recipe has no DONE run"

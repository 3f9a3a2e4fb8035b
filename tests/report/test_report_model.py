"""The report view-model: latest runs, speedup (and its refusals), figures with run ids."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from report_fixtures import BAD_DRAFT, BASE, DFLASH, GOOD_DRAFT, record, seed_records, snapshot, utc

from autobench.report.model import (
    DONE,
    Fig,
    LevelRow,
    Row,
    Run,
    StackItem,
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
    # not measured: no row in the table (the headline sentence says "—"), never 0
    assert "prefill_tok_s" not in by_key and view.figure("prefill_tok_s") == Fig(None, 1)
    assert "ttft_median_ms" not in by_key and view.figure("ttft_median_ms") == Fig(None, 1)  # NaN: not measured
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
    # a cycle that does not pass through the start: b -> c -> b
    assert supersession_chain("x", runs, {"x": {"meta": {"superseded_by": "b"}}, "c": {}}) == ["b", "c", "a"]
    loop = {
        "x": {"meta": {"superseded_by": "p"}},
        "p": {"meta": {"superseded_by": "q"}},
        "q": {"meta": {"superseded_by": "p"}},
    }
    assert supersession_chain("x", {}, loop) == ["p", "q"]


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


# -- exact figures, labels and links: what each page and the index are given --------------------


def test_a_run_is_read_alike_from_a_ledger_record_and_from_a_dict_with_the_other_names():
    status = SimpleNamespace(value="done")  # an enum-like status
    obj = SimpleNamespace(
        id=7,
        recipe_name="r",
        status=status,
        started_at="2026-06-24T10:00:00Z",
        ended_at="2026-06-24",
        model_repo="org/m",
        model_sha="m" * 40,
        draft_repo="org/d",
        draft_sha="d" * 40,
        image="img@sha256:1",
        engine_version="0.23.1",
        root_cause_category="oom",
        root_cause_message="CUDA out of memory",
        root_cause_detail="tried 2 GiB",
        notes="n",
        corrects=3,
        supersedes=4,
        metrics={"decode_tok_s": 1.5},
        boot={"kv_cache_gib": 2.0},
        recipe_snapshot={"bench": {"concurrency": 4}},
    )
    run = run_from_record(obj)
    assert run == Run(
        id=7,
        recipe="r",
        status=DONE,
        started_at=utc(2026, 6, 24, 10),
        ended_at=date(2026, 6, 24),
        model_repo="org/m",
        model_sha="m" * 40,
        draft_repo="org/d",
        draft_sha="d" * 40,
        image="img@sha256:1",
        engine_version="0.23.1",
        root_cause_category="oom",
        root_cause_message="CUDA out of memory",
        root_cause_detail="tried 2 GiB",
        notes="n",
        corrects=3,
        supersedes=4,
        metrics={"decode_tok_s": 1.5},
        boot={"kv_cache_gib": 2.0},
        snapshot={"bench": {"concurrency": 4}},
    )
    assert run.started_at.tzinfo is not None
    other = run_from_record(
        {
            "id": 8,
            "recipe": "r2",
            "status": "failed",
            "started_at": None,
            "model_sha": "",
            "vllm_version": "0.9",
            "note": "old name",
            "snapshot": '{"bench": {"concurrency": 2}}',
            "metrics": b'{"decode_tok_s": 2}',
            "boot": "  ",
        }
    )
    assert (other.recipe, other.status, other.engine_version, other.notes) == ("r2", "FAILED", "0.9", "old name")
    assert (other.snapshot, other.metrics, other.boot) == ({"bench": {"concurrency": 2}}, {"decode_tok_s": 2}, {})
    assert (other.started_at, other.draft_repo, other.corrects) == (None, None, None)
    assert other.model_sha is None  # an empty sha is "not recorded"


def test_json_columns_may_come_as_text_bytes_models_or_nothing():
    from pydantic import BaseModel

    class Facts(BaseModel):
        at: datetime
        n: int

    def metrics(value):
        return run_from_record({"id": 1, "recipe": "r", "status": "DONE", "metrics": value}).metrics

    assert metrics(Facts(at=utc(2026, 1, 2), n=3)) == {"at": "2026-01-02T00:00:00Z", "n": 3}  # JSON mode
    assert metrics(None) == {} and metrics("") == {} and metrics([1]) == {} and metrics('{"a": 1}') == {"a": 1}


def test_times_are_dates_or_datetimes_and_blank_is_none():
    def started(value):
        return run_from_record({"id": 1, "recipe": "r", "status": "DONE", "started_at": value}).started_at

    assert started("2026-06-23") == date(2026, 6, 23) and type(started("2026-06-23")) is date
    assert started("2026-06-24T10:00:00Z") == utc(2026, 6, 24, 10)
    assert started("2026-06-24T10:00:00").tzinfo is None
    assert started(" ") is None and started(None) is None
    moment = utc(2026, 6, 24, 10)
    assert started(moment) == moment and started(date(2026, 1, 1)) == date(2026, 1, 1)


def test_what_counts_as_not_measured():
    run = Run(1, "r", DONE, metrics={"nan": float("nan"), "s": "", "l": [], "t": (), "d": {}, "zero": 0, "f": 0.0})
    assert [run.metric(k) for k in ("nan", "s", "l", "t", "d", "absent")] == [None] * 6
    assert (run.metric("zero"), run.metric("f"), run.metric("nan") is None) == (0, 0.0, True)
    assert Run(1, "r", DONE, metrics={"b": False, "x": "a", "g": 2.5}).metric("b") is False
    assert Run(1, "r", DONE, metrics={"g": 2.5, "x": "a"}).metric("g") == 2.5


def test_concurrency_measured_else_from_the_recipe_one_value_of_a_grid_never_a_bool():
    def conc(metrics=None, snapshot=None):
        return Run(1, "r", DONE, metrics=metrics or {}, snapshot=snapshot or {}).concurrency

    assert conc({"concurrency": 4}, {"bench": {"concurrency": 8}}) == 4
    assert conc({}, {"bench": {"concurrency": 8}}) == 8
    assert conc({"concurrency": [16]}) == 16 and conc({}, {"bench": {"concurrency": [2]}}) == 2
    assert conc({"concurrency": [4, 8]}) is None and conc({"concurrency": True}) is None
    assert conc({"concurrency": "8"}) == 8 and conc({}, {"bench": "x"}) is None and conc() is None
    assert Run(1, "r", DONE, snapshot={"bench": {"concurrency": ""}}).snap("bench", "concurrency") is None


def test_the_day_of_a_run():
    assert Run(1, "r", DONE, started_at=utc(2026, 6, 24, 23)).day == date(2026, 6, 24)
    assert type(Run(1, "r", DONE, started_at=utc(2026, 6, 24, 23)).day) is date
    assert Run(1, "r", DONE, started_at=date(2026, 6, 2)).day == date(2026, 6, 2)
    assert Run(1, "r", DONE).day is None


def test_chronological_order_undated_first_ties_in_ledger_order():
    runs = [
        Run(1, "r", DONE, started_at=date(2026, 6, 25)),
        Run(2, "r", DONE, started_at=utc(2026, 6, 24, 10)),
        Run(3, "r", DONE),
        Run(4, "r", DONE, started_at=utc(2026, 6, 24, 10)),
        Run(5, "r", DONE),
        Run(6, "r", DONE, started_at=datetime(2026, 6, 24, 9)),  # naive
    ]
    assert [r.id for r in chronological(runs)] == [3, 5, 6, 2, 4, 1]
    assert latest(runs).id == 1 and latest(runs, "FAILED") is None and latest([]) is None
    assert latest([*runs, Run(9, "r", "FAILED", started_at=date(2027, 1, 1))], DONE).id == 1


def _view(runs: list[Run], name: str = "r", recipes=None):
    return build_recipe_view(name, group_by_recipe(runs), recipes)


def test_the_stack_of_the_seed_page_item_by_item(seed_runs):
    view = build_recipe_view(DFLASH, group_by_recipe(seed_runs))
    assert view.stack == [
        StackItem("model", "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC"),
        StackItem("model revision", "unknown (the recipe asks for main)"),
        StackItem("quantization", "auto-round 4-bit EC"),
        StackItem("speculative method", "dflash"),
        StackItem("draft", "z-lab/Qwen3.5-122B-A10B-DFlash"),
        StackItem("draft revision", GOOD_DRAFT),
        StackItem("num_speculative_tokens", 5),
        StackItem("image", "vllm/vllm-openai:nightly-aarch64 (from the recipe; not recorded with the run)"),
        StackItem(
            "engine options",
            "dtype=bfloat16, enable_chunked_prefill=True, enable_prefix_caching=True, gpu_memory_utilization=0.85, "
            "max_model_len=262144, max_num_batched_tokens=32768, max_num_seqs=8",
        ),
        StackItem("bench", "dataset=sharegpt, num_prompts=500, concurrency=8, max_tokens=256, max_seconds=900"),
    ]
    assert (view.stack_run.id, view.stack_source) == (3, "run")
    assert view.num_speculative_tokens == 5 and view.superseded_by == ["qwen3-6-35b-a3b-vllm-fp8"]
    assert (view.acceptance_length, view.acceptance_rate) == (Fig(3.25, 3), Fig(0.44, 3))
    assert view.acceptance_per_position == [Fig(v, 3) for v in (0.78, 0.56, 0.39, 0.29, 0.21)]
    assert view.levels == [LevelRow(8, Fig(107.43, 3), Fig(115.66, 3), Fig(681.0, 3), Fig(67.5, 3))]
    assert view.result[0] == Row("prefill", Fig(115.66, 3), "tok/s", "prefill_tok_s")
    # facts the log did not state (weights load time, ...) are left out, not shown as "—"
    assert [row.fig.value for row in view.boot][:5] == [63.71, 463.0, 27.72, 800129, 3.05]
    assert view.boot[4] == Row("max concurrency", Fig(3.05, 3), "×", "max_concurrency")
    assert all(row.fig.value is not None for row in view.boot)
    assert view.cells is None and not build_recipe_view(BASE, group_by_recipe(seed_runs)).num_speculative_tokens


def test_a_recipe_file_alone_gives_the_stack_as_written():
    recipe = {
        "model": {"repo": "org/m", "quantization": {"method": "fp8"}},
        "speculative": {"method": "eagle", "model": "org/d", "revision": "v2"},
        "container": {"image": "img:1"},
        "engine": {"port": 8000, "host": "h", "dtype": None, "extra_args": ["--x", 2]},
        "bench": {"num_prompts": 10},
    }
    view = _view([], recipes={"r": recipe})
    assert (view.stack_run, view.stack_source, view.num_speculative_tokens) == (None, "file", None)
    assert view.stack == [
        StackItem("model", "org/m"),
        StackItem("model revision", "unknown"),
        StackItem("quantization", "fp8"),
        StackItem("speculative method", "eagle"),
        StackItem("draft", "org/d"),
        StackItem("draft revision", "v2"),
        StackItem("num_speculative_tokens", None),
        StackItem("image", "img:1"),
        StackItem("engine options", "--x, 2"),
        StackItem("bench", "num_prompts=10"),
    ]
    assert _view([], recipes={"r": {"model": {"repo": "org/m", "revision": "dev"}}}).stack == [
        StackItem("model", "org/m"),
        StackItem("model revision", "dev"),
        StackItem("quantization", None),
        StackItem("image", None),
        StackItem("engine options", None),
        StackItem("bench", None),
    ]
    assert _view([], recipes={"other": recipe}).stack == []


def test_a_run_without_a_snapshot_shows_what_it_recorded_and_says_what_it_did_not():
    run = Run(1, "r", DONE, model_repo="org/m", model_sha="a" * 40, draft_repo="org/d", engine_version="0.9")
    assert _view([run]).stack == [
        StackItem("model", "org/m"),
        StackItem("model revision", "a" * 40),
        StackItem("quantization", None),
        StackItem("speculative method", None),
        StackItem("draft", "org/d"),
        StackItem("draft revision", "unknown"),
        StackItem("num_speculative_tokens", None),
        StackItem("image", None),
        StackItem("engine version", "0.9"),
        StackItem("engine options", None),
        StackItem("bench", None),
    ]
    snap = {
        "model": {"repo": "org/m", "revision": "main", "quantization": {"method": "awq", "variant": "g128"}},
        "container": {"image": "img:1"},
        "engine": {"max_num_seqs": 4, "enable_x": False, "empty": ""},
        "bench": {"dataset": {"kind": "random"}, "concurrency": 2, "max_tokens": 64, "max_seconds": 1.5},
    }
    run = Run(1, "r", "BLOCKED", model_repo=None, image="img@sha256:1", snapshot=snap)
    assert _view([run]).stack == [
        StackItem("model", "org/m (from the recipe; not recorded with the run)"),
        StackItem("model revision", "unknown (the recipe asks for main)"),
        StackItem("quantization", "awq g128"),
        StackItem("image", "img@sha256:1"),
        StackItem("engine options", "enable_x=False, max_num_seqs=4"),
        StackItem("bench", "dataset=random, concurrency=2, max_tokens=64, max_seconds=1.5"),
    ]
    assert _view([Run(1, "r", DONE, model_repo="org/m", snapshot={"model": {}})]).stack[0] == StackItem(
        "model", "org/m"
    )


def test_the_stack_boot_and_figures_come_from_the_latest_done_run_not_a_later_failure():
    done = Run(
        1,
        "r",
        DONE,
        started_at=date(2026, 1, 1),
        metrics={"decode_tok_s": 5.0, "spec_per_position": [0.5]},
        boot={"kv_cache_gib": 1.0, "zz_new_fact": 3, "aa_blank": "", "kv_extra_pct": 0},
        snapshot={"model": {"repo": "org/done"}},
    )
    failed = Run(
        2,
        "r",
        "FAILED",
        started_at=date(2026, 1, 2),
        boot={"kv_cache_gib": 9.0},
        snapshot={"model": {"repo": "org/failed"}},
    )
    view = _view([done, failed])
    assert (view.latest.id, view.latest_done.id, view.stack_run.id) == (2, 1, 1)
    assert view.stack[0] == StackItem("model", "org/done (from the recipe; not recorded with the run)")
    assert view.boot[0] == Row("KV cache", Fig(1.0, 1), "GiB", "kv_cache_gib")
    assert view.boot[1:] == [
        Row("kv extra pct", Fig(0, 1), "", "kv_extra_pct"),
        Row("zz new fact", Fig(3, 1), "", "zz_new_fact"),
    ]
    assert view.acceptance_per_position == [Fig(0.5, 1)]
    # only a failure: its snapshot and boot facts are shown, no figure
    view = _view([failed])
    assert (view.stack_run.id, view.boot[0].fig) == (2, Fig(9.0, 2))
    assert view.stack[0] == StackItem("model", "org/failed (from the recipe; not recorded with the run)")
    assert view.acceptance_per_position == [] and view.result == []  # no DONE run: no figure
    assert view.figure("decode_tok_s") == Fig(None, None)
    assert view.acceptance_length == Fig(None, None) and view.levels == []
    # a failure without a snapshot: the recipe file fills in
    view = _view([Run(3, "r", "FAILED")], recipes={"r": {"model": {"repo": "org/file"}}})
    assert (view.stack_source, view.stack[0]) == (
        "file",
        StackItem("model", "org/file (from the recipe; not recorded with the run)"),
    )


def test_levels_one_row_per_concurrency_latest_done_unknown_last():
    runs = [
        Run(1, "r", DONE, started_at=date(2026, 1, 1), metrics={"concurrency": 8, "decode_tok_s": 1.0}),
        Run(2, "r", DONE, started_at=date(2026, 1, 2), metrics={"decode_tok_s": 2.0}),
        Run(3, "r", DONE, started_at=date(2026, 1, 3), metrics={"concurrency": 2, "decode_tok_s": 3.0}),
        Run(4, "r", DONE, started_at=date(2026, 1, 4), metrics={"concurrency": 8, "decode_tok_s": 4.0}),
        Run(5, "r", "FAILED", started_at=date(2026, 1, 5), metrics={"concurrency": 4, "decode_tok_s": 5.0}),
    ]
    levels = _view(runs).levels
    assert [(lv.concurrency, lv.decode) for lv in levels] == [(2, Fig(3.0, 3)), (8, Fig(4.0, 4)), (None, Fig(2.0, 2))]
    assert levels[0] == LevelRow(2, Fig(3.0, 3), Fig(None, 3), Fig(None, 3), Fig(None, 3))


def test_history_rows_say_what_each_run_corrects_and_supersedes():
    runs = [
        Run(1, "r", "FAILED", started_at=date(2026, 1, 1), root_cause_category="oom", metrics={"concurrency": 4}),
        Run(2, "r", DONE, started_at=date(2026, 1, 2), corrects=1, metrics={"decode_tok_s": 3.0}),
        Run(3, "r", DONE, started_at=date(2026, 1, 3), supersedes=2, corrects=1),
        Run(4, "r", DONE, started_at=date(2026, 1, 4), supersedes=0),
    ]
    history = _view(runs).history
    assert [(h.run.id, h.root_cause, h.decode, h.concurrency, h.links) for h in history] == [
        (1, "oom", Fig(None, 1), 4, None),
        (2, None, Fig(3.0, 2), None, "corrects run 1"),
        (3, None, Fig(None, 3), None, "corrects run 1; supersedes run 2"),
        (4, None, Fig(None, 4), None, "supersedes run 0"),
    ]
    long = Run(1, "r", "FAILED", root_cause_message="x " * 200 + "end")  # 403 characters
    assert _view([long]).history[0].root_cause == ("x " * 200).strip() + " …"
    exact = Run(1, "r", "FAILED", root_cause_message="y" * 400)  # the history's limit: 400 characters
    assert _view([exact]).history[0].root_cause == "y" * 400
    assert _view([replace(exact, root_cause_message="y" * 401)]).history[0].root_cause == "y" * 400 + " …"


def test_short_root_cause_exact_text():
    def short(limit=90, **kw):
        return short_root_cause(Run(1, "r", "FAILED", **kw), limit=limit)

    assert short(root_cause_category="oom") == "oom"
    assert short(root_cause_message="  out of\n memory  ") == "out of memory"
    assert short(root_cause_category="oom", root_cause_message="out of memory") == "oom: out of memory"
    assert short(root_cause_category="e", root_cause_message="boom", root_cause_detail="a\n b") == "e: boom -- a b"
    assert short() is None and short(root_cause_detail="only a detail") is None
    assert short(10, root_cause_message="abcd, efghij") == "abcd …"  # the comma before the cut goes
    assert short(10, root_cause_message="ab; cd: efghij") == "ab; cd …"
    assert short(10, root_cause_message="abcdefghijklmn") == "abcdefghij …"  # one long word: cut in it
    assert short(10, root_cause_message="abcdefghij") == "abcdefghij"  # exactly the limit: whole
    assert short(12, root_cause_message="aa bb cc dd ee ff") == "aa bb cc dd …"
    run = Run(1, "r", "FAILED", root_cause_message="z" * 91)
    assert short_root_cause(run) == "z" * 90 + " …"  # the index's limit: 90 characters
    assert short_root_cause(replace(run, root_cause_message="z" * 90)) == "z" * 90


def test_speedup_refusal_when_the_baseline_concurrency_is_never_known():
    base = Run(1, "b", DONE, metrics={"decode_tok_s": 2.0})
    this = Run(2, "r", DONE, metrics={"decode_tok_s": 4.0, "concurrency": 8})
    s = compute_speedup(this, "b", [base])
    assert s.refused == "baseline b has DONE runs only at an unknown concurrency, not at 8"
    assert (s.this, s.concurrency, s.base, s.ok) == (Fig(4.0, 2), 8, None, False)
    ok = compute_speedup(this, "b", [Run(3, "b", DONE, metrics={"decode_tok_s": 2.0, "concurrency": 8})])
    assert (ok.ratio, ok.ok, ok.base, ok.concurrency, ok.refused) == (2.0, True, Fig(2.0, 3), 8, None)
    assert compute_speedup(this, "", []).refused == "no baseline declared (set meta.baseline in the recipe)"


def test_the_baseline_comes_from_the_snapshot_or_the_recipe_file():
    this = Run(2, "r", DONE, metrics={"decode_tok_s": 4.0, "concurrency": 8}, snapshot={"bench": {}})
    base = Run(1, "b", DONE, metrics={"decode_tok_s": 2.0, "concurrency": 8})
    runs = {"r": [this], "b": [base]}
    assert build_recipe_view("r", runs).speedup.baseline is None  # a snapshot without meta
    assert build_recipe_view("r", runs, {"r": {"meta": {"baseline": "b"}}}).speedup.baseline is None  # the run's wins
    this = Run(2, "r", DONE, metrics={"decode_tok_s": 4.0, "concurrency": 8})
    assert build_recipe_view("r", {"r": [this], "b": [base]}, {"r": {"meta": {"baseline": "b"}}}).speedup.ratio == 2.0
    assert supersession_chain("r", {"r": [this]}, {"r": {"model": {}}}) == []


def test_the_by_cell_table_is_of_the_latest_done_run_with_two_cells_or_more():
    from autobench.report.cells import cell_table

    def cells(n):
        return tuple(
            {"index": i, "params": {"concurrency": 2**i}, "metrics": {"decode_tok_s": float(i)}} for i in range(n)
        )

    grid = Run(1, "r", DONE, started_at=date(2026, 1, 1), cells=cells(2))
    runs = [
        grid,
        Run(2, "r", "FAILED", started_at=date(2026, 1, 2), cells=cells(3)),
        Run(3, "r", DONE, started_at=date(2026, 1, 3), cells=cells(1)),
    ]
    assert _view(runs).cells == cell_table(1, grid.cells) and _view(runs).cells is not None
    assert _view(runs[1:]).cells is None


def test_the_index_skips_a_recipe_without_runs_and_reports_the_latest_done_figures():
    done = Run(
        1,
        "a",
        DONE,
        started_at=date(2026, 1, 1),
        metrics={
            "decode_tok_s": 4.0,
            "prefill_tok_s": 5.0,
            "ttft_median_ms": 6.0,
            "tpot_median_ms": 7.0,
            "concurrency": 2,
        },
    )
    failed = Run(2, "a", "FAILED", started_at=date(2026, 1, 2), root_cause_category="oom")
    rows = build_index_view({"a": [done, failed], "empty": []}).rows
    assert len(rows) == 1
    row = rows[0]
    assert (row.name, row.latest.id, row.latest_done.id, row.concurrency, row.root_cause) == ("a", 2, 1, 2, "oom")
    assert (row.decode, row.prefill, row.ttft, row.tpot) == (Fig(4.0, 1), Fig(5.0, 1), Fig(6.0, 1), Fig(7.0, 1))
    assert row.speedup.refused == "no baseline declared (set meta.baseline in the recipe)"
    only_failed = build_index_view({"a": [failed]}).rows[0]
    assert (only_failed.decode, only_failed.concurrency, only_failed.latest_done) == (Fig(None, None), None, None)
    assert build_index_view({"a": [done]}).rows[0].root_cause is None


def test_the_stack_shows_the_run_s_own_bench_settings_not_the_recipe_s():
    """Issue #31: the Stack row showed the recipe's concurrency 16 when the run used 4."""
    run = Run(
        1,
        "r",
        DONE,
        metrics={"concurrency": 4, "num_prompts": 64, "decode_tok_s": 1.0},
        snapshot={"model": {"repo": "org/m"}, "bench": {"concurrency": 16, "num_prompts": 64, "max_tokens": 8}},
    )
    (bench,) = [item for item in _view([run]).stack if item.label == "bench"]
    assert bench.value == "num_prompts=64, concurrency=4 (the recipe says 16), max_tokens=8"

"""Quality flags: every misleading case of issue #31 raises its flag on the result, and the flag
is shown wherever the figure is: the run's console lines, ``ledger show``, ``compare`` (its
warnings and verdicts) and the report page.  ``--require-tokenizer`` refuses to estimate."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from autobench.bench.result import normalize, quality_flags
from autobench.cli import main
from autobench.ledger.verdict import CellData, judge_cells
from autobench.metric_catalogue import FLAG_BY_NAME, flags_text
from autobench.recipe import load_recipe
from autobench.runrow import with_recipe_flags

REPO = Path(__file__).resolve().parent.parent
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"

#: Our result's fields of a sound bench: 240 requests, one token per chunk, a real tokenizer.
SOUND: dict[str, Any] = {
    "result_format": "autobench.bench/1",
    "completed": 240,
    "failed": 0,
    "incomplete": 0,
    "num_prompts": 240,
    "duration": 60.0,
    "max_concurrency": 8,
    "output_throughput": 100.0,
    "total_token_throughput": 300.0,
    "median_ttft_ms": 50.0,
    "median_tpot_ms": 10.0,
    "median_itl_ms": 10.0,
    "mean_tokens_per_chunk": 1.0,
    "tokenizer_id": "org/model@" + "a" * 40,
    "time_cap_hit": False,
    "client_bound_warning": False,
    "max_seconds": None,
}

#: One misleading case of the issue each: the result's fields, the flag, a word of its why.
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "prompts estimated (the model repo has no tokenizer)",
        {"tokenizer_id": "estimated", "tokenizer_fallback": "org/model has no tokenizer.json"},
        "prompts_estimated",
        "org/model has no tokenizer.json",
    ),
    ("3.03 tokens per chunk where the server streams one", {"mean_tokens_per_chunk": 3.03}, "burst_stream", "3.03"),
    (
        "TPOT median 0.00: the output arrived in one burst",
        {"mean_tokens_per_chunk": None, "median_tpot_ms": 0.0, "median_itl_ms": 0.0},
        "burst_stream",
        "TPOT median 0 ms and ITL median 0 ms",
    ),
    (
        "the client was the bottleneck",
        {"client_bound_warning": True, "client": {"loop_lag_ms": {"p99": 12.5}, "cpu_fraction_of_one_core": 0.9}},
        "client_bound",
        "lag p99 12.5 ms",
    ),
    (
        "stopped at the time cap",
        {"time_cap_hit": True, "max_seconds": 30.0, "completed": 150},
        "time_capped",
        "150 of 240",
    ),
    ("a p99 of 12 requests", {"completed": 12}, "few_samples", "12 requests"),
]


def test_a_sound_result_raises_no_flag() -> None:
    assert quality_flags(SOUND) == {}
    assert normalize(SOUND)["flags"] is None


@pytest.mark.parametrize(("case", "fields", "flag", "why"), CASES, ids=[c[0] for c in CASES])
def test_each_misleading_case_raises_its_flag(case: str, fields: dict[str, Any], flag: str, why: str) -> None:
    flags = quality_flags({**SOUND, **fields})
    assert list(flags) == [flag] and why in flags[flag], case
    assert normalize({**SOUND, **fields})["flags"] == flags  # read back from a result without them
    assert normalize({**SOUND, **fields, "quality_flags": flags})["flags"] == flags  # or as written


def test_a_vllm_result_raises_what_its_fields_show() -> None:
    vllm = {"completed": 12, "duration": 3.0, "output_throughput": 40.0, "median_tpot_ms": 0.0}
    assert set(normalize(vllm)["flags"]) == {"few_samples", "burst_stream"}


@pytest.mark.parametrize(
    ("per_chunk", "length", "burst"),
    [
        (2.85, 2.9, False),  # one chunk per verify step: the accepted tokens and the bonus token
        (4.3, 2.9, False),  # up to 1.5 steps' worth per chunk on average
        (4.4, 2.9, True),  # more: steps merged in the server's output queue, or the stream interval
        (1.6, 1.0, True),  # an acceptance length of 1 (nothing accepted) allows what plain decoding does
        (1.6, None, True),  # no drafts counted: the chunks are not speculative decoding's
        (1.5, None, False),  # the limit itself is not over it
        (3.0, 2.0, False),
        (2.0, 1.25, True),  # a length under 2 is still named
        (1.6, float("inf"), True),  # not a length: plain decoding's limit
        (1.6, "2.9", True),
        (1.4, 0.5, False),  # below 1 (not vLLM's: 1 + accepted / drafts): one token a step
        (1.6, 0.5, True),
    ],
)
def test_burst_stream_allows_a_spec_decode_step_per_chunk(per_chunk: float, length: object, burst: bool) -> None:
    fields = {**SOUND, "mean_tokens_per_chunk": per_chunk, "spec_decode_acceptance_length": length}
    flags = quality_flags(fields)
    assert ("burst_stream" in flags) is burst
    if burst:
        spec = isinstance(length, float) and 1 < length < float("inf")
        against = f" against {length:.2f} per speculative-decoding step" if spec else ""
        assert flags["burst_stream"] == f"{per_chunk:.2f} tokens per chunk{against}"


def test_no_drafts_needs_the_recipe_and_the_stream_interval_is_named() -> None:
    spec = load_recipe(DFLASH).recipe
    plain = load_recipe(BASE).recipe
    metrics = {"completed": 240, "decode_tok_s": 100.0, "spec_acceptance_length": None}
    assert "no_drafts" in with_recipe_flags(metrics, spec)["flags"]
    assert "flags" not in with_recipe_flags(metrics, plain)  # no speculative decoding configured
    assert "flags" not in with_recipe_flags({**metrics, "spec_acceptance_length": 2.5}, spec)
    burst = with_recipe_flags({**metrics, "flags": {"burst_stream": "3.03 tokens per chunk"}}, plain)
    assert burst["flags"]["burst_stream"] == "3.03 tokens per chunk; server stream interval not set (vLLM: 1)"
    assert with_recipe_flags(burst, plain) == burst  # applied twice, said once
    interval = plain.model_copy(
        update={"engine": plain.engine.model_copy(update={"extra_args": ["--stream-interval", "4"]})}
    )
    assert (
        "server stream interval 4"
        in with_recipe_flags(burst | {"flags": {"burst_stream": "x"}}, interval)["flags"]["burst_stream"]
    )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _record(capsys: pytest.CaptureFixture[str], tmp_path: Path, recipe: Path, fields: dict[str, Any]) -> None:
    result = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
    result.write_text(json.dumps({**SOUND, **fields}))
    code, _, err = run(
        capsys, "record", str(recipe), "--status", "DONE", "--metrics", str(result), "--ledger", str(tmp_path / "l.db")
    )
    assert code == 0, err


def test_a_flagged_run_says_so_in_ledger_show_compare_and_the_report(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "l.db")
    _record(capsys, tmp_path, BASE, {})
    _record(capsys, tmp_path, BASE, {"mean_tokens_per_chunk": 3.03, "tokenizer_id": "estimated"})
    _record(capsys, tmp_path, DFLASH, {})  # speculative decoding configured, no draft counted

    code, out, _ = run(capsys, "ledger", "show", "2", "--ledger", db)
    assert code == 0
    assert "  flags: the figures above are not to be taken at face value" in out
    assert (
        f"    prompts_estimated (asked for: --tokenizer estimated): {FLAG_BY_NAME['prompts_estimated'].meaning}" in out
    )
    assert "    burst_stream (3.03 tokens per chunk; server stream interval not set (vLLM: 1)): " in out
    code, out, _ = run(capsys, "ledger", "show", "1", "--ledger", db)
    assert "flags:" not in out  # a sound run: nothing said
    code, out, _ = run(capsys, "ledger", "show", "3", "--ledger", db)
    assert "    no_drafts (speculative.method dflash configured;" in out

    code, out, err = run(capsys, "compare", "1", "2", "--ledger", db)
    assert code == 0, err
    text = out + err
    assert "B #2-" in text and "'s figures are flagged: prompts_estimated (asked for" in text
    assert "burst_stream (3.03 tokens per chunk" in text
    code, out, _ = run(capsys, "compare", "1", "2", "--json", "--ledger", db)
    assert any("figures are flagged: prompts_estimated" in w for w in json.loads(out)["warnings"])

    docs = tmp_path / "docs"
    code, out, err = run(capsys, "report", "--index", "--ledger", db, "-o", str(docs), "--no-plots")
    assert code == 0, err
    page = (docs / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.md").read_text()
    assert "**Flagged: not to be taken at face value.**" in page
    assert "- `prompts_estimated` (asked for: --tokenizer estimated): prompt lengths were estimated" in page
    assert "- `burst_stream` (3.03 tokens per chunk; server stream interval not set (vLLM: 1)): the stream" in page
    history = [line for line in page.splitlines() if line.startswith("| <a id=")]
    assert "| prompts_estimated, burst_stream |" in history[1] and "| — |" in history[0]
    index = (docs / "index.md").read_text()
    assert "| prompts_estimated, burst_stream |" in index
    spec_page = (docs / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.md").read_text()
    assert "- `no_drafts` (speculative.method dflash configured;" in spec_page


def test_a_verdict_on_flagged_figures_says_so() -> None:
    def side(values: list[float], flags: dict[str, str] | None = None) -> CellData:
        return CellData({"concurrency": 8}, [{"decode_tok_s": v, "flags": flags or {}} for v in values])

    v = judge_cells(
        [side([100.0, 101.0, 100.5])],
        [side([120.0, 121.0, 120.5], {"burst_stream": "3.03 tokens per chunk"})],
        threshold=0.05,
    )
    (cell, m) = next(iter(v.rows()))
    assert m.label() == "faster (flagged: burst_stream)" and m.to_json_dict()["flags"] == ["burst_stream"]
    assert cell.flags[1] == {"burst_stream": "3.03 tokens per chunk"}
    from autobench.ledger.render import verdict_notes, verdict_table

    assert verdict_table(v, "A", "B")[1][0][-1] == "faster (flagged: burst_stream)"
    assert "cell concurrency=8: B's figures are flagged: burst_stream (3.03 tokens per chunk)" in verdict_notes(v)
    sound = judge_cells([side([100.0, 101.0, 100.5])], [side([120.0, 121.0, 120.5])], threshold=0.05)
    assert next(iter(sound.rows()))[1].label() == "faster"


def test_the_run_s_console_lines_name_each_flag() -> None:
    from autobench.cli.run_cmds import _outcome_lines

    outcome = SimpleNamespace(
        status="DONE",
        plan=SimpleNamespace(recipe_name="r", run_dir=Path("runs/r")),
        display_id="#1-abcdef12",
        root_cause_category=None,
        root_cause_message=None,
        root_cause_detail=None,
        metrics={"decode_tok_s": 10.0, "completed": 12, "flags": {"few_samples": "12 requests completed"}},
        notes=[],
    )
    lines: list[str] = []
    _outcome_lines(outcome, lines.append)
    assert f"  FLAG few_samples (12 requests completed): {FLAG_BY_NAME['few_samples'].meaning}" in lines


def test_flags_text_orders_by_the_catalogue() -> None:
    assert flags_text({"few_samples": "3 requests", "burst_stream": "2.00 tokens per chunk"}) == (
        "burst_stream (2.00 tokens per chunk); few_samples (3 requests)"
    )
    assert flags_text(None) == "" and flags_text({}) == ""


def test_require_tokenizer_refuses_to_estimate(capsys) -> None:
    code, out, err = run(
        capsys, "bench", "--base-url", "http://127.0.0.1:9", "--model", "local-name", "--require-tokenizer"
    )
    assert code == 5 and out == ""
    assert err.strip() == (
        "error: refusing to estimate prompt lengths (--require-tokenizer): no --tokenizer, and the model name "
        "'local-name' is not a Hub repo id (hint: pass --tokenizer REPO|PATH (a tokenizer.json or a model "
        "directory), or drop --require-tokenizer)"
    )

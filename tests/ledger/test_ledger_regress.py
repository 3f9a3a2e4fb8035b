"""``autobench regress``: exit 1 on a regression beyond the threshold, 0 otherwise; real SQLite
ledgers with runs recorded through ``autobench record --metrics`` (vllm bench serve's result shape)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.cli import main

REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
RESULT = {
    "completed": 500,
    "failed": 0,
    "duration": 600.0,
    "num_prompts": 500,
    "max_concurrency": 8,
    "output_throughput": 100.0,
    "total_token_throughput": 200.0,
    "median_ttft_ms": 700.0,
    "median_tpot_ms": 60.0,
}


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _record(capsys, tmp_path: Path, db: Path, recipe: Path = DFLASH, status: str = "DONE", **changes: float) -> None:
    metrics = tmp_path / "result.json"
    metrics.write_text(json.dumps({**RESULT, **changes}))
    code, _, err = run(
        capsys, "record", str(recipe), "--status", status, "--metrics", str(metrics), "--ledger", str(db)
    )
    assert code == 0, err


@pytest.fixture
def db(tmp_path: Path, capsys) -> Path:
    """1: baseline; 2: decode 10% slower; 3: within 2% of 1; 4: BLOCKED; 5: another recipe."""
    path = tmp_path / "ledger.db"
    _record(capsys, tmp_path, path)
    _record(capsys, tmp_path, path, output_throughput=90.0, total_token_throughput=191.0, median_tpot_ms=66.0)
    _record(capsys, tmp_path, path, output_throughput=98.5, total_token_throughput=198.5, median_ttft_ms=710.0)
    _record(capsys, tmp_path, path, status="BLOCKED")
    _record(capsys, tmp_path, path, recipe=BASE)
    return path


def test_a_slower_run_is_a_regression(capsys, db):
    code, out, err = run(capsys, "regress", "--baseline", "1", "--current", "2", "--ledger", str(db))
    assert code == 1 and err == ""
    # single runs recorded without per-request samples: no noise band, the threshold alone
    assert "regression beyond 5%: decode_tok_s -10.0% (no band), tpot_median_ms +10.0% (no band)" in out
    assert "regress judges those metrics by the threshold alone" in out
    decode = next(line for line in out.splitlines() if line.startswith("decode_tok_s"))
    # no band: the verdict says so (never "inconclusive" beside REGRESSED); the runs are of a
    # speculative recipe whose results state no draft: flagged
    assert decode.split() == [
        "decode_tok_s",
        "100",
        "90",
        "-10.0%",
        "-",
        "no",
        "band",
        "(flagged:",
        "no_drafts)",
        "REGRESSED",
        "(threshold",
        "alone)",
    ]
    # a looser threshold lets it through
    code, out, _ = run(
        capsys, "regress", "--baseline", "1", "--current", "2", "--threshold", "12%", "--ledger", str(db)
    )
    assert code == 0 and "no regression beyond 12%" in out


def test_a_run_within_the_threshold_passes_and_json(capsys, db):
    code, out, _ = run(capsys, "regress", "--baseline", "1", "--current", "3", "--json", "--ledger", str(db))
    assert code == 0
    doc = json.loads(out)
    assert doc["regression"] is False and doc["threshold"] == pytest.approx(0.05) and doc["noise_band"] is None
    decode = next(m for m in doc["metrics"] if m["metric"] == "decode_tok_s")
    assert decode["change"] == pytest.approx(-0.015) and decode["higher_is_better"] is True
    code, out, _ = run(capsys, "regress", "--baseline", "3", "--current", "2", "--json", "--ledger", str(db))
    assert code == 1 and json.loads(out)["regression"] is True


def test_latest_baseline_is_the_newest_done_run_with_the_same_pins_before(capsys, db):
    code, out, _ = run(capsys, "regress", "--baseline", "latest", "--current", "3", "--json", "--ledger", str(db))
    assert code == 0 and json.loads(out)["baseline"].startswith("#2-")
    code, out, err = run(capsys, "regress", "--baseline", "latest", "--current", "1", "--ledger", str(db))
    assert code == 4 and out == "" and "no DONE run of" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--baseline", "4", "--current", "1"), 4, "the baseline run #4-"),  # BLOCKED
        (("--baseline", "1", "--current", "5"), 4, "do not share their pins"),
        (("--baseline", "1", "--current", "99"), 4, "no run #99"),
        (("--baseline", "1", "--current", "2", "--threshold", "lots"), 2, "--threshold 'lots'"),
        (("--baseline", "1", "--current", "2", "--threshold", "0%"), 2, "between 0 and 100"),
    ],
)
def test_bad_input_is_one_line(capsys, db, args, code, message):
    got, out, err = run(capsys, "regress", *args, "--ledger", str(db))
    assert (got, out) == (code, "")
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err

"""Verdicts and replays on real runs: ``autobench run --runtime process`` against the synthetic
server (through the fake ``vllm``), recorded in a tmp ledger, then ``compare``, ``regress`` and
``replay --run`` through the CLI.  The server is made 10 % slower between two runs of the same
pins by its own options (FAKE_VLLM_ARGS: TTFT and ITL), which are no pin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import FAKE_VLLM, ledger_rows, run_cli, run_env

FAST = "--ttft-ms 20 --itl-ms 2"
SLOW = "--ttft-ms 22 --itl-ms 2.2"  # every delay 10 % longer


def cli(tmp_path: Path, *args: str, timeout: float = 90, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autobench", *args, "--ledger", str(tmp_path / "ledger.db")],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=run_env(tmp_path, **env),
        cwd=tmp_path,
    )


@pytest.fixture
def recipe(make_recipe) -> Path:
    return make_recipe(num_prompts=240, concurrency=4, max_tokens=16)


def test_a_server_ten_percent_slower_is_a_regression_and_compare_says_slower(recipe, tmp_path):
    for args in (FAST, SLOW):
        done = run_cli(recipe, tmp_path, timeout=120, FAKE_VLLM_ARGS=args)
        assert done.returncode == 0, done.stderr
    first, second = (r.id for r in sorted(ledger_rows(tmp_path), key=lambda r: r.id))

    done = cli(tmp_path, "regress", "--baseline", str(first), "--current", str(second))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "regression beyond 5%:" in done.stdout and "decode_tok_s" in done.stdout
    done = cli(tmp_path, "regress", "--baseline", str(first), "--current", str(second), "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["regression"] is True and doc["noise_band"]["level"] == 0.95

    done = cli(tmp_path, "compare", str(first), str(second), "--json")
    assert done.returncode == 0, done.stderr
    (cell,) = json.loads(done.stdout)["verdicts"]["cells"]
    by = {m["metric"]: m for m in cell["metrics"]}
    for metric in ("decode_tok_s", "tpot_median_ms", "ttft_median_ms"):
        m = by[metric]
        assert m["verdict"] == "slower" and m["method"] == "requests", m
        lo, hi = m["band"]
        assert (hi < 1.0) if m["higher_is_better"] else (lo > 1.0), m  # the band excludes 1.0
    assert by["ttft_p99_ms"]["method"] == "few" and by["ttft_p99_ms"]["verdict"] == "inconclusive"  # 240 requests
    done = cli(tmp_path, "compare", str(first), str(second))
    decode = [line.split() for line in done.stdout.splitlines() if "decode_tok_s" in line.split()][-1]
    assert decode[0] == "concurrency=4" and decode[-1] == "slower" and done.returncode == 0

    # the other way round: faster, and no regression
    done = cli(tmp_path, "regress", "--baseline", str(second), "--current", str(first))
    assert done.returncode == 0 and "no regression beyond 5%" in done.stdout


def test_replay_run_records_a_run_pointing_back_and_compares(recipe, tmp_path):
    done = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=FAST)
    assert done.returncode == 0, done.stderr
    (original,) = ledger_rows(tmp_path)
    vllm = f"{sys.executable} {FAKE_VLLM}"

    # A replay whose script would differ (another vllm executable) is refused before anything runs.
    done = cli(tmp_path, "replay", str(original.id), "--run", "--vllm-exec", "vllm", "--runs-dir", "runs")
    assert done.returncode == 6 and done.stdout == "", done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "compiles to another script now" in done.stderr
    assert len(ledger_rows(tmp_path)) == 1

    done = cli(
        tmp_path, "replay", str(original.id), "--run", "--vllm-exec", vllm, "--runs-dir", "runs", FAKE_VLLM_ARGS=FAST
    )
    assert done.returncode == 0, done.stderr
    assert f"compare {original.display_id} (A) with its replay #2-" in done.stdout
    assert "pins differ" not in done.stdout and "verdict" in done.stdout
    replayed = max(ledger_rows(tmp_path), key=lambda r: r.id)
    assert replayed.id == 2 and replayed.replay_of == original.id and replayed.status == "DONE"
    assert replayed.script_snapshot == original.script_snapshot
    assert replayed.recipe_digest == original.recipe_digest
    assert cli(tmp_path, "ledger", "verify").returncode == 0

    done = cli(tmp_path, "replay", "2", "--run", "--vllm-exec", vllm, "--runs-dir", "runs", "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["replay_of"] == 2 and doc["outcome"]["status"] == "DONE"
    assert doc["b"]["id"] == 3 and doc["verdicts"]["cells"]


def test_grid_runs_are_compared_cell_by_cell_over_their_repeats(make_recipe, tmp_path):
    recipe = make_recipe(concurrency="[1, 4]", num_prompts=20, max_tokens=8, extra="  repeat: 3\n")
    for args in (FAST, SLOW):
        done = run_cli(recipe, tmp_path, timeout=180, FAKE_VLLM_ARGS=args)
        assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "compare", "1", "2", "--json")
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout)["verdicts"]
    cells = {c["params"]["concurrency"]: c for c in verdicts["cells"]}
    assert sorted(cells) == [1, 4] and all("repeat" not in c["params"] for c in verdicts["cells"])
    for cell in cells.values():
        assert cell["repeats"] == {"a": 3, "b": 3}
        by = {m["metric"]: m for m in cell["metrics"]}
        assert {m["method"] for m in by.values() if m["metric"] != "goodput"} == {"repeats"}
        assert all(isinstance(m["client_bound"], bool) for m in by.values())
        assert by["tpot_median_ms"]["ratio"] > 1.03  # every delay 10 % longer
    # a run against itself: every band holds 1.0, so never faster or slower
    done = cli(tmp_path, "compare", "2", "2", "--json")
    same = [m for c in json.loads(done.stdout)["verdicts"]["cells"] for m in c["metrics"]]
    assert same and {m["verdict"] for m in same} <= {"no change", "inconclusive"}
    assert all(m["band"][0] <= 1.0 <= m["band"][1] for m in same if m["band"] is not None)

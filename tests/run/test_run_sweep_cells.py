"""Issue 15's "Done when", ledger side: a grid of concurrency [1, 4, 16] x 2 repeats run on the
process runtime against the synthetic server is ONE run with six cells holding their raw
samples, `ledger verify` passes, and percentiles merged over the repeats come from the union of
their requests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import ledger_rows, run_cli, run_env

from autobench.ledger import open_ledger
from autobench.samples import merge, percentile, summary

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration

FAST = "--ttft-ms 2 --itl-ms 1 --log-stats-interval 0.2"


def test_a_grid_run_is_one_run_with_six_cells_and_their_samples(make_recipe, tmp_path: Path):
    recipe = make_recipe(concurrency="[1, 4, 16]", num_prompts=6, extra="  repeat: 2\n")
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    [row] = ledger_rows(tmp_path)
    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        cells = book.cells(row.id)
        assert row.cells_digest is not None and book.verify().ok
    assert [(c.index, c.params["concurrency"], c.params["repeat"]) for c in cells] == [
        (0, 1, 1),
        (1, 4, 1),
        (2, 16, 1),
        (3, 1, 2),
        (4, 4, 2),
        (5, 16, 2),
    ]
    for c in cells:
        assert c.samples is not None and len(c.samples) == 6 and c.samples.count("ok") == c.metrics["completed"] == 6
        assert summary(c.samples)["ttft_p99_ms"] == percentile(c.samples.values("ttft_ms"), 99)
        assert abs(summary(c.samples)["ttft_p99_ms"] - c.metrics["ttft_p99_ms"]) <= 0.0005
    at16 = merge([c.samples for c in cells if c.params["concurrency"] == 16])
    union = [v for c in cells if c.params["concurrency"] == 16 for v in c.samples.values("itl_ms")]
    assert len(at16) == 12 and summary(at16)["itl_p99_ms"] == percentile(union, 99)
    verify = subprocess.run(
        [sys.executable, "-m", "autobench", "ledger", "verify", "--ledger", str(tmp_path / "ledger.db")],
        capture_output=True,
        text=True,
        env=run_env(tmp_path),
        timeout=60,
    )
    assert verify.returncode == 0 and "ledger OK: 1 runs" in verify.stdout, verify.stdout + verify.stderr


def test_a_run_with_two_load_generators_keeps_both_ones_samples_in_its_cell(make_recipe, tmp_path: Path):
    """Issue #34: bench.workers 2 -- the cell's raw samples hold every request of both processes."""
    recipe = make_recipe(concurrency=4, num_prompts=10, extra="  workers: 2\n")
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    [row] = ledger_rows(tmp_path)
    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        [cell] = book.cells(row.id)
        assert book.verify().ok
    assert cell.samples is not None and len(cell.samples) == 10 and cell.samples.count("ok") == 10
    assert all(r.dispatch_ms is not None for r in cell.samples.requests())  # samples format 2
    [bench] = list(tmp_path.rglob("bench.json"))
    generators = json.loads(bench.read_text())["workers"]["generators"]
    assert [g["requests"] for g in generators] == [5, 5]

"""The same run recorded through `run` and through `record --log/--metrics` gives the same row.

`run` drives the real synthetic server behind the fake `vllm` (tests/run/fake_vllm.py: no GPU
or vLLM here); `record` is then given that run's stored server.log and bench.json.  Both
paths build the row in autobench.runrow.new_run, so the root-cause text, category, boot
facts and metric columns must agree field by field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import ledger_rows, only_run_dir, run_cli, run_env

from autobench.ledger import BOOT_KEYS, METRIC_KEYS

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration

FAST = "--ttft-ms 5 --itl-ms 2 --log-stats-interval 0.2"

SAME = ("root_cause_category", "root_cause_message", "root_cause_detail", "engine_version", "model_sha", "draft_sha")


def _record(recipe: Path, tmp_path: Path, status: str, *files: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "autobench", "record", str(recipe), "--status", status, *files]
    argv += ["--ledger", str(tmp_path / "ledger.db")]
    return subprocess.run(argv, capture_output=True, text=True, env=run_env(tmp_path), timeout=60)


def _compare(run_row, record_row) -> None:
    assert (run_row.source, record_row.source) == ("run", "manual")
    for key in SAME:
        assert getattr(run_row, key) == getattr(record_row, key), key
    for key in BOOT_KEYS:
        assert run_row.boot[key] == record_row.boot[key], key
    for key in METRIC_KEYS:
        assert run_row.metrics[key] == record_row.metrics[key], key


@pytest.mark.parametrize(
    ("args", "status", "files"),
    [
        pytest.param('--fail-boot-with "new_spec.page_size_bytes == max_page_size"', "BLOCKED", ("log",), id="blocked"),
        pytest.param(FAST, "DONE", ("log", "metrics"), id="done"),
    ],
)
def test_run_and_record_give_the_same_row(make_recipe, tmp_path: Path, args, status, files):
    recipe = make_recipe()
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=args)
    assert res.returncode == (0 if status == "DONE" else 6), res.stderr
    run_dir = only_run_dir(tmp_path)
    given = {"log": ["--log", str(run_dir / "server.log")], "metrics": ["--metrics", str(run_dir / "bench.json")]}
    rec = _record(recipe, tmp_path, status, *[w for f in files for w in given[f]])
    assert rec.returncode == 0, rec.stderr
    run_row, record_row = ledger_rows(tmp_path)
    assert run_row.status == record_row.status == status
    _compare(run_row, record_row)
    if status == "BLOCKED":
        assert run_row.root_cause_category == "kv_page_size"
        assert "page_size_bytes == max_page_size at kv_cache_utils.py:1077" in run_row.root_cause_message
    else:
        assert run_row.metrics["completed"] == 8 and run_row.boot["vllm_version"] == "0.23.1"
        _one_cell_with_samples(tmp_path, run_row, record_row)


def _one_cell_with_samples(tmp_path: Path, run_row, record_row) -> None:
    """`run` keeps the bench's raw samples as the run's one cell; `record` of a result file
    has none to keep (no cell, as before schema v8)."""
    from autobench.ledger import open_ledger
    from autobench.samples import summary

    with open_ledger(tmp_path / "ledger.db", create=False) as book:
        (cell,) = book.cells(run_row.id)
        assert book.cells(record_row.id) == [] and record_row.cells_digest is None
        assert run_row.cells_digest is not None and book.verify().ok
    assert (
        cell.index == 0 and cell.params["concurrency"] == run_row.metrics["concurrency"] and cell.params["repeat"] == 1
    )
    # the cell keeps the run's metric columns, and its own extras (client_bound, goodput)
    assert {k: v for k, v in cell.metrics.items() if k in METRIC_KEYS} == {
        k: v for k, v in run_row.metrics.items() if v is not None
    }
    assert cell.samples is not None and cell.samples.count("ok") == run_row.metrics["completed"] == 8
    got = summary(cell.samples)
    for key in ("ttft_median_ms", "ttft_p99_ms", "itl_p99_ms", "e2el_median_ms", "tpot_p99_ms"):
        assert got[key] == pytest.approx(run_row.metrics[key], abs=0.0005), key

"""``compare`` and ``regress`` through the CLI on runs that kept their per-request samples: a
server 10 % slower is a regression and compare says slower, per cell and over repeats.

The two runs are built from seeded draws (every delay of B 10 % longer than A's distribution)
and appended through the real store, so the verdict is the same on any machine at any load.
That ``autobench run`` stores what compare reads is tested on real runs in
tests/run/test_run_verdicts.py (integration); how close a measured run comes to the server's
timings is benchmarks/bench_accuracy.py's to print, not a test's to assert."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from ledger_helpers import make_run

from autobench.cli import main
from autobench.ledger import NewCell, open_ledger
from autobench.samples import Request, Samples, summary


def drawn(seed: int, n: int, slower: float, concurrency: int) -> tuple[Samples, dict[str, float | int | None]]:
    """n requests of 16 tokens from a server with TTFT ~20 ms and ITL ~2 ms, every delay ``slower``
    times longer; metrics as a bench writes them (decode tok/s of a closed loop at ``concurrency``)."""
    r = random.Random(seed)
    rows = []
    for i in range(n):
        ttft = slower * r.lognormvariate(3.0, 0.15)
        gaps = [slower * r.lognormvariate(0.7, 0.1) for _ in range(15)]
        e2el = ttft + sum(gaps)
        rows.append(Request("ok", ttft, sum(gaps) / 15, e2el, gaps, 32, 16, None, 0.01 * i))
    samples = Samples.from_requests(rows)
    metrics = dict(summary(samples))
    seconds = sum(x.e2el_ms or 0.0 for x in rows) / 1000 / concurrency
    metrics.update(decode_tok_s=16 * n / seconds, total_tok_s=48 * n / seconds, concurrency=concurrency)
    return samples, metrics


def single_cell_run(seed: int, slower: float) -> object:
    samples, metrics = drawn(seed, 240, slower, 4)
    return make_run(metrics={}, cells=(NewCell({"concurrency": 4}, metrics, samples),))


def grid_run(seed: int, slower: float) -> object:
    cells = []
    for conc in (1, 4):
        for repeat in range(3):
            samples, metrics = drawn(seed + 10 * conc + repeat, 20, slower, conc)
            metrics["client_bound"] = False
            cells.append(NewCell({"concurrency": conc, "repeat": repeat}, metrics, samples))
    return make_run(metrics={}, cells=tuple(cells))


def cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str]:
    code = main([*args, "--ledger", str(db)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """1: the server; 2: the same server 10 % slower (240 requests each, concurrency 4)."""
    db = tmp_path / "ledger.db"
    with open_ledger(db) as book:
        book.append(single_cell_run(1, 1.0))
        book.append(single_cell_run(2, 1.1))
    return db


def test_a_server_ten_percent_slower_is_a_regression_and_compare_says_slower(two_runs, capsys):
    code, out = cli(capsys, two_runs, "regress", "--baseline", "1", "--current", "2")
    assert code == 1, out
    assert "regression beyond 5%:" in out and "decode_tok_s" in out
    code, out = cli(capsys, two_runs, "regress", "--baseline", "1", "--current", "2", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["regression"] is True and doc["noise_band"]["level"] == 0.95

    code, out = cli(capsys, two_runs, "compare", "1", "2", "--json")
    assert code == 0
    (cell,) = json.loads(out)["verdicts"]["cells"]
    by = {m["metric"]: m for m in cell["metrics"]}
    for metric in ("decode_tok_s", "tpot_median_ms", "ttft_median_ms"):
        m = by[metric]
        assert m["verdict"] == "slower" and m["method"] == "requests", m
        lo, hi = m["band"]
        assert (hi < 1.0) if m["higher_is_better"] else (lo > 1.0), m  # the band excludes 1.0
    assert by["ttft_p99_ms"]["method"] == "few" and by["ttft_p99_ms"]["verdict"] == "inconclusive"  # 240 requests
    code, out = cli(capsys, two_runs, "compare", "1", "2")
    decode = [line.split() for line in out.splitlines() if "decode_tok_s" in line.split()][-1]
    assert decode[0] == "concurrency=4" and decode[-1] == "slower" and code == 0

    # the other way round: faster, and no regression
    code, out = cli(capsys, two_runs, "regress", "--baseline", "2", "--current", "1")
    assert code == 0 and "no regression beyond 5%" in out


def test_grid_runs_are_compared_cell_by_cell_over_their_repeats(tmp_path, capsys):
    db = tmp_path / "ledger.db"
    with open_ledger(db) as book:
        book.append(grid_run(100, 1.0))
        book.append(grid_run(200, 1.1))
    code, out = cli(capsys, db, "compare", "1", "2", "--json")
    assert code == 0
    verdicts = json.loads(out)["verdicts"]
    cells = {c["params"]["concurrency"]: c for c in verdicts["cells"]}
    assert sorted(cells) == [1, 4] and all("repeat" not in c["params"] for c in verdicts["cells"])
    for cell in cells.values():
        assert cell["repeats"] == {"a": 3, "b": 3}
        by = {m["metric"]: m for m in cell["metrics"]}
        assert {m["method"] for m in by.values() if m["metric"] != "goodput"} == {"repeats"}
        assert all(isinstance(m["client_bound"], bool) for m in by.values())
        assert by["tpot_median_ms"]["ratio"] > 1.03  # every delay 10 % longer
    # a run against itself: every band holds 1.0, so never faster or slower
    code, out = cli(capsys, db, "compare", "2", "2", "--json")
    same = [m for c in json.loads(out)["verdicts"]["cells"] for m in c["metrics"]]
    assert same and {m["verdict"] for m in same} <= {"no change", "inconclusive"}
    assert all(m["band"][0] <= 1.0 <= m["band"][1] for m in same if m["band"] is not None)

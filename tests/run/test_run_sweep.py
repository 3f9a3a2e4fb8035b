"""`autobench run` over a bench grid: one server boot, every cell benched, progress lines,
Ctrl-C keeps the finished cells.  Real CLI subprocesses, the synthetic server behind the fake
`vllm`, real signals, a real SQLite ledger."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from run_helpers import ledger_rows, only_run_dir, pid_alive, run_args, run_cli, run_env, run_here

FAST = "--ttft-ms 2 --itl-ms 1 --log-stats-interval 0.2"


def _boots(run_dir: Path) -> int:
    return (run_dir / "server.log").read_text().count("Started server process")


@pytest.mark.integration
def test_a_grid_runs_every_cell_on_one_server_boot(make_recipe, tmp_path: Path):
    recipe = make_recipe(concurrency="[1, 4, 16]", num_prompts=6, extra="  repeat: 2\n")
    res = run_cli(recipe, tmp_path, "--json", FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    outcome = json.loads(res.stdout)
    assert outcome["status"] == "DONE"
    cells = outcome["cells"]
    assert [c["params"]["concurrency"] for c in cells] == [1, 4, 16, 1, 4, 16]  # round by round
    assert [c["repeat"] for c in cells] == [1, 1, 1, 2, 2, 2]
    assert all(c["metrics"]["completed"] == 6 for c in cells)
    run_dir = only_run_dir(tmp_path)
    assert _boots(run_dir) == 1
    assert "[autobench] server torn down" in (run_dir / "server.log").read_text()
    for i in range(1, 7):
        assert (run_dir / f"bench.cell-{i}.json").is_file()
    # plain progress (stderr is no terminal here): one line when each cell starts and ends
    assert "cell 1/6: concurrency=1" in res.stderr and "cell 6/6 done: 6 completed, 0 errors" in res.stderr
    [row] = ledger_rows(tmp_path)
    assert row.status == "DONE"
    # the row is the headline cell (concurrency 16) merged over its two repeats; each cell keeps its own
    assert row.metrics["completed"] == 12 and row.metrics["errors"] == 0
    assert row.metrics["concurrency"] == 16 and row.metrics["decode_tok_s"] > 0
    assert row.metrics["ttft_median_ms"] is not None


@pytest.mark.integration
def test_a_one_cell_recipe_runs_as_before(make_recipe, tmp_path: Path):
    res = run_cli(make_recipe(), tmp_path, "--json", FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    outcome = json.loads(res.stdout)
    assert len(outcome["cells"]) == 1
    run_dir = only_run_dir(tmp_path)
    assert (run_dir / "bench.json").is_file() and not (run_dir / "bench.cell-1.json").exists()
    assert "cell 1/1" not in res.stderr
    [row] = ledger_rows(tmp_path)
    assert row.metrics["concurrency"] == 2 and row.metrics["decode_tok_s"] > 0


@pytest.mark.integration
def test_a_profile_applies_its_grid_and_schedule(make_recipe, tmp_path: Path):
    recipe = make_recipe(num_prompts=4)
    profile = tmp_path / "sweep.yaml"
    profile.write_text("concurrency: [1, 2]\nschedule:\n  - {concurrency: 2}\n  - {concurrency: 1}\n")
    res = run_cli(recipe, tmp_path, "--json", "--profile", str(profile), FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    assert [c["params"]["concurrency"] for c in json.loads(res.stdout)["cells"]] == [2, 1]
    [row] = ledger_rows(tmp_path)
    assert row.recipe_snapshot["bench"]["concurrency"] == [1, 2]  # the run's recipe is the merged one


@pytest.mark.integration
def test_sigint_during_a_sweep_keeps_the_finished_cells(make_recipe, tmp_path: Path):
    recipe = make_recipe(concurrency="[1, 2, 4]", num_prompts=6)
    env = run_env(tmp_path, FAKE_VLLM_ARGS="--ttft-ms 5 --itl-ms 40", PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen(
        run_args(recipe, tmp_path, "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        for line in proc.stderr:  # wait until cell 2 is under way: cell 1 has finished
            seen.append(line)
            if line.startswith("cell 2/3:") or time.monotonic() > deadline:
                break
        assert seen and seen[-1].startswith("cell 2/3:"), "".join(seen)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=10)
            raise AssertionError(f"autobench run did not stop after SIGINT:\n{err}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = "".join(seen) + err
    assert proc.returncode == 130, err
    outcome = json.loads(out)
    assert outcome["status"] == "ABORTED" and outcome["signal"] == "SIGINT"
    assert [c["params"]["concurrency"] for c in outcome["cells"]] == [1]  # cell 1 kept, cell 2 cut short
    [row] = ledger_rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_category == "interrupted"
    assert row.metrics["completed"] == 6  # cell 1's requests
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as ledger:  # the finished cell, with its samples
        [cell] = ledger.cells(row.id)
        assert cell.params["concurrency"] == 1 and cell.samples is not None and len(cell.samples) == 6
    run_dir = only_run_dir(tmp_path)
    log = (run_dir / "server.log").read_text()
    assert "[autobench] server torn down" in log
    pid = int(log.split("Started server process [", 1)[1].split("]", 1)[0])
    assert not pid_alive(pid)


def test_bad_grids_are_refused_in_one_line_and_nothing_is_recorded(make_recipe, tmp_path: Path):
    cases = [
        (dict(concurrency="[]"), "bench.concurrency: empty grid"),
        (dict(concurrency="0"), "bench.concurrency: 0 is below the minimum"),
        (dict(concurrency="[1, 0]"), "bench.concurrency[1]: 0 is below the minimum"),
        (dict(extra="  repeat: 0\n"), "bench.repeat: 0 is below the minimum 1"),
        (
            dict(concurrency="[1, 4]", extra="  schedule: [{concurrency: 8}]\n"),
            "AB080 bench.schedule[0].concurrency: schedule entry 1 concurrency=8 is not in the grid",
        ),
    ]
    for i, (kw, expected) in enumerate(cases):
        recipe = make_recipe(name=f"bad-{i}", **kw)
        res = run_here(recipe, tmp_path, FAKE_VLLM_ARGS=FAST)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {recipe}:"), res.stderr
        assert expected in lines[0] and "(hint: " in lines[0] and "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ledger.db").exists()


def test_a_profile_for_another_tool_is_refused_in_one_line(make_recipe, tmp_path: Path):
    profile = tmp_path / "spark-arena-v2.yaml"
    profile.write_text("framework: llama-benchy\nargs:\n  concurrency: [1, 2, 5, 10]\n  runs: 3\n")
    res = run_here(make_recipe(), tmp_path, "--profile", str(profile), FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"error: {profile}:1:1: a sparkrun benchmark profile (framework: llama-benchy), not an autobench "
        "bench profile (hint: an autobench profile holds bench keys, e.g. `concurrency: [1, 4, 16]`, "
        "`repeat: 2`, `schedule: [{concurrency: 16}, ...]` (docs/recipes.md, Bench profiles))"
    )
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ledger.db").exists()


@pytest.mark.integration
def test_the_report_of_a_grid_run_renders(make_recipe, tmp_path: Path):
    res = run_cli(make_recipe(concurrency="[1, 2]", num_prompts=3), tmp_path, FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    report = subprocess.run(
        [
            *run_args(make_recipe(), tmp_path)[:3],
            "report",
            "synth-run",
            "--ledger",
            str(tmp_path / "ledger.db"),
            "-o",
            str(tmp_path / "docs"),
        ],
        capture_output=True,
        text=True,
        env=run_env(tmp_path),
        cwd=tmp_path,
    )
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "docs" / "recipes" / "synth-run.md").read_text()
    assert (
        "**DONE**" in page
        and "concurrency=\\[1, 2\\]" in page
        and "concurrency 2 (its headline cell concurrency=2" in page
    )


def test_a_dry_run_lists_the_cells_and_their_bench_commands(make_recipe, tmp_path: Path):
    recipe = make_recipe(concurrency="[1, 4]", extra="  repeat: 2\n")
    res = run_here(recipe, tmp_path, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "cells      4 on one server boot, in this order:" in res.stdout
    assert "           4. concurrency=4 input_len=16 output_len=8 repeat 2/2" in res.stdout
    benches = [line for line in res.stdout.splitlines() if line.startswith("#   autobench bench ")]
    assert [b.split("--concurrency ")[1].split()[0] for b in benches] == ["1", "4", "1", "4"]
    assert not (tmp_path / "runs").exists()


@pytest.mark.integration
def test_a_server_dying_in_cell_2_fails_the_sweep_and_keeps_cell_1(make_recipe, tmp_path: Path):
    recipe = make_recipe(concurrency="[1, 2, 4]", num_prompts=4)
    res = run_cli(recipe, tmp_path, "--json", FAKE_VLLM_ARGS=f"{FAST} --die-after-requests 6")
    assert res.returncode == 6, res.stderr
    outcome = json.loads(res.stdout)
    assert outcome["status"] == "FAILED"
    assert [c["params"]["concurrency"] for c in outcome["cells"]] == [1]  # cell 1 kept, cell 2 died
    assert "in cell 2 (concurrency=2" in json.dumps(outcome["notes"]) + str(outcome["root_cause"])
    assert "cell 3/3" not in res.stderr  # the sweep stopped
    [row] = ledger_rows(tmp_path)
    assert row.status == "FAILED" and row.metrics["completed"] == 4


@pytest.mark.integration
def test_done_when_a_grid_is_one_run_of_six_cells_verified_and_reported(make_recipe, tmp_path: Path):
    """Issue 15: concurrency [1, 4, 16] x 2 repeats, one boot, one run with six cells and their
    raw samples, `ledger verify` passes, the report shows the by-concurrency table."""
    from autobench.ledger import open_ledger

    recipe = make_recipe(concurrency="[1, 4, 16]", num_prompts=6, extra="  repeat: 2\n")
    res = run_cli(recipe, tmp_path, FAKE_VLLM_ARGS=FAST)
    assert res.returncode == 0, res.stderr
    assert _boots(only_run_dir(tmp_path)) == 1
    [row] = ledger_rows(tmp_path)
    with open_ledger(tmp_path / "ledger.db", create=False) as ledger:
        cells = ledger.cells(row.id)
        assert [(c.params["concurrency"], c.params["repeat"]) for c in cells] == [
            (1, 1),
            (4, 1),
            (16, 1),
            (1, 2),
            (4, 2),
            (16, 2),
        ]
        assert all(c.samples is not None and len(c.samples) == 6 for c in cells)
    db = str(tmp_path / "ledger.db")
    cli = [*run_args(recipe, tmp_path)[:3]]
    verify = subprocess.run(
        [*cli, "ledger", "verify", "--ledger", db], capture_output=True, text=True, env=run_env(tmp_path), cwd=tmp_path
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    report = subprocess.run(
        [*cli, "report", "synth-run", "--ledger", db, "-o", str(tmp_path / "docs")],
        capture_output=True,
        text=True,
        env=run_env(tmp_path),
        cwd=tmp_path,
    )
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "docs" / "recipes" / "synth-run.md").read_text()
    assert "## Results by cell" in page and f"3 grid points of [run {row.id}](#run-{row.id})" in page
    lines = page.splitlines()
    assert any(
        line.startswith("| concurrency | repeats | completed | errors | decode tok/s | total tok/s |") for line in lines
    )
    for conc, cells_text in ((1, "cells 1, 4"), (4, "cells 2, 5"), (16, "cells 3, 6")):
        [line] = [x for x in lines if x.startswith(f"| {conc} | 2 | 12 | 0 |")]
        assert line.endswith(f"[run {row.id}](#run-{row.id}) · {cells_text} |") and "| — |" not in line
    for stem in ("throughput", "latency", "per-user"):
        assert f"(synth-run.cells.{stem}.svg)" in page
        assert (tmp_path / "docs" / "recipes" / f"synth-run.cells.{stem}.svg").is_file()

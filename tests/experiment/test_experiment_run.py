"""`autobench experiment run` and `report` end to end on the process runtime: each treatment
booted as the stand-in `vllm serve` (python -m autobench.run.standin, the synthetic server with
a draft model's acceptance and cost known in advance), benched, recorded; the report finds the
fastest `num_speculative_tokens` the synthetic world defines; a re-run boots nothing."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.run.standin import draft_speed
from autobench.tour import write_tokenizer

pytestmark = pytest.mark.integration  # real server processes, one per treatment

DRAFT = "org/eagle-draft"
REV_A = "a" * 40


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _recipe(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    write_tokenizer(model)
    port = _port()
    path = tmp_path / "r.yaml"
    path.write_text(
        f"""\
name: exp-base
model:
  repo: {model}
  served_name: m
speculative:
  method: eagle3
  model: {DRAFT}
  revision: {REV_A}
  num_speculative_tokens: 1
container:
  image: vllm/vllm-openai:v0.11.0
  ports: ["{port}:{port}"]
engine:
  host: 127.0.0.1
  port: {port}
  max_model_len: 4096
bench:
  dataset: {{kind: random, input_len: 16, output_len: 192}}
  num_prompts: 16
  concurrency: 2
  max_tokens: 192
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    return path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _k_experiment(tmp_path: Path) -> tuple[Path, str, list[str]]:
    """k in {1, 3, 6} over the stand-in's world: the experiment file, its ledger, and the
    `experiment run` argv on the process runtime."""
    _recipe(tmp_path)
    exp = tmp_path / "exp.yaml"
    exp.write_text("recipe: r.yaml\nfactors:\n  speculative.num_speculative_tokens: [1, 3, 6]\n", encoding="utf-8")
    ledger = str(tmp_path / "ledger.db")
    run_it = ["experiment", "run", str(exp), "--runtime", "process", "--ledger", ledger, "--json"]
    run_it += ["--vllm-exec", f"{sys.executable} -m autobench.run.standin", "--runs-dir", str(tmp_path / "runs")]
    return exp, ledger, run_it


def test_an_experiment_runs_each_treatment_once_and_the_report_names_the_known_best(tmp_path, capsys) -> None:
    exp, ledger, run_it = _k_experiment(tmp_path)
    code, out, err = _run(capsys, *run_it)
    assert code == 0, err
    doc = json.loads(out)
    assert [(t["id"], t["action"], t["status"]) for t in doc["treatments"]] == [
        ("t1", "ran", "DONE"),
        ("t2", "ran", "DONE"),
        ("t3", "ran", "DONE"),
    ]
    with open_ledger(ledger) as book:
        runs = book.runs(status="DONE")
        assert len(runs) == 3 and {r.recipe_name for r in runs} == {"exp-base"}
        assert [r.recipe_digest for r in runs] == [t["digest"] for t in doc["treatments"]]
    # run again: every treatment has its DONE run, nothing boots
    code, out, err = _run(capsys, *run_it)
    assert code == 0, err
    assert [t["action"] for t in json.loads(out)["treatments"]] == ["skipped"] * 3
    with open_ledger(ledger) as book:
        assert book.count() == 3
        first, second = book.experiments(name="exp")
        assert [t["action"] for t in first.treatments] == ["ran"] * 3
        assert [t["action"] for t in second.treatments] == ["skipped"] * 3
        assert [t["run_uid"] for t in first.treatments] == [t["run_uid"] for t in second.treatments]
        assert [t["run_uid"] for t in first.treatments] == [r.run_uid for r in runs]
        assert first.plan_digest == second.plan_digest == doc["plan"] and book.verify().ok
    # the report: the fastest k of the stand-in's world comes first (k=6, 13 % over k=3)
    speeds = {k: draft_speed(DRAFT, REV_A, k) for k in (1, 3, 6)}
    best_k = max(speeds, key=lambda k: speeds[k])
    code, out, err = _run(capsys, "experiment", "report", str(exp), "--ledger", ledger, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["records"] == [1, 2] and report["pruned"] == []
    (cell,) = report["cells"]
    assert cell["best"]["label"] == f"num_speculative_tokens={best_k}"
    assert [p["label"] for p in cell["treatments"]] == [
        f"num_speculative_tokens={k}" for k in sorted(speeds, key=lambda k: -speeds[k])
    ]
    # the verdict itself depends on the noise of a loaded machine (client-bound is marked);
    # it is never that the best is slower.  benchmarks/experiment_verdict.py measures how often
    # it is right over seeded trials.
    assert cell["verdict"] is not None and not cell["verdict"].startswith("slower")
    assert all(p["spec_acceptance_length"] is not None for p in cell["treatments"])
    code, out, _ = _run(capsys, "experiment", "report", str(exp), "--ledger", ledger)
    assert code == 0 and f"best {cell['best']['treatment']} against runner-up" in out


@pytest.mark.timeout(400)  # nine boots: 75 s at load 10
def test_confirmation_boots_reboot_the_top_two_interleaved_and_the_report_judges_across_them(tmp_path, capsys) -> None:
    exp, ledger, run_it = _k_experiment(tmp_path)
    run_it += ["--metric", "tpot_median_ms"]
    code, out, err = _run(capsys, *run_it, "--confirm", "2")
    assert code == 0, err
    doc = json.loads(out)
    assert [t["action"] for t in doc["treatments"]] == ["ran"] * 3
    # k=3 and k=6 are the stand-in world's top two (k=1 is 40 % slower): two rounds of both
    assert [(c["id"], c["round"], c["status"]) for c in doc["confirm"]] == [
        ("t2", 1, "DONE"),
        ("t3", 1, "DONE"),
        ("t2", 2, "DONE"),
        ("t3", 2, "DONE"),
    ]
    assert "confirmation round 2/2: t2, t3" in err
    with open_ledger(ledger) as book:
        assert book.count() == 7
        (record,) = book.experiments(name="exp")
        kept = {t["id"]: t.get("confirm") for t in record.treatments}
        assert kept["t1"] is None and [c["run_uid"] for c in kept["t3"]] == [c["run_uid"] for c in doc["confirm"][1::2]]
    code, out, err = _run(
        capsys, "experiment", "report", str(exp), "--ledger", ledger, "--metric", "tpot_median_ms", "--json"
    )
    assert code == 0, err
    (cell,) = json.loads(out)["cells"]
    assert cell["across_boots"] == [2, 2] and cell["best"]["label"] == "num_speculative_tokens=6"
    assert cell["runner_up"]["label"] == "num_speculative_tokens=3" and len(cell["best"]["boots"]) == 2
    assert cell["level"] == 0.95 and cell["verdict"] is not None and not cell["verdict"].startswith("slower")
    # the screening boot is the treatment's run in the table, not a confirmation boot
    screening = {t["id"]: t["run"] for t in doc["treatments"]}
    assert cell["best"]["run"] == screening["t3"] and screening["t3"] not in cell["best"]["boot_runs"]
    code, out, _ = _run(capsys, "experiment", "report", str(exp), "--ledger", ledger, "--metric", "tpot_median_ms")
    assert code == 0 and "across 2 and 2 boots" in out
    # run again with --confirm 3: nothing screened again, one more round of the same two
    code, out, err = _run(capsys, *run_it, "--confirm", "3")
    assert code == 0, err
    again = json.loads(out)
    assert [t["action"] for t in again["treatments"]] == ["skipped"] * 3
    assert [(c["id"], c["round"]) for c in again["confirm"]] == [("t2", 3), ("t3", 3)]
    with open_ledger(ledger) as book:
        assert book.count() == 9 and book.verify().ok

"""How often `autobench experiment report` names the right best treatment, and the right verdict
against the runner-up, in a world whose answer is known (issue #32's Done-when: >= 19 of 20).

Each trial runs `autobench experiment run` on the process runtime with the stand-in `vllm serve`
(autobench.run.standin): num_speculative_tokens 1..8 x two draft revisions x concurrency {1, 8},
16 boots, bench.seed = the trial number, then `autobench experiment report --json`.  The
stand-in's synthetic server streams every request on the same known schedule: a draft of quality
q accepts q, q^2, ... per position (fixed per draft and revision) and each verify step takes
4 ms x (1 + 0.12 k).  The truth is computed from that schedule
(autobench.bench.synthetic.chunk_plan): each treatment's TPOT, hence the best k per cell and the
ratio of any two treatments, whose right verdict is "faster" beyond the 5 % threshold and
"no change" within it.  The report ranks by TPOT (--metric tpot_median_ms).

With ``--confirm N`` (default 4) the experiment is run with ``--confirm N``: the top two
treatments of each cell (by TPOT) are then booted N more times each, interleaved, and the
report judges the best against the runner-up across those boots (docs/experiments.md,
"Confirmation boots"); ``--confirm 0`` is the single-boot verdict (one boot per treatment,
the band from its requests).

    .venv/bin/python benchmarks/experiment_verdict.py [--trials 20] [--jobs 4] [--confirm 4] [--keep DIR]
    .venv/bin/python benchmarks/experiment_verdict.py --reanalyse DIR   # the report again, on kept trials

Trials run as child processes, ``--jobs`` at a time (each is one experiment: its own ledger,
folder and ports; a bench at concurrency 1 waits on the server's schedule most of the time, so
trials overlap well on two cores; the load they add is printed with the figures).  ``--keep``
keeps each trial's folder (ledger, runs) so ``--reanalyse`` can judge the same measurements
again after a change to the analysis.

Prints each cell's best and verdict against the truth, the count right, the time and the load
average.  A chosen best counts as right when its true TPOT is within the threshold of the true
best's (two treatments 1 % apart are a tie the verdict should call "no change").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autobench.metric_catalogue import FEW_SAMPLES

DRAFT = "org/eagle-draft"
REVISIONS = ("a" * 40, "b" * 40)
OUTPUT = 128
THRESHOLD = 0.05


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def true_tpot(revision: str, k: int) -> float:
    from autobench.bench.synthetic import chunk_plan
    from autobench.run.standin import draft_itl_ms, draft_profile, draft_quality

    chunks = chunk_plan(OUTPUT, 1, draft_profile(draft_quality(DRAFT, revision), k))
    return draft_itl_ms(k) * (len(chunks) - 1) / (OUTPUT - 1)


def right_verdict(best: float, runner_up: float) -> str:
    ratio = runner_up / best  # TPOT: lower is better; how much better the best is
    return "faster" if ratio - 1 > THRESHOLD else "no change"


def write_experiment(work: Path, seed: int, ks: list[int], prompts: int, repeat: int) -> Path:
    """The trial's recipe and experiment files; a trial folder that has them already (kept by
    ``--keep``) keeps its recipe, so its treatments keep their digests and the experiment
    resumes: its screening boots are skipped, only missing confirmation boots run."""
    from autobench.tour import write_tokenizer

    exp = work / "exp.yaml"
    if exp.exists() and (work / "r.yaml").exists():
        return exp
    model = work / "model"
    write_tokenizer(model)
    port = _port()
    (work / "r.yaml").write_text(
        f"""name: verdict-trial
model: {{repo: {model}, served_name: m}}
speculative: {{method: eagle3, model: {DRAFT}, revision: {REVISIONS[0]}, num_speculative_tokens: 1}}
container: {{image: vllm/vllm-openai:v0.11.0, ports: ["{port}:{port}"]}}
engine: {{host: 127.0.0.1, port: {port}, max_model_len: 4096}}
bench:
  dataset: {{kind: random, input_len: 16, output_len: {OUTPUT}}}
  num_prompts: {prompts}
  max_tokens: {OUTPUT}
  repeat: {repeat}
  seed: {seed}
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    exp.write_text(
        "recipe: r.yaml\nbench: {concurrency: [1, 8]}\nfactors:\n"
        f"  speculative.num_speculative_tokens: {ks}\n  speculative.revision: [{', '.join(REVISIONS)}]\n",
        encoding="utf-8",
    )
    return exp


def run_trial(work: Path, seed: int, ks: list[int], prompts: int, repeat: int, confirm: int) -> int:
    """One experiment run into ``work`` (its ledger and runs folder); the run's exit code."""
    from autobench.cli import main

    exp = write_experiment(work, seed, ks, prompts, repeat)
    exe = f"{sys.executable} -m autobench.run.standin"
    more = ["--confirm", str(confirm), "--metric", "tpot_median_ms"] if confirm else []
    with contextlib.redirect_stdout(io.StringIO()):
        return main(["experiment", "run", str(exp), "--runtime", "process", "--vllm-exec", exe,
                     "--runs-dir", str(work / "runs"), "--ledger", str(work / "ledger.db"),
                     "--json", *more])  # fmt: skip


def judge_trial(work: Path, extra: list[str]) -> list[dict[str, object]]:
    """``experiment report --json`` on a trial's ledger, each cell against the truth."""
    from autobench.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["experiment", "report", str(work / "exp.yaml"), "--ledger", str(work / "ledger.db"),
                     "--metric", "tpot_median_ms", "--json", *extra])  # fmt: skip
    if code not in (0, None):
        raise SystemExit(f"{work}: experiment report exited {code}")
    report = json.loads(buf.getvalue())
    labels = {t["label"] for c in report["cells"] for t in c["treatments"]}
    truth = {}
    for label in labels:
        k = int(label.split("num_speculative_tokens=")[1].split()[0])
        rev = next(r for r in REVISIONS if f"revision={r[:7]}" in label)
        truth[label] = true_tpot(rev, k)
    ranked = sorted(truth, key=lambda label: truth[label])
    out = []
    for cell in report["cells"]:
        best, runner = cell["best"]["label"], cell["runner_up"]["label"]
        verdict = cell["verdict"]
        out.append(
            {
                "cell": cell["label"],
                "best": best,
                "runner_up": runner,
                "true_best": ranked[0],
                "verdict": verdict,
                "right": right_verdict(truth[best], truth[runner]),
                # the best is right when its true TPOT is within the threshold of the true best's
                "near": truth[best] <= truth[ranked[0]] * (1 + THRESHOLD),
                "band": cell["band"],
                "level": cell["level"],
                "across_boots": cell["across_boots"],
                "boots": {t["label"]: t["boots"] for t in cell["treatments"] if t["boots"]},
                "truth": truth,
                "measured": {t["label"]: t["tpot_median_ms"] for t in cell["treatments"]},
            }
        )
    return out


def _child(args: argparse.Namespace, ks: list[int]) -> int:
    work = Path(args.work)
    os.environ["HF_HOME"] = str(work / "hf")
    code = run_trial(work, args.trial, ks, args.prompts, args.repeat, args.confirm)
    if code != 0:
        print(f"trial {args.trial}: experiment run exited {code}", file=sys.stderr)
        return code
    return 0


def _ks(text: str) -> list[int]:
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-"))
        return list(range(lo, hi + 1))
    return [int(x) for x in text.split(",")]


def _spread(cells: list[dict[str, object]]) -> dict[str, list[float]]:
    """Per cell, the deviations from the truth (log measured / true TPOT): of the screening boot of
    every treatment (``screen``), and of each confirmation boot from its treatment's mean across
    boots (``boot``): the noise the verdict has to see."""
    out: dict[str, list[float]] = {}
    for c in cells:
        truth = c["truth"]
        measured = c["measured"]
        boots = c["boots"]
        assert isinstance(truth, dict) and isinstance(measured, dict) and isinstance(boots, dict)
        cell = str(c["cell"]).split()[0]
        out.setdefault(f"{cell} screen", []).extend(
            math.log(v / truth[label]) for label, v in measured.items() if v is not None
        )
        for values in boots.values():
            logs = [math.log(v) for v in values]
            mean = sum(logs) / len(logs)
            out.setdefault(f"{cell} boot", []).extend(x - mean for x in logs)
    return out


LOADS: list[float] = []


def _run_trials(args: argparse.Namespace, ks: list[int], root: Path) -> list[Path]:
    """Every trial as a child process, ``--jobs`` at a time; the folders of those that finished."""
    pending = list(range(args.first, args.first + args.trials))
    running: dict[int, tuple[subprocess.Popen[bytes], Path]] = {}
    done: list[Path] = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path.cwd()), os.environ.get("PYTHONPATH")]))}
    while pending or running:
        while pending and len(running) < args.jobs:
            seed = pending.pop(0)
            work = root / f"trial-{seed}"
            work.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, __file__, "--trial", str(seed), "--work", str(work), "--ks", args.ks,
                   "--prompts", str(args.prompts), "--repeat", str(args.repeat),
                   "--confirm", str(args.confirm)]  # fmt: skip
            log = (work / "trial.log").open("wb")
            running[seed] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), work)
        time.sleep(0.5)
        LOADS.append(os.getloadavg()[0])
        for seed, (proc, work) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[seed]
            if proc.returncode == 0:
                done.append(work)
            else:
                print(f"trial {seed} failed (exit {proc.returncode}); see {work / 'trial.log'}", file=sys.stderr)
    return sorted(done, key=lambda p: int(p.name.split("-")[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="the first trial's seed")
    ap.add_argument("--jobs", type=int, default=4, help="trials run at once (child processes)")
    ap.add_argument("--ks", default="1-8", help="num_speculative_tokens levels, e.g. 1-8 or 2,4,6")
    ap.add_argument(
        "--prompts",
        type=int,
        default=FEW_SAMPLES,
        help="requests per bench cell (default: the fewest the bench does not flag few_samples)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="bench.repeat: repeats of each cell per boot")
    ap.add_argument(
        "--confirm",
        type=int,
        default=4,
        help="experiment run --confirm N: boots of each cell's top two treatments for the verdict (0: one boot)",
    )
    ap.add_argument("--keep", metavar="DIR", help="keep each trial's folder (ledger, runs) under DIR")
    ap.add_argument("--reanalyse", metavar="DIR", help="judge the trials kept under DIR again; run nothing")
    ap.add_argument("--report-arg", action="append", default=[], help="passed to `experiment report`")
    ap.add_argument("--trial", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    args = ap.parse_args()
    ks = _ks(args.ks)
    if args.trial is not None:
        return _child(args, ks)
    start = time.perf_counter()
    loads = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        if args.reanalyse:
            root = Path(args.reanalyse)
            works = sorted(root.glob("trial-*"), key=lambda p: int(p.name.split("-")[1]))
        else:
            root = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
            works = _run_trials(args, ks, root)
        loads.append(os.getloadavg()[0])
        right_best = right_verdict_count = total = trials_right = wrong_claims = 0
        spread: dict[str, list[float]] = {}
        for work in works:
            seed = int(work.name.split("-")[1])
            cells = judge_trial(work, args.report_arg)
            for key, values in _spread(cells).items():
                spread.setdefault(key, []).extend(values)
            trials_right += all(c["near"] and str(c["verdict"]).split(" (")[0] == c["right"] for c in cells)
            for c in cells:
                total += 1
                right_best += bool(c["near"])
                verdict = str(c["verdict"])
                said = verdict.split(" (")[0]
                ok = said == c["right"]
                right_verdict_count += ok
                wrong_claims += not ok and said != "inconclusive"  # a claim the truth contradicts
                band, level, boots = c["band"], c["level"], c["across_boots"]
                shown = "-" if not isinstance(band, list) else f"{band[0]:.3f}..{band[1]:.3f}"
                if isinstance(level, float):
                    shown += f" at {level:.2%}"
                shown += f" across {boots[0]}+{boots[1]} boots" if isinstance(boots, list) else " (one boot each)"
                truth = c["truth"]
                assert isinstance(truth, dict)
                ratio = truth[c["runner_up"]] / truth[c["best"]]
                print(
                    f"trial {seed:2d} {c['cell']}: best {c['best']} (true {c['true_best']}), runner-up "
                    f"{c['runner_up']} (true ratio {ratio:.3f}); verdict {verdict} band {shown} (right: {c['right']})"
                    + ("" if ok else "  WRONG")
                    + ("" if c["near"] else "  BEST WRONG")
                )
    elapsed = time.perf_counter() - start
    for key, values in sorted(spread.items()):
        if len(values) > 1:
            sd = math.sqrt(sum(v * v for v in values) / (len(values) - 1))
            print(
                f"{key}: SD of log TPOT {sd:.2%} over {len(values)} values, largest |dev| {max(map(abs, values)):.2%}"
            )
    print(f"best treatment right (within the threshold of the true best): {right_best}/{total} cells")
    print(f"verdict against the runner-up right: {right_verdict_count}/{total} cells")
    print(f"trials with every cell's best and verdict right: {trials_right}/{len(works)}")
    print(f"wrong claims (faster or no change where the truth is the other): {wrong_claims}/{total} cells")
    print(
        f"{len(works)} trials, {elapsed:.0f} s, {args.jobs} at a time; load average (1 min) at the start "
        f"{loads[0]:.2f}, at the end {loads[1]:.2f}"
        + (
            f"; while running min {min(LOADS):.2f}, median {sorted(LOADS)[len(LOADS) // 2]:.2f}, max {max(LOADS):.2f}"
            if LOADS
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

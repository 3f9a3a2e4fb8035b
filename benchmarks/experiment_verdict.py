"""How often `autobench experiment report` names the right best treatment, and the right verdict
against the runner-up, in a world whose answer is known (issue #32's Done-when: >= 19 of 20).

Each trial runs `autobench experiment run` on the process runtime with the stand-in `vllm serve`
(autobench.run.standin): num_speculative_tokens 1..8 x two draft revisions x concurrency {1, 8},
16 boots, bench.seed = the trial number.  The stand-in's synthetic server streams every request
on the same known schedule: a draft of quality q accepts q, q^2, ... per position (fixed per
draft and revision) and each verify step takes 4 ms x (1 + 0.12 k).  The truth is computed from
that schedule (autobench.bench.synthetic.chunk_plan): each treatment's TPOT, so the best k per
cell and the ratio best / runner-up, whose right verdict is "faster" beyond the 5 % threshold
and "no change" within it.  The report ranks by TPOT (--metric tpot_median_ms).

    .venv/bin/python benchmarks/experiment_verdict.py [--trials 20] [--ks 1-8]

Prints each trial's verdicts against the truth, the count right, the time, the load average.
A chosen best counts as right when its true TPOT is within the threshold of the true best's (two
treatments 1 % apart are a tie the verdict should call "no change").
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

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


def trial(work: Path, seed: int, ks: list[int], prompts: int) -> list[tuple[str, str, str, str, str, bool]]:
    from autobench.cli import main
    from autobench.tour import write_tokenizer

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
  seed: {seed}
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    (work / "exp.yaml").write_text(
        "recipe: r.yaml\nbench: {concurrency: [1, 8]}\nfactors:\n"
        f"  speculative.num_speculative_tokens: {ks}\n  speculative.revision: [{', '.join(REVISIONS)}]\n",
        encoding="utf-8",
    )
    ledger = str(work / "ledger.db")
    exe = f"{sys.executable} -m autobench.run.standin"
    code = main(["experiment", "run", str(work / "exp.yaml"), "--runtime", "process", "--vllm-exec", exe,
                 "--runs-dir", str(work / "runs"), "--ledger", ledger, "--json"])  # fmt: skip
    if code != 0:
        raise SystemExit(f"trial {seed}: experiment run exited {code}")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(
            ["experiment", "report", str(work / "exp.yaml"), "--ledger", ledger, "--metric", "tpot_median_ms", "--json"]
        )
    report = json.loads(buf.getvalue())
    truth = {f"num_speculative_tokens={k} revision={rev[:7]}": true_tpot(rev, k) for k in ks for rev in REVISIONS}
    ranked = sorted(truth, key=lambda label: truth[label])
    out = []
    for cell in report["cells"]:
        best, runner = cell["best"]["label"], cell["runner_up"]["label"]
        right = right_verdict(truth[best], truth[runner])
        # the best is right when its true TPOT is within the threshold of the true best's
        near = truth[best] <= truth[ranked[0]] * (1 + THRESHOLD)
        out.append((cell["label"], best, ranked[0], cell["verdict"], right, near))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--ks", default="1-8", help="num_speculative_tokens levels, e.g. 1-8 or 2,4,6")
    ap.add_argument("--prompts", type=int, default=48, help="requests per cell")
    args = ap.parse_args()
    if "-" in args.ks:
        lo, hi = (int(x) for x in args.ks.split("-"))
        ks = list(range(lo, hi + 1))
    else:
        ks = [int(x) for x in args.ks.split(",")]
    start = time.perf_counter()
    right_best = right_verdict_count = total = 0
    for seed in range(args.trials):
        with tempfile.TemporaryDirectory(prefix="exp-verdict-") as tmp:
            os.environ["HF_HOME"] = str(Path(tmp) / "hf")
            for cell, best, true_best, verdict, right, near in trial(Path(tmp), seed, ks, args.prompts):
                total += 1
                right_best += near
                ok = verdict is not None and verdict.split(" (")[0] == right
                right_verdict_count += ok
                mark = "" if ok else "  WRONG"
                print(
                    f"trial {seed:2d} {cell}: best {best} (true {true_best}); verdict {verdict} (right: {right}){mark}"
                )
    elapsed = time.perf_counter() - start
    print(f"best treatment right (within the threshold of the true best): {right_best}/{total} cells")
    print(f"verdict against the runner-up right: {right_verdict_count}/{total} cells")
    print(f"{args.trials} trials, {elapsed:.0f} s; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The time to plan and prune an experiment: a 1,000-treatment design over the seed recipe
(num_speculative_tokens x max_num_seqs x the two DFlash draft revisions), every treatment
built, validated (schema and rules), digested and predicted by the preflight from configs
in a local HF cache.  Target (issue #32): under 2 s for 1,000 treatments.

    .venv/bin/python benchmarks/experiment_cost.py [--treatments 1000] [--repeat 3]

Prints the load average with the figures: the machine is often shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(HERE / "tests" / "preflight"), str(HERE / "tests" / "hub"), str(HERE)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treatments", type=int, default=1000, help="about this many (k x seqs x 2 drafts)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="experiment-cost-"))
    os.environ["HF_HOME"] = str(work / "hf")
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    import importlib.util

    spec = importlib.util.spec_from_file_location("preflight_conftest", HERE / "tests" / "preflight" / "conftest.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    import preflight_configs as c
    from preflight_helpers import seed_recipe

    from autobench.experiment import load_experiment, plan_experiment
    from autobench.experiment.plan import preflight_predictor

    fake = conf.preflight_hub().start()
    os.environ["HF_ENDPOINT"] = fake.url
    try:
        (work / "r.yaml").write_text(seed_recipe(c.DRAFT_OLD, 5), encoding="utf-8")
        ks = 10
        seqs = max(1, args.treatments // (ks * 2))
        (work / "exp.yaml").write_text(
            "recipe: r.yaml\nmax_treatments: 100000\nfactors:\n"
            f"  speculative.num_speculative_tokens: {list(range(1, ks + 1))}\n"
            f"  engine.max_num_seqs: {list(range(1, seqs + 1))}\n"
            f"  speculative.revision: [{c.DRAFT_OLD}, {c.DRAFT_NEW}]\n",
            encoding="utf-8",
        )
        # once online, to put the configs in the HF cache (as `lock` would); then timed offline
        plan_experiment(load_experiment(work / "exp.yaml"), predictor=preflight_predictor("0.23.1"))
        times, cpu = [], []
        for _ in range(args.repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            plan = plan_experiment(
                load_experiment(work / "exp.yaml"), predictor=preflight_predictor("0.23.1", offline=True)
            )
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    finally:
        fake.stop()
    n = len(plan.treatments)
    best = min(times)
    print(f"treatments: {n:,} ({plan.count('ready')} ready, {plan.count('pruned')} pruned)")
    print(f"plan and prune: best {best:.2f} s of {args.repeat}, {best / n * 1000:.2f} ms per treatment")
    # the CPU time is what the plan costs; the wall time is that plus the other processes' share
    print(f"CPU time: best {min(cpu):.2f} s, median {statistics.median(cpu):.2f} s of {args.repeat}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

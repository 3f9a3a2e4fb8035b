"""Benchmark: render every recipe page and the index from a ledger of many runs.

    .venv/bin/python benchmarks/report_render.py [--runs 5000] [--recipes 100]

Builds a temporary ledger (real SQLite, via the ledger's append), then prints the time to
load the runs, build the views and render all pages + the index (no plots), and the time to
draw one recipe's plots when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--recipes", type=int, default=100)
    args = parser.parse_args()

    from autobench.ledger import NewRun, open_ledger
    from autobench.report.pages import load_runs, plan_outputs, write_outputs
    from autobench.report.plots import matplotlib_available, plot_specs, write_plots

    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ledger.db"
        t0 = time.perf_counter()
        with open_ledger(db) as ledger:
            for i in range(args.runs):
                recipe = f"recipe-{i % args.recipes:03d}"
                status = rng.choice(["DONE"] * 8 + ["BLOCKED", "FAILED"])
                conc = rng.choice([1, 8, 32])
                metrics = (
                    {}
                    if status != "DONE"
                    else {
                        "decode_tok_s": rng.uniform(20, 400),
                        "prefill_tok_s": rng.uniform(50, 900),
                        "ttft_median_ms": rng.uniform(50, 2000),
                        "tpot_median_ms": rng.uniform(5, 90),
                        "completed": rng.randint(100, 500),
                        "errors": 0,
                        "concurrency": conc,
                    }
                )
                ledger.append(
                    NewRun(
                        recipe_name=recipe,
                        model_repo="org/model",
                        status=status,
                        started_at=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                        recipe_snapshot={
                            "name": recipe,
                            "bench": {"concurrency": conc},
                            "meta": {"baseline": "recipe-000" if recipe != "recipe-000" else None},
                        },
                        root_cause_category="assertion" if status == "BLOCKED" else None,
                        root_cause_message="assert page_size_bytes == max_page_size" if status == "BLOCKED" else None,
                        metrics=metrics,
                    )
                )
        t1 = time.perf_counter()
        print(f"built ledger: {args.runs} runs, {args.recipes} recipes in {t1 - t0:.2f} s")

        t2 = time.perf_counter()
        runs = load_runs(str(db))
        t3 = time.perf_counter()
        outputs = plan_outputs(runs, [], Path(tmp) / "docs", index=True, plots=False)
        t4 = time.perf_counter()
        write_outputs(outputs, draw_plots=False)
        t5 = time.perf_counter()
        print(f"load runs:            {1000 * (t3 - t2):8.1f} ms")
        print(
            f"views + render {len(outputs):4d} pages (incl. index): {1000 * (t4 - t3):8.1f} ms "
            f"({1000 * (t4 - t3) / len(outputs):.2f} ms/page)"
        )
        print(f"write pages:          {1000 * (t5 - t4):8.1f} ms")
        print(f"total report --index: {1000 * (t5 - t2):8.1f} ms")
        if matplotlib_available():
            view = outputs[0].view
            t6 = time.perf_counter()
            files, _ = write_plots(view, Path(tmp), plot_specs(view))
            t7 = time.perf_counter()
            print(
                f"plots for one recipe ({len(view.runs)} runs, {len(files)} SVGs, incl. matplotlib import): "
                f"{1000 * (t7 - t6):.1f} ms"
            )
        else:
            print("plots: skipped (pip install 'autobench[plot]')")


if __name__ == "__main__":
    main()

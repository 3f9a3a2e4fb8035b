"""What a sweep costs and saves (prints figures; not a test).

1. the progress hook in the bench client: requests/s of one bench against the synthetic
   server (no latency) with and without a SweepProgress attached (median of 7 interleaved runs each);
2. one-boot sweep versus one run per cell: wall time of `autobench run --runtime process`
   of a concurrency [1, 4, 16] x 2 repeats recipe, against six one-cell runs of the same
   cells (the fake `vllm` boots in about a second; a real model takes minutes).

Run: .venv/bin/python benchmarks/sweep_cost.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "run"))

from run_helpers import free_port, recipe_text, run_args, run_env  # noqa: E402

from autobench.bench.client import BenchConfig, run_bench  # noqa: E402
from autobench.bench.synthetic import SyntheticConfig, ThreadedServer  # noqa: E402
from autobench.run.progress import SweepProgress  # noqa: E402

FAST = "--ttft-ms 2 --itl-ms 1 --log-stats-interval 0.2"


def client_rate(with_progress: bool, n: int = 2000, conc: int = 64) -> float:
    with ThreadedServer(SyntheticConfig(port=0, model="m", ttft_ms=0, itl_ms=0, log_stats_interval=0)) as srv:
        cfg = BenchConfig(
            base_url=srv.base_url,
            model="m",
            dataset_kind="random",
            num_prompts=n,
            concurrency=conc,
            max_tokens=16,
            random_input_len=16,
            tokenizer="estimated",
            scrape_metrics=False,
        )
        progress = SweepProgress(1, n, lambda s: None) if with_progress else None
        t0 = time.perf_counter()
        result = run_bench(cfg, progress=progress.update if progress else None)
        elapsed = time.perf_counter() - t0
    assert result.normalized()["completed"] == n
    return n / elapsed


def run_wall(tmp: Path, concurrency: str, repeat: int, name: str) -> float:
    recipe = tmp / f"{name}.yaml"
    recipe.write_text(
        recipe_text(free_port(), name=name, concurrency=concurrency, num_prompts=12, extra=f"  repeat: {repeat}\n")
    )
    t0 = time.monotonic()
    res = subprocess.run(
        run_args(recipe, tmp), capture_output=True, text=True, env=run_env(tmp, FAKE_VLLM_ARGS=FAST), cwd=tmp
    )
    assert res.returncode == 0, res.stderr
    return time.monotonic() - t0


def main() -> None:
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(7):  # interleaved, so the machine's load drifts into both alike
        for flag in (False, True):
            rates[flag].append(client_rate(flag))
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(f"bench client, 2000 requests at concurrency 64: {off:,.0f} req/s without progress, {on:,.0f} with")
    print(f"  progress hook cost: {100 * (off - on) / off:+.1f}% of the median")
    for flag, name in ((False, "without"), (True, "with")):
        print(
            f"  {name}: {min(rates[flag]):,.0f} .. {max(rates[flag]):,.0f} req/s over the 7 runs (the machine's noise)"
        )
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        sweep = run_wall(tmp, "[1, 4, 16]", 2, "sweep")
        single = sum(run_wall(tmp, str(c), 1, f"one-{c}-{r}") for c in (1, 4, 16) for r in range(2))
    print(f"6 cells (concurrency [1, 4, 16] x 2): one boot {sweep:.1f} s, six runs {single:.1f} s")


if __name__ == "__main__":
    main()

"""How long the preflight adds to `validate`, and how long `autobench preflight` takes.

    .venv/bin/python benchmarks/preflight_speed.py [-n RUNS]

Builds a throwaway HF cache holding the seed's configs (Qwen3.5-122B-A10B text config and the
DFlash draft at bce6f76, written in the cache layout `lock` leaves behind), then times, as
separate processes (what a user waits for): `validate --no-preflight`, `validate` (which predicts
the page-unification assertion from the cached configs: AB070) and `preflight --offline`.
Prints the median and min wall time of each and the preflight's share.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "preflight"))

import preflight_configs as c  # noqa: E402


def cache(home: Path, repo: str, sha: str, config: bytes) -> None:
    folder = home / "hub" / ("models--" + repo.replace("/", "--"))
    (folder / "snapshots" / sha).mkdir(parents=True)
    (folder / "snapshots" / sha / "config.json").write_bytes(config)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(sha)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "hf"
        cache(home, c.BASE_REPO, c.BASE_SHA, c.dump(c.qwen35_122b()))
        cache(home, c.DRAFT_REPO, c.DRAFT_NEW, c.dump(c.dflash_draft(8, 6, 4096)))
        recipe = Path(tmp) / "seed.yaml"
        sys.path.insert(0, str(REPO / "tests" / "preflight"))
        from preflight_helpers import seed_recipe

        recipe.write_text(seed_recipe(c.DRAFT_NEW, 8), encoding="utf-8")
        env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
        py = [sys.executable, "-m", "autobench"]
        cases = {
            "validate --no-preflight": [*py, "validate", "--no-preflight", str(recipe)],
            "validate (with preflight)": [*py, "validate", str(recipe)],
            "preflight --offline": [*py, "preflight", "--offline", str(recipe)],
        }
        results = {}
        for name, argv in cases.items():
            times = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                proc = subprocess.run(argv, capture_output=True, text=True, env=env)
                times.append(time.perf_counter() - t0)
            if name.startswith("validate (") and "AB070" not in proc.stdout:
                raise SystemExit(f"validate did not predict the assertion: {proc.stdout}{proc.stderr}")
            results[name] = times
            print(f"{name:28s} median {statistics.median(times) * 1000:7.1f} ms   min {min(times) * 1000:7.1f} ms")
        extra = statistics.median(results["validate (with preflight)"]) - statistics.median(
            results["validate --no-preflight"]
        )
        print(f"preflight adds {extra * 1000:.1f} ms (median) to validate")


if __name__ == "__main__":
    main()

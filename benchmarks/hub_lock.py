"""Latency of `autobench lock` / `outdated` against the loopback fake Hub, and how fast a dead
network fails.  Prints figures; not part of the test suite.

    .venv/bin/python benchmarks/hub_lock.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hub"))
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

from conftest import BASE_YAML, DFLASH_YAML  # noqa: E402
from fakehub import closed_port_url, seed_hub, silent_server  # noqa: E402

from autobench.errors import HubError  # noqa: E402
from autobench.hub.client import HubSettings  # noqa: E402
from autobench.hub.lockfile import lock_recipe  # noqa: E402
from autobench.hub.outdated import check_recipe  # noqa: E402
from autobench.hub.resolve import Resolver  # noqa: E402

ROUNDS = 5


def fresh(tmp: Path) -> Path:
    d = Path(tempfile.mkdtemp(dir=tmp))
    (d / "base.yaml").write_text(BASE_YAML)
    (d / "dflash.yaml").write_text(DFLASH_YAML)
    return d / "dflash.yaml"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    hub = seed_hub().start()
    figures: dict[str, list[float]] = {}
    for i in range(ROUNDS):
        cache = tmp / f"cache{i}"
        online = Resolver(HubSettings(hub.url, cache, False, 10.0, None))
        offline = Resolver(HubSettings(hub.url, cache, True, 10.0, None))
        recipe = fresh(tmp)
        steps = [
            ("lock, cold cache (ms)", lock_recipe, online),
            ("lock, warm cache (ms)", lock_recipe, online),
            ("outdated, online (ms)", check_recipe, online),
            ("lock --offline (ms)", lock_recipe, offline),
            ("outdated --offline (ms)", check_recipe, offline),
        ]
        for label, step, resolver in steps:
            figures.setdefault(label, []).append(timed(partial(step, recipe, resolver)))
    requests = len(hub.requests)
    hub.stop()

    def fails(url: str, timeout: float) -> float:
        resolver = Resolver(HubSettings(url, tmp / "dead", False, timeout, None))
        start = time.perf_counter()
        try:
            lock_recipe(fresh(tmp), resolver)
        except HubError:
            return time.perf_counter() - start
        raise SystemExit("a lock against a dead network did not fail")

    with silent_server() as url:
        silent = fails(url, 1.0)
    refused = fails(closed_port_url(), 1.0)

    print(f"fake Hub on loopback, {ROUNDS} rounds, DFlash recipe (model + draft)")
    for name, values in figures.items():
        print(f"  {name:<26} median {statistics.median(values):7.1f}   min {min(values):7.1f}")
    print(f"  HTTP requests, all rounds  {requests} ({requests / ROUNDS:.0f} per round)")
    print(f"  dead network (accepts, never answers), --timeout 1: failed after {silent:.2f} s")
    print(f"  dead network (connection refused):                  failed after {refused:.2f} s")


if __name__ == "__main__":
    main()

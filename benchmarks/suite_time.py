"""Wall time of each test tier, and the slowest tests (prints figures; asserts nothing).

    .venv/bin/python benchmarks/suite_time.py                       # both tiers, the 20 slowest tests
    .venv/bin/python benchmarks/suite_time.py --tier unit --top 30
    .venv/bin/python benchmarks/suite_time.py -- tests/run           # extra pytest arguments

Each tier runs as the README says (``python -m pytest`` is the unit tier, ``python -m pytest -m
integration`` the integration tier), in a fresh interpreter, with a JUnit report whose per-test
time is setup + call + teardown.  Printed per tier: wall time, the outcome counts, the sum of the
test times, the CPU time of the tier's processes (children included), and the load average
before and after; then the slowest tests over the tiers that ran, with their tier.  The load
average matters: on the 2-core machine a suite takes about twice as long at load 8 as idle.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIERS = {"unit": [], "integration": ["-m", "integration"]}


@dataclass
class Tier:
    name: str
    wall_s: float
    cpu_s: float
    rc: int
    load_before: float
    load_after: float
    counts: dict[str, int] = field(default_factory=dict)
    tests: list[tuple[float, str]] = field(default_factory=list)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _test_id(classname: str, name: str) -> str:
    """pytest's node id back from JUnit's ``tests.run.test_x[.Class]`` and the test's name."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if (REPO / path).is_file():
            return "::".join([path, *parts[n:], name])
    return f"{classname}::{name}"


def run_tier(name: str, extra: list[str]) -> Tier:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", *TIERS[name], "-q", "-p", "no:cacheprovider"]
        cmd += [f"--junitxml={report}", *extra]
        load_before, cpu_before = os.getloadavg()[0], _children_cpu()
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        wall = time.monotonic() - start
        tier = Tier(name, wall, _children_cpu() - cpu_before, proc.returncode, load_before, os.getloadavg()[0])
        if not report.exists():
            print(proc.stdout[-4000:], proc.stderr[-2000:], sep="\n", file=sys.stderr)
            return tier
        for case in ET.parse(report).getroot().iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                elif child.tag == "skipped":
                    outcome = "skipped"
            tier.counts[outcome] = tier.counts.get(outcome, 0) + 1
            tier.tests.append((float(case.get("time", 0.0)), _test_id(case.get("classname", ""), case.get("name", ""))))
        if proc.returncode not in (0, 5):  # 5: no tests collected
            tail = [line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
            print("\n".join(tail[:20]), file=sys.stderr)
    return tier


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tier", choices=["unit", "integration", "all"], default="all")
    ap.add_argument("--top", type=int, default=20, help="how many of the slowest tests to print (20)")
    ap.add_argument("extra", nargs="*", help="further pytest arguments (after --)")
    args = ap.parse_args(argv)
    names = list(TIERS) if args.tier == "all" else [args.tier]
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()[0]:.2f}")
    tiers = []
    for name in names:
        tier = run_tier(name, args.extra)
        tiers.append(tier)
        counts = ", ".join(f"{n} {k}" for k, n in sorted(tier.counts.items()))
        total = sum(t for t, _ in tier.tests)
        print(
            f"{name:<12} {tier.wall_s:7.1f} s wall  {counts or 'no report'}  (tests {total:.1f} s,"
            f" CPU {tier.cpu_s:.1f} s, load {tier.load_before:.2f} -> {tier.load_after:.2f}, exit {tier.rc})"
        )
    slowest = sorted(
        ((t, name, test) for tier in tiers for t, test in tier.tests for name in [tier.name]), reverse=True
    )
    print(f"\nthe {min(args.top, len(slowest))} slowest tests (setup + call + teardown):")
    for t, name, test in slowest[: args.top]:
        print(f"{t:7.2f} s  {name:<11}  {test}")
    return max((tier.rc for tier in tiers if tier.rc != 5), default=0)


if __name__ == "__main__":
    sys.exit(main())

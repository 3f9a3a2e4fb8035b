"""The open loop's schedule: when each request is due.  A leaf, shared by the one-process
client (autobench.bench.client) and the load-generator fleet (autobench.bench.fleet), which
splits one schedule between its workers."""

from __future__ import annotations

import random


def poisson_arrivals(rate: float, n: int, seed: int) -> list[float]:
    """``n`` arrival times (s from the start) of a Poisson process of ``rate`` per second, seeded."""
    rng = random.Random(seed)
    arrivals = []
    t = 0.0
    for _ in range(n):
        t += rng.expovariate(rate)
        arrivals.append(t)
    return arrivals

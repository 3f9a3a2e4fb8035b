"""The bounds policy: the largest value autobench accepts in each domain of a recipe.

Every bound is checked when a recipe (or a profile, or an imported peer file) is validated --
by the schema's ``le=`` / ``max_length=`` and by :func:`grid_size` for the grid as a whole -- so
``validate`` refuses, at the key's line, what ``compile`` and ``run --dry-run`` could not do.
Before, ``bench.repeat: 1000000000`` or three axes of 1,000 values passed validation and ran
out of memory (exit 70) building the list of cells.

The figures are far above any real run and far below what breaks the machine:

==================  ==============  ==================================================
domain              bound           why
==================  ==============  ==================================================
nodes               1,024           a LeaderWorkerSet group / Slurm job of that many nodes
GPUs per node       64              the largest boards (NVL72 trays) have fewer
parallel size       65,536          TP x PP x DP never exceeds the GPUs of 1,024 nodes
repeats             100             a noise band needs a handful
grid values         1,000           values of one axis (concurrency: [1, 2, ..., 1000])
grid cells          10,000          cells x repeats of one run, each a full bench
tokens              16,777,216      2^24: above the longest contexts served (10M)
context             10,000,000      bench.dataset.depth, shared_prefix.length: the context the
                                    bench builds in memory before a question (the longest
                                    window served today is 10M tokens; the bench's own bound)
prompts             10,000,000      num_prompts (warmup the same)
client prompts      1,000,000       num_prompts + warmup of autobench's client: every prompt
                                    and its request body is built in memory before the clock
                                    starts (autobench.recipe.benchrules; ``bench --num-prompts``)
concurrency         100,000         requests in flight from one client
load generators     64              bench.workers: processes of one bench client
request rate        1,000,000 /s
seconds             30 days         max_seconds, ready_timeout_s, cluster_timeout_s
==================  ==============  ==================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MAX_NODES = 1024
MAX_GPUS_PER_NODE = 64
MAX_PARALLEL = 65_536
MAX_REPEAT = 100
MAX_AXIS_VALUES = 1000
MAX_CELLS = 10_000
MAX_TOKENS = 2**24
MAX_CONTEXT_TOKENS = 10_000_000
MAX_PROMPTS = 10_000_000
MAX_CLIENT_PROMPTS = 1_000_000
MAX_CONCURRENCY = 100_000
MAX_WORKERS = 64
MAX_REQUEST_RATE = 1_000_000.0
MAX_SECONDS = 30 * 86_400.0


def grid_size(axes: Sequence[int], schedule: int | None, repeat: int) -> int:
    """How many benches a run makes: the product of the axes' value counts (or the schedule's
    length), times ``repeat`` -- counted, never built."""
    points = schedule if schedule else math.prod(max(1, n) for n in axes)
    return points * max(1, repeat)


__all__ = [
    "MAX_AXIS_VALUES",
    "MAX_CELLS",
    "MAX_CLIENT_PROMPTS",
    "MAX_CONCURRENCY",
    "MAX_CONTEXT_TOKENS",
    "MAX_GPUS_PER_NODE",
    "MAX_NODES",
    "MAX_PARALLEL",
    "MAX_PROMPTS",
    "MAX_REPEAT",
    "MAX_REQUEST_RATE",
    "MAX_SECONDS",
    "MAX_TOKENS",
    "MAX_WORKERS",
    "grid_size",
]

"""A run's folder: claimed (never reused) and filled with what the run is about to do.

    claim_run_dir(plan) -> RunPlan          # plan.run_dir, or -2, -3, ... : the first that did not exist
    write_run_files(plan, script, data)     # plan.json, the script, recipe.json

Every runtime (docker, process, slurm, cluster) starts a run through these two, so a run folder
always holds the same files and two runs started at once never share one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from autobench.run import plan as P
from autobench.run.plan import RunPlan


def claim_run_dir(plan: RunPlan) -> RunPlan:
    """``plan`` with ``run_dir`` set to a folder this call created: the planned one, else the
    first free ``<name>-N``.  Creating it is the claim (``mkdir`` fails if another run won)."""
    wanted = plan.run_dir
    run_dir, n = wanted, 1
    while True:
        try:
            run_dir.mkdir(parents=True)
        except FileExistsError:
            n += 1
            run_dir = wanted.with_name(f"{wanted.name}-{n}")
            continue
        return plan if run_dir == wanted else replace(plan, run_dir=run_dir)


def write_run_files(plan: RunPlan, script: str, recipe_data: Mapping[str, object]) -> None:
    """What the run will do, written before it starts: the plan, the script and the resolved recipe."""
    plan.path(P.PLAN_JSON).write_text(json.dumps(plan.to_json_dict(), indent=2) + "\n", encoding="utf-8")
    plan.path(P.SCRIPT).write_text(script, encoding="utf-8")
    plan.path(P.RECIPE_JSON).write_text(json.dumps(recipe_data, indent=2, sort_keys=True) + "\n", encoding="utf-8")

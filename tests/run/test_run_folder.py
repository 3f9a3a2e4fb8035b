"""A run's folder is claimed by creating it: the planned one, else the first free ``-N``."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from autobench.recipe import load_recipe
from autobench.run import plan as P
from autobench.run.folder import claim_run_dir, write_run_files
from autobench.run.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"


def _plan(tmp_path: Path):
    loaded = load_recipe(RECIPE)
    plan = build_plan(loaded, runtime="docker")
    return loaded, replace(plan, run_dir=tmp_path / "runs" / "r")


def test_claims_the_planned_folder_then_numbered_ones(tmp_path: Path) -> None:
    _, plan = _plan(tmp_path)
    names = [claim_run_dir(plan).run_dir.name for _ in range(3)]
    assert names == ["r", "r-2", "r-3"] and all((tmp_path / "runs" / n).is_dir() for n in names)


def test_runs_started_at_once_never_share_a_folder(tmp_path: Path) -> None:
    _, plan = _plan(tmp_path)
    with ThreadPoolExecutor(8) as pool:
        dirs = list(pool.map(lambda _: claim_run_dir(plan).run_dir, range(16)))
    assert len(set(dirs)) == 16


def test_writes_plan_script_and_recipe(tmp_path: Path) -> None:
    loaded, plan = _plan(tmp_path)
    plan = claim_run_dir(plan)
    write_run_files(plan, "#!/bin/bash\necho hi\n", loaded.data)
    assert json.loads(plan.path(P.PLAN_JSON).read_text())["recipe"] == plan.to_json_dict()["recipe"]
    assert plan.path(P.SCRIPT).read_text() == "#!/bin/bash\necho hi\n"
    assert json.loads(plan.path(P.RECIPE_JSON).read_text()) == loaded.data

"""The one run pipeline (autobench.run.pipeline, issue #26): one table of runtimes, the recipe
loaded once per run, and each runtime's name chosen from it -- a multi-node recipe's by its
topology unless Slurm runs its nodes."""

from __future__ import annotations

import sys

import pytest
from run_helpers import FAKE_VLLM, ledger_rows, run_env

import autobench.recipe
import autobench.recipe.loader
import autobench.run.pipeline as pipeline
from autobench.recipe import load_recipe
from autobench.run import RunOptions
from autobench.run.cluster import ClusterRuntime
from autobench.run.local import LocalRuntime
from autobench.run.slurm import SlurmRuntime


def test_the_table_names_every_runtime_once() -> None:
    assert {
        "docker": LocalRuntime,
        "process": LocalRuntime,
        "slurm": SlurmRuntime,
        "cluster": ClusterRuntime,
    } == pipeline.RUNTIMES


def test_a_multi_node_recipe_runs_through_its_driver_unless_slurm_runs_it(make_recipe) -> None:
    one = load_recipe(make_recipe())
    text = make_recipe(name="two").read_text()
    two_path = make_recipe(name="two-nodes")
    two_path.write_text(text + "topology:\n  nodes: 2\n  gpus_per_node: 1\n  hosts: [a, b]\n")
    two = load_recipe(two_path)
    assert pipeline.runtime_name(one, RunOptions(runtime="process")) == "process"
    assert pipeline.runtime_name(two, RunOptions(runtime="docker")) == "cluster"
    assert pipeline.runtime_name(two, RunOptions(runtime="process")) == "cluster"
    assert pipeline.runtime_name(two, RunOptions(runtime="slurm")) == "slurm"


@pytest.mark.integration
def test_a_run_loads_its_recipe_once(make_recipe, tmp_path, monkeypatch) -> None:
    calls = []
    real = autobench.recipe.loader.load_recipe

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    for module in (autobench.recipe.loader, autobench.recipe, pipeline):
        monkeypatch.setattr(module, "load_recipe", counting)
    for name, value in run_env(tmp_path, FAKE_VLLM_ARGS="--ttft-ms 1 --itl-ms 1").items():
        monkeypatch.setenv(name, value)
    recipe = make_recipe(num_prompts=4)
    options = RunOptions(
        runtime="process",
        vllm_exec=f"{sys.executable} {FAKE_VLLM}",
        ledger=str(tmp_path / "ledger.db"),
        runs_dir=tmp_path / "runs",
        allow_unpinned=True,
    )
    outcome = pipeline.run_recipe(recipe, options, echo=lambda line: None)
    assert outcome.status == "DONE", outcome.notes
    assert calls == [recipe]
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE"

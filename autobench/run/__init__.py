"""Running a recipe: plan, runtimes (docker, process), readiness, orchestration; ``cluster`` runs a
multi-node recipe through its compiled driver."""

from autobench.run.orchestrate import RunOptions, RunOutcome, prepare, run_recipe
from autobench.run.plan import RunPlan, build_plan

__all__ = ["RunOptions", "RunOutcome", "RunPlan", "build_plan", "prepare", "run_recipe"]

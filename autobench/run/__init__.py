"""Running a recipe: one pipeline (``pipeline``) over the runtimes of its table (``local``: docker
and process; ``slurm``; ``cluster``: a multi-node recipe through its compiled driver), plan,
readiness, signals."""

from autobench.run.outcome import RunOptions, RunOutcome
from autobench.run.pipeline import prepare, run_recipe
from autobench.run.plan import RunPlan, build_plan

__all__ = ["RunOptions", "RunOutcome", "RunPlan", "build_plan", "prepare", "run_recipe"]

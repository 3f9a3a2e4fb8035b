"""Experiments across boots: factors over recipe keys, each with levels, expanded into
treatments (one boot each), pruned by preflight before any GPU time is spent.

``definition`` reads and checks an experiment file (every problem one located line);
``design`` expands it into treatments (full factorial, an explicit list, exclusions, a seeded
random subset, a maximum); ``plan`` turns each treatment into a validated, digested recipe and
predicts its boot, so a treatment that cannot boot is listed as pruned with the cause.
"""

from autobench.experiment.definition import Experiment, load_experiment
from autobench.experiment.design import Treatment, treatments
from autobench.experiment.plan import ExperimentPlan, PlannedTreatment, plan_experiment

__all__ = [
    "Experiment",
    "ExperimentPlan",
    "PlannedTreatment",
    "Treatment",
    "load_experiment",
    "plan_experiment",
    "treatments",
]

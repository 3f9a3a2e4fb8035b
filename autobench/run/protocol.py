"""The contract between the run pipeline (autobench.run.pipeline) and a runtime.

Compiled   what a runtime will run: plan, stored script, further files
Run        one run in flight: what ``execute`` reads and fills
Runtime    what differs between runtimes (docker, process, slurm, cluster)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from autobench.recipe import LoadedRecipe
from autobench.redaction import redact
from autobench.run.outcome import Echo, RowFacts, RunOptions, RunOutcome
from autobench.run.plan import RunPlan
from autobench.run.signals import SignalGuard


@dataclass(frozen=True)
class Compiled:
    """What a runtime will run: the plan, the script stored with the run, and any further files
    (a multi-node run's driver and node scripts) written executable into the run folder."""

    plan: RunPlan
    script: str
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Run:
    """One run in flight: what :meth:`Runtime.execute` reads and fills."""

    loaded: LoadedRecipe
    options: RunOptions
    plan: RunPlan
    script: str
    env: dict[str, str]  # the caller's environment (secrets are read from it by name)
    secrets: dict[str, str]  # the secret values in it (redacted from everything kept)
    outcome: RunOutcome
    guard: SignalGuard
    echo: Echo

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)


class Runtime(Protocol):
    """What differs between runtimes.  An instance serves one run."""

    #: The runtime the recipe rules check for (``autobench.recipe.rules.check(runtime=...)``).
    rules: str
    #: Whether the preflight gate runs before it (a predicted boot failure refuses the run).
    preflight: bool

    def compile(self, loaded: LoadedRecipe) -> Compiled:
        """The plan and the script; pure apart from the clock (the run folder's name)."""
        ...

    def check(self, loaded: LoadedRecipe, compiled: Compiled) -> list[str]:
        """Refuse (RunError) before anything runs or is recorded; notes for the outcome."""
        ...

    def place(self, plan: RunPlan) -> RunPlan:
        """The plan once its run folder is claimed (paths that name the folder)."""
        ...

    def execute(self, run: Run) -> RowFacts:
        """start -> wait ready -> bench cells -> collect logs -> teardown; fills ``run.outcome``
        (status, root cause, metrics, cells, boot facts) and says where it ran."""
        ...


class RuntimeBase:
    """What most runtimes share: the options of the run, and no extra checks or placing."""

    rules = "docker"
    preflight = True

    def __init__(self, name: str, options: RunOptions, echo: Echo, env: Mapping[str, str]):
        self.name = name
        self.options = options
        self.echo = echo
        self.env = env

    @property
    def remote(self) -> str:
        """How hosts are reached: ``--remote``, else AUTOBENCH_REMOTE, else ssh (the cluster
        driver's nodes and bench.worker_hosts alike)."""
        from autobench.compile.cluster import DEFAULT_REMOTE

        return self.options.remote or self.env.get("AUTOBENCH_REMOTE") or DEFAULT_REMOTE

    def check(self, loaded: LoadedRecipe, compiled: Compiled) -> list[str]:
        return []

    def place(self, plan: RunPlan) -> RunPlan:
        return plan


__all__ = ["Compiled", "Run", "Runtime", "RuntimeBase"]

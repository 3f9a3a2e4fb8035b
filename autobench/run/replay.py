"""``autobench replay RUN --run``: run a recorded run again, record it linked back, compare.

The run's recipe snapshot (the resolved recipe it ran, stored in the ledger) is written to a
recipe file in a scratch folder and run the way ``autobench run`` runs a recipe
(:func:`autobench.run.pipeline.run_recipe`, the runtime the run used unless another is
given).  Before anything starts, the script that run would store is compared with the
script run N stored: when autobench or the options (``--vllm-exec``, the runtime) make it
differ, the replay is refused in one line (``--anyway`` runs it regardless, and says where
they part).  The new run is recorded with ``replay_of = N``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from autobench.errors import RunError
from autobench.ledger.models import RunRecord
from autobench.ledger.snapshot import stored_script
from autobench.run.outcome import RunOptions, RunOutcome
from autobench.run.pipeline import prepare, run_recipe

#: The runtimes a replay can run on (a Slurm run is replayed by ``run --runtime slurm``).
REPLAY_RUNTIMES = ("docker", "process")


def snapshot_recipe(rec: RunRecord, folder: Path) -> Path:
    """Run ``rec``'s recipe snapshot as a recipe file in ``folder`` (JSON is YAML); its
    ``extends`` dropped: the snapshot is already resolved."""
    snap = rec.recipe_snapshot
    if not isinstance(snap, dict):
        raise RunError(
            f"run {rec.display_id} stored no recipe snapshot: there is nothing to run again",
            hint="only runs recorded from a recipe (autobench run, autobench record RECIPE) can be replayed",
        )
    data = {k: v for k, v in snap.items() if k != "extends"}
    name = str(data.get("name") or f"run-{rec.id}")
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def recorded_runtime(rec: RunRecord) -> str | None:
    facts = rec.host_facts if isinstance(rec.host_facts, dict) else {}
    runtime = facts.get("runtime")
    return runtime if isinstance(runtime, str) else None


def first_difference(a: str, b: str) -> str:
    """``line 3: '...' vs '...'``: where two scripts part."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False), 1):
        if x != y:
            return f"line {i}: {x[:80]!r} (stored) vs {y[:80]!r} (now)"
    return f"line {min(len(la), len(lb)) + 1}: one script is longer ({len(la)} vs {len(lb)} lines)"


def replay_run(
    rec: RunRecord,
    options: RunOptions,
    *,
    anyway: bool = False,
    echo: Callable[[str], None] = print,
    env: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Run ``rec`` again from its snapshot and record the new run with ``replay_of = rec.id``."""
    stored = stored_script(rec)
    runtime = options.runtime
    if runtime not in REPLAY_RUNTIMES:
        raise RunError(
            f"replay --run runs on the {' or '.join(REPLAY_RUNTIMES)} runtime, not {runtime}",
            hint="for a Slurm run: autobench replay RUN > script, or autobench run RECIPE --runtime slurm",
        )
    with tempfile.TemporaryDirectory(prefix=f"autobench-replay-{rec.id}-") as tmp:
        path = snapshot_recipe(rec, Path(tmp))
        _, _, script = prepare(path, RunOptions(**{**vars(options), "dry_run": True}), env=env)
        if script != stored:
            where = first_difference(stored, script)
            if not anyway:
                raise RunError(
                    f"run {rec.display_id}'s recipe compiles to another script now than the one it stored ({where})",
                    hint="replay with the options the run had (--runtime, --vllm-exec), "
                    "or pass --anyway to run it as it compiles now",
                )
            echo(f"note: replaying {rec.display_id} with a script that differs from the stored one ({where})")
        options.replay_of = rec.id
        return run_recipe(path, options, echo=echo, env=env)


def options_for(rec: RunRecord, runtime: str | None, options: RunOptions) -> RunOptions:
    """The replay's run options: ``options`` on the runtime given, else the one the run used
    (else docker)."""
    return replace(options, runtime=runtime or recorded_runtime(rec) or "docker")


__all__ = ["REPLAY_RUNTIMES", "options_for", "recorded_runtime", "replay_run", "snapshot_recipe"]

"""The preflight gate of ``run``: predict the boot before anything starts.

A predicted failure (unification assertion, NotImplementedError, a refused draft, a KV cache too
small for max_model_len) refuses the run with one line (exit 6) and records nothing, unless
``--force``.  When the boot cannot be predicted (configs not in the local HF cache, a version
without rules, an uncovered model), the run goes on and says why in a note.  The prediction
travels with the run (``RunOutcome.preflight``) so the ledger keeps it next to the boot facts the log printed.
"""

from __future__ import annotations

from collections.abc import Callable

from autobench.errors import AutobenchError, RunError
from autobench.recipe import LoadedRecipe


def gate(
    loaded: LoadedRecipe, *, force: bool, vllm_version: str | None, echo: Callable[[str], None]
) -> tuple[dict[str, object] | None, str | None]:
    """(the prediction as JSON, a note) -- or RunError when a failure is predicted and not forced."""
    from autobench.preflight.predict import Options, predict_recipe

    try:
        # Configs from the local HF cache only (``lock`` puts them there): run never waits on the Hub here.
        prediction = predict_recipe(loaded, Options(vllm_version=vllm_version, cache_only=True))
    except AutobenchError as exc:
        # Kept for the outcome's notes (printed with the result): a run refused later for
        # another reason still says so in one line.
        return None, f"preflight: {exc}"
    doc = prediction.to_dict()
    if not prediction.fails:
        block = doc["attention_block_size"]
        echo(f"preflight: boots on vLLM {doc['vllm_version']} ({doc['status']}; attention block size {block})")
        return doc, None
    line = prediction.failure_line()
    if not force:
        raise RunError(
            f"refused: {line}",
            hint=f"{prediction.fix()}; or pass --force to run anyway (`autobench preflight` shows the arithmetic)",
            location=str(loaded.path),
        )
    echo(f"preflight: {line} -- running anyway (--force)")
    return doc, f"preflight predicted a failure, run with --force: {line}"

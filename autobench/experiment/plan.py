"""An experiment's plan: each treatment as a validated, digested recipe, and its predicted boot.

A treatment whose boot preflight predicts to fail (a KV page-size unification assertion, a KV
cache too small for max_model_len, a refused draft) is **pruned**: listed with the predicted
cause and never booted unless the run is forced.  A treatment whose boot cannot be predicted
(configs not in the local HF cache, a vLLM version without rules) stays in, with the reason.
Configs are read as ``autobench preflight`` reads them (the Hub, or the local HF cache offline),
once per (repo, revision), so planning a thousand treatments costs little more than one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from autobench.errors import AutobenchError, RecipeError
from autobench.experiment.definition import Experiment
from autobench.experiment.design import Treatment, treatments
from autobench.recipe.loader import LoadedRecipe, Override, RecipeBase, recipe_base

if TYPE_CHECKING:
    from autobench.hub.client import Hub, HubSettings
    from autobench.preflight.inputs import HubReader

READY, PRUNED, UNPREDICTED = "ready", "pruned", "unpredicted"


@dataclass(frozen=True)
class PlannedTreatment:
    treatment: Treatment
    loaded: LoadedRecipe
    status: str  # ready | pruned | unpredicted
    cause: str | None = None  # pruned: the predicted failure; unpredicted: why there is no prediction
    fix: str | None = None
    unpinned: tuple[str, ...] = ()  # Hub references not pinned to a full sha (``lock`` pins them)

    @property
    def digest(self) -> str:
        return self.loaded.digest

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.treatment.id,
            "label": self.treatment.label(),
            "levels": self.treatment.assignment(),
            "digest": self.digest,
            "status": self.status,
            "cause": self.cause,
            "fix": self.fix,
            "unpinned": list(self.unpinned),
        }


@dataclass(frozen=True)
class ExperimentPlan:
    experiment: Experiment
    digest: str  # over the definition and every treatment's recipe digest
    treatments: tuple[PlannedTreatment, ...]

    def count(self, status: str) -> int:
        return sum(1 for t in self.treatments if t.status == status)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment.name,
            "file": str(self.experiment.path),
            "recipe": str(self.experiment.recipe),
            "design": self.experiment.design,
            "digest": self.digest,
            "treatments": [t.to_json_dict() for t in self.treatments],
            "ready": self.count(READY),
            "pruned": self.count(PRUNED),
            "unpredicted": self.count(UNPREDICTED),
        }


def _overrides(exp: Experiment, treatment: Treatment) -> list[Override]:
    out = [Override(("bench", key), value, exp.bench_where[key]) for key, value in exp.bench.items()]
    out.extend(Override(tuple(key.split(".")), level, where) for key, level, where in treatment.levels)
    return out


#: The runtime a treatment's rules are checked for: one name, or each treatment's own (a
#: multi-node treatment boots on the multi-node driver: ``autobench.experiment.execute.rules_runtime``).
RulesRuntime = str | Callable[[LoadedRecipe], str] | None


def _build(
    base: RecipeBase, exp: Experiment, treatment: Treatment, runtime: RulesRuntime, redact: Mapping[str, str]
) -> LoadedRecipe:
    """The treatment's recipe, validated like any recipe (schema, then the rules' errors, their
    texts redacted of ``redact``); a problem is one line that names the treatment."""
    from autobench.recipe import rules

    try:
        loaded = base.load(_overrides(exp, treatment))
    except RecipeError as exc:
        name = f"treatment {treatment.id} ({treatment.label()})"
        raise RecipeError(f"{name}: {exc.message}", location=exc.location, hint=exc.hint) from exc
    if runtime is None:
        return loaded
    rules_for = runtime(loaded) if callable(runtime) else runtime
    errors = [f for f in rules.check(loaded, runtime=rules_for, redact=redact) if f.severity == "error"]
    if errors:
        first = errors[0]
        name = f"treatment {treatment.id} ({treatment.label()})"
        raise RecipeError(
            f"{name}: {first.code} {first.key}: {first.message}",
            location=None if first.location is None else str(first.location),
            hint=first.hint,
        )
    return loaded


class _Memo:
    """A Hub reader (``preflight.inputs.HubReader``) that asks ``inner`` for each (repo,
    revision)'s sha, config and file once, and gives the same answer (or error) after."""

    def __init__(self, inner: HubReader):
        self._inner = inner
        self._seen: dict[tuple[object, ...], object] = {}

    @property
    def settings(self) -> HubSettings:
        return self._inner.settings

    @property
    def hub(self) -> Hub:
        return self._inner.hub

    def _once(self, read: Callable[..., object], *args: object, **kwargs: object) -> object:
        """``read(*args, **kwargs)`` the first time (a bound method of the inner reader: equal
        and of equal hash on every access), its answer or error after."""
        key = (read, args, tuple(sorted(kwargs.items())))
        if key not in self._seen:
            try:
                self._seen[key] = read(*args, **kwargs)
            except AutobenchError as exc:
                self._seen[key] = exc
        found = self._seen[key]
        if isinstance(found, AutobenchError):
            raise found
        return found

    def sha(self, repo: str, label: str) -> str:
        return str(self._once(self._inner.sha, repo, label))

    def config(self, repo: str, sha: str, *, label: str | None = None) -> dict[str, Any]:
        return cast(dict[str, Any], self._once(self._inner.config, repo, sha, label=label))

    def file(
        self, repo: str, sha: str, filename: str, *, label: str | None = None, required: bool = True
    ) -> Path | None:
        return cast(Path | None, self._once(self._inner.file, repo, sha, filename, label=label, required=required))


Predictor = Callable[[LoadedRecipe], tuple[str, str | None, str | None]]


def preflight_predictor(
    vllm_version: str | None = None, *, offline: bool | None = None, resolver: HubReader | None = None
) -> Predictor:
    """(status, cause, fix) of a treatment's predicted boot, as ``autobench preflight`` predicts
    it (configs from the Hub, or the local HF cache with ``offline``), each config read once and
    each distinct prediction computed once: treatments that differ only in what the preflight
    does not read (``engine.max_num_seqs``, env, the bench) share their inputs
    (``preflight.predict.RecipeInputs``), so their KV layout is not recomputed."""
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import Resolver
    from autobench.preflight.predict import Options, predict_inputs, recipe_inputs

    opts = Options(vllm_version=vllm_version, offline=offline)
    memo = _Memo(resolver or Resolver(HubSettings.from_env(offline=offline)))
    # key -> (the inputs, kept alive so the configs' ids in the key stay theirs; the answer)
    seen: dict[tuple[object, ...], tuple[object, tuple[str, str | None, str | None]]] = {}

    def predict(loaded: LoadedRecipe) -> tuple[str, str | None, str | None]:
        try:
            inputs = recipe_inputs(loaded, opts, memo)
        except AutobenchError as exc:
            return UNPREDICTED, f"preflight: {exc}", None
        key = inputs.key()
        if key in seen:
            return seen[key][1]
        try:
            prediction = predict_inputs(inputs)
        except AutobenchError as exc:
            answer: tuple[str, str | None, str | None] = (UNPREDICTED, f"preflight: {exc}", None)
        else:
            fails = prediction.fails
            answer = (PRUNED, prediction.failure_line(), prediction.fix()) if fails else (READY, None, None)
        seen[key] = (inputs, answer)
        return answer

    return predict


def plan_digest(exp: Experiment, planned: list[PlannedTreatment]) -> str:
    blob = json.dumps(
        {"definition": exp.doc.data, "treatments": [t.digest for t in planned]},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def plan_experiment(
    exp: Experiment, *, predictor: Predictor | None = None, runtime: RulesRuntime = "docker"
) -> ExperimentPlan:
    """Every treatment of ``exp`` built, validated and predicted (``predictor``: default, the
    preflight's).  RecipeError on the first treatment that does not validate: its schema, and
    the rules' errors for ``runtime`` (None: the schema only, when only the digests are wanted)."""
    from autobench.recipe.facts import unpinned
    from autobench.redaction import environment_secrets

    if not exp.recipe.is_file():
        raise RecipeError(
            f"recipe: {exp.recipe} is not a recipe file",
            location=str(exp.doc.value_where("recipe")),
            hint="the path is relative to the experiment file",
        )
    base = recipe_base(exp.recipe)
    base.load()  # the recipe as written first: its own problem is the recipe's, not a treatment's
    predict = predictor or preflight_predictor()
    redact = environment_secrets()  # read once for every treatment's findings
    planned: list[PlannedTreatment] = []
    for treatment in treatments(exp):
        loaded = _build(base, exp, treatment, runtime, redact)
        status, cause, fix = predict(loaded)
        floating = tuple(p.ref for p in unpinned(loaded.recipe))
        planned.append(PlannedTreatment(treatment, loaded, status, cause, fix, floating))
    return ExperimentPlan(exp, plan_digest(exp, planned), tuple(planned))

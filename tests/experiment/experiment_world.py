"""An experiment and its runs built in-process for the analysis and page tests (imported by name;
pytest puts this folder on sys.path): the treatments planned from a real experiment file, their
runs appended to a real ledger through the store, each cell's per-request samples drawn from a
known distribution (seeded), so a verdict's truth is known and the same on any machine."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from autobench.experiment import load_experiment, plan_experiment
from autobench.experiment.analysis import TreatmentRun
from autobench.experiment.plan import READY, ExperimentPlan
from autobench.ledger import NewCell, NewRun, open_ledger
from autobench.samples import Request, Samples, summary

RECIPE = """\
name: exp-base
model: {repo: org/model, served_name: m}
speculative: {method: eagle3, model: org/draft, revision: %s, num_speculative_tokens: 1}
container: {image: vllm/vllm-openai:v0.11.0}
engine: {max_model_len: 4096}
bench:
  dataset: {kind: random, input_len: 16, output_len: 64}
  num_prompts: 100
""" % ("a" * 40)


def write(tmp_path: Path, factors: str, *, bench: str = "bench: {concurrency: [1, 8]}\n", name: str = "") -> Path:
    (tmp_path / "r.yaml").write_text(RECIPE, encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text(f"{name}recipe: r.yaml\n{bench}factors:\n{factors}", encoding="utf-8")
    return path


def plan(path: Path) -> ExperimentPlan:
    """The plan as `experiment report` makes it: digests only, no prediction."""
    return plan_experiment(load_experiment(path), predictor=lambda loaded: (READY, None, None), runtime=None)


def drawn(
    seed: int, tpot: float, *, n: int = 100, noise: float = 0.01, ttft: float = 20.0, out: int = 64
) -> tuple[Samples, dict[str, float | int | None]]:
    """n requests of ``out`` tokens whose TPOT is ``tpot`` ms times a lognormal of sd ``noise``."""
    r = random.Random(seed)
    rows = []
    for i in range(n):
        per = tpot * r.lognormvariate(0.0, noise)
        first = ttft * r.lognormvariate(0.0, noise)
        gaps = [per] * (out - 1)
        rows.append(Request("ok", first, per, first + per * (out - 1), gaps, 16, out, None, 0.01 * i))
    samples = Samples.from_requests(rows)
    return samples, dict(summary(samples))


def cell(
    seed: int,
    tpot: float,
    *,
    concurrency: int = 1,
    repeat: int | None = None,
    acceptance: float | None = 2.0,
    decode: float | None = None,
    noise: float = 0.01,
    samples: bool = True,
    n: int = 100,
) -> NewCell:
    drawn_samples, metrics = drawn(seed, tpot, noise=noise, n=n)
    metrics["decode_tok_s"] = decode if decode is not None else concurrency * 1000.0 / tpot
    metrics["spec_acceptance_length"] = acceptance
    metrics["concurrency"] = concurrency
    params: dict[str, object] = {"concurrency": concurrency, "input_len": 16, "output_len": 64}
    if repeat is not None:
        params["repeat"] = repeat
    return NewCell(params, metrics, drawn_samples if samples else None)


def record(
    ledger: Path, the_plan: ExperimentPlan, cells_by_treatment: dict[str, Sequence[NewCell]], *, status: str = "DONE"
) -> None:
    """Append one run per named treatment (its digest, its cells)."""
    by_id = {t.treatment.id: t for t in the_plan.treatments}
    with open_ledger(ledger) as book:
        for tid, cells in cells_by_treatment.items():
            book.append(
                NewRun(
                    recipe_name="exp-base",
                    recipe_digest=by_id[tid].digest,
                    model_repo="org/model",
                    status=status,
                    metrics={"decode_tok_s": 1.0},
                    cells=tuple(cells),
                )
            )


def runs(ledger: Path, the_plan: ExperimentPlan) -> list[TreatmentRun]:
    """Each treatment with its latest DONE run and cells, as `experiment report` reads them
    (``confirm.treatment_runs`` with the ledger's records of the plan)."""
    from autobench.experiment.confirm import treatment_runs

    with open_ledger(ledger, create=False) as book:
        return treatment_runs(book, the_plan, book.experiments(plan_digest=the_plan.digest))

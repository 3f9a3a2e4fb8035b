"""The no-GPU tour (``autobench tour``): the whole flow, end to end, on this machine.

    tour(folder, echo=print) -> Tour

Into ``folder`` (new or empty): a tiny model directory (a byte-level ``tokenizer.json``, so
prompt lengths are counted exactly and nothing is fetched), the bundled recipe
``recipes/tour.yaml``, a run with the process runtime whose ``vllm`` is the packaged stand-in
(:mod:`autobench.run.standin`: the synthetic server), recorded into ``folder/ledger.db`` (a
scratch ledger, never the committed one), and its report pages under ``folder/docs``.  Every
piece is the one a real run uses: validate, plan, compile, launch, readiness, bench, metrics
scrape, teardown, log parse, ledger append, report.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autobench.errors import RunError, UsageError

#: The bundled recipe: a local model directory served by the stand-in on a loopback port, with
#: n-gram speculative decoding (no draft model), a small random-prompt bench.
TOUR_RECIPE = """\
# The tour's recipe (bundled with autobench; written by `autobench tour`).
# The model is a local directory holding only a tokenizer; `vllm` is the packaged stand-in
# (python -m autobench.run.standin), which answers like vllm serve with known timings.
name: tour
model:
  repo: {model_dir}
  served_name: tour-model
speculative:
  method: ngram
  num_speculative_tokens: 4
container:
  image: vllm/vllm-openai:v0.11.0
  gpus: all
  ports: ["{port}:{port}"]
  volumes: [{volume}]  # what a docker run would need to see the local model
engine:
  host: 127.0.0.1
  port: {port}
  max_model_len: 4096
  max_num_seqs: 4
bench:
  dataset: {{kind: random, input_len: 128, output_len: 64}}
  num_prompts: 32
  concurrency: 4
  max_tokens: 64
  max_seconds: 60
  ready_timeout_s: 60
meta:
  description: The no-GPU tour - a synthetic server standing in for vLLM.
  tags: [tour, synthetic]
"""


@dataclass
class Tour:
    folder: Path
    recipe: Path
    ledger: Path
    docs: Path
    status: str
    display_id: str | None
    run_dir: Path
    pages: list[Path] = field(default_factory=list)
    metrics: dict[str, object] = field(default_factory=dict)
    exit_code: int = 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_tokenizer(folder: Path) -> Path:
    """A byte-level tokenizer.json (256 byte tokens, no merges) in ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    tok.save(str(path))
    return path


def prepare(folder: Path) -> Path:
    """The tour's layout in ``folder`` (new or empty): the model directory and the recipe."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UsageError(
            f"{folder} is not an empty folder", hint="give a new folder, or omit --dir for a temporary one"
        )
    model_dir = (folder / "model").resolve()
    if ":" in str(model_dir) or "\n" in str(model_dir):
        raise UsageError(f"{folder} has a ':' in its path", hint="give a folder whose path has no ':'")
    folder.mkdir(parents=True, exist_ok=True)
    write_tokenizer(model_dir)
    recipes = folder / "recipes"
    recipes.mkdir()
    recipe = recipes / "tour.yaml"
    recipe.write_text(
        TOUR_RECIPE.format(
            model_dir=json.dumps(str(model_dir)), volume=json.dumps(f"{model_dir}:{model_dir}:ro"), port=_free_port()
        ),
        encoding="utf-8",
    )
    return recipe


def tour(folder: Path, *, echo: Callable[[str], None] = print) -> Tour:
    """Run the bundled recipe end to end in ``folder``; render its pages."""
    from autobench.recipe import load_recipe
    from autobench.recipe.rules import check
    from autobench.report import report
    from autobench.run import RunOptions, run_recipe

    recipe = prepare(folder)
    errors = [f for f in check(load_recipe(recipe)) if f.severity == "error"]
    if errors:  # the bundled recipe is tested; this would be a bug, said plainly
        raise RunError(f"the tour's recipe does not validate: {errors[0].text()}")
    echo(f"tour: recipe {recipe} (validates); running it with the synthetic server as vLLM")
    ledger = folder / "ledger.db"
    options = RunOptions(
        runtime="process",
        runs_dir=str(folder / "runs"),
        ledger=str(ledger),
        vllm_exec=f"{sys.executable} -m autobench.run.standin",
        ready_timeout_s=60,
        grace_s=5,
    )
    outcome = run_recipe(recipe, options, echo=echo)
    docs = folder / "docs"
    result = report([], ledger=str(ledger), out_dir=docs, index=True, recipes_dir=folder / "recipes")
    return Tour(
        folder=folder,
        recipe=recipe,
        ledger=ledger,
        docs=docs,
        status=outcome.status,
        display_id=outcome.display_id,
        run_dir=Path(outcome.plan.run_dir),
        pages=[*result.written, *result.unchanged],
        metrics=dict(outcome.metrics),
        exit_code=outcome.exit_code,
    )


__all__ = ["TOUR_RECIPE", "Tour", "prepare", "tour", "write_tokenizer"]

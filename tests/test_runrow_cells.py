"""runrow.new_run: a single bench's raw samples become the run's one cell; a sweep's cells go
in redacted, and the row's metrics are the headline cell's."""

from __future__ import annotations

from pathlib import Path

from autobench.ledger import open_ledger
from autobench.ledger.models import NewCell
from autobench.recipe import load_recipe
from autobench.runrow import RunFacts, new_run
from autobench.samples import Request, Samples

RECIPE = Path(__file__).resolve().parent.parent / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
S = Samples.from_requests([Request("ok", 10.0, 2.0, 30.0, [1.0, 2.0], 5, 3, None, 0.0)])


def test_a_single_bench_with_samples_is_one_cell(tmp_path: Path) -> None:
    loaded = load_recipe(RECIPE)
    metrics = {"decode_tok_s": 10.0, "concurrency": 8, "completed": 1, "tokenizer": "estimated"}
    run = new_run(loaded, "#!/bin/bash\n", RunFacts("DONE", "run", metrics=metrics, samples=S), env={})
    (cell,) = run.cells
    assert cell.params == {"concurrency": 8, "repeat": 1} and cell.samples == S
    assert cell.metrics == {"decode_tok_s": 10.0, "concurrency": 8, "completed": 1}
    params = {"concurrency": 2, "request_rate": None, "input_len": 64, "output_len": 16}
    run = new_run(loaded, "", RunFacts("DONE", "run", metrics=metrics, samples=S, cell_params=params), env={})
    assert run.cells[0].params == {"concurrency": 2, "input_len": 64, "output_len": 16, "repeat": 1}
    assert new_run(loaded, "", RunFacts("DONE", "manual", metrics=metrics), env={}).cells == ()
    with open_ledger(tmp_path / "l.db") as book:
        rec = book.append(run)
        assert book.cells(rec.id)[0].samples == S and book.verify().ok


def test_a_sweep_s_cells_are_redacted_and_head_the_row(tmp_path: Path) -> None:
    loaded = load_recipe(RECIPE)
    secret = "s3cr3t-value-for-the-test"
    cells = [
        NewCell(
            {"concurrency": c, "repeat": 1, "label": f"key {secret}"}, {"decode_tok_s": 10.0 * c, "concurrency": c}, S
        )
        for c in (1, 16, 4)
    ]
    run = new_run(loaded, "", RunFacts("DONE", "run", cells=cells, replay_of=None), env={"MY_API_KEY": secret})
    assert [c.params["label"] for c in run.cells] == ["key [REDACTED:MY_API_KEY]"] * 3
    assert run.metrics == {}  # the ledger fills them from the headline cell
    with open_ledger(tmp_path / "l.db") as book:
        first = book.append(run)
        assert first.metrics["concurrency"] == 16 and first.metrics["decode_tok_s"] == 160.0
        again = new_run(loaded, "", RunFacts("DONE", "run", cells=cells, replay_of=first.id), env={})
        assert book.append(again).replay_of == first.id
        assert book.verify().ok

"""The metric catalogue names every metric once; the bench result, the ledger, the verdicts and
the report derive from it.  A metric defined only there reaches all of them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autobench import metric_catalogue as catalogue
from autobench.bench.result import NORMALIZED_KEYS, normalize
from autobench.ledger.models import COLUMN_METRIC_KEYS, METRIC_KEYS, RUNS
from autobench.ledger.verdict import HIGHER_IS_BETTER, LATENCY_SOURCES, THROUGHPUT_TOKENS
from autobench.report.cells import CELL_COLUMNS
from autobench.report.model import METRIC_ORDER

REPO = Path(__file__).resolve().parent.parent


def test_every_table_is_the_catalogue_s() -> None:
    stored = [m.key for m in catalogue.METRICS if m.stored]
    assert list(METRIC_KEYS) == stored
    assert set(COLUMN_METRIC_KEYS) == {m.key for m in catalogue.METRICS if m.column}
    assert set(COLUMN_METRIC_KEYS) <= {c.name for c in RUNS.columns}
    # only the v1 metric columns have a column: later metrics go to more_metrics
    assert not ({m.key for m in catalogue.METRICS if not m.column} & {c.name for c in RUNS.columns})
    assert set(NORMALIZED_KEYS) == {m.key for m in catalogue.METRICS if m.result} | {"tokenizer"}
    assert {m.key: m.better == "higher" for m in catalogue.METRICS if m.verdict} == HIGHER_IS_BETTER
    assert set(LATENCY_SOURCES) | set(THROUGHPUT_TOKENS) <= set(HIGHER_IS_BETTER)
    assert [k for k, _, _ in METRIC_ORDER] == [m.key for m in catalogue.METRICS if m.stored and m.shown]
    assert [k for k, _, _ in CELL_COLUMNS] == [m.key for m in catalogue.METRICS if m.in_cells]
    assert len(catalogue.BY_KEY) == len(catalogue.METRICS)  # every key once


def test_a_judged_metric_states_its_direction() -> None:
    for m in catalogue.METRICS:
        if m.verdict:
            assert m.better is not None, m.key


def test_vllm_s_names_are_read_only_from_a_result() -> None:
    vllm = {"completed": 3, "failed": 1, "duration": 2.0, "output_throughput": 10.0, "total_token_throughput": 30.0}
    vllm |= {"median_ttft_ms": 12.5, "spec_decode_acceptance_rate": 44.0, "max_concurrency": None, "incomplete": 9}
    n = normalize(vllm)
    assert (n["completed"], n["errors"], n["decode_tok_s"], n["ttft_median_ms"]) == (3, 1, 10.0, 12.5)
    assert n["prefill_tok_s"] == 20.0  # vLLM states no input throughput: total - output
    assert n["spec_draft_acceptance_rate"] == 0.44  # a percentage in vLLM's JSON, a fraction here
    assert n["concurrency"] is None and n["incomplete"] is None  # incomplete: only ours states it


@pytest.mark.parametrize(
    ("value", "sig", "text"),
    [
        (17209.4, 4, "17,209"),
        (4779.52, 4, "4,780"),
        (822.904, 4, "822.9"),
        (0.0123456, 3, "0.0123"),
        (1024, 4, "1,024"),
        (3.0, 4, "3"),
        (None, 4, "—"),
        (True, 4, "yes"),
        ([0.5, 0.25], 2, "0.5/0.25"),
    ],
)
def test_one_number_format(value: object, sig: int, text: str) -> None:
    assert catalogue.format_value(value, sig) == text


#: A metric that exists nowhere but in the catalogue's text: the child process below adds it
#: there (one entry, as a person would) before anything imports the catalogue.
ENTRY = (
    'Metric("prefix_hit_pct", "prefix cache hits", "%", better="higher", verdict=True, '
    'result="prefix_cache_hit_pct", in_cells=True)'
)

CHILD = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pathlib import Path

    import autobench

    src = Path(autobench.__file__).parent / "metric_catalogue.py"
    text = src.read_text(encoding="utf-8")
    edited = text.replace("\\n)\\n\\nBY_KEY", "\\n    " + sys.argv[1] + ",\\n)\\n\\nBY_KEY", 1)
    assert edited != text
    spec = importlib.util.spec_from_loader("autobench.metric_catalogue", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(src)
    sys.modules["autobench.metric_catalogue"] = module
    exec(compile(edited, str(src), "exec"), module.__dict__)
    autobench.metric_catalogue = module

    from autobench.bench.result import BenchResult, normalize
    from autobench.ledger import open_ledger
    from autobench.ledger.models import NewCell
    from autobench.ledger.queries import compare
    from autobench.ledger.render import compare_table, run_lines
    from autobench.ledger.verdict import CellData, judge_cells
    from autobench.recipe import load_recipe
    from autobench.report.model import build_recipe_view, group_by_recipe, runs_from_records
    from autobench.report.render import render_recipe
    from autobench.runrow import RunFacts, new_run

    out = {}
    ours = BenchResult({"result_format": "autobench.bench/1", "completed": 4, "duration": 2.0,
                        "output_throughput": 40.0, "prefix_cache_hit_pct": 61.5}).normalized()
    vllm = normalize({"completed": 4, "duration": 2.0, "output_throughput": 40.0, "prefix_cache_hit_pct": 57.0})
    out["result"] = [ours.get("prefix_hit_pct"), vllm.get("prefix_hit_pct")]

    loaded = load_recipe(sys.argv[2])
    cells = [NewCell({"concurrency": 2, "repeat": r}, {**ours, "prefix_hit_pct": v, "concurrency": 2})
             for r, v in ((1, 60.0), (2, 63.0))]
    with open_ledger(sys.argv[3]) as book:
        a = book.append(new_run(loaded, "", RunFacts("DONE", "run", metrics=ours), env={}))
        b = book.append(new_run(loaded, "", RunFacts("DONE", "run", cells=cells), env={}))
        out["row"] = [a.metrics.get("prefix_hit_pct"), b.metrics.get("prefix_hit_pct")]
        out["cell"] = [c.metrics.get("prefix_hit_pct") for c in book.cells(b.id)]
        out["show"] = [line for line in run_lines(book.get(b.id)) if "prefix_hit_pct" in line]
        out["compare"] = [row for row in compare_table(compare(a, b))[1] if row[0] == "prefix_hit_pct"]
        out["verified"] = book.verify().ok
        records = book.runs()
    side = lambda values: CellData({"concurrency": 2}, [{"prefix_hit_pct": v} for v in values])
    verdicts = judge_cells([side([50.0, 51.0, 50.5])], [side([60.0, 61.0, 60.5])], threshold=0.05)
    out["verdict"] = [(m.metric, m.verdict) for _, m in verdicts.rows()]
    view = build_recipe_view(loaded.recipe.name, group_by_recipe(runs_from_records(records)))
    out["page"] = [line for line in render_recipe(view).splitlines() if "prefix cache hits" in line]
    print(json.dumps(out))
    """
)


@pytest.mark.integration
def test_a_metric_defined_only_in_the_catalogue_reaches_result_ledger_cell_verdict_and_page(tmp_path: Path) -> None:
    recipe = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, ENTRY, str(recipe), str(tmp_path / "l.db")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["result"] == [61.5, 57.0]  # our bench.json and vLLM's, read by its field name
    assert out["row"] == [61.5, 61.5]  # a run's row; a sweep's row: its headline point, repeats merged (mean)
    assert out["cell"] == [60.0, 63.0]
    assert out["show"] == ["    prefix_hit_pct: 61.5"]
    assert out["compare"] == [["prefix_hit_pct", "61.50", "61.50", "1.00x"]]
    assert out["verified"] is True
    assert out["verdict"] == [["prefix_hit_pct", "faster"]]  # higher is better, as the entry says
    assert out["page"] == ["| prefix cache hits | 61.5 % | [run 2](#run-2) |"]
    # ... and the name is nowhere else in the package
    hits = [p for p in (REPO / "autobench").rglob("*.py") if "prefix_hit_pct" in p.read_text(encoding="utf-8")]
    assert hits == []

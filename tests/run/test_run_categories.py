"""A category grid through `autobench run` (issue 33): the stand-in `vllm serve` drafts each
category with its own acceptance profile ($AUTOBENCH_STANDIN_CATEGORIES), each category is a
cell on the one boot, and each cell's acceptance, read from /metrics deltas, is the injected
one within 1 %; the cells' counts add up to the server's final counters; the report shows them
by category."""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.tour import write_tokenizer

pytestmark = pytest.mark.integration  # a real server process

PROFILES = {"code": [0.9, 0.8, 0.7], "chat": [0.5, 0.3, 0.1], "math": [0.3, 0.1, 0.05]}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_category_grid_reports_each_injected_acceptance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "model"
    write_tokenizer(model)
    data = tmp_path / "tasks.jsonl"
    with data.open("w") as f:
        for i in range(72):
            cat = list(PROFILES)[i % 3]
            f.write(json.dumps({"q": f"[{cat}] task {i}: " + "word " * 8, "task": cat}) + "\n")
    port = _port()
    recipe = tmp_path / "cats.yaml"
    recipe.write_text(
        f"""\
name: cats
model: {{repo: {model}, served_name: m}}
speculative: {{method: ngram, num_speculative_tokens: 3}}
engine: {{host: 127.0.0.1, port: {port}, max_model_len: 4096}}
env: {{AUTOBENCH_STANDIN_CATEGORIES: '{json.dumps({f"[{c}]": p for c, p in PROFILES.items()})}'}}
bench:
  dataset: {{kind: jsonl, path: {data}, fields: {{prompt: q, category: task}}, category: [code, chat, math]}}
  num_prompts: 24
  concurrency: 4
  max_tokens: 64
  ready_timeout_s: 60
""",
        encoding="utf-8",
    )
    ledger = str(tmp_path / "ledger.db")
    argv = ["run", str(recipe), "--runtime", "process", "--ledger", ledger, "--runs-dir", str(tmp_path / "runs")]
    argv += ["--vllm-exec", f"{sys.executable} -m autobench.run.standin"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, out + err
    with open_ledger(ledger) as book:
        (run,) = book.runs(status="DONE")
        cells = book.cells(run.id)
    by_cat = {c.params["category"]: c.metrics for c in cells}
    assert list(by_cat) == ["code", "chat", "math"]
    for cat, prof in PROFILES.items():
        assert by_cat[cat]["spec_acceptance_length"] == pytest.approx(1 + sum(prof), rel=0.01), cat
        assert by_cat[cat]["spec_per_position"] == pytest.approx(prof, abs=0.01), cat
    # the cells' drafts add up to the server's final counters (nothing else was sent)
    (folder,) = (tmp_path / "runs").iterdir()
    prom = (folder / "metrics.prom").read_text()
    drafts = sum(float(v) for v in re.findall(r"^vllm:spec_decode_num_drafts_total\{[^}]*\} (\S+)", prom, re.M))
    cell_drafts = [
        json.loads((folder / f"bench.cell-{i}.json").read_text())["spec_decode_num_drafts"] for i in (1, 2, 3)
    ]
    assert sum(cell_drafts) == drafts
    # the report's table by category
    code = main(
        ["report", "cats", "--ledger", ledger, "-o", str(tmp_path / "report"), "--no-plots", "--recipes", str(tmp_path)]
    )
    capsys.readouterr()
    page = (tmp_path / "report" / "recipes" / "cats.md").read_text()
    assert code == 0 and "## Acceptance and speed-up by category" in page
    assert re.search(r"^\| code \| 1 \| 3\.\d+ \| ", page, re.M) and re.search(
        r"^\| math \| 1 \| 1\.4\d* \| ", page, re.M
    )

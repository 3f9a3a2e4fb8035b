"""`history` without a filter: every recipe of the ledger, per digest; "1 run", never "1 runs"
(issue #31)."""

from __future__ import annotations

import json
from pathlib import Path

from autobench.cli import main
from autobench.ledger.seed import build


def test_history_without_a_filter_lists_every_recipe(tmp_path: Path, capsys) -> None:
    db = build(tmp_path / "seed.db")
    assert main(["history", "--ledger", str(db)]) == 0
    out = capsys.readouterr().out
    assert "recipe qwen3-5-122b-a10b-vllm-int4-autoround: 1 run\n" in out
    assert "recipe qwen3-5-122b-a10b-vllm-int4-autoround-dflash: 2 runs\n" in out
    assert main(["history", "--json", "--ledger", str(db)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["subject"] for d in doc] == [
        "qwen3-5-122b-a10b-vllm-int4-autoround",
        "qwen3-5-122b-a10b-vllm-int4-autoround-dflash",
    ]
    assert main(["history", "--recipe", "x", "--model", "y", "--ledger", str(db)]) == 2
    assert "give at most one of --draft, --model or --recipe" in capsys.readouterr().err

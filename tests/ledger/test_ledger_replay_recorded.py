"""`replay` of a run recorded by hand says its script is the recipe compiled at record time,
not a script autobench saw run (issue #31)."""

from __future__ import annotations

import json
from pathlib import Path

from autobench.cli import main

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"


def test_replay_of_a_recorded_run_says_it_never_ran(tmp_path: Path, capsys) -> None:
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"completed": 240, "duration": 60.0, "output_throughput": 90.0}))
    db = str(tmp_path / "l.db")
    assert main(["record", str(BASE), "--status", "DONE", "--metrics", str(result), "--ledger", db]) == 0
    capsys.readouterr()
    assert main(["replay", "1", "--ledger", db]) == 0
    out, err = capsys.readouterr()
    assert "docker run" in out  # the stored script, as before
    assert err.startswith("note: run #1-") and "recorded by hand (manual), not run by autobench" in err

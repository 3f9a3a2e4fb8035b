"""``autobench replay RUN`` prints the script a run stored, byte for byte, against real SQLite
ledgers (runs recorded through ``autobench record``, the same row path ``autobench run`` takes)."""

from __future__ import annotations

import shutil
from pathlib import Path

from autobench.cli import main
from autobench.ledger.seed import DONE_SCRIPT, build

REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_prints_what_compile_gave_when_the_run_was_recorded(capsys, tmp_path):
    db = tmp_path / "ledger.db"
    recipe = tmp_path / DFLASH.name
    shutil.copy(DFLASH, recipe)
    shutil.copy(DFLASH.parent / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml", tmp_path)  # its extends
    code, compiled, _ = run(capsys, "compile", str(recipe))
    assert code == 0 and compiled.startswith("#!")
    code, _, err = run(capsys, "record", str(recipe), "--status", "DONE", "--ledger", str(db))
    assert code == 0, err

    code, replayed, err = run(capsys, "replay", "1", "--ledger", str(db))
    assert code == 0 and "recorded by hand (manual), not run by autobench" in err  # issue #31: said
    assert replayed.encode() == compiled.encode()

    # The snapshot, not a recompile: after the recipe changes, replay still shows the old script.
    recipe.write_text(recipe.read_text().replace("num_speculative_tokens: 5", "num_speculative_tokens: 4"))
    code, recompiled, _ = run(capsys, "compile", str(recipe))
    assert code == 0 and recompiled != compiled
    code, replayed_again, _ = run(capsys, "replay", "#1", "--ledger", str(db))
    assert (code, replayed_again) == (0, compiled)


def test_replay_of_a_seed_run_and_bad_references(capsys, tmp_path):
    db = build(tmp_path / "seeded.db")
    code, out, _ = run(capsys, "replay", "3", "--ledger", str(db))
    assert (code, out) == (0, DONE_SCRIPT)

    for ref, message in (("99", "no run #99 in the ledger"), ("nonsense!", "not a run reference")):
        code, out, err = run(capsys, "replay", ref, "--ledger", str(db))
        assert code == 4 and out == ""
        assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err

    code, out, err = run(capsys, "replay", "1", "--ledger", str(db))  # seed run 1 stored no script
    assert code == 4 and out == "" and "has no stored script" in err


def test_replay_without_a_ledger_is_one_line(capsys, tmp_path):
    code, out, err = run(capsys, "replay", "1", "--ledger", str(tmp_path / "none.db"))
    assert code == 4 and out == "" and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "none.db").exists()

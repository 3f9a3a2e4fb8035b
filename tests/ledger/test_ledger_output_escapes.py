"""A forged ledger row (re-hashed so it still verifies) cannot drive the terminal: ``replay``
prints its script and ``ledger export --format csv`` its values with control characters shown
as escapes (autobench.escape), and CSV values a spreadsheet would run are defused."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger.seed import build
from tests.fuzz.fuzzkit import RAW_CONTROL
from tests.ledger.test_ledger_sync import _forge

OSC = "\x1b]0;owned\x07\x1b[2J"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def forged(tmp_path: Path, **changes: object) -> Path:
    db = build(tmp_path / "seeded.db")
    _forge(db, 1, **changes)
    return db


def test_replay_shows_a_forged_scripts_escape_sequences_as_text(capsys, tmp_path):
    db = forged(tmp_path, script_snapshot=f"#!/usr/bin/env bash\necho hi {OSC}\n\tdone\n")
    code, out, err = run(capsys, "replay", "1", "--ledger", str(db))
    assert code == 0 and "not run by autobench" in err  # a seeded row: said so (issue #31)
    assert not RAW_CONTROL.search(out) and not RAW_CONTROL.search(err)
    assert out == "#!/usr/bin/env bash\necho hi \\u001b]0;owned\\u0007\\u001b[2J\n\tdone\n"


def test_csv_export_shows_no_raw_escape_and_no_formula(capsys, tmp_path):
    db = forged(tmp_path, recipe_name=f"r{OSC}", notes=f'["=HYPERLINK(\\"http://x\\")", "{OSC!r}"]')
    code, out, err = run(capsys, "ledger", "export", "--format", "csv", "--ledger", str(db))
    assert (code, err) == (0, "")
    assert not RAW_CONTROL.search(out)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["recipe_name"] == "r\\u001b]0;owned\\u0007\\u001b[2J"
    assert all(not v.startswith(("=", "@")) for row in rows for v in row.values() if v)


@pytest.mark.parametrize(
    ("column", "value"),
    [("recipe_snapshot", "[" * 100_000 + "]" * 100_000), ("host_facts", "not json")],
)
@pytest.mark.parametrize("command", [["ledger", "show", "1"], ["ledger", "list"], ["ledger", "export"]])
def test_a_forged_json_column_is_one_ledger_error_line(capsys, tmp_path, column, value, command):
    """Before: a RecursionError or JSONDecodeError while reading the row, exit 70."""
    db = forged(tmp_path, **{column: value})
    code, _, err = run(capsys, *command, "--ledger", str(db))
    assert code == 4 and err.count("\n") == 1
    assert "run #1: column " in err and "holds a value that cannot be read" in err

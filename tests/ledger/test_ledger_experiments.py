"""The experiments table (schema v10): records appended and read back, refused changes by the
database itself, an edited record found by verify, an old ledger migrated with every run hash
kept -- on SQLite and on the real PostgreSQL."""

from __future__ import annotations

import shutil
from pathlib import Path

from ledger_helpers import make_run

from autobench.ledger import open_ledger
from autobench.ledger.experiments import new_experiment_values

FIXTURE_V2 = Path(__file__).with_name("fixtures") / "ledger_v2.db"
TREATMENTS = [
    {
        "id": "t1",
        "label": "num_speculative_tokens=5",
        "digest": "sha256:" + "1" * 64,
        "status": "ready",
        "action": "ran",
        "run": "#1-aaaaaaaa",
    },
    {
        "id": "t2",
        "label": "num_speculative_tokens=8",
        "digest": "sha256:" + "2" * 64,
        "status": "pruned",
        "cause": "predicted boot failure",
        "action": "pruned",
    },
]


def test_a_record_reads_back_as_written_and_verifies(book) -> None:
    book.append(make_run())
    first = book.record_experiment(
        new_experiment_values("k-sweep", "sha256:" + "a" * 64, {"recipe": "r.yaml"}, TREATMENTS)
    )
    second = book.record_experiment(new_experiment_values("k-sweep", "sha256:" + "b" * 64, {"recipe": "r.yaml"}, []))
    assert (first, second) == (1, 2)
    (rec,) = book.experiments(plan_digest="sha256:" + "a" * 64)
    assert rec.name == "k-sweep" and rec.definition == {"recipe": "r.yaml"} and rec.treatments == TREATMENTS
    assert [r.id for r in book.experiments(name="k-sweep")] == [1, 2]
    assert book.verify().ok


def test_the_database_refuses_changes_and_verify_finds_an_edited_record(backend) -> None:
    with open_ledger(backend.url) as book:
        book.append(make_run())
        book.record_experiment(new_experiment_values("k-sweep", "sha256:" + "a" * 64, {}, TREATMENTS))
    assert "append-only" in backend.refused("UPDATE experiments SET name = 'other'")
    assert "append-only" in backend.refused("DELETE FROM experiments")
    drop = "DROP TRIGGER experiments_no_update" + ("" if backend.path is not None else " ON experiments")
    backend.sql(f"{drop}; UPDATE experiments SET treatments = '[]' WHERE id = 1;")
    with open_ledger(backend.url) as book:
        result = book.verify()
    assert not result.ok
    assert "experiment record #1 does not match its content_hash: it was changed after it was recorded" in str(result)


def test_a_secret_in_a_definition_is_stored_redacted(book) -> None:
    token = "hf_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    book.record_experiment(new_experiment_values("x", "sha256:" + "c" * 64, {"env": {"HF_TOKEN": token}}, []))
    (rec,) = book.experiments()
    assert token not in str(rec.definition) and book.verify().ok


def test_an_old_ledger_gains_the_table_and_keeps_every_run_hash(tmp_path) -> None:
    old = tmp_path / "old.db"
    shutil.copy2(FIXTURE_V2, old)
    import sqlite3

    con = sqlite3.connect(old)
    before = con.execute("SELECT id, row_hash FROM runs ORDER BY id").fetchall()
    con.close()
    with open_ledger(old) as book:
        assert [(r.id, r.row_hash) for r in book.runs()] == before
        assert book.experiments() == [] and book.verify().ok
        book.record_experiment(new_experiment_values("x", "sha256:" + "d" * 64, {}, []))
        assert book.verify().ok

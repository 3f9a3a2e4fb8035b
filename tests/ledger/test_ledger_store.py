"""The ledger library against real SQLite files and the real PostgreSQL server (tests
taking ``book`` / ``backend`` run on both): append/get, validation, append-only triggers,
the hash chain and tamper detection, refusing non-ledgers, queries, export."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sqlite3
from pathlib import Path

import pytest
from ledger_helpers import DRAFT, SHA_A, SHA_B, make_run

from autobench.errors import LedgerError
from autobench.ledger import BOOT_KEYS, METRIC_KEYS, open_ledger
from autobench.ledger.migrations import LATEST
from autobench.ledger.models import GENESIS_HASH


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ append / get
def test_append_and_get_round_trip_every_field(book):
    rec = book.append(
        make_run(
            recipe_digest="sha256:" + "1" * 64,
            recipe_snapshot={"name": "demo-recipe", "bench": {"concurrency": 8}},
            script_snapshot="#!/usr/bin/env bash\necho hi\n",
            model_sha=SHA_A,
            draft_repo=DRAFT,
            draft_sha=SHA_B,
            image="vllm/vllm-openai@sha256:" + "f" * 64,
            image_digest="sha256:" + "f" * 64,
            engine_version="0.23.1",
            host_facts={"gpu": "GB10", "driver": "580.1"},
            status="blocked",
            root_cause_category="Assertion",
            root_cause_message="assert a == b",
            started_at="2026-06-24T10:00:00+02:00",
            ended_at="2026-06-24",
            notes="n",
            source="run",
            metrics={
                "decode_tok_s": 107.43,
                "completed": 385,
                "time_cap_hit": True,
                "duration_s": 915,
                "spec_per_position": [0.78, 0.56],
            },
            boot={"kv_cache_tokens": 800129, "architecture": "DFlashDraftModel", "max_concurrency": 3.05},
        )
    )
    got = book.get(rec.id)
    assert got == rec
    assert got.id == 1 and got.prev_hash == GENESIS_HASH and len(got.row_hash) == 64
    assert got.display_id == f"#1-{got.row_hash[:8]}"
    assert got.status == "BLOCKED" and got.root_cause_category == "assertion"
    assert got.started_at == "2026-06-24T08:00:00Z"  # converted to UTC
    assert got.ended_at == "2026-06-24"  # a date stays a date: no invented time
    assert got.recipe_snapshot == {"name": "demo-recipe", "bench": {"concurrency": 8}}
    assert got.host_facts == {"gpu": "GB10", "driver": "580.1"}
    assert set(got.metrics) == set(METRIC_KEYS) and set(got.boot) == set(BOOT_KEYS)
    assert got.metrics["duration_s"] == 915.0 and isinstance(got.metrics["duration_s"], float)
    assert got.metrics["time_cap_hit"] is True
    assert got.metrics["spec_per_position"] == [0.78, 0.56]
    assert got.metrics["prefill_tok_s"] is None  # unknown is NULL, never 0
    assert got.boot["kv_cache_gib"] is None
    assert got.to_json_dict()["metrics"]["completed"] == 385


def test_unknown_values_are_null_in_the_database(book, backend):
    book.append(make_run(metrics={}))
    assert backend.query("SELECT decode_tok_s, errors, kv_cache_tokens, model_sha FROM runs") == [
        (None, None, None, None)
    ]


def test_ids_are_monotonic_and_chained(book):
    recs = [book.append(make_run(notes=str(i))) for i in range(5)]
    assert [r.id for r in recs] == [1, 2, 3, 4, 5]
    for prev, cur in zip(recs, recs[1:], strict=False):
        assert cur.prev_hash == prev.row_hash
    result = book.verify()
    assert result.ok and result.runs == 5 and result.head_hash == recs[-1].row_hash


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"status": "SUCCESS"}, "unknown status 'SUCCESS'"),
        ({"metrics": {"decode_tok": 1.0}}, "did you mean 'decode_tok_s'"),
        ({"boot": {"kv_tokens": 1}}, "unknown boot key 'kv_tokens'"),
        ({"metrics": {"completed": 1.5}}, "completed: expected an integer"),
        ({"metrics": {"decode_tok_s": float("nan")}}, "finite"),
        ({"metrics": {"decode_tok_s": "fast"}}, "decode_tok_s"),
        ({"model_sha": "6c7242c"}, "not a full 40-hex commit sha"),
        ({"draft_sha": SHA_A}, "draft_sha given without draft_repo"),
        ({"started_at": "yesterday"}, "not an ISO 8601 time"),
        ({"supersedes": 99}, "no run #99"),
        ({"notes": "token hf_" + "x" * 34}, "looks like a Hugging Face token"),
        ({"source": "web"}, "unknown source"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(book, overrides, message):
    book.append(make_run())
    before = book.verify().head_hash
    with pytest.raises(LedgerError, match=message):
        book.append(make_run(**overrides))
    assert book.count() == 1 and book.verify().head_hash == before


def test_get_unknown_run_id(book):
    with pytest.raises(LedgerError, match=r"no run #42"):
        book.get(42)


def test_run_references(book):
    a = book.append(make_run())
    b = book.append(make_run())
    assert book.resolve("2") == 2 and book.resolve("#1") == 1
    assert book.resolve(b.display_id) == 2
    assert book.resolve(a.row_hash[:10]) == 1
    with pytest.raises(LedgerError, match="not a run reference"):
        book.resolve("latest")


def test_a_row_hash_prefix_of_digits_only_finds_its_run(book):
    """About one row hash in a hundred starts with ten decimal digits (the test above failed
    that way once, under load): six or more digits that are no run id are a hash prefix."""
    runs = [book.append(make_run(notes=f"run {i}")) for i in range(3)]
    while not runs[-1].row_hash[:6].isdigit():
        assert len(runs) < 5000
        runs.append(book.append(make_run(notes=f"run {len(runs)}")))
    target = runs[-1]
    assert book.resolve(target.row_hash[:6]) == target.id
    assert book.resolve(target.row_hash[:12]) == target.id
    assert book.resolve("2") == 2 and book.resolve("#000002") == 2  # digits that are an id stay an id
    with pytest.raises(LedgerError, match="no run #99"):
        book.resolve("99")
    with pytest.raises(LedgerError, match="no run with hash prefix"):
        book.resolve("9" * 40)


def test_corrections_are_new_rows(book):
    old = book.append(make_run(status="DONE", metrics={"decode_tok_s": 1.0}))
    fix = book.append(make_run(status="DONE", metrics={"decode_tok_s": 2.0}, corrects=old.id))
    assert fix.corrects == old.id and book.get(old.id).metrics["decode_tok_s"] == 1.0


# ------------------------------------------------------------------ append-only
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE runs SET decode_tok_s = 999 WHERE id = 1",
        "DELETE FROM runs WHERE id = 1",
        "DELETE FROM runs",
        "TRUNCATE runs",
        "UPDATE schema_version SET version = 99",
        "DELETE FROM schema_version",
        "TRUNCATE schema_version",
    ],
)
def test_database_refuses_update_delete_and_truncate(book, backend, statement):
    book.append(make_run())
    if statement.startswith("TRUNCATE") and backend.name == "sqlite":
        pytest.skip("SQLite has no TRUNCATE (its DELETE FROM runs is covered)")
    assert "append-only" in backend.refused(statement)
    assert book.verify().ok and book.count() == 1


# ------------------------------------------------------------------ tamper detection
def _three(book):
    for i in range(3):
        book.append(make_run(notes=f"run {i}", metrics={"decode_tok_s": 100.0 + i}))


def test_verify_detects_a_changed_row(book, backend):
    _three(book)
    backend.sql(backend.drop_triggers + "UPDATE runs SET decode_tok_s = 120 WHERE id = 2;")
    result = book.verify()
    assert not result.ok and result.first_bad_id == 2 and result.runs == 1
    assert "changed after it was appended" in result.problem


def test_verify_detects_a_change_that_keeps_the_type(book, backend):
    _three(book)
    backend.sql(backend.drop_triggers + "UPDATE runs SET status = 'BLOCKED' WHERE id = 3;")
    result = book.verify()
    assert not result.ok and result.first_bad_id == 3


def test_verify_detects_a_deleted_row(book, backend):
    _three(book)
    backend.sql(backend.drop_triggers + "DELETE FROM runs WHERE id = 2;")
    result = book.verify()
    assert not result.ok and result.first_bad_id == 3 and "#2 is missing" in result.problem


def test_verify_detects_a_deleted_row_with_ids_renumbered(book, backend):
    _three(book)
    backend.sql(backend.drop_triggers + "DELETE FROM runs WHERE id = 2; UPDATE runs SET id = 2 WHERE id = 3;")
    result = book.verify()
    assert not result.ok and result.first_bad_id == 2 and "prev_hash" in result.problem


def test_verify_detects_a_reordered_chain(book, backend):
    _three(book)
    backend.sql(
        backend.drop_triggers
        + "UPDATE runs SET id = 100 WHERE id = 2; UPDATE runs SET id = 2 WHERE id = 3;"
        + " UPDATE runs SET id = 3 WHERE id = 100;",
    )
    result = book.verify()
    assert not result.ok and result.first_bad_id == 2


def test_verify_detects_a_rehashed_row_at_the_next_link(book, backend):
    """Someone edits row 1 and recomputes its row_hash: row 2's prev_hash no longer matches."""
    from autobench.ledger.chain import row_hash
    from autobench.ledger.models import RUNS

    _three(book)
    names = [c.name for c in RUNS.columns]
    row = dict(zip(names, backend.query(f"SELECT {', '.join(names)} FROM runs WHERE id = 1")[0], strict=True))
    row["notes"] = "edited"
    backend.sql(backend.drop_triggers + f"UPDATE runs SET notes = 'edited', row_hash = '{row_hash(row)}' WHERE id = 1;")
    result = book.verify()
    assert not result.ok and result.first_bad_id == 2 and "prev_hash" in result.problem


def test_verify_reports_dropped_triggers_even_when_the_chain_holds(book, backend):
    """Issue 12 item 13: verify said "ledger OK" with the append-only triggers gone."""
    _three(book)
    assert book.verify().ok and book.verify().missing_triggers == ()
    backend.sql(backend.drop_triggers)
    result = book.verify()
    assert not result.ok and result.first_bad_id is None and result.runs == 3
    assert "runs_no_update" in result.missing_triggers and "runs_no_delete" in result.missing_triggers
    assert str(result).startswith("ledger NOT OK: the append-only triggers") and "no longer refuses" in str(result)


def test_verify_against_a_known_head_catches_a_truncated_tail(book, backend):
    """Issue 12 item 13: deleting the last rows left a valid chain; a head kept earlier catches it."""
    _three(book)
    kept = book.verify().head_hash
    book.append(make_run(notes="later"))
    assert book.verify(kept).ok and book.verify(kept).known_head_at == 3  # the chain grew from the kept head
    assert book.verify("0" * 64).ok  # every chain starts at genesis
    backend.sql(backend.drop_triggers + "DELETE FROM runs WHERE id >= 3;")
    plain = book.verify()
    assert plain.first_bad_id is None and plain.runs == 2  # the chain alone still holds
    result = book.verify(kept)
    assert not result.ok and result.first_bad_id is None
    assert "the known head" in result.problem and "removed from its end" in result.problem
    with pytest.raises(LedgerError, match="not a chain head"):
        book.verify("abc")


# ------------------------------------------------------------------ open: refuse non-ledgers
def test_text_file_is_not_a_ledger_and_is_left_unchanged(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    before = (_digest(path), path.stat().st_mtime_ns)
    with pytest.raises(LedgerError, match="not a ledger database") as info:
        open_ledger(path)
    assert "\n" not in str(info.value)
    assert (_digest(path), path.stat().st_mtime_ns) == before
    assert not Path(f"{path}-wal").exists()


def test_foreign_sqlite_database_is_refused_and_left_unchanged(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE things (x)")
    con.execute("INSERT INTO things VALUES (1)")
    con.commit()
    con.close()
    before = _digest(path)
    with pytest.raises(LedgerError, match="has tables things but no schema_version"):
        open_ledger(path)
    assert _digest(path) == before


def test_ledger_from_a_newer_schema_is_refused_and_left_unchanged(db_path):
    with open_ledger(db_path) as book:
        book.append(make_run())
    con = sqlite3.connect(db_path)
    con.execute("INSERT INTO schema_version VALUES (?, 'from the future', '2030-01-01T00:00:00Z')", (LATEST + 1,))
    con.commit()
    con.close()
    before = _digest(db_path)
    with pytest.raises(LedgerError, match=f"schema v{LATEST + 1} was written by a newer autobench"):
        open_ledger(db_path)
    assert _digest(db_path) == before


def test_missing_ledger_without_create(tmp_path):
    path = tmp_path / "nope.db"
    with pytest.raises(LedgerError, match="no ledger database here"):
        open_ledger(path, create=False)
    assert not path.exists()


def test_directory_and_bad_url(tmp_path):
    with pytest.raises(LedgerError, match="is a directory"):
        open_ledger(tmp_path)
    with pytest.raises(LedgerError, match="not a database URL"):
        open_ledger("://nothing")
    with pytest.raises(LedgerError, match="cannot open ledger database: Can't load plugin"):
        open_ledger("nosuchdialect://host/db")


def test_location_forms(tmp_path, monkeypatch):
    url_path = tmp_path / "a.db"
    with open_ledger(f"sqlite:///{url_path}") as book:
        book.append(make_run())
    with open_ledger(url_path) as book:  # the same file as a plain path
        assert book.count() == 1
    monkeypatch.setenv("AUTOBENCH_LEDGER", str(tmp_path / "env.db"))
    with open_ledger() as book:
        book.append(make_run())
    assert (tmp_path / "env.db").exists()
    monkeypatch.delenv("AUTOBENCH_LEDGER")
    monkeypatch.chdir(tmp_path)
    with open_ledger() as book:
        assert book.where == "ledger.db"
    assert (tmp_path / "ledger.db").exists()


def test_schema_versioned_wal_and_migrations_run_once(db_path):
    with open_ledger(db_path) as book:
        book.append(make_run())
    with open_ledger(db_path) as book:
        book.append(make_run())
    con = sqlite3.connect(db_path)
    versions = con.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert versions == [(v,) for v in range(1, LATEST + 1)]
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    con.close()


def test_v1_ledger_is_migrated_and_indexes_match_the_model(tmp_path):
    from sqlalchemy import create_engine, insert
    from sqlalchemy.schema import CreateTable

    from autobench.ledger import migrations
    from autobench.ledger.models import EXPERIMENTS, RUNS

    path = tmp_path / "v1.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # a ledger as schema v1 left it
        conn.execute(CreateTable(migrations.VERSIONS))
        migrations._v1_runs_table(conn)
        conn.execute(insert(migrations.VERSIONS).values(version=1, description="v1", applied_at="x"))
    engine.dispose()
    with open_ledger(path) as book:
        book.append(make_run(status="BLOCKED", root_cause_category="assertion"))
        assert book.history(recipe="demo-recipe").groups[0].root_causes[0].category == "assertion"
    con = sqlite3.connect(path)
    indexes = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'ix_%'")}
    plan = " ".join(
        str(r)
        for r in con.execute(
            "EXPLAIN QUERY PLAN SELECT draft_sha, status, root_cause_category, root_cause_message,"
            " group_concat(DISTINCT recipe_name), count(*), min(started_at), max(started_at), min(id),"
            " max(id), max(decode_tok_s) FROM runs WHERE draft_repo = 'x'"
            " GROUP BY draft_sha, status, root_cause_category, root_cause_message"
        )
    )
    con.close()
    assert indexes == {index.name for index in (*RUNS.indexes, *EXPERIMENTS.indexes)}
    assert "COVERING INDEX ix_runs_hist_draft" in plan and "TEMP B-TREE FOR GROUP BY" not in plan


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file::memory:?uri=true"])
def test_in_memory_urls_are_refused(url):
    """Issue 12 item 13: `--ledger sqlite://` "recorded" into a database that was then lost."""
    with pytest.raises(LedgerError, match="in-memory SQLite database is not a ledger") as info:
        open_ledger(url)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ queries
def _history_fixture(book):
    book.append(
        make_run(
            draft_repo=DRAFT,
            draft_sha=SHA_A,
            status="BLOCKED",
            started_at="2026-06-23",
            root_cause_category="assertion",
            root_cause_message="assert x",
        )
    )
    book.append(
        make_run(
            draft_repo=DRAFT,
            draft_sha=SHA_A,
            status="BLOCKED",
            started_at="2026-06-25",
            root_cause_category="assertion",
            root_cause_message="assert x",
        )
    )
    book.append(
        make_run(
            draft_repo=DRAFT,
            draft_sha=SHA_B,
            status="DONE",
            started_at="2026-06-24",
            metrics={"decode_tok_s": 107.43, "concurrency": 8},
        )
    )
    book.append(make_run(draft_repo=DRAFT, status="FAILED", root_cause_category="cuda_oom"))
    book.append(make_run(recipe_name="other", draft_repo="x/other-draft", draft_sha=SHA_A))


def test_history_by_draft_groups_per_revision(book):
    _history_fixture(book)
    h = book.history(draft=DRAFT)
    assert h.runs == 4 and [g.key for g in h.groups] == [SHA_A, SHA_B, None]
    a, b, unknown = h.groups
    assert a.by_status == {"DONE": 0, "BLOCKED": 2, "FAILED": 0, "ABORTED": 0}
    assert (a.first_seen, a.last_seen, a.first_run, a.last_run) == ("2026-06-23", "2026-06-25", 1, 2)
    assert [(rc.category, rc.message, rc.runs) for rc in a.root_causes] == [("assertion", "assert x", 2)]
    assert b.by_status["DONE"] == 1 and b.best_decode_tok_s == 107.43 and b.root_causes == []
    assert unknown.runs == 1 and unknown.root_causes[0].category == "cuda_oom"
    assert json.loads(json.dumps(h.to_json_dict()))["groups"][0]["key"] == SHA_A


def test_history_by_model_and_recipe(book):
    _history_fixture(book)
    assert book.history(model="org/model").runs == 5
    h = book.history(recipe="other")
    assert h.runs == 1 and h.groups[0].recipes == ["other"]
    assert book.history(draft="nobody/nothing").groups == []
    with pytest.raises(LedgerError, match="exactly one"):
        book.history(draft=DRAFT, model="org/model")


def test_runs_filters_and_limit(book):
    _history_fixture(book)
    assert [r.id for r in book.runs()] == [1, 2, 3, 4, 5]
    assert [r.id for r in book.runs(limit=2)] == [4, 5]  # the most recent two, in order
    assert [r.id for r in book.runs(limit=2, newest_first=True)] == [5, 4]
    assert [r.id for r in book.runs(status="blocked")] == [1, 2]
    assert [r.id for r in book.runs(recipe="other")] == [5]
    assert [r.id for r in book.runs(draft=DRAFT, status="DONE")] == [3]
    with pytest.raises(LedgerError, match="unknown status"):
        book.runs(status="GOOD")


def test_compare_ratios_and_warnings(book):
    book.append(make_run(metrics={"decode_tok_s": 85.5, "concurrency": 8}))
    book.append(make_run(metrics={"decode_tok_s": 107.43, "concurrency": 8, "ttft_median_ms": 681}))
    book.append(make_run(status="BLOCKED", metrics={"decode_tok_s": 50.0, "concurrency": 4}))
    c = book.compare(1, 2)
    assert c.decode_speedup == pytest.approx(1.2565, abs=1e-4) and c.warnings == []
    row = next(r for r in c.rows if r.key == "ttft_median_ms")
    assert (row.a, row.b, row.ratio) == (None, 681.0, None)
    c2 = book.compare("1", "#3")
    assert [(d.pin, d.a, d.b) for d in c2.pins.differences] == [("concurrency", 8, 4)]  # a pin, not a warning
    assert any("BLOCKED" in w for w in c2.warnings)
    with pytest.raises(LedgerError, match="no run #9"):
        book.compare(1, 9)


# ------------------------------------------------------------------ export
def test_export_jsonl_and_csv(book):
    _history_fixture(book)
    out = io.StringIO()
    assert book.export(out, "jsonl") == 5
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [x["id"] for x in lines] == [1, 2, 3, 4, 5]
    assert lines[2]["metrics"]["decode_tok_s"] == 107.43 and lines[0]["root_cause_message"] == "assert x"
    assert lines[4]["row_hash"] == book.head()[1]
    out = io.StringIO()
    assert book.export(out, "csv") == 5
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(rows) == 5 and rows[2]["decode_tok_s"] == "107.43" and rows[3]["draft_sha"] == ""
    assert {"kv_cache_tokens", "row_hash", "prev_hash", "spec_per_position"} <= set(rows[0])
    with pytest.raises(LedgerError, match="unknown export format"):
        book.export(io.StringIO(), "xml")

"""Schema v3 (more boot facts as columns) and the hash chain across the migration.

``fixtures/ledger_v2.db`` was written by the v2 code before v3 existed (see
fixtures/README.md).  A copy is migrated here; its rows must verify with exactly the
hashes v2 wrote, new rows carry the v3 facts, and a change to a v3 column is caught.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from ledger_helpers import make_run

from autobench.cli import main
from autobench.ledger import BOOT_KEYS, open_ledger
from autobench.ledger.chain import canonical_json, coerce, row_hash
from autobench.ledger.migrations import LATEST, V3_COLUMNS
from autobench.ledger.models import ADDED_IN, CONTENT_KEYS, V3_BOOT_KEYS

FIXTURE = Path(__file__).parent / "fixtures" / "ledger_v2.db"
V2_HEAD = "4f2dd4b44f2e07a38ac05226d54ba89e6ef9ae52b6a3e554373ebeb3602cb618"
REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"

V3_FACTS = {
    "max_model_len": 262144,
    "weights_load_s": 455.31,
    "torch_compile_s": 41.27,
    "num_gpu_blocks": 48200,
    "num_cpu_blocks": 2048,
    "mamba_padding_pct": 0.55,
    "cuda_graph_s": 27.0,
    "cuda_graph_gib": 0.3,
    "engine_init_s": 84.52,
}

# A vLLM boot log stating every v3 fact (formats from autobench/logs/facts.py).
BOOT_LOG = """\
INFO 06-24 10:00:02 [api_server.py:1043] vLLM API server version 0.23.1
INFO 06-24 10:00:03 [model.py:1510] Using max model len 262144
INFO 06-24 10:07:40 [default_loader.py:267] Loading weights took 455.31 seconds
INFO 06-24 10:07:46 [gpu_model_runner.py:1329] Model loading took 63.71 GiB and 463.12 seconds
INFO 06-24 10:08:30 [monitor.py:34] torch.compile takes 41.27 s in total
INFO 06-24 10:08:40 [kv_cache_utils.py:1087] GPU KV cache size: 800,129 tokens
INFO 06-24 10:08:40 [executor_base.py:113] # cuda blocks: 48200, # CPU blocks: 2048
INFO 06-24 10:08:41 [interface.py:542] Padding mamba page size by 0.55% to ensure that mamba page size and attention page size are exactly equal.
INFO 06-24 10:09:10 [gpu_model_runner.py:3480] Graph capturing finished in 27 secs, took 0.30 GiB
INFO 06-24 10:09:11 [core.py:210] init engine (profile, create kv cache, warmup model) took 84.52 seconds
INFO 06-24 10:09:15 [launcher.py:29] Application startup complete.
"""


@pytest.fixture
def v2_copy(tmp_path: Path) -> Path:
    target = tmp_path / "old.db"
    shutil.copy2(FIXTURE, target)
    return target


def _sql(path: Path, query: str, *args: object) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(query, args).fetchall()
    finally:
        con.close()


def _tamper(path: Path, statement: str, *args: object) -> None:
    """What an attacker with the sqlite3 shell does: drop the trigger, change a value."""
    con = sqlite3.connect(path)
    try:
        con.execute("DROP TRIGGER IF EXISTS runs_no_update")
        con.execute(statement, args)
        con.commit()
    finally:
        con.close()


def _schema(path: Path) -> dict[str, object]:
    return {
        "columns": _sql(path, "SELECT name, type, \"notnull\", pk FROM pragma_table_info('runs')"),
        "indexes": _sql(path, "SELECT name, sql FROM sqlite_master WHERE type='index' ORDER BY name"),
        "triggers": _sql(path, "SELECT name, sql FROM sqlite_master WHERE type='trigger' ORDER BY name"),
    }


def test_the_fixture_is_v2_and_still_verifies_with_v2_hashes(tmp_path, v2_copy):
    assert _sql(v2_copy, "SELECT max(version) FROM schema_version") == [(2,)]
    stored = _sql(v2_copy, "SELECT id, row_hash FROM runs ORDER BY id")
    assert len(stored) == 5 and stored[-1][1] == V2_HEAD
    with open_ledger(v2_copy, create=False) as book:  # the first open migrates it
        result = book.verify()
        assert (result.ok, result.runs, result.head_hash) == (True, 5, V2_HEAD), result
        assert all(value is None for rec in book.runs() for key, value in rec.boot.items() if key in ADDED_IN)
    assert _sql(v2_copy, "SELECT max(version) FROM schema_version") == [(LATEST,)]
    assert _sql(v2_copy, "SELECT id, row_hash FROM runs ORDER BY id") == stored
    assert _sql(v2_copy, "PRAGMA integrity_check") == [("ok",)]


def test_old_rows_hash_by_the_v2_formula():
    """The v2 code hashed sha256 of every v2 column (null as null); NULL v3 columns add nothing."""
    v2_keys = [k for k in CONTENT_KEYS if k not in ADDED_IN]
    con = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY id")]
    finally:
        con.close()
    for row in rows:
        v2_text = json.dumps(
            {k: coerce(k, row[k]) for k in v2_keys}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        assert canonical_json(row) == v2_text
        assert hashlib.sha256(v2_text.encode()).hexdigest() == row["row_hash"] == row_hash(row)
        # the same row with a v3 fact is different content
        assert row_hash({**row, "cuda_graph_gib": 0.3}) != row["row_hash"]


def test_append_a_v3_row_after_migrating_then_verify(v2_copy):
    with open_ledger(v2_copy) as book:
        rec = book.append(make_run(boot={"kv_cache_tokens": 1000, **V3_FACTS}))
        assert rec.id == 6 and rec.prev_hash == V2_HEAD
        assert {k: rec.boot[k] for k in V3_FACTS} == V3_FACTS
        result = book.verify()
        assert (result.ok, result.runs, result.head_hash) == (True, 6, rec.row_hash)
        again = book.get(6)
        assert {k: again.boot[k] for k in V3_FACTS} == V3_FACTS
        assert '"cuda_graph_gib":0.3' in canonical_json(_sql_row(v2_copy, 6)), "a v3 value enters the hashed content"
    # real columns: queryable in SQL, NULL (unknown) on the rows written before v3
    assert _sql(v2_copy, "SELECT id FROM runs WHERE cuda_graph_gib > 0.2") == [(6,)]
    assert _sql(v2_copy, "SELECT count(*) FROM runs WHERE mamba_padding_pct IS NULL") == [(5,)]


def _sql_row(path: Path, run_id: int) -> dict[str, object]:
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    try:
        return dict(con.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
    finally:
        con.close()


@pytest.mark.parametrize(
    ("statement", "bad_id"),
    [
        ("UPDATE runs SET cuda_graph_gib = 0.4 WHERE id = 6", 6),  # a v3 value changed
        ("UPDATE runs SET engine_init_s = NULL WHERE id = 6", 6),  # a v3 value removed
        ("UPDATE runs SET mamba_padding_pct = 0.55 WHERE id = 2", 2),  # a v3 value added to an old row
        ("UPDATE runs SET num_gpu_blocks = 48200.5 WHERE id = 6", 6),  # the wrong kind in an int column
    ],
)
def test_a_tampered_v3_column_is_detected(v2_copy, statement, bad_id):
    with open_ledger(v2_copy) as book:
        book.append(make_run(boot=dict(V3_FACTS)))
        assert book.verify().ok
    _tamper(v2_copy, statement)
    with open_ledger(v2_copy, create=False) as book:
        result = book.verify()
    assert not result.ok and result.first_bad_id == bad_id, result
    assert "row_hash" in result.problem or "wrong type" in result.problem


def test_a_fresh_ledger_has_the_schema_of_a_migrated_one(tmp_path, v2_copy):
    with open_ledger(v2_copy):
        pass
    with open_ledger(tmp_path / "fresh.db"):
        pass
    assert _schema(tmp_path / "fresh.db") == _schema(v2_copy)
    # v1 still creates exactly the table the v2 code created; v3 appends its columns, v4 run_uid,
    # v5 root_cause_detail, v6 preflight
    old = _sql(FIXTURE, "SELECT name FROM pragma_table_info('runs')")
    new = _sql(tmp_path / "fresh.db", "SELECT name FROM pragma_table_info('runs')")
    # ... and v5 the root cause's detail line
    assert new == old + [(name,) for name, _ in V3_COLUMNS] + [
        ("run_uid",),
        ("root_cause_detail",),
        ("preflight",),
        ("tokenizer",),
        ("replay_of",),
        ("cells_digest",),
        ("more_metrics",),
        ("dataset",),
    ]
    assert {name for name, _ in V3_COLUMNS} == {k for k, v in ADDED_IN.items() if v == 3} == set(V3_BOOT_KEYS)
    assert {k for k, v in ADDED_IN.items() if v == 4} == {"run_uid"}
    assert {k for k, v in ADDED_IN.items() if v == 5} == {"root_cause_detail"}
    assert {k for k, v in ADDED_IN.items() if v == 6} == {"preflight"}
    assert {k for k, v in ADDED_IN.items() if v == 7} == {"tokenizer"}
    assert {k for k, v in ADDED_IN.items() if v == 8} == {"replay_of", "cells_digest"}
    assert {k for k, v in ADDED_IN.items() if v == 11} == {"dataset"}
    assert {k for k, v in ADDED_IN.items() if v == 9} == {"more_metrics"}
    assert set(V3_BOOT_KEYS) <= set(BOOT_KEYS)


def test_v3_keys_are_the_log_parsers_names():
    from autobench.logs.facts import BOOT_KEYS as LOG_KEYS

    assert set(V3_BOOT_KEYS) <= set(LOG_KEYS)
    assert set(BOOT_KEYS) <= set(LOG_KEYS)


def test_record_log_stores_the_v3_boot_facts(capsys, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(BOOT_LOG)
    db = tmp_path / "ledger.db"
    code = main(["record", str(DFLASH), "--status", "DONE", "--log", str(log), "--ledger", str(db), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert {k: doc["boot"][k] for k in V3_FACTS} == V3_FACTS
    assert doc["boot"]["model_load_s"] == 463.12 and doc["boot"]["kv_cache_tokens"] == 800129
    assert doc["boot"]["attention_backend"] is None  # the log does not say: unknown
    assert _sql(db, "SELECT max_model_len, cuda_graph_gib, mamba_padding_pct FROM runs") == [(262144, 0.3, 0.55)]
    # show and compare print the new facts
    assert main(["ledger", "show", "1", "--ledger", str(db)]) == 0
    shown = capsys.readouterr().out
    assert "cuda_graph_gib: 0.3" in shown and "engine_init_s: 84.52" in shown
    assert main(["record", str(DFLASH), "--status", "DONE", "--ledger", str(db)]) == 0
    capsys.readouterr()
    assert main(["compare", "1", "2", "--ledger", str(db), "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["weights_load_s"]["a"] == 455.31 and rows["weights_load_s"]["b"] is None


def test_export_csv_has_the_v3_columns_with_the_boot_facts(tmp_path, v2_copy):
    import csv
    import io

    with open_ledger(v2_copy) as book:
        book.append(make_run(boot=dict(V3_FACTS)))
        out = io.StringIO()
        assert book.export(out, "csv") == 6
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    header = list(rows[0])
    assert header[-2:] == ["prev_hash", "row_hash"]
    assert header.index("engine_init_s") == header.index("vllm_version") + len(V3_BOOT_KEYS)
    assert rows[5]["cuda_graph_gib"] == "0.3" and rows[1]["cuda_graph_gib"] == ""

"""Schema v8: a run's cells with their raw samples, on SQLite and PostgreSQL -- appended with
the run in one transaction, covered by the run's cells_digest (verify names a run whose cells
were changed), append-only, migrated from the committed v7 ledger with every hash intact,
carried by push/pull and export."""

from __future__ import annotations

import base64
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from ledger_backends import make_backend
from ledger_helpers import make_run

from autobench.cli import main
from autobench.errors import LedgerError
from autobench.ledger import open_ledger
from autobench.ledger.cells import digest, headline_metrics
from autobench.ledger.chain import content_hash
from autobench.ledger.migrations import LATEST
from autobench.ledger.models import NewCell
from autobench.ledger.sync import copy_runs
from autobench.samples import Request, Samples, decode, merge, summary

FIXTURE_V7 = Path(__file__).with_name("fixtures") / "ledger_v7.db"
V7_HEAD = "95f02d1272aa6ee5c3f1e5b8f9195318b4a5a1e1e463f8346ddbf866420253cd"


def samples(seed: int, n: int = 6) -> Samples:
    return Samples.from_requests(
        Request(
            "ok" if i % 5 else "error",
            ttft_ms=10.0 + seed + i if i % 5 else None,
            tpot_ms=2.0 + 0.1 * i,
            e2el_ms=40.0 + seed + i,
            itl_ms=[1.0 + 0.01 * (seed + i + k) for k in range(8)],
            prompt_tokens=100 + i,
            completion_tokens=9,
            error_kind=None if i % 5 else "http_5xx",
            start_s=0.25 * i,
        )
        for i in range(n)
    )


def grid() -> tuple[NewCell, ...]:
    """concurrency [1, 4] x 2 repeats."""
    cells = []
    for conc in (1, 4):
        for repeat in range(2):
            s = samples(10 * conc + repeat)
            metrics = {
                **{k: v for k, v in summary(s).items() if k.endswith(("median_ms", "p99_ms"))},
                "decode_tok_s": 50.0 * conc + repeat,
                "completed": s.count("ok"),
                "errors": s.count("error"),
                "concurrency": conc,
                "goodput_rps": 1.5,
                "client_bound": False,
            }
            cells.append(NewCell({"concurrency": conc, "repeat": repeat, "input_len": 128}, metrics, s))
    return tuple(cells)


def test_cells_round_trip_with_their_samples(book):
    cells = grid()
    rec = book.append(make_run(cells=cells, metrics={}))
    assert rec.cells_digest is not None and len(rec.cells_digest) == 64 and rec.replay_of is None
    stored = book.cells(rec.id)
    assert [c.index for c in stored] == [0, 1, 2, 3]
    for got, want in zip(stored, cells, strict=True):
        assert got.params == want.params and got.metrics == want.metrics
        assert got.samples == want.samples and got.run_id == rec.id
    assert book.get(rec.id).cells_digest == rec.cells_digest
    lean = book.cells(rec.id, samples=False)
    assert lean[0].samples_blob is None and lean[0].samples is None and lean[0].params == cells[0].params
    assert book.verify().ok


def test_a_run_without_cells_is_as_before(book):
    rec = book.append(make_run())
    assert rec.cells_digest is None and book.cells(rec.id) == []
    with pytest.raises(LedgerError, match="no run #99"):
        book.cells(99)


def test_a_multi_cell_run_row_carries_the_highest_concurrency_merged_over_repeats(book):
    cells = grid()
    rec = book.append(make_run(cells=cells, metrics={}))
    top = [c for c in cells if c.params["concurrency"] == 4]
    merged = summary(merge([c.samples for c in top]))
    assert rec.metrics["concurrency"] == 4
    assert rec.metrics["decode_tok_s"] == pytest.approx(200.5)  # the mean of the repeats
    assert rec.metrics["completed"] == sum(c.metrics["completed"] for c in top)  # summed
    assert rec.metrics["ttft_p99_ms"] == pytest.approx(merged["ttft_p99_ms"])  # from the raw union
    assert rec.metrics["itl_median_ms"] == pytest.approx(merged["itl_median_ms"])
    assert book.history(recipe="demo-recipe").groups[0].best_decode_tok_s == pytest.approx(200.5)
    # metrics given by the caller win; a single cell's are its own
    assert book.append(make_run(cells=cells, metrics={"decode_tok_s": 1.0})).metrics["decode_tok_s"] == 1.0
    one = NewCell({"concurrency": 8}, {"decode_tok_s": 7.0, "concurrency": 8, "goodput_rps": 2.0}, None)
    assert headline_metrics([one]) == {"decode_tok_s": 7.0, "concurrency": 8}


def test_headline_without_samples_takes_the_median_of_the_repeats():
    cells = [
        NewCell({"concurrency": 2, "repeat": r}, {"ttft_p99_ms": v, "concurrency": 2})
        for r, v in enumerate((5.0, 1.0, 3.0))
    ]
    cells.append(NewCell({"concurrency": 1, "repeat": 0}, {"ttft_p99_ms": 100.0, "concurrency": 1}))
    assert headline_metrics(cells) == {"ttft_p99_ms": 3.0, "concurrency": 2}
    assert headline_metrics([]) == {}


def test_ledger_show_lists_a_grid_runs_cells(tmp_path, capsys):
    path = tmp_path / "ledger.db"
    with open_ledger(str(path), create=True) as book:
        rec = book.append(make_run(cells=grid(), metrics={}))
        plain = book.append(make_run())
    assert main(["ledger", "show", str(rec.id), "--ledger", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(
        "  cells: 4; the metrics above are the headline cell concurrency=4 input_len=128 (cells 3, 4 of 4, repeats merged)"
    )
    assert out[at + 1].startswith("  all 4 cells: completed ")
    listed = out[at + 2 :]
    assert [line.split(":")[0] for line in listed] == [
        "    1. concurrency=1 input_len=128 repeat=0",
        "    2. concurrency=1 input_len=128 repeat=1",
        "    3. concurrency=4 input_len=128 repeat=0",
        "    4. concurrency=4 input_len=128 repeat=1",
    ]
    stored = grid()[2].metrics
    assert (stored["ttft_median_ms"], stored["tpot_median_ms"]) == (52.5, 2.25)
    assert (
        listed[2]
        == "    3. concurrency=4 input_len=128 repeat=0: TTFT median ms 52.5, TPOT median ms 2.25, completed 4, errors 2"
    )
    assert main(["ledger", "show", str(rec.id), "--json", "--ledger", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)["cells"]
    assert [c["params"]["concurrency"] for c in shown] == [1, 1, 4, 4] and shown[3]["metrics"]["decode_tok_s"] == 201.0
    # a run without cells shows no cells line, and an empty list in JSON
    assert main(["ledger", "show", str(plain.id), "--ledger", str(path)]) == 0
    assert "cells:" not in capsys.readouterr().out
    assert main(["ledger", "show", str(plain.id), "--json", "--ledger", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["cells"] == []


def test_replay_of_points_at_a_run_that_exists(book):
    first = book.append(make_run())
    again = book.append(make_run(replay_of=first.id))
    assert again.replay_of == first.id and book.get(again.id).replay_of == first.id
    with pytest.raises(LedgerError, match="replay_of: no run #42"):
        book.append(make_run(replay_of=42))
    with pytest.raises(LedgerError, match="replay_of must be a run id"):
        book.append(make_run(replay_of=0))
    assert book.count() == 2 and book.verify().ok


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (NewCell({"concurrency": float("nan")}, {}), "cell 0 params cannot be stored as JSON"),
        (NewCell({"note": "hf_" + "a" * 30}, {}), "looks like a secret token"),
        (NewCell({}, {"completed": 1.5}), "cell 0: completed: expected an integer"),
        (NewCell({}, {"x": object()}), "cell 0 metrics cannot be stored as JSON"),
        (NewCell({}, {}, samples=b"raw"), "samples must be autobench.samples.Samples"),  # type: ignore[arg-type]
        ({"params": {}}, "cell 0 is a dict, not a NewCell"),
    ],
)
def test_bad_cells_are_refused_and_nothing_is_appended(book, cell, message):
    with pytest.raises(LedgerError, match=message) as info:
        book.append(make_run(cells=(cell,)))
    assert "\n" not in str(info.value) and book.count() == 0


def test_the_run_and_its_cells_are_one_transaction(book, backend):
    book.append(make_run())
    backend.sql("DROP TABLE cells;")  # the cells insert now fails after the run's insert
    with pytest.raises(LedgerError, match="cells"):
        book.append(make_run(cells=grid()))
    assert book.count() == 1


@pytest.mark.parametrize(
    "statement",
    ["UPDATE cells SET metrics = '{}'", "DELETE FROM cells", "UPDATE cells SET samples = NULL"],
)
def test_the_database_refuses_changes_to_cells(book, backend, statement):
    book.append(make_run(cells=grid()))
    assert "append-only" in backend.refused(statement)
    assert book.verify().ok


def _drop_cell_triggers(backend) -> str:
    if backend.path is not None:
        return "DROP TRIGGER cells_no_update; DROP TRIGGER cells_no_delete;"
    return "DROP TRIGGER cells_no_update ON cells; DROP TRIGGER cells_no_delete ON cells;"


def _other_samples_hex(backend) -> str:
    blob = bytes(backend.query("SELECT samples FROM cells WHERE run_id = 2 AND cell_index = 2")[0][0])
    s = decode(blob)
    rows = s.requests()
    rows[0] = rows[0]._replace(ttft_ms=(rows[0].ttft_ms or 0) * 0.5)  # a better TTFT, quietly
    from autobench.samples import encode

    return encode(Samples.from_requests(rows)).hex()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ("samples", "do not match its cells_digest"),
        ("UPDATE cells SET params = '{\"concurrency\":64}' WHERE run_id = 2 AND cell_index = 0;", "do not match"),
        ("UPDATE cells SET metrics = '{}' WHERE run_id = 2 AND cell_index = 3;", "do not match"),
        ("DELETE FROM cells WHERE run_id = 2 AND cell_index = 1;", "do not match"),
        ("UPDATE cells SET run_id = 1 WHERE run_id = 2 AND cell_index = 1;", "cells were inserted"),
        ("DELETE FROM cells WHERE run_id = 2;", "cells were deleted"),
    ],
)
def test_verify_names_the_run_whose_cells_were_changed(book, backend, change, words):
    book.append(make_run(notes="no cells"))
    book.append(make_run(cells=grid()))
    book.append(make_run(notes="after"))
    assert book.verify().ok
    if change == "samples":
        blob = _other_samples_hex(backend)
        literal = f"X'{blob}'" if backend.path is not None else f"'\\x{blob}'::bytea"
        change = f"UPDATE cells SET samples = {literal} WHERE run_id = 2 AND cell_index = 2;"
    backend.sql(_drop_cell_triggers(backend) + change)
    result = book.verify()
    bad = 1 if "inserted" in words else 2
    assert not result.ok and result.first_bad_id == bad, result
    assert words in result.problem and f"run #{bad}" in str(result)


def test_verify_catches_cells_of_a_run_that_is_not_in_the_chain(book, backend):
    book.append(make_run(cells=grid()))
    backend.sql("INSERT INTO cells SELECT 7, cell_index, params, metrics, samples FROM cells WHERE cell_index = 0;")
    result = book.verify()
    assert not result.ok and "#7" in result.problem and "does not have" in result.problem


def test_the_digest_is_computed_from_what_is_stored(book, backend):
    rec = book.append(make_run(cells=grid()))
    rows = backend.query(f"SELECT cell_index, params, metrics, samples FROM cells WHERE run_id = {rec.id}")
    as_dicts = [dict(zip(("cell_index", "params", "metrics", "samples"), r, strict=True)) for r in rows]
    assert digest(reversed(as_dicts)) == rec.cells_digest
    assert json.loads(as_dicts[0]["params"]) == {"concurrency": 1, "input_len": 128, "repeat": 0}
    assert as_dicts[0]["params"] == '{"concurrency":1,"input_len":128,"repeat":0}'  # canonical JSON


# ------------------------------------------------------------------ migration from v7
def _v7_copy(tmp_path: Path) -> Path:
    target = tmp_path / "v7.db"
    shutil.copy2(FIXTURE_V7, target)
    return target


def test_the_committed_v7_ledger_migrates_with_every_hash_intact(tmp_path):
    path = _v7_copy(tmp_path)
    con = sqlite3.connect(path)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (7,)
    before = con.execute("SELECT id, row_hash FROM runs ORDER BY id").fetchall()
    con.close()
    with open_ledger(path) as book:
        result = book.verify()
        assert result.ok and result.runs == 3 and result.head_hash == V7_HEAD
        assert [(r.id, r.row_hash) for r in book.runs()] == before
        assert all(r.cells_digest is None and r.replay_of is None for r in book.runs())
        rec = book.append(make_run(cells=grid(), replay_of=1))
        assert rec.prev_hash == V7_HEAD and book.verify().ok and book.verify(V7_HEAD).known_head_at == 3
        assert book.cells(rec.id)[3].samples == grid()[3].samples
    con = sqlite3.connect(path)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (LATEST,) == (11,)
    con.close()


@pytest.mark.integration
def test_a_v7_ledger_on_postgresql_migrates_with_every_hash_intact(tmp_path):
    """The v7 fixture's rows, written into a PostgreSQL schema migrated to v7 only, then
    opened by this autobench (-> v8): the same hashes verify, cells append."""
    from sqlalchemy import insert

    from autobench.ledger import migrations, postgres
    from autobench.ledger.models import RUNS

    source = sqlite3.connect(FIXTURE_V7)
    source.row_factory = sqlite3.Row
    rows = [dict(r) for r in source.execute("SELECT * FROM runs ORDER BY id")]
    source.close()
    with make_backend("postgresql", tmp_path) as backend:
        from sqlalchemy.engine import make_url

        engine = postgres.engine(make_url(backend.url))
        with engine.begin() as conn:
            keep = migrations.MIGRATIONS
            try:
                migrations.MIGRATIONS = keep[:7]
                assert migrations.migrate(conn, "pg") == 7
            finally:
                migrations.MIGRATIONS = keep
            v7_columns = [c for c in RUNS.columns if c.name not in ("replay_of", "cells_digest")]
            conn.execute(
                insert(RUNS.__class__(RUNS.name, RUNS.metadata.__class__(), *(c._copy() for c in v7_columns))), rows
            )
        engine.dispose()
        assert "cells" not in {
            r[0]
            for r in backend.query(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        }
        with open_ledger(backend.url) as book:
            result = book.verify()
            assert result.ok and result.runs == 3 and result.head_hash == V7_HEAD
            rec = book.append(make_run(cells=grid()))
            assert rec.prev_hash == V7_HEAD and book.verify().ok
            assert book.cells(rec.id)[0].samples == grid()[0].samples
        assert backend.query("SELECT max(version) FROM schema_version") == [(11,)]


# ------------------------------------------------------------------ push / pull and export
def test_push_carries_cells_and_the_copy_verifies(tmp_path, backend):
    src_path = tmp_path / "box.db"
    with open_ledger(src_path) as box:
        base = box.append(make_run(notes="old run, no cells"))
        original = box.append(make_run(cells=grid()))
        box.append(make_run(cells=grid()[:1], replay_of=original.id))
        src_ids = {r.run_uid: r.id for r in box.runs()}
        src_cells = {r.run_uid: box.cells(r.id) for r in box.runs()}
        src_hash = {r.run_uid: content_hash(row) for row, r in zip(_raw(box), box.runs(), strict=True)}
    with open_ledger(backend.url) as team:
        team.append(make_run(notes="the team's own first run"))  # so ids differ
    with open_ledger(src_path, create=False) as box, open_ledger(backend.url) as team:
        result = copy_runs(box, team, batch=2)
        assert result.copied == 3
        assert copy_runs(box, team).copied == 0  # idempotent
        assert team.verify().ok
        runs = {r.run_uid: r for r in team.runs()}
        for uid, src_id in src_ids.items():
            here = runs[uid]
            assert here.id == src_id + 1
            assert [(c.index, c.params, c.metrics, c.samples) for c in team.cells(here.id)] == [
                (c.index, c.params, c.metrics, c.samples) for c in src_cells[uid]
            ]
        replay = next(r for r in runs.values() if r.replay_of is not None)
        assert replay.replay_of == original.id + 1  # renumbered to the destination's id
        assert {
            r.run_uid: content_hash(row)
            for row, r in zip(_raw(team), team.runs(), strict=True)
            if r.run_uid in src_hash
        } == src_hash
        assert base.run_uid in runs


def _raw(book) -> list[dict]:
    with book.raw_rows() as rows:
        return list(rows)


def test_export_jsonl_carries_cells_with_their_samples(book):
    book.append(make_run())
    rec = book.append(make_run(cells=grid(), replay_of=1))
    out = io.StringIO()
    assert book.export(out, "jsonl") == 2
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert "cells" not in first and first["cells_digest"] is None
    assert second["replay_of"] == 1 and second["cells_digest"] == rec.cells_digest
    cells = second["cells"]
    assert [c["index"] for c in cells] == [0, 1, 2, 3] and cells[1]["params"]["repeat"] == 1
    assert cells[0]["samples_format"] == "autobench.samples/1"
    assert decode(base64.b64decode(cells[2]["samples"])) == grid()[2].samples
    csv_out = io.StringIO()
    book.export(csv_out, "csv")
    header = csv_out.getvalue().splitlines()[0].split(",")
    assert "cells_digest" in header and "replay_of" in header

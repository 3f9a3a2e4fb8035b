"""`ledger push --to` / `pull --from` between real ledgers: two SQLite "boxes" into one
PostgreSQL ledger (and into SQLite), idempotent by stable id, re-chained with each run's
content hash kept, a source failing verify refused, a push SIGKILLed half-way completed by
the next one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ledger_helpers import DRAFT, SHA_A, SHA_B, make_run

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.ledger.chain import content_hash
from autobench.ledger.models import legacy_uid

FIXTURE_V2 = Path(__file__).with_name("fixtures") / "ledger_v2.db"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _box_a(path: Path) -> None:
    with open_ledger(path) as book:
        book.append(
            make_run(
                recipe_name="box-a",
                draft_repo=DRAFT,
                draft_sha=SHA_A,
                status="BLOCKED",
                root_cause_category="assertion",
                root_cause_message="assert x",
                started_at="2026-06-23",
            )
        )
        book.append(make_run(recipe_name="box-a", model_repo="org/other", status="DONE"))


def _box_b(path: Path) -> None:
    with open_ledger(path) as book:
        first = book.append(
            make_run(
                recipe_name="box-b",
                draft_repo=DRAFT,
                draft_sha=SHA_B,
                status="DONE",
                metrics={"decode_tok_s": 100.0},
                started_at="2026-06-24",
            )
        )
        book.append(
            make_run(
                recipe_name="box-b",
                draft_repo=DRAFT,
                draft_sha=SHA_B,
                status="DONE",
                metrics={"decode_tok_s": 107.43},
                started_at="2026-06-24",
                supersedes=first.id,
            )
        )


def _by_uid(url: str) -> dict[str, tuple[int, str, dict]]:
    """run_uid -> (id, content hash, raw row) of every run in a ledger."""
    with open_ledger(url, create=False) as book, book.raw_rows() as rows:
        return {r["run_uid"] or legacy_uid(r["row_hash"]): (r["id"], content_hash(r), r) for r in rows}


def test_two_boxes_push_into_one_ledger_then_history_answers_with_both(capsys, tmp_path, backend):
    a, b = tmp_path / "box-a.db", tmp_path / "box-b.db"
    _box_a(a)
    _box_b(b)
    for box in (a, b):
        code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(box))
        assert code == 0, err
        assert out.startswith("pushed 2 runs from") and "(0 already there)" in out
    code, out, _ = run(capsys, "history", "--draft", DRAFT, "--json", "--ledger", backend.url)
    groups = {g["key"]: g for g in json.loads(out)["groups"]}
    assert code == 0 and set(groups) == {SHA_A, SHA_B}
    assert groups[SHA_A]["by_status"]["BLOCKED"] == 1 and groups[SHA_A]["recipes"] == ["box-a"]
    assert groups[SHA_B]["runs"] == 2 and groups[SHA_B]["best_decode_tok_s"] == 107.43
    # each run keeps its content hash; the chain is the destination's own
    here = _by_uid(backend.url)
    for box in (a, b):
        for uid, (_, digest, _) in _by_uid(str(box)).items():
            assert here[uid][1] == digest
    assert [i for i, _, _ in sorted(here.values())] == [1, 2, 3, 4]
    # the correction points at the destination id of the run it supersedes
    superseding = next(r for _, _, r in here.values() if r["supersedes"] is not None)
    assert superseding["supersedes"] == here[next(u for u, v in _by_uid(str(b)).items() if v[0] == 1)][0]
    # pushing again adds nothing
    for box in (a, b):
        code, out, _ = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(box), "--json")
        assert code == 0 and json.loads(out)["copied"] == 0 and json.loads(out)["present"] == 2
    code, out, _ = run(capsys, "ledger", "verify", "--ledger", backend.url)
    assert code == 0 and out.startswith("ledger OK: 4 runs")
    # and a third box pulls the team's runs
    c = tmp_path / "box-c.db"
    code, out, _ = run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(c))
    assert code == 0 and out.startswith("pulled 4 runs")
    assert set(_by_uid(str(c))) == set(here)
    assert (
        run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(c), "--json")[1].count('"copied": 0') == 1
    )


def test_a_source_that_fails_verify_is_refused_and_nothing_is_created(capsys, tmp_path, backend):
    a = tmp_path / "box-a.db"
    _box_a(a)
    import sqlite3

    con = sqlite3.connect(a)
    con.executescript("DROP TRIGGER runs_no_update; UPDATE runs SET notes = 'edited' WHERE id = 1;")
    con.close()
    code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a))
    assert code == 4 and out == "" and err.count("\n") == 1
    assert "the source ledger fails verify, nothing was copied" in err and "BROKEN at run #1" in err
    if backend.path is not None:
        assert not backend.path.exists()
    else:
        assert backend.query(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        ) == [(0,)]


def test_runs_from_before_v4_get_a_stable_id_and_are_not_duplicated(capsys, tmp_path, backend):
    """A ledger written before run_uid existed: pushed twice, stored once; pulled back, nothing new."""
    old = tmp_path / "old.db"
    shutil.copy2(FIXTURE_V2, old)
    with open_ledger(old) as book:  # migrates to v4; its rows keep NULL run_uid
        n = book.count()
        assert all(r.run_uid is None for r in book.runs())
    for _ in range(2):
        assert run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(old))[0] == 0
    here = _by_uid(backend.url)
    there = _by_uid(str(old))
    assert len(here) == n and set(here) == set(there)
    assert all(here[u][1] == there[u][1] for u in here)  # content hashes kept
    code, out, _ = run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(old), "--json")
    assert code == 0 and json.loads(out)["copied"] == 0
    with open_ledger(old) as book:
        assert book.count() == n and book.verify().ok


def _fill(path: Path, runs: int) -> None:
    """A box with many runs, appended in batches (the push path itself, from another ledger)."""
    with open_ledger(path) as book:
        for i in range(runs // 500):
            book.import_runs(
                [{**_values(make_run(notes=f"{i}:{j}", metrics={"decode_tok_s": float(j)}))} for j in range(500)],
                {},
            )


def _values(new_run):
    from autobench.ledger.rows import new_run_values

    return new_run_values(new_run)


@pytest.mark.integration
def test_a_push_killed_half_way_leaves_both_valid_and_the_next_push_completes(tmp_path, backend):
    box = tmp_path / "box.db"
    total = 2000
    _fill(box, total)
    before = box.read_bytes()
    cmd = [
        sys.executable,
        "-m",
        "autobench",
        "ledger",
        "push",
        "--to",
        backend.url,
        "--ledger",
        str(box),
        "--batch",
        "20",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            seen = backend.query("SELECT count(*) FROM runs")[0][0]
        except Exception:  # the tables are not created yet
            seen = 0
        if seen >= 100:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL, "the push finished before it could be killed"
    with open_ledger(backend.url, create=False) as dest:
        half = dest.verify()
        assert half.ok and 0 < half.runs < total, str(half)
    assert box.read_bytes() == before  # the source is only read
    done = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["copied"] == total - half.runs and doc["present"] == half.runs
    with open_ledger(backend.url, create=False) as dest:
        assert dest.verify().ok and dest.count() == total
    assert backend.query("SELECT count(DISTINCT run_uid) FROM runs") == [(total,)]


# ------------------------------------------------------------ what a push checks first


def _forge(path: Path, run_id: int, **changes: object) -> None:
    """Edit run ``run_id`` of a SQLite ledger and re-hash the chain from it on, triggers put
    back: a forged ledger that still verifies (what an attacker with the file can make)."""
    import sqlite3

    from autobench.ledger.chain import row_hash

    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    triggers = [sql for (sql,) in con.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")]
    con.executescript(
        "".join(
            f"DROP TRIGGER {name};"
            for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
        )
    )
    rows = [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY id")]
    prev = rows[run_id - 2]["row_hash"] if run_id > 1 else "0" * 64
    for row in rows[run_id - 1 :]:
        if row["id"] == run_id:
            row.update(changes)
        row["prev_hash"] = prev
        row["row_hash"] = prev = row_hash(row)
        sets = ", ".join(f"{k} = ?" for k in row if k != "id")
        con.execute(f"UPDATE runs SET {sets} WHERE id = ?", [*(v for k, v in row.items() if k != "id"), row["id"]])
    con.commit()
    con.executescript(";".join(triggers) + ";")
    con.close()
    with open_ledger(path, create=False) as book:
        assert book.verify().ok  # the forgery verifies on its own


def _count(url: str) -> int:
    with open_ledger(url, create=False) as book:
        return book.count()


def test_a_forged_copy_of_a_run_already_there_is_refused_naming_both(capsys, tmp_path, backend):
    a = tmp_path / "box-a.db"
    _box_a(a)
    assert run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a))[0] == 0
    forged = tmp_path / "forged.db"
    shutil.copy2(a, forged)
    _forge(forged, 2, notes="faster than it was")  # same run_uid, other content
    code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(forged))
    assert code == 4 and out == "" and err.count("\n") == 1
    assert "is in both ledgers with different content: source run #2" in err
    assert "destination run #2" in err and "one is a forged or edited copy, nothing was copied" in err
    here, there = _by_uid(backend.url), _by_uid(str(forged))
    uid = next(u for u, (rid, _, _) in there.items() if rid == 2)
    assert f"run {uid} is in both ledgers" in err
    assert (
        f"source run #2 (content {there[uid][1][:12]}...) vs destination run #2 (content {here[uid][1][:12]}...)" in err
    )
    assert (
        "(hint: autobench ledger show 2 --ledger SOURCE and autobench ledger show 2 --ledger DESTINATION show both)"
        in err
    )
    assert _count(backend.url) == 2
    # the same content under the same run_uid is not a divergence: pushing the original again is fine
    assert run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a))[0] == 0


@pytest.mark.parametrize("ref", [999, 2, 0, -1])  # a later run, itself, no run, no run
def test_a_forged_reference_to_a_run_that_is_not_there_is_one_line_and_nothing_is_copied(
    capsys, tmp_path, backend, ref
):
    a = tmp_path / "box-a.db"
    _box_a(a)
    _forge(a, 2, corrects=ref)
    code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a))
    assert code == 4 and out == "" and err.count("\n") == 1, err
    assert f"run #2 corrects run #{ref}, which is not an earlier run of this ledger" in err
    assert "(hint: autobench ledger show 2 --ledger SOURCE; push from a ledger you trust)" in err
    assert _count(backend.url) == 0


def test_a_tampered_destination_is_refused_before_anything_is_appended(capsys, tmp_path, backend):
    a, b = tmp_path / "box-a.db", tmp_path / "box-b.db"
    _box_a(a)
    _box_b(b)
    assert run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a))[0] == 0
    backend.sql(backend.drop_triggers + " UPDATE runs SET notes = 'edited' WHERE id = 1;")
    code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(b))
    assert code == 4 and out == "" and err.count("\n") == 1
    assert "the destination ledger fails verify, nothing was copied" in err and "BROKEN at run #1" in err
    assert "(hint: autobench ledger verify --ledger DESTINATION shows the damage; restore it from a copy first)" in err
    assert backend.query("SELECT count(*) FROM runs") == [(2,)]


def test_head_anchors_the_team_ledger_on_push_and_pull(capsys, tmp_path, backend):
    a, b, c = tmp_path / "box-a.db", tmp_path / "box-b.db", tmp_path / "box-c.db"
    _box_a(a)
    _box_b(b)
    code, out, _ = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a), "--json")
    kept = json.loads(out)["head_hash"]
    # the team ledger still holds the head kept after the first push: the next push and a pull go ahead
    assert run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(b), "--head", kept)[0] == 0
    assert run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(c), "--head", kept)[0] == 0
    assert _count(str(c)) == 4
    # a head the team ledger never had (its tail rewritten, or another ledger): nothing is copied
    other = "ab" * 32
    code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(c), "--head", other)
    assert code == 4 and err.count("\n") == 1 and "the destination ledger fails verify" in err
    assert f"the known head {other[:12]}... is not in the chain" in err
    d = tmp_path / "box-d.db"
    code, out, err = run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(d), "--head", other)
    assert code == 4 and "the source ledger fails verify" in err and not d.exists()
    code, out, err = run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(d), "--head", "not-a-hash")
    assert code == 4 and "is not a chain head (64 hex digits)" in err


def test_ledger_list_orders_a_team_ledger_by_run_time_not_push_order(capsys, tmp_path, backend):
    late, early = tmp_path / "late.db", tmp_path / "early.db"
    with open_ledger(late) as book:
        book.append(make_run(recipe_name="late", started_at="2026-07-02T10:00:00+00:00"))
    with open_ledger(early) as book:
        book.append(make_run(recipe_name="early", started_at="2026-07-01T10:00:00+00:00"))
        book.append(make_run(recipe_name="unknown-time"))
    for box in (late, early):  # pushed in the other order than they ran
        assert run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(box))[0] == 0
    code, out, _ = run(capsys, "ledger", "list", "--json", "--ledger", backend.url)
    assert code == 0
    assert [r["recipe_name"] for r in json.loads(out)] == ["late", "early", "unknown-time"]


def test_copy_runs_verifies_what_it_was_not_handed_and_reports_every_count(tmp_path) -> None:
    """The library call (no CLI): copy_runs verifies the source itself when not given a passing
    result; its result names both ends and counts runs, copied and present."""
    from autobench.errors import LedgerError
    from autobench.ledger.chain import VerifyResult
    from autobench.ledger.sync import check_copy, copy_runs

    a, team = tmp_path / "box-a.db", tmp_path / "team.db"
    _box_a(a)
    with open_ledger(a) as source, open_ledger(team) as destination:
        first = copy_runs(source, destination, batch=1)
        assert (first.runs, first.copied, first.present) == (2, 2, 0)
        doc = first.to_json_dict()
        assert doc["source"] == source.where and doc["destination"] == destination.where
        assert (doc["runs"], doc["head_id"]) == (2, 2) and doc["head_hash"] == destination.head()[1]
        # a failing result handed in is not trusted: the source is verified again (and passes)
        again = copy_runs(source, destination, checked=VerifyResult(False, 0, "0" * 64, problem="stale"))
        assert (again.copied, again.present) == (0, 2)
        assert check_copy(source, destination, source.verify(), destination.stable_ids()) == 2
    import sqlite3

    con = sqlite3.connect(a)
    con.executescript("DROP TRIGGER runs_no_update; UPDATE runs SET notes = 'edited' WHERE id = 2;")
    con.close()
    with open_ledger(a, create=False) as source, open_ledger(team) as destination:
        with pytest.raises(LedgerError) as info:
            copy_runs(source, destination)  # no checked result: verify runs, and refuses
        assert "the source ledger fails verify" in str(info.value)

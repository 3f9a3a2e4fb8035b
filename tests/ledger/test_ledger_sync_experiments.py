"""`ledger push` / `pull` carry experiment records (schema v10) with their runs, between real
ledgers: SQLite boxes into the real PostgreSQL (a fresh schema) and into SQLite.  A record names
each treatment's run by its run_uid, so it is the same record (content and content hash) in
every ledger and its runs are found there; one recorded before run_uids were kept (a display
id, local to its ledger) is pushed with each resolved to its run's run_uid; a record naming a
run the source does not have is refused before anything is copied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ledger_helpers import make_run

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.ledger.chain import content_hash
from autobench.ledger.experiments import new_experiment_values

PLAN = "sha256:" + "e" * 64


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _treatment(tid: str, **more: object) -> dict[str, object]:
    return {"id": tid, "label": f"k={tid[1:]}", "digest": "sha256:" + tid[1] * 64, "plan": "ready", **more}


def _box(path: Path, name: str, runs: int = 2) -> list[str]:
    """A box with ``runs`` runs and one experiment record naming the first (ran) and the rest
    (skipped) by run_uid, and a pruned treatment; the runs' uids."""
    with open_ledger(path) as book:
        uids = [book.append(make_run(recipe_name=name, started_at=f"2026-12-0{n + 1}")).stable_id for n in range(runs)]
        treatments = [
            _treatment("t1", action="ran", status="DONE", run_uid=uids[0]),
            *(_treatment(f"t{n + 2}", action="skipped", status="DONE", run_uid=u) for n, u in enumerate(uids[1:])),
            _treatment("t9", plan="pruned", action="pruned", status=None, run_uid=None, cause="page size"),
        ]
        book.record_experiment(new_experiment_values(name, PLAN, {"recipe": f"{name}.yaml"}, treatments))
    return uids


def _runs_by_uid(url: str) -> dict[str, str]:
    with open_ledger(url, create=False) as book, book.raw_rows() as rows:
        return {str(r["run_uid"]): content_hash(r) for r in rows}


def test_experiment_records_go_with_their_runs_and_name_them_by_run_uid(capsys, tmp_path, backend) -> None:
    a, b = tmp_path / "box-a.db", tmp_path / "box-b.db"
    uids = _box(a, "exp-a") + _box(b, "exp-b", runs=1)
    for box in (a, b):
        code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(box))
        assert code == 0, err
        assert out.rstrip().endswith("; 1 experiment records (0 already there)")
    with open_ledger(backend.url, create=False) as team:
        records = team.experiments()
        assert team.verify().ok
    sources = []
    for box in (a, b):
        with open_ledger(box, create=False) as book:
            sources.extend(book.experiments())
    # the same records, content hash and all; ids are the team ledger's own
    assert [(r.id, r.name) for r in records] == [(1, "exp-a"), (2, "exp-b")]
    assert [(r.content_hash, r.treatments, r.recorded_at) for r in records] == [
        (s.content_hash, s.treatments, s.recorded_at) for s in sources
    ]
    # every run a record names is there, with the content it has in its box
    here = _runs_by_uid(backend.url)
    named = [t["run_uid"] for r in records for t in r.treatments if t["run_uid"] is not None]
    assert named == uids
    for box in (a, b):
        for uid, digest in _runs_by_uid(str(box)).items():
            assert here[uid] == digest
    # pushing again copies nothing; a third box pulls both records with their runs
    code, out, _ = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a), "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["copied"], doc["experiments"], doc["experiments_copied"]) == (0, 1, 0)
    c = tmp_path / "box-c.db"
    code, out, _ = run(capsys, "ledger", "pull", "--from", backend.url, "--ledger", str(c), "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["copied"], doc["experiments"], doc["experiments_copied"]) == (3, 2, 2)
    with open_ledger(c, create=False) as book:
        assert [r.content_hash for r in book.experiments()] == [r.content_hash for r in records]
        assert book.verify().ok


def test_a_record_from_before_run_uids_is_pushed_with_its_display_ids_resolved(capsys, tmp_path, backend) -> None:
    a = tmp_path / "box-a.db"
    with open_ledger(a) as book:
        first = book.append(make_run(recipe_name="old"))
        second = book.append(make_run(recipe_name="old"))
        treatments = [
            _treatment("t1", action="ran", status="DONE", run=second.display_id),
            _treatment("t2", action="left", status=None, run=None),
        ]
        book.record_experiment(new_experiment_values("old", PLAN, {}, treatments))
        (source,) = book.experiments()
    with open_ledger(backend.url) as team:  # the team ledger already has other runs: ids differ
        team.append(make_run(recipe_name="someone-else"))
    code, out, err = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a))
    assert code == 0, err
    with open_ledger(backend.url, create=False) as team:
        (pushed,) = team.experiments()
        assert team.verify().ok  # its content hash is that of what it holds now
        by_uid = {r.stable_id: r for r in team.runs()}
    assert [t.get("run_uid") for t in pushed.treatments] == [second.stable_id, None]
    assert all("run" not in t for t in pushed.treatments) and pushed.content_hash != source.content_hash
    assert by_uid[second.stable_id].id == 3 and first.stable_id in by_uid  # the source's #2 is #3 here
    assert {k: v for k, v in pushed.treatments[0].items() if k != "run_uid"} == {
        k: v for k, v in source.treatments[0].items() if k != "run"
    }
    code, out, _ = run(capsys, "ledger", "push", "--to", backend.url, "--ledger", str(a), "--json")
    assert code == 0 and json.loads(out)["experiments_copied"] == 0  # found again in its resolved form


@pytest.mark.parametrize(
    ("treatment", "words"),
    [
        (
            {"run_uid": "f" * 32},
            "experiment record #1 treatment t1 names run " + "f" * 32 + ", which is not in this ledger",
        ),
        ({"run": "#1-00000000"}, "experiment record #1 names run #1-00000000, which is not in this ledger"),
        ({"run": "#7-1a2b3c4d"}, "experiment record #1 names run #7-1a2b3c4d, which is not in this ledger"),
        ({"run": "run one"}, "experiment record #1 names run 'run one', which is not a run's display id"),
    ],
)
def test_a_record_naming_a_run_the_source_lacks_is_refused_and_nothing_is_copied(
    capsys, tmp_path, treatment, words
) -> None:
    a, team = tmp_path / "box-a.db", tmp_path / "team.db"
    with open_ledger(a) as book:
        book.append(make_run())
        book.record_experiment(new_experiment_values("x", PLAN, {}, [_treatment("t1", action="ran", **treatment)]))
    code, out, err = run(capsys, "ledger", "push", "--to", str(team), "--ledger", str(a))
    assert code == 4 and out == "" and err.count("\n") == 1, err
    assert f"{words}; nothing was copied" in err
    assert "(hint: autobench ledger verify --ledger SOURCE; push from a ledger you trust)" in err
    with open_ledger(team, create=False) as book:
        assert book.count() == 0 and book.experiments() == []


def test_treatments_that_are_not_a_list_of_objects_are_refused(tmp_path) -> None:
    from autobench.errors import LedgerError
    from autobench.ledger.sync import global_record

    with open_ledger(tmp_path / "a.db") as book:
        for text in ("{}", "[1]", "not json"):
            row = {"id": 4, "name": "x", "plan_digest": PLAN, "recorded_at": "", "definition": "{}"}
            row |= {"treatments": text, "content_hash": ""}
            with pytest.raises(LedgerError, match="experiment record #4 has treatments that are not a list of objects"):
                global_record(book, row, set())


def test_a_copied_record_whose_hash_does_not_match_its_content_is_not_appended(tmp_path) -> None:
    from autobench.errors import LedgerError

    values = new_experiment_values("x", PLAN, {}, [_treatment("t1", action="pruned")])
    with open_ledger(tmp_path / "team.db") as team:
        assert team.import_experiments([]) == 0
        with pytest.raises(LedgerError, match="experiment record #9 does not match its content_hash"):
            team.import_experiments([values, {**values, "id": 9, "name": "edited"}])
        assert team.experiments() == []  # one transaction: the good one went back out too
        assert team.import_experiments([{**values, "id": 5}, values]) == 2
        assert [r.id for r in team.experiments()] == [1, 2] and team.verify().ok  # the ids are its own


def test_a_record_is_copied_byte_for_byte_and_a_run_uid_beside_a_display_id_wins(tmp_path) -> None:
    """A record that names its runs by run_uid is copied as stored (not re-serialised), even
    when its JSON is not autobench's canonical form; a treatment holding both a display id and
    a run_uid keeps the run_uid (the display id, local to the source, is dropped unread)."""
    from autobench.ledger.experiments import content_hash as record_hash
    from autobench.ledger.sync import copy_runs

    a, team = tmp_path / "box-a.db", tmp_path / "team.db"
    with open_ledger(a) as book:
        uid = book.append(make_run()).stable_id
        spaced = json.dumps([_treatment("t1", action="ran", run_uid=uid)], indent=1)  # not canonical
        row = {"name": "x", "plan_digest": PLAN, "recorded_at": "2026-12-07T00:00:00Z", "definition": "{}"}
        row["treatments"] = spaced
        both = {**row, "treatments": json.dumps([_treatment("t1", run="#9-ffffffff", run_uid=uid)])}
        book.import_experiments([{**r, "content_hash": record_hash(r)} for r in (row, both)])
        source = book.raw_experiments()
    with open_ledger(a, create=False) as book, open_ledger(team) as destination:
        result = copy_runs(book, destination)
        copied = destination.raw_experiments()
    assert (result.experiments, result.experiments_copied) == (2, 2)
    assert copied[0]["treatments"] == spaced and copied[0]["content_hash"] == source[0]["content_hash"]
    assert json.loads(str(copied[1]["treatments"]))[0]["run_uid"] == uid and "#9-" not in str(copied[1]["treatments"])

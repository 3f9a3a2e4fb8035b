"""verify_rows on hand-built chains: where a chain breaks, what it says (word for word, since
users act on the message), what a known head proves, and what a run's content hash covers."""

from __future__ import annotations

from typing import Any

import pytest

from autobench.errors import LedgerError
from autobench.ledger.chain import KINDS, LOCAL_KEYS, canonical_content, check_head, content_hash, row_hash, verify_rows
from autobench.ledger.models import ADDED_IN, GENESIS_HASH


def chain(n: int, **extra: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    prev = GENESIS_HASH
    for i in range(1, n + 1):
        row = {
            "id": i,
            "prev_hash": prev,
            "recipe_name": f"r{i}",
            "model_repo": "m",
            "status": "DONE",
            "source": "manual",
        }
        row.update(extra)
        row["row_hash"] = row_hash(row)
        prev = row["row_hash"]
        rows.append(row)
    return rows


def test_a_whole_chain_verifies_with_its_count_and_head():
    rows = chain(3)
    result = verify_rows(rows)
    assert (result.ok, result.runs, result.head_hash, result.first_bad_id) == (True, 3, rows[2]["row_hash"], None)
    assert str(result) == f"ledger OK: 3 runs, chain head {rows[2]['row_hash']}"
    assert result.to_json_dict() == {
        "ok": True,
        "runs": 3,
        "head_hash": rows[2]["row_hash"],
        "first_bad_id": None,
        "problem": None,
        "missing_triggers": [],
        "known_head_at": None,
    }


def test_an_empty_chain_is_ok_at_genesis():
    result = verify_rows([])
    assert (result.ok, result.runs, result.head_hash) == (True, 0, GENESIS_HASH)


def test_a_known_head_is_found_at_its_run():
    rows = chain(3)
    result = verify_rows(rows, known_head=rows[1]["row_hash"])
    assert result.ok and result.known_head_at == 2
    assert str(result).endswith("; the known head is run #2")
    first = verify_rows(rows, known_head=rows[0]["row_hash"])
    assert first.ok and first.known_head_at == 1


def test_the_genesis_head_is_anchored_before_run_1():
    result = verify_rows(chain(2), known_head=GENESIS_HASH)
    assert result.ok and result.known_head_at == 0
    assert "known head" not in str(result)


def test_a_known_head_that_is_gone_fails_without_a_bad_run():
    rows = chain(3)
    gone = "ab" * 32
    result = verify_rows(rows, known_head=gone)
    assert not result.ok and result.first_bad_id is None and result.runs == 3
    assert result.head_hash == rows[2]["row_hash"]
    assert result.problem == (
        f"the known head {gone[:12]}... is not in the chain (3 runs, head {rows[2]['row_hash'][:12]}...): "
        "runs were removed from its end, or the chain was rewritten"
    )
    assert str(result) == f"ledger NOT OK: {result.problem}"


@pytest.mark.parametrize(
    ("keep", "bad_id", "problem"),
    [
        ([0, 2], 3, "run #2 is missing before it (a row was deleted)"),
        ([0, 3], 4, "run #2..#3 is missing before it (a row was deleted)"),
        ([1, 2], 2, "run #1 is missing before it (a row was deleted)"),
        ([0, 1, 1], 2, "id 2 is out of order after #2 (rows were reordered)"),
        ([0, 2, 1], 3, "run #2 is missing before it (a row was deleted)"),
    ],
)
def test_a_gap_or_reorder_names_the_runs(keep, bad_id, problem):
    rows = chain(4)
    picked = [rows[i] for i in keep]
    result = verify_rows(picked)
    assert not result.ok and result.first_bad_id == bad_id and result.problem == problem
    good = 0
    for i, row in enumerate(picked):
        if row["id"] != i + 1:
            break
        good += 1
    assert result.runs == good
    assert result.head_hash == (picked[good - 1]["row_hash"] if good else GENESIS_HASH)
    assert str(result) == f"ledger chain BROKEN at run #{bad_id}: {problem}"


def test_an_earlier_id_after_a_later_one_is_out_of_order():
    rows = chain(3)
    result = verify_rows([rows[0], rows[1], rows[0]])
    assert result.first_bad_id == 1 and result.problem == "id 1 is out of order after #2 (rows were reordered)"


def test_a_wrong_prev_hash_names_what_it_should_link_to():
    rows = chain(2)
    first = dict(rows[0], prev_hash="f" * 64)
    result = verify_rows([first])
    assert result.first_bad_id == 1 and result.runs == 0
    assert result.problem == (
        f"prev_hash {'f' * 12}... does not match the genesis hash (64 zeros) {'0' * 12}... "
        "(a row was deleted, inserted or reordered)"
    )
    second = dict(rows[1], prev_hash="e" * 64)
    result = verify_rows([rows[0], second])
    assert result.first_bad_id == 2 and result.runs == 1
    assert result.problem == (
        f"prev_hash {'e' * 12}... does not match run #1's hash {rows[0]['row_hash'][:12]}... "
        "(a row was deleted, inserted or reordered)"
    )


def test_a_changed_row_is_caught_by_its_hash():
    rows = chain(3)
    changed = dict(rows[1], recipe_name="other")
    result = verify_rows([rows[0], changed, rows[2]])
    assert (result.ok, result.first_bad_id, result.runs, result.head_hash) == (False, 2, 1, rows[0]["row_hash"])
    assert result.problem == (
        f"content does not match its row_hash (stored {rows[1]['row_hash'][:12]}..., "
        f"recomputed {row_hash(changed)[:12]}...): the row was changed after it was appended"
    )


def test_cells_digests_are_checked_run_by_run():
    rows = chain(2)
    with_cells = chain(2, cells_digest="c" * 64)
    assert verify_rows(with_cells, cells_digests={1: "c" * 64, 2: "c" * 64}).ok
    inserted = verify_rows(rows, cells_digests={2: "d" * 64})
    assert (inserted.ok, inserted.first_bad_id, inserted.runs) == (False, 2, 1)
    assert inserted.problem == (
        "the run has no cells_digest but the cells table holds cells for it (cells were inserted)"
    )
    deleted = verify_rows(with_cells, cells_digests={1: "c" * 64})
    assert not deleted.ok and deleted.first_bad_id == 2
    assert deleted.problem == "its cells_digest covers cells that are gone from the cells table (cells were deleted)"
    changed = verify_rows(with_cells, cells_digests={1: "d" * 64, 2: "c" * 64})
    assert changed.first_bad_id == 1 and changed.runs == 0
    assert changed.problem == (
        f"its cells do not match its cells_digest (stored {'c' * 12}..., recomputed {'d' * 12}...): "
        "a cell's parameters, metrics or samples were changed after it was appended"
    )


@pytest.mark.parametrize(
    ("orphans", "shown"),
    [
        ([7], "#7"),
        ([9, 5, 6, 7, 8], "#5, #6, #7, #8, #9"),
        ([9, 5, 6, 7, 8, 10], "#5, #6, #7, #8, #9 ..."),
    ],
)
def test_cells_of_runs_the_chain_lacks_are_inserted_cells(orphans, shown):
    rows = chain(2)
    result = verify_rows(rows, cells_digests={i: "c" * 64 for i in orphans})
    assert (result.ok, result.runs, result.first_bad_id) == (False, 2, min(orphans))
    assert result.problem == (
        f"the cells table holds cells of run(s) {shown} that the chain does not have (cells were inserted)"
    )


def test_check_head_takes_64_hex_digits_in_any_case():
    assert check_head("  " + "AB" * 32 + "\n") == "ab" * 32
    assert check_head("0" * 64) == "0" * 64


@pytest.mark.parametrize("text", ["a" * 63, "a" * 65, "g" * 64, "", "a" * 62 + " a"])
def test_check_head_refuses_anything_else_with_a_hint(text):
    with pytest.raises(LedgerError) as info:
        check_head(text)
    assert str(info.value).startswith(f"--head {text.strip()[:80]!r} is not a chain head (64 hex digits)")
    assert info.value.hint == "use the head_hash that autobench ledger verify printed earlier"


def test_content_hash_leaves_out_the_runs_place_in_its_ledger():
    (row,) = chain(1)
    moved = dict(row, id=9, prev_hash="a" * 64, row_hash="b" * 64, corrects=3, supersedes=2, replay_of=1, run_uid="u")
    assert content_hash(moved) == content_hash(row)
    assert content_hash(dict(row, recipe_name="other")) != content_hash(row)
    assert content_hash(row) != row_hash(row)


def test_later_columns_enter_the_content_only_when_set():
    (row,) = chain(1)
    later = next(iter(ADDED_IN))
    content = canonical_content(row)
    assert later not in content
    assert content["notes"] is None  # a v1 column is always there, NULL as null
    assert "row_hash" not in content and content["id"] == 1
    value = {"bool": True, "int": 3, "float": 1.5, "str": "x"}[KINDS[later]]
    assert canonical_content(dict(row, **{later: value}))[later] == value


def test_column_kinds():
    assert (KINDS["time_cap_hit"], KINDS["completed"], KINDS["decode_tok_s"], KINDS["notes"]) == (
        "bool",
        "int",
        "float",
        "str",
    )


def test_content_hash_is_the_sha256_of_sorted_compact_json():
    import hashlib
    import json

    (row,) = chain(1, notes="é")
    content = {k: v for k, v in canonical_content(row).items() if k not in LOCAL_KEYS}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert text.index('"model_repo"') < text.index('"notes":"é"') < text.index('"recipe_name"')
    assert content_hash(row) == hashlib.sha256(text.encode("utf-8")).hexdigest()

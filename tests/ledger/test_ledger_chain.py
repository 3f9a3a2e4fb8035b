"""The chain's type rules: every stored value is coerced to its column's kind before it is
hashed, so a value given loosely (12.0 for an int, 1 for a bool) hashes as what the database
gives back, and a value of the wrong kind is refused before anything is written."""

from __future__ import annotations

import pytest
from ledger_helpers import make_run

from autobench.errors import LedgerError
from autobench.ledger.chain import coerce, row_hash, verify_rows


@pytest.mark.parametrize(
    ("key", "value", "stored"),
    [
        ("notes", "text", "text"),
        ("completed", 12, 12),
        ("completed", 12.0, 12),  # an integral float is stored as the int
        ("completed", "12", 12),
        ("completed", " -3", -3),
        ("time_cap_hit", True, True),
        ("time_cap_hit", 1, True),
        ("time_cap_hit", 0, False),
        ("decode_tok_s", 7, 7.0),
        ("decode_tok_s", "2.5", 2.5),
        ("notes", None, None),
        ("completed", None, None),
    ],
)
def test_loose_values_are_coerced_to_the_column_kind(key, value, stored):
    out = coerce(key, value)
    assert out == stored and type(out) is type(stored)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("notes", 5, "expected text, got int"),  # a text column given an int
        ("recipe_name", 1.5, "expected text, got float"),
        ("completed", True, "expected an integer"),  # an int column given a bool
        ("completed", 1.5, "expected an integer"),
        ("completed", "1.5", "expected an integer"),
        ("completed", [1], "expected an integer"),
        ("completed", "²", "expected an integer"),  # a digit to str.isdigit(), not to int()
        ("completed", "１２", "expected an integer"),  # full-width digits
        ("time_cap_hit", 2, "expected true/false"),  # a bool column given 2
        ("time_cap_hit", "yes", "expected true/false"),
        ("time_cap_hit", 1.0, "expected true/false"),  # a float is not a bool, even 1.0
        ("decode_tok_s", False, "expected a number"),
        ("decode_tok_s", float("inf"), "finite"),
    ],
)
def test_values_of_the_wrong_kind_are_refused(key, value, message):
    with pytest.raises((TypeError, ValueError), match=message):
        coerce(key, value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"notes": 5}, "notes: expected text"),
        ({"metrics": {"concurrency": True}}, "concurrency: expected an integer"),
        ({"metrics": {"time_cap_hit": 2}}, "time_cap_hit: expected true/false"),
    ],
)
def test_the_ledger_refuses_a_wrong_kind_and_stays_verifiable(ledger, overrides, message):
    ledger.append(make_run())
    with pytest.raises(LedgerError, match=message):
        ledger.append(make_run(**overrides))
    assert ledger.count() == 1 and ledger.verify().ok


def test_loosely_given_values_verify_after_the_round_trip(ledger):
    run = ledger.append(make_run(metrics={"completed": 12.0, "time_cap_hit": 1, "decode_tok_s": 7, "concurrency": "8"}))
    m = ledger.get(run.id).metrics
    assert (m["completed"], m["time_cap_hit"], m["decode_tok_s"], m["concurrency"]) == (12, True, 7.0, 8)
    assert type(m["completed"]) is int and type(m["decode_tok_s"]) is float and m["time_cap_hit"] is True
    result = ledger.verify()
    assert result.ok and result.runs == 1


def test_a_stored_value_of_the_wrong_kind_breaks_the_chain_with_its_reason():
    row = {"id": 1, "prev_hash": "0" * 64, "recipe_name": "r", "model_repo": "m", "status": "DONE", "source": "manual"}
    row["row_hash"] = row_hash(row)
    assert verify_rows([row]).ok
    bad = dict(row, completed=True)
    result = verify_rows([bad])
    assert not result.ok and result.first_bad_id == 1 and "wrong type" in (result.problem or "")

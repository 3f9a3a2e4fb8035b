"""Numbers and nesting from outside are bounded in one place (autobench.digits): integers by
their digits, JSON by its depth, each checked before Python's own limits turn into an internal
error (exit 70)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.digits import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    JSONLimitError,
    is_digits,
    json_depth,
    load_json,
    parse_int,
)
from autobench.run.readiness import model_ids

BASE = (
    "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n"
    "bench:\n  dataset:\n    kind: random\n"
)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("42", 42), (" 7 ", 7), ("-3", -3), ("+5", 5), ("9" * MAX_INT_DIGITS, int("9" * MAX_INT_DIGITS))],
)
def test_parse_int_reads_ascii_whole_numbers(text, value):
    assert parse_int(text) == value


def test_the_limits():
    assert (MAX_INT_DIGITS, MAX_JSON_DEPTH) == (100, 100)
    assert parse_int("-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)  # the sign is no digit


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "not a whole number: ''"),
        ("²", "not a whole number: '²'"),
        ("８０", "not a whole number"),
        ("1.5", "not a whole number: '1.5'"),
        ("1e3", "not a whole number"),
        ("0x10", "not a whole number"),
        ("--1", "not a whole number"),
        ("9" * (MAX_INT_DIGITS + 1), "a number of 101 digits (at most 100)"),
        ("-" + "9" * 5000, "a number of 5000 digits (at most 100)"),
    ],
)
def test_parse_int_refuses_anything_else_before_converting(text, said):
    with pytest.raises(ValueError) as info:
        parse_int(text)
    assert said in str(info.value)


@pytest.mark.parametrize(
    ("text", "ok"), [("0", True), ("8000", True), ("", False), ("²", False), ("８", False), ("1 ", False)]
)
def test_is_digits_is_ascii_digits_only(text, ok):
    assert is_digits(text) is ok


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["]]]]", "[[[[["]', 1),  # brackets in strings are text
        ('["\\"[[[["]', 1),  # ... after an escaped quote too
        ("[" * 10_000 + "]" * 10_000, 10_000),
        ('"unterminated [[[[', 0),
        ("[[]][[]][]", 2),  # a closing bracket closes one level, no more
        ("[][[]]", 2),
        ("{}{{}}", 2),
        ("{}{}{}", 1),
        ("[{}, {}, {}]", 2),
    ],
)
def test_json_depth_counts_brackets_outside_strings(text, depth):
    assert json_depth(text) == depth


@pytest.mark.parametrize(
    "text",
    [
        "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
        "[" * 200_000,  # a RecursionError in json.loads before
        '{"n": ' + "9" * 5000 + "}",  # Python's 4,300-digit ValueError before
        b"\xff\xfe",
        '{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1),  # objects count as arrays do
        "{",
    ],
)
def test_load_json_refuses_as_a_json_decode_error(text):
    with pytest.raises(json.JSONDecodeError):
        load_json(text)


def test_load_json_bytes_that_are_not_utf8():
    with pytest.raises(JSONLimitError, match=r"not UTF-8 text \(byte 0\)") as info:
        load_json(b"\xff{}")
    assert (info.value.doc, info.value.pos, info.value.too_deep) == ("", 0, False)


@pytest.mark.parametrize(
    ("text", "too_deep", "said"),
    [
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), True, "nested 101 levels deep (at most 100)"),
        ('{"n": ' + "9" * 5000 + "}", False, "a value that cannot be read (Exceeds the limit (4300 digits)"),
    ],
)
def test_load_json_says_which_limit(text, too_deep, said):
    with pytest.raises(JSONLimitError) as info:
        load_json(text)
    assert info.value.too_deep is too_deep and said in str(info.value)
    assert info.value.doc == text[:64] and info.value.pos == 0


def test_load_json_reads_what_json_loads_reads():
    doc = {"a": [1, 2.5, None, True, "x"], "b": {"c": "[[["}}
    assert load_json(json.dumps(doc)) == doc == load_json(json.dumps(doc).encode())
    nested = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert load_json(nested) == json.loads(nested)
    assert isinstance(JSONLimitError("x", "", 0), ValueError)


def test_a_servers_deep_model_list_is_no_models_not_a_crash():
    assert model_ids(b'{"data": ' + b"[" * 200_000 + b"]" * 200_000 + b"}") == []


@pytest.mark.parametrize("where", ["recipe", "profile"])
def test_an_integer_of_5000_digits_is_one_located_line(tmp_path: Path, capsys, where):
    """Before: Python's int-to-str limit, an internal error (exit 70)."""
    big = "9" * 5000
    recipe = tmp_path / "r.yaml"
    args = ["validate", str(recipe)]
    if where == "recipe":
        recipe.write_text(BASE + f"  num_prompts: {big}\n")
        line = 10
    else:
        recipe.write_text(BASE)
        (tmp_path / "p.yaml").write_text(f"concurrency: [1, {big}]\n")
        args += ["--profile", str(tmp_path / "p.yaml")]
        line = 1
    assert main(args) == 2
    out = capsys.readouterr().out
    assert f":{line}:" in out and "a number of 5000 characters" in out and big not in out

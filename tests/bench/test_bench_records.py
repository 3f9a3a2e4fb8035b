"""Prompt records from ShareGPT, JSONL (with and without a field mapping) and parquet (issue #33):
what each record becomes, what is skipped and why, and the one located line for a mapping that
does not fit the file.  parquet files are written here with pyarrow."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from autobench.bench import records
from autobench.bench.datasets import load_dataset
from autobench.bench.records import FieldMap, PromptRecord, from_row, read_records
from autobench.errors import BenchError


def jsonl(tmp_path: Path, rows: list[object], name: str = "d.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def parquet(tmp_path: Path, table: dict[str, list[object]], name: str = "d.parquet", **kw: object) -> str:
    path = tmp_path / name
    pq.write_table(pa.table(table), path, **kw)
    return str(path)


def read(path: str, kind: str, fields: FieldMap | None = None) -> tuple[list[PromptRecord], Counter[str]]:
    skipped: Counter[str] = Counter()
    return list(read_records(path, kind, fields, skipped)), skipped


# -- JSONL with a mapping ---------------------------------------------------------------------


def test_jsonl_mapped_fields_give_prompt_category_and_cap(tmp_path):
    path = jsonl(
        tmp_path,
        [
            {"question": "What is 2+2?", "task": "math", "n": 16, "other": 1},
            {"question": "Write a poem.", "task": 7, "n": None},
            {"question": None, "task": "math", "n": 3},
            {"question": "No category", "task": None, "n": 3},
            {"question": "Bad cap", "task": "x", "n": 0},
            {"question": ["not", "text"], "task": "x", "n": 3},
            {"question": "Bad category", "task": 1.5, "n": 3},
        ],
    )
    got, skipped = read(path, "jsonl", FieldMap(prompt="question", category="task", max_tokens="n"))
    assert got == [
        PromptRecord(("What is 2+2?",), "math", 16),
        PromptRecord(("Write a poem.",), "7", None),
    ]
    assert skipped == Counter(
        {"null_prompt": 1, "no_category": 1, "bad_max_tokens": 1, "prompt_not_a_string": 1, "bad_category": 1}
    )


def test_jsonl_turns_keep_the_users_turns_in_order(tmp_path):
    path = jsonl(
        tmp_path,
        [
            {"chat": ["first", "second"]},
            {
                "chat": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hello"},
                    {"role": "assistant", "content": "hi"},
                    {"role": "user", "content": "and again"},
                ]
            },
            {"chat": [{"from": "human", "value": "sharegpt style"}, {"from": "gpt", "value": "ok"}]},
            {"chat": [{"role": "assistant", "content": "only the model"}]},
            {"chat": "not a list"},
            {"chat": [{"role": "user", "content": 5}]},
            {"chat": [3]},
        ],
    )
    got, skipped = read(path, "jsonl", FieldMap(turns="chat"))
    assert [r.turns for r in got] == [("first", "second"), ("hello", "and again"), ("sharegpt style",)]
    assert got[1].text == "hello"
    assert skipped == Counter({"no_user_turn": 1, "turns_not_a_list": 1, "bad_turn": 2})


def test_a_record_without_a_mapped_field_is_one_located_line(tmp_path):
    path = jsonl(tmp_path, [{"question": "a", "task": "t"}, {"prompt": "b", "task": "t"}])
    with pytest.raises(BenchError) as info:
        read(path, "jsonl", FieldMap(prompt="question", category="task"))
    err = info.value
    assert err.location == f"{path}:2"
    assert err.message == "no field 'question' (bench.dataset.fields.prompt); the record's fields: 'prompt', 'task'"
    assert err.hint == "set bench.dataset.fields.prompt to one of them (--dataset-field prompt=NAME)"


def test_the_missing_category_field_is_named_as_the_category(tmp_path):
    path = jsonl(tmp_path, [{"q": "a"}])
    with pytest.raises(BenchError, match=r"no field 'task' \(bench.dataset.fields.category\)"):
        read(path, "jsonl", FieldMap(prompt="q", category="task"))


def test_a_mapped_line_that_is_not_an_object_is_refused_where_it_is(tmp_path):
    path = jsonl(tmp_path, [{"q": "a"}, "just a string"])
    with pytest.raises(BenchError) as info:
        read(path, "jsonl", FieldMap(prompt="q"))
    assert info.value.location == f"{path}:2" and "a JSON str, not an object" in info.value.message
    assert info.value.hint == "a field mapping reads JSON objects, one a line"


def test_a_mapping_must_name_prompt_or_turns(tmp_path):
    path = jsonl(tmp_path, [{"q": "a"}])
    for bad in (FieldMap(category="c"), FieldMap(prompt="q", turns="t")):
        with pytest.raises(BenchError, match="exactly one of prompt or turns") as info:
            read(path, "jsonl", bad)
        assert info.value.hint == "e.g. --dataset-field prompt=question (or turns=messages)"


def test_jsonl_without_a_mapping_reads_as_before(tmp_path):
    path = jsonl(
        tmp_path,
        [
            "plain",
            {"prompt": "p", "max_tokens": 9},
            {"prompt_tokens": 12},
            {"text": "x"},
            {"prompt": "q", "max_tokens": 0},
            ["a", "list"],
        ],
    )
    got, skipped = read(path, "jsonl")
    assert got == [
        PromptRecord(("plain",)),
        PromptRecord(("p",), max_tokens=9),
        PromptRecord(("",), prompt_tokens=12),
    ]
    assert skipped == Counter({"no_prompt_field": 2, "bad_max_tokens": 1})


def test_sharegpt_records_hold_every_human_turn(tmp_path):
    path = tmp_path / "sg.json"
    conv = [
        {"from": "human", "value": "one"},
        {"from": "gpt", "value": "answer"},
        {"from": "human", "value": "two"},
        {"from": "gpt", "value": "answer"},
    ]
    path.write_text(json.dumps([{"conversations": conv}]), encoding="utf-8")
    got, _ = read(str(path), "sharegpt")
    assert got == [PromptRecord(("one", "two"))]
    with pytest.raises(BenchError, match="applies to jsonl and parquet") as info:
        read(str(path), "sharegpt", FieldMap(prompt="x"))
    assert info.value.hint == "drop the mapping"


# -- parquet ----------------------------------------------------------------------------------


def test_parquet_reads_the_mapped_columns_in_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "BATCH_ROWS", 2)
    n = 7
    path = parquet(
        tmp_path,
        {
            "question": [f"question {i}" for i in range(n)],
            "task": ["code" if i % 2 else "chat" for i in range(n)],
            "answer": ["x" * 1000] * n,  # never read: only the mapped columns are
        },
        row_group_size=3,
    )
    seen: list[int] = []
    opened: dict[str, object] = {}

    class Spy(pq.ParquetFile):
        def __init__(self, *a, **kw):
            opened.update(kw)
            super().__init__(*a, **kw)

        def iter_batches(self, *a, **kw):
            assert kw["columns"] == ["question", "task"] and kw["batch_size"] == 2 and kw["use_threads"] is False
            for batch in super().iter_batches(*a, **kw):
                seen.append(batch.num_rows)
                yield batch

    monkeypatch.setattr(pq, "ParquetFile", Spy)
    got, skipped = read(path, "parquet", FieldMap(prompt="question", category="task"))
    assert [(r.text, r.category) for r in got] == [(f"question {i}", "code" if i % 2 else "chat") for i in range(n)]
    assert max(seen) <= 2 and sum(seen) == n and not skipped
    assert opened == {"pre_buffer": False}  # never the whole file read ahead


def test_parquet_without_a_mapping_reads_the_prompt_column(tmp_path):
    path = parquet(tmp_path, {"prompt": ["a b c", None], "max_tokens": [5, 6]})
    got, skipped = read(path, "parquet")
    assert got == [PromptRecord(("a b c",), max_tokens=5)] and skipped == Counter({"null_prompt": 1})
    only = parquet(tmp_path, {"prompt": ["x y"]}, name="only.parquet")
    assert read(only, "parquet")[0] == [PromptRecord(("x y",))]


def test_parquet_conversations_as_lists_of_messages(tmp_path):
    chats = [
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
            {"role": "user", "content": "more"},
        ],
        [{"role": "user", "content": "single"}],
    ]
    path = parquet(tmp_path, {"messages": chats, "cat": ["a", "b"]})
    got, _ = read(path, "parquet", FieldMap(turns="messages", category="cat"))
    assert got == [PromptRecord(("hi", "more"), "a"), PromptRecord(("single",), "b")]


def test_a_parquet_column_the_mapping_names_but_the_file_lacks_is_one_line(tmp_path):
    path = parquet(tmp_path, {"instruction": ["a"], "category": ["c"]})
    with pytest.raises(BenchError) as info:
        read(path, "parquet", FieldMap(prompt="question", category="category"))
    err = info.value
    assert err.location == path
    assert err.message == (
        "no column 'question' (bench.dataset.fields.prompt); the file's columns: 'instruction', 'category'"
    )
    with pytest.raises(BenchError) as info:
        read(path, "parquet")
    assert info.value.message == (
        "no column 'prompt' (the default, no field mapping given); the file's columns: 'instruction', 'category'"
    )


def test_a_file_that_is_not_parquet_is_one_line(tmp_path):
    path = jsonl(tmp_path, [{"prompt": "x"}], name="d.parquet")
    with pytest.raises(BenchError) as info:
        read(path, "parquet")
    assert info.value.location == path and info.value.message.startswith("not a parquet file (")
    with pytest.raises(BenchError, match="dataset file not found"):
        read(str(tmp_path / "absent.parquet"), "parquet")


def test_a_parquet_file_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    path = parquet(tmp_path, {"prompt": ["x"] * 10})
    monkeypatch.setattr(records, "MAX_DATASET_BYTES", 100)
    with pytest.raises(BenchError, match=r"dataset file is [\d,]+ bytes; at most 100 are read"):
        read(path, "parquet")


def test_from_row_takes_a_whole_number_category_and_refuses_a_bool(tmp_path):
    skipped: Counter[str] = Counter()
    fields = FieldMap(prompt="p", category="c")
    assert from_row({"p": "x", "c": 3}, fields, skipped) == PromptRecord(("x",), "3")
    assert from_row({"p": "x", "c": True}, fields, skipped) is None
    assert skipped == Counter({"bad_category": 1})
    assert from_row({"p": "x", "c": "  "}, fields, skipped) is None
    assert skipped == Counter({"bad_category": 1, "no_category": 1})
    assert from_row({"p": "x", "c": None}, fields, skipped) is None
    assert skipped == Counter({"bad_category": 1, "no_category": 2})
    assert from_row({"p": "x", "c": " spaced "}, fields, skipped) == PromptRecord(("x",), "spaced")


# -- through load_dataset ---------------------------------------------------------------------


def _legacy_digest(prompts: list[tuple[str, int]]) -> str:
    h = hashlib.sha256()
    for text, mt in prompts:
        h.update(text.encode())
        h.update(b"\x00%d\x00" % mt)
    return h.hexdigest()


def test_load_dataset_carries_category_and_later_turns(tmp_path):
    path = parquet(
        tmp_path,
        {"chat": [["hello there, a first turn", "and then"], ["the second prompt is here"]], "kind": ["a", "b"]},
    )
    ds = load_dataset(kind=None, path=path, num_prompts=2, max_tokens=8, fields=FieldMap(turns="chat", category="kind"))
    assert ds.kind == "parquet"
    got = sorted((p.text, p.category, p.turns) for p in ds.prompts)
    assert got == [("hello there, a first turn", "a", ("and then",)), ("the second prompt is here", "b", ())]
    # category and turns are part of the sample's digest
    plain = load_dataset(kind=None, path=path, num_prompts=2, max_tokens=8, fields=FieldMap(turns="chat"))
    assert ds.fingerprint() != plain.fingerprint()


def test_a_sample_without_categories_keeps_its_old_digest(tmp_path):
    path = jsonl(tmp_path, [{"prompt": f"prompt number {i}"} for i in range(5)])
    ds = load_dataset(kind=None, path=path, num_prompts=5, max_tokens=8)
    assert ds.fingerprint() == _legacy_digest([(p.text, p.max_tokens) for p in ds.prompts])
    mapped = load_dataset(kind=None, path=path, num_prompts=5, max_tokens=8, fields=FieldMap(prompt="prompt"))
    assert mapped.fingerprint() == ds.fingerprint()  # the same prompts through a mapping: the same digest


def test_a_turn_too_large_or_empty_skips_the_conversation(tmp_path, monkeypatch):
    from autobench.bench import datasets

    monkeypatch.setattr(datasets, "MAX_RECORD_BYTES", 50)
    path = jsonl(tmp_path, [{"c": ["fine words", "y" * 60]}, {"c": ["fine words", "  "]}, {"c": ["kept words"]}])
    ds = load_dataset(kind="jsonl", path=path, num_prompts=1, fields=FieldMap(turns="c"), min_prompt_tokens=1)
    assert [p.text for p in ds.prompts] == ["kept words"]
    assert ds.skipped == Counter({"record_too_large": 1, "empty_prompt": 1})


def test_the_bounds_are_the_ones_docs_state():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "datasets.md").read_text(encoding="utf-8")
    assert records.MAX_DATASET_BYTES == 2**30 and "at most 1 GiB" in docs
    assert records.MAX_RECORD_BYTES == 2**20 and "a line at most 1 MiB" in docs
    assert records.BATCH_ROWS == 64 and "64 rows at a time" in docs


def test_a_missing_file_and_a_bad_line_say_how_to_fix_them(tmp_path):
    with pytest.raises(BenchError) as info:
        read(str(tmp_path / "absent.json"), "sharegpt")
    assert info.value.hint == "download ShareGPT_V3_unfiltered_cleaned_split.json or fix --dataset"
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok"}\n{nope\n', encoding="utf-8")
    with pytest.raises(BenchError) as info:
        read(str(path), "jsonl")
    assert info.value.location == f"{path}:2" and info.value.message.startswith("line is not valid JSON")
    assert info.value.hint == (
        'each line must be a JSON string, {"prompt": "...", "max_tokens": N} or {"prompt_tokens": N, "max_tokens": M}'
    )
    with pytest.raises(BenchError) as info:
        read(str(path), "jsonl", FieldMap(prompt="prompt"))
    assert info.value.hint == "each line must be one JSON object holding the mapped fields"
    assert info.value.message.startswith("line is not valid JSON") and info.value.location == f"{path}:2"


def test_an_output_cap_of_one_is_a_cap_and_a_bool_is_not(tmp_path):
    path = jsonl(
        tmp_path,
        [
            {"prompt": "a", "max_tokens": 1},
            {"prompt": "b", "max_tokens": True},
            {"prompt": "c", "max_tokens": 2.0},
            {"prompt_tokens": 1},
            {"prompt_tokens": True},
            {"prompt_tokens": records.MAX_RECORD_BYTES // 4 + 1},
        ],
    )
    got, skipped = read(path, "jsonl")
    assert got == [PromptRecord(("a",), max_tokens=1), PromptRecord(("",), prompt_tokens=1)]
    assert skipped == Counter({"bad_max_tokens": 2, "bad_prompt_tokens": 2})
    mapped = jsonl(tmp_path, [{"q": "a", "n": 1}, {"q": "b", "n": False}], name="m.jsonl")
    got, skipped = read(mapped, "jsonl", FieldMap(prompt="q", max_tokens="n"))
    assert got == [PromptRecord(("a",), max_tokens=1)] and skipped == Counter({"bad_max_tokens": 1})


def test_a_line_that_is_not_utf8_is_refused_where_it_is(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'"fine"\n"\xff"\n')
    with pytest.raises(BenchError) as info:
        read(str(path), "jsonl")
    assert (info.value.location, info.value.message) == (f"{path}:2", "line is not UTF-8 text (byte 1)")
    sg = tmp_path / "sg.json"
    sg.write_text("{}", encoding="utf-8")
    with pytest.raises(BenchError) as info:
        read(str(sg), "sharegpt")
    assert info.value.message == "ShareGPT dataset must be a JSON array of conversations, got dict"
    sg.write_text("[1,", encoding="utf-8")
    with pytest.raises(BenchError) as info:
        read(str(sg), "sharegpt")
    assert info.value.hint == "ShareGPT V3 is one JSON array; use --dataset-kind jsonl for JSON lines"


def test_sharegpt_skips_each_shape_it_cannot_use_once(tmp_path):
    entries = [
        {"conversations": [{"value": "no from: a human"}, {"from": "gpt", "value": "a"}]},
        {"conversations": [{"from": "user", "value": "user role"}, {"from": "assistant", "value": "a"}]},
        {"conversations": ["not a turn", {"from": "gpt", "value": "a"}]},
        {"conversations": [{"from": "human", "value": 5}, {"from": "gpt", "value": "a"}]},
        {"conversations": [{"from": "gpt", "value": "model first"}, {"from": "human", "value": "q"}]},
        {"conversations": [{"from": "human", "value": "alone"}]},
        {"conversations": "text"},
        [],
        {
            "conversations": [
                {"from": "human", "value": "one"},
                "junk",
                {"from": "human", "value": 7},
                {"from": "human", "value": "two"},
            ]
        },
    ]
    path = tmp_path / "sg.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    got, skipped = read(str(path), "sharegpt")
    assert got == [PromptRecord(("no from: a human",)), PromptRecord(("user role",)), PromptRecord(("one", "two"))]
    assert skipped == Counter(
        {"bad_turn": 2, "first_turn_not_human": 1, "fewer_than_2_turns": 1, "no_conversations": 2}
    )


def test_a_mapped_record_over_the_size_limit_is_skipped_and_fields_past_twenty_are_elided(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 64)
    path = jsonl(tmp_path, [{"q": "short prompt"}, {"q": "x" * 100}, {"q": "another one"}])
    got, skipped = read(path, "jsonl", FieldMap(prompt="q"))
    assert [r.text for r in got] == ["short prompt", "another one"]
    assert skipped == Counter({"record_too_large": 1})
    monkeypatch.undo()
    wide = jsonl(tmp_path, [{f"f{i:02d}": i for i in range(22)}], name="wide.jsonl")
    with pytest.raises(BenchError) as info:
        read(wide, "jsonl", FieldMap(prompt="q"))
    shown = ", ".join(f"'f{i:02d}'" for i in range(20))
    assert info.value.message == f"no field 'q' (bench.dataset.fields.prompt); the record's fields: {shown} ..."


def test_a_kind_without_a_file_is_refused_by_the_reader(tmp_path):
    with pytest.raises(BenchError) as info:
        read(str(tmp_path / "x"), "random")
    assert (info.value.message, info.value.hint) == (
        "dataset kind 'random' has no file to read",
        "use sharegpt, jsonl or parquet",
    )


def test_json_past_the_readers_limits_is_one_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "ok"}\n{"prompt_tokens": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(BenchError) as info:
        read(str(path), "jsonl")
    assert info.value.location == f"{path}:2"
    assert info.value.message.startswith("line has a value that cannot be read: a value that cannot be read (")
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 1000 + "]" * 1000 + "\n", encoding="utf-8")
    with pytest.raises(BenchError) as info:
        read(str(deep), "jsonl")
    assert info.value.location == f"{deep}:1" and info.value.message.startswith("line is nested too deeply to read (")


def test_a_mapped_max_tokens_column_must_be_there(tmp_path):
    path = parquet(tmp_path, {"p": ["a prompt"]})
    with pytest.raises(BenchError, match=r"no column 'n' \(bench.dataset.fields.max_tokens\)"):
        read(path, "parquet", FieldMap(prompt="p", max_tokens="n"))


def test_sharegpt_two_human_turns_in_a_row_are_both_turns(tmp_path):
    path = tmp_path / "sg.json"
    conv = [{"from": "human", "value": "first"}, {"from": "human", "value": "second"}]
    path.write_text(json.dumps([{"conversations": conv}]), encoding="utf-8")
    assert read(str(path), "sharegpt")[0] == [PromptRecord(("first", "second"))]


def test_mapped_jsonl_skips_blank_lines_and_takes_a_prompt_length_up_to_its_bound(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"q": "one"}\n\n   \n{"q": "two"}\n', encoding="utf-8")
    assert [r.text for r in read(str(path), "jsonl", FieldMap(prompt="q"))[0]] == ["one", "two"]
    bound = records.MAX_RECORD_BYTES // 4
    lengths = jsonl(tmp_path, [{"prompt_tokens": bound}, {"prompt_tokens": bound + 1}], name="n.jsonl")
    got, skipped = read(lengths, "jsonl")
    assert got == [PromptRecord(("",), prompt_tokens=bound)] and skipped == Counter({"bad_prompt_tokens": 1})


def test_twenty_fields_are_shown_whole(tmp_path):
    path = jsonl(tmp_path, [{f"f{i:02d}": i for i in range(20)}])
    with pytest.raises(BenchError) as info:
        read(path, "jsonl", FieldMap(prompt="q"))
    assert info.value.message.endswith("'f19'")  # no " ..." at exactly twenty
    path = jsonl(tmp_path, [{f"f{i:02d}": i for i in range(21)}], name="w21.jsonl")
    with pytest.raises(BenchError) as info:
        read(path, "jsonl", FieldMap(prompt="q"))
    assert info.value.message.endswith("'f19' ...")  # the twenty-first is left out

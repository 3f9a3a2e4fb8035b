from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.bench.datasets import infer_kind, load_dataset
from autobench.errors import BenchError


def sharegpt(tmp_path: Path, n: int = 30) -> Path:
    entries: list[object] = []
    for i in range(n):
        entries.append(
            {
                "id": str(i),
                "conversations": [
                    {"from": "human", "value": f"Question number {i}: please explain topic {i} in detail."},
                    {"from": "gpt", "value": "An answer."},
                ],
            }
        )
    entries += [
        {"id": "one-turn", "conversations": [{"from": "human", "value": "only one turn here"}]},
        {"id": "none"},
        "not an object",
        {"id": "empty", "conversations": [{"from": "human", "value": "   "}, {"from": "gpt", "value": "x"}]},
        {"id": "short", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "x"}]},
        {"id": "long", "conversations": [{"from": "human", "value": "y" * 5000}, {"from": "gpt", "value": "x"}]},
        {
            "id": "gpt-first",
            "conversations": [{"from": "gpt", "value": "I start the conversation."}, {"from": "human", "value": "x"}],
        },
    ]
    p = tmp_path / "ShareGPT_V3_unfiltered_cleaned_split.json"
    p.write_text(json.dumps(entries))
    return p


def test_sharegpt_filters_and_counts_skips(tmp_path: Path) -> None:
    ds = load_dataset(kind=None, path=str(sharegpt(tmp_path)), num_prompts=10, warmup=2, max_tokens=64)
    assert ds.kind == "sharegpt" and ds.available == 30 and len(ds.prompts) == 10 and len(ds.warmup) == 2
    assert dict(ds.skipped) == {
        "fewer_than_2_turns": 1,
        "no_conversations": 2,
        "empty_prompt": 1,
        "prompt_too_short": 1,
        "prompt_too_long": 1,
        "first_turn_not_human": 1,
    }
    assert all(p.max_tokens == 64 for p in ds.prompts)
    assert not {p.text for p in ds.prompts} & {p.text for p in ds.warmup}  # warm-up prompts are distinct


def test_seed_makes_the_sample_reproducible(tmp_path: Path) -> None:
    path = str(sharegpt(tmp_path))
    a = load_dataset(kind=None, path=path, num_prompts=10, seed=7)
    b = load_dataset(kind=None, path=path, num_prompts=10, seed=7)
    c = load_dataset(kind=None, path=path, num_prompts=10, seed=8)
    assert [p.text for p in a.prompts] == [p.text for p in b.prompts]
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    r1 = load_dataset(kind="random", path=None, num_prompts=5, seed=3, random_input_len=40, random_range_ratio=0.5)
    r2 = load_dataset(kind="random", path=None, num_prompts=5, seed=3, random_input_len=40, random_range_ratio=0.5)
    assert r1.fingerprint() == r2.fingerprint()
    assert all(20 <= p.est_tokens <= 62 for p in r1.prompts)


def test_too_few_prompts_are_reused_and_counted(tmp_path: Path) -> None:
    ds = load_dataset(kind=None, path=str(sharegpt(tmp_path, n=3)), num_prompts=5)
    assert len(ds.prompts) == 5 and ds.reused == 2


def test_jsonl_strings_objects_and_skips(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text(
        '"What is the capital of France?"\n\n{"prompt": "Write a haiku about GPUs.", "max_tokens": 9}\n'
        '{"text": "no prompt field"}\n{"prompt": "bad max tokens here", "max_tokens": 0}\n'
    )
    ds = load_dataset(kind=None, path=str(p), num_prompts=2, max_tokens=50, seed=0)
    assert ds.kind == "jsonl"
    assert sorted(x.max_tokens for x in ds.prompts) == [9, 50]
    assert dict(ds.skipped) == {"no_prompt_field": 1, "bad_max_tokens": 1}


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("bad.json", '[{"conversations": []},\n  {oops}]', "bad.json:2:4: dataset is not valid JSON"),
        ("obj.json", '{"conversations": []}', "must be a JSON array"),
        ("empty.json", "[]", "no usable prompt"),
        ("bad.jsonl", '"ok prompt line"\n{"prompt": \n', "bad.jsonl:2: line is not valid JSON"),
        ("bin.json", b"\xff\xfe\x00".decode("latin-1"), "not UTF-8"),
    ],
)
def test_malformed_datasets_give_one_clear_line(tmp_path: Path, name: str, content: str, needle: str) -> None:
    p = tmp_path / name
    if name == "bin.json":
        p.write_bytes(b"\xff\xfe\x00[")
    else:
        p.write_text(content)
    with pytest.raises(BenchError) as e:
        load_dataset(kind=None, path=str(p), num_prompts=1)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_missing_file_and_kind_inference(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="dataset file not found"):
        load_dataset(kind=None, path=str(tmp_path / "nope.json"), num_prompts=1)
    assert infer_kind(None, None) == "random"
    assert infer_kind(None, "x.jsonl") == "jsonl"
    assert infer_kind(None, "benchmark_data/ShareGPT_V3_unfiltered_cleaned_split.json") == "sharegpt"
    with pytest.raises(BenchError):
        load_dataset(kind="sharegpt", path=None, num_prompts=1)

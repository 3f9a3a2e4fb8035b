"""Fuzz: every file input -- recipe text, vLLM logs, datasets, SSE streams, ledger files.

Each reader either returns or raises its own AutobenchError subclass with one clean line; none
raises anything else, whatever bytes it is given.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from fuzz_strategies import HOSTILE, TEXT
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.errors import AutobenchError, BenchError, LedgerError, LogError, RecipeError

SETTINGS = settings(
    max_examples=budget(80), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE
)

YAML_BITS = st.sampled_from(
    [
        "model:\n",
        "  repo: org/m\n",
        "container: {image: img:1}\n",
        "extends: x.yaml\n",
        "&a [*a]\n",
        "!!python/object:os.system\n",
        "\t- x\n",
        "key: key: key\n",
        "a: 1\na: 2\n",
        "- - - -\n",
        "{{{{\n",
        "name: " + "x" * 50 + "\n",
        "engine: {max_num_seqs: .nan}\n",
        "\ufeff",
        "\r\n",
        "%YAML 1.1\n---\n",
    ]
)
RAW = st.one_of(
    st.binary(max_size=400),
    st.lists(st.one_of(YAML_BITS, TEXT), max_size=8).map(lambda parts: "".join(parts).encode("utf-8", "replace")),
)


@SETTINGS
@given(RAW)
def test_any_recipe_file_loads_or_is_one_recipe_error(blob):
    from autobench.recipe.loader import load_recipe

    tried("files: recipe bytes")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.yaml"
        path.write_bytes(blob)
        (Path(tmp) / "x.yaml").write_bytes(blob)  # an extends target holding the same bytes
        try:
            load_recipe(path)
        except RecipeError as exc:
            assert_clean_line(str(exc))


LOG_LINES = st.sampled_from(
    [
        "INFO 06-24 10:00:00 [api_server.py:1] vLLM API server version 0.23.1",
        "ERROR 06-24 10:00:01 [core.py:700] EngineCore failed to start.",
        "Traceback (most recent call last):",
        '  File "/x/kv_cache_utils.py", line 1077, in get_kv_cache_groups',
        "AssertionError: assert page_size_bytes == max_page_size",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "Loading safetensors checkpoint shards: 100% Completed | 15/15",
        "Model loading took 63.71 GiB memory and 120.5 seconds",
        "\x1b[31mERROR\x1b[0m",
        "[autobench] teardown",
    ]
)


@SETTINGS
@given(st.lists(st.one_of(LOG_LINES, TEXT, st.sampled_from(HOSTILE)), max_size=30), st.binary(max_size=200))
def test_any_log_parses_or_is_one_log_error(lines, tail):
    from autobench.logs import parse_log

    tried("files: vLLM logs")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "server.log"
        path.write_bytes("\n".join(lines).encode("utf-8", "replace") + tail)
        try:
            report = parse_log(path)
        except LogError as exc:
            assert_clean_line(str(exc))
            return
        json.dumps(report.to_json_dict(), default=str)
        parse_log(lines)  # the same lines as an iterable


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=20,
)
CONVERSATION = st.fixed_dictionaries(
    {
        "conversations": st.lists(
            st.fixed_dictionaries({"from": st.sampled_from(["human", "gpt", "x"]), "value": TEXT}), max_size=3
        )
    }
)


@SETTINGS
@given(
    st.sampled_from(["sharegpt", "jsonl"]),
    st.one_of(
        st.lists(st.one_of(CONVERSATION, JSON_VALUES), max_size=6).map(lambda xs: ("records", xs)),
        TEXT.map(lambda t: ("text", t)),
        st.binary(max_size=200).map(lambda b: ("text", b.decode("latin-1"))),
    ),
)
def test_any_dataset_loads_or_is_one_bench_error(kind, content):
    from autobench.bench.datasets import load_dataset

    tried("files: datasets")
    form, value = content
    if form == "records":
        text = json.dumps(value) if kind == "sharegpt" else "\n".join(json.dumps(x) for x in value)
    else:
        text = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("d.json" if kind == "sharegpt" else "d.jsonl")
        path.write_text(text, encoding="utf-8", errors="replace")
        try:
            load_dataset(kind=kind, path=str(path), num_prompts=2, max_tokens=16)
        except BenchError as exc:
            assert_clean_line(str(exc))


SSE_BITS = st.sampled_from(
    [
        b"data: ",
        b"data:",
        b"\n",
        b"\r\n",
        b"\r",
        b"\n\n",
        b": ping\n",
        b"event: x\n",
        b"[DONE]",
        b'{"choices":[{"text":"a"}]}',
        b"\xff\xfe",
        b"id: 1\n",
    ]
)


@SETTINGS
@given(st.lists(st.one_of(SSE_BITS, st.binary(max_size=40)), max_size=40), st.integers(1, 64))
def test_the_sse_parser_takes_any_bytes_split_anywhere(parts, cut):
    from autobench.bench.sse import EventTooLarge, SSEParser

    tried("streams: SSE bytes")
    blob = b"".join(parts)
    whole, pieces = SSEParser(limit=4096), SSEParser(limit=4096)
    try:
        one = whole.feed(blob) + whole.finish()
        split: list[bytes] = []
        for i in range(0, len(blob), cut):
            split += pieces.feed(blob[i : i + cut])
        split += pieces.finish()
    except EventTooLarge:
        return
    assert one == split  # the same events, however the bytes were split


@SETTINGS
@given(st.binary(max_size=2048), st.integers(0, 3))
def test_any_ledger_file_opens_or_is_one_ledger_error(blob, where):
    from autobench.ledger import open_ledger

    tried("files: ledgers")
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ledger.db"
        seed = Path(__file__).resolve().parents[2] / "ledger.db"
        shutil.copy(seed, path)
        raw = bytearray(path.read_bytes())
        at = [0, 100, len(raw) // 2, max(len(raw) - len(blob), 0)][where]
        raw[at : at + len(blob)] = blob  # garbage over the header, the schema, mid-file or the tail
        path.write_bytes(bytes(raw))
        try:
            with open_ledger(path, create=False) as ledger:
                ledger.verify()
                list(ledger.runs())
        except (LedgerError, AutobenchError) as exc:
            assert_clean_line(str(exc))

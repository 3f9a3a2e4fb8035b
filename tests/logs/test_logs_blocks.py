"""The block reader makes exactly the decisions of the one-line reference path.

``parse_log`` reads files in big binary blocks, classifies lines in bulk and folds
engine-stats samples column-wise; ``_Parser.feed`` is the plain line-by-line path
it must agree with.  These tests feed the same bytes both ways -- real corpus lines
mixed with stats, access, DEBUG, tqdm and interleaved lines, in blocks as small as
one byte -- and demand identical reports, down to the float sums of the stats.
"""

from __future__ import annotations

import io
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autobench.logs import parse_log
from autobench.logs.facts import BOOT_PATTERNS, STATS, STATS_BYTES, StatsSummary
from autobench.logs.lines import split_records
from autobench.logs.parse import BLOCK_SIZE, _feed_iterable, _feed_reader, _Parser

CORPUS = Path(__file__).parent / "corpus"
CORPUS_LINES = [line.rstrip(b"\r\n") for p in sorted(CORPUS.glob("*.log")) for line in p.read_bytes().split(b"\n")]

STATS_V1 = (
    "(APIServer pid=1) INFO 05-19 10:13:{s:02d} [loggers.py:271] Engine 000: Avg prompt throughput: "
    "{p} tokens/s, Avg generation throughput: {g} tokens/s, Running: {r} reqs, Waiting: {w} reqs, "
    "GPU KV cache usage: {kv}%, Prefix cache hit rate: {hit}%"
)
STATS_V0 = (
    "INFO 04-27 10:11:03 metrics.py:455] Avg prompt throughput: {p} tokens/s, Avg generation "
    "throughput: {g} tokens/s, Running: {r} reqs, Swapped: {w} reqs, Pending: 0 reqs, "
    "GPU KV cache usage: {kv}%, CPU KV cache usage: 0.0%."
)
SYNTHETIC = [
    '(APIServer pid=1) INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    '(APIServer pid=1) INFO:     127.0.0.1:40001 - "GET /Error/failed HTTP/1.1" 404 Not Found',
    "(EngineCore pid=2) DEBUG 05-19 10:13:01 [core.py:512] EngineCore loop active, 3 requests",
    "(EngineCore pid=2) DEBUG 05-19 10:13:01 [core.py:512] ValueError: a DEBUG record is never a cause",
    # a stats record and an error record on one physical line: the full per-record path
    STATS_V1.format(s=1, p="5.0", g="7.5", r=2, w=0, kv="3.1", hit="0.0")
    + "(EngineCore pid=1) ERROR 05-19 10:13:02 [core.py:1] RuntimeError: interleaved failure",
    STATS_V1.format(s=3, p="1.0", g="2.0", r=1, w=0, kv="4.0", hit="0.0")
    + "(APIServer pid=1) INFO 05-19 10:13:03 [metrics.py:1] SpecDecoding metrics: Accepted: 5 tokens, "
    "Drafted: 9 tokens",
    "\x1b[1;36m(APIServer pid=1)\x1b[0;0m " + STATS_V1.format(s=2, p="0.0", g="0.0", r=0, w=0, kv="0.0", hit="1.5"),
    "(APIServer pid=1) INFO 05-19 10:13:03 [metrics.py:1] SpecDecoding metrics: Mean acceptance length: 2.50, "
    "Accepted throughput: 10.00 tokens/s, Drafted throughput: 20.00 tokens/s, Accepted: 100 tokens, "
    "Drafted: 200 tokens, Per-position acceptance rate: 0.700, 0.500, Avg Draft acceptance rate: 50.0%",
    "Capturing CUDA graphs: 100%|██████████| 35/35 [00:01<00:00, 33.86it/s]\r(EngineCore pid=1) INFO "
    "11-24 11:44:21 [gpu_model_runner.py:4000] Graph capturing finished in 3 secs, took 0.30 GiB",
    "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):",
    '(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File "/v/kv_cache_utils.py", line 9, in check',
    "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]     assert a == b",
    "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] AssertionError",
    "",
    "\r",
]


def _stats_line(rng: random.Random) -> str:
    def num() -> str:
        return rng.choice(["0.0", "0.1", "12.3", "4096.7", "1e3", str(rng.randint(0, 999))])

    form = STATS_V1 if rng.random() < 0.8 else STATS_V0
    return form.format(
        s=rng.randint(0, 59), p=num(), g=num(), r=rng.randint(0, 64), w=rng.randint(0, 9), kv=num(), hit=num()
    )


def _reference(data: bytes) -> _Parser:
    """Line by line through feed(), as iterating the binary file yields the lines."""
    parser = _Parser()
    n = 0
    for n, line in enumerate(io.BytesIO(data), 1):
        parser.feed(line, n)
    parser.finish(n)
    return parser


def _blocks(data: bytes, block_size: int, max_line: int | None = None) -> _Parser:
    parser = _Parser()
    n = _feed_reader(
        parser, io.BytesIO(data), "test.log", block_size=block_size, max_line=max_line or max(len(data), block_size)
    )
    parser.finish(n)
    return parser


def _same(a: _Parser, b: _Parser) -> None:
    assert a.report.to_json_dict() == b.report.to_json_dict()
    assert a.stats == b.stats  # the raw float sums too, not just their rounded means
    assert a.spec == b.spec


_PICK = st.one_of(
    st.tuples(st.just("corpus"), st.integers(min_value=0, max_value=len(CORPUS_LINES) - 1)),
    st.tuples(st.just("synthetic"), st.integers(min_value=0, max_value=len(SYNTHETIC) - 1)),
    st.tuples(st.just("stats"), st.integers(min_value=0, max_value=2**16)),
)


def _line(pick: tuple[str, int]) -> bytes:
    kind, i = pick
    if kind == "corpus":
        return CORPUS_LINES[i]
    if kind == "synthetic":
        return SYNTHETIC[i].encode()
    return _stats_line(random.Random(i)).encode()


@settings(max_examples=300, deadline=None)
@given(
    picks=st.lists(_PICK, max_size=120),
    crlf=st.booleans(),
    trailing_newline=st.booleans(),
    block_size=st.sampled_from([1, 2, 7, 64, 333, 4096, BLOCK_SIZE]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_blocks_agree_with_the_line_path(picks, crlf, trailing_newline, block_size, seed) -> None:
    rng = random.Random(seed)
    lines = [_line(p) for p in picks]
    eol = b"\r\n" if crlf else b"\n"
    data = eol.join(lines) + (eol if trailing_newline and lines else b"")
    reference = _reference(data)
    _same(_blocks(data, block_size), reference)
    # iterables of lines (str and bytes) take the batched path
    as_text = data.decode("utf-8", "replace")
    if as_text.encode() == data:
        batched = _Parser()
        batched.finish(_feed_iterable(batched, io.StringIO(as_text), batch_size=rng.choice([1, 3, 8192]))[0])
        _same(batched, reference)


def test_whole_corpus_in_one_log_at_every_small_block_size() -> None:
    data = b"\n".join(CORPUS_LINES)
    reference = _reference(data)
    assert reference.report.root_cause is not None and reference.report.stats is not None
    for block_size in (1, 5, 80, 1000, 65536):
        _same(_blocks(data, block_size), reference)


def _fact_log() -> bytes:
    return (
        b"(EngineCore pid=1) INFO 01-01 00:00:00 [core.py:1] vLLM API server version 0.9.1\n"
        b"(EngineCore pid=1) INFO 01-01 00:00:00 [model.py:1] Resolved architecture: LlamaForCausalLM\n"
        + STATS_V1.format(s=1, p="1.5", g="2.5", r=1, w=0, kv="9.9", hit="3.0").encode()
        + b"\n"
        + b"(EngineCore pid=1) INFO 01-01 00:00:00 [kv.py:1] GPU KV cache size: 425,424 tokens\n"
    )


@pytest.mark.parametrize("block_size", range(1, 120))
def test_a_line_cut_by_any_block_boundary_is_read_whole(block_size) -> None:
    r = _blocks(_fact_log(), block_size).report
    assert (r.vllm_version, r.architecture, r.kv_cache_tokens) == ("0.9.1", "LlamaForCausalLM", 425_424)
    assert r.lines == {
        "vllm_version": 1,
        "architecture": 2,
        "kv_cache_tokens": 4,
        "kv_cache_device": 4,
        "ready": 3,
    }  # running requests: serving
    assert r.stats is not None and (r.stats["first_line"], r.stats["gen_tps_max"]) == (3, 2.5)
    assert r.lines_read == 4


def test_a_trigger_line_exactly_at_a_block_boundary() -> None:
    data = _fact_log()
    second = data.index(b"\n") + 1  # the architecture line starts a block and ends the next
    for block_size in (second, data.index(b"\n", second) + 1 - second, data.index(b"\n", second) + 1):
        r = _blocks(data, block_size).report
        assert (r.architecture, r.lines["architecture"]) == ("LlamaForCausalLM", 2), block_size


def test_a_traceback_frame_ending_a_block_still_reads_the_source_line_of_the_next() -> None:
    seed = (CORPUS / "901_seed-blocked-page-size-assert.log").read_bytes()
    expected = _reference(seed).report.root_cause
    assert expected is not None and expected.message.startswith("assert ")
    frame = seed.index(b'File "', seed.index(b"Traceback"))
    for block_size in (seed.index(b"\n", frame) + 1, seed.index(b"\n", frame) + 2, 97, 1):
        assert _blocks(seed, block_size).report.root_cause == expected, block_size


def test_a_source_line_without_any_trigger_is_read_after_a_frame_across_blocks() -> None:
    """The line under a traceback frame is read whatever it holds (here 'check()'), so
    the AssertionError below is not blamed on an older frame's 'assert' line."""
    data = b"".join(
        b"(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] " + line + b"\n"
        for line in [
            b"Traceback (most recent call last):",
            b'  File "/v/a.py", line 1, in f',
            b"    assert x == y",
            b'  File "/v/b.py", line 2, in g',
            b"    check()",
            b"AssertionError",
        ]
    )
    expected = _reference(data).report.root_cause
    assert expected is not None
    assert (expected.message, expected.location, expected.line) == ("AssertionError", "b.py:2", 6)
    for block_size in range(1, len(data) + 2):
        assert _blocks(data, block_size).report.root_cause == expected, block_size


def test_a_stats_line_holding_another_record_is_read_record_by_record() -> None:
    mixed = SYNTHETIC[4].encode()
    assert STATS_BYTES.search(mixed) and b"RuntimeError" in mixed
    spec = SYNTHETIC[5].encode()
    data = b"\n".join([SYNTHETIC[0].encode(), mixed, _stats_line(random.Random(1)).encode(), spec, spec])
    for block_size in (1, 50, 4096):
        r = _blocks(data, block_size).report
        assert r.root_cause is not None and r.root_cause.message == "RuntimeError: interleaved failure"
        assert r.root_cause.line == 2
        assert r.stats is not None and (r.stats["samples"], r.stats["first_line"]) == (4, 2)
        assert r.spec_decode is not None and r.spec_decode["samples"] == 2
        assert r.spec_decode["drafted_tokens"] == 18 and r.spec_decode["last_line"] == 5
        assert r.to_json_dict() == _reference(data).report.to_json_dict()


def test_crlf_and_a_missing_final_newline() -> None:
    log = CORPUS / "900_seed-done-qwen35-dflash.log"
    lf = parse_log(log).to_json_dict()
    assert lf.pop("encoding") == "utf-8"  # _blocks reads bytes it was handed: no encoding to report
    lf["encoding"] = None
    crlf = log.read_bytes().replace(b"\n", b"\r\n")
    assert _blocks(crlf, 64).report.to_json_dict() == lf
    assert _blocks(crlf.rstrip(b"\r\n"), 64).report.to_json_dict() == lf
    last = b"(APIServer pid=1) INFO 01-01 00:00:00 [launcher.py:1] Resolved architecture: X"
    r = _blocks(b"\n\n" + last, 5).report
    assert (r.architecture, r.lines["architecture"], r.lines_read) == ("X", 3, 3)
    assert _blocks(b"", 5).report.lines_read == 0
    assert _blocks(b"\n", 5).report.lines_read == 1


def test_an_overlong_line_is_cut_and_memory_stays_bounded() -> None:
    head = b"INFO 01-01 00:00:00 [x.py:1] Resolved architecture: A "
    data = (
        head + b"x" * 5000 + b" Using max model len 4096\n"
        b"INFO 01-01 00:00:00 [x.py:1] GPU KV cache size: 1,000 tokens\n"
    )
    r = _blocks(data, 16, max_line=256).report
    assert (r.architecture, r.max_model_len, r.kv_cache_tokens) == ("A", None, 1000)  # cut after 256 bytes
    assert r.lines == {"architecture": 1, "kv_cache_tokens": 2, "kv_cache_device": 2}
    assert r.lines_read == 2
    r = _blocks(data, 16).report  # without the cut the whole line is read
    assert r.max_model_len == 4096


class _CountingReader(io.RawIOBase):
    """A stream that hands out a long log lazily and records every read request."""

    def __init__(self, chunk: bytes, repeat: int) -> None:
        self.chunk, self.left, self.sizes = chunk, repeat, []

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.sizes.append(size)
        if not self.left:
            return b""
        self.left -= 1
        return self.chunk


def test_streams_are_read_in_bounded_blocks() -> None:
    line = STATS_V1.format(s=1, p="1.0", g="2.0", r=1, w=0, kv="5.0", hit="0.0").encode() + b"\n"
    reader = _CountingReader(line * 1000, repeat=50)  # 50 reads of ~250 KB, never the whole stream
    r = parse_log(reader)
    assert all(0 < size <= BLOCK_SIZE for size in reader.sizes)
    assert r.stats is not None and r.stats["samples"] == 50_000 and r.lines_read == 50_000
    assert (r.stats["first_line"], r.stats["last_line"]) == (1, 50_000)


# --- pieces of the block path ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**16), min_size=1, max_size=60))
def test_stats_rows_fold_exactly_like_one_sample_at_a_time(seeds) -> None:
    text = "\n".join(_stats_line(random.Random(s)) for s in seeds)
    one = StatsSummary()
    for m in STATS.finditer(text):
        one.add(m, 7)
    bulk = StatsSummary()
    bulk.add_rows(STATS_BYTES.findall(text.encode()), 7, 7)
    assert bulk == one


def test_every_fact_pattern_knows_the_keys_it_can_set() -> None:
    """A pattern's trigger dies once all its keys are known, so its keys must cover
    every fact it ever sets (checked on every corpus record it matches)."""
    matched = set()
    for raw in CORPUS_LINES:
        for rec in split_records(raw.decode("utf-8", "replace")):
            for p in BOOT_PATTERNS:
                m = p.regex.search(rec.msg) if p.needle in rec.msg else None
                if m:
                    assert set(p.facts(m)) <= set(p.keys), p.needle
                    matched.add(p.needle)
    assert {p.needle for p in BOOT_PATTERNS} - matched <= {"LLM engine (v", "kv_cache_size=", "GiB for KV cache"}


def test_known_facts_and_a_settled_cause_stop_triggering() -> None:
    parser = _Parser()
    full = parser._trigger
    assert full.search(b"Resolved architecture: B") and full.search(b"ValueError: x")
    parser.feed(b"INFO 01-01 00:00:00 [x.py:1] Resolved architecture: A", 1)
    parser.feed(b"ERROR 01-01 00:00:00 [x.py:1] torch.OutOfMemoryError: CUDA out of memory.", 2)
    assert not parser._trigger.search(b"Resolved architecture: B")
    assert not parser._trigger.search(b"ValueError: x")
    assert parser._trigger.search(b"SpecDecoding metrics: Accepted: 1 tokens")  # summaries never settle
    r = parse_log(
        [
            b"INFO 01-01 00:00:00 [x.py:1] Resolved architecture: A",
            b"ERROR 01-01 00:00:00 [x.py:1] torch.OutOfMemoryError: CUDA out of memory.",
            b"ERROR 01-01 00:00:00 [x.py:1] ValueError: No available memory for the cache blocks.",
        ]
    )
    assert r.root_cause is not None and (r.root_cause.category, r.root_cause.line) == ("gpu_memory", 2)


_GREEDY_NUM = r"(\d+(?:\.\d+)?)"
_GREEDY_STATS = re.compile(
    r"Avg prompt throughput: "
    + _GREEDY_NUM
    + r" tokens/s, Avg generation throughput: "
    + _GREEDY_NUM
    + r" tokens/s, Running: (\d+) reqs?, (?:Swapped: (\d+) reqs?, )?(?:Pending|Waiting): (\d+) reqs?"
    r"(?:, GPU KV cache usage: " + _GREEDY_NUM + r"%)?(?:, CPU KV cache usage: " + _GREEDY_NUM + r"%)?"
    r"(?:, Prefix cache hit rate: " + _GREEDY_NUM + r"%)?"
)
_NUMS = st.sampled_from(["0", "12", "3.5", "7.", ".5", "1.2.3", "4a", ""])
_REQS = st.sampled_from([" reqs", " req", " reqss", "reqs", ""])


@st.composite
def _stats_like(draw) -> str:
    """Stats lines with every field right, wrong or missing."""
    n = lambda: draw(_NUMS)  # noqa: E731
    text = f"Avg prompt throughput: {n()} tokens/s, Avg generation throughput: {n()} tokens/s, "
    text += f"Running: {n()}{draw(_REQS)}, "
    if draw(st.booleans()):
        text += f"Swapped: {n()}{draw(_REQS)}, "
    text += f"{draw(st.sampled_from(['Pending', 'Waiting', 'Queued']))}: {n()}{draw(_REQS)}"
    for name in ("GPU KV cache usage", "CPU KV cache usage", "Prefix cache hit rate"):
        if draw(st.booleans()):
            text += f"{draw(st.sampled_from([', ', ',', '']))}{name}: {n()}{draw(st.sampled_from(['%', '', '%.']))}"
    return text + draw(st.sampled_from(["", ".", "\n", "%"]))


@settings(max_examples=500, deadline=None)
@given(st.lists(_stats_like(), min_size=1, max_size=4))
def test_the_possessive_stats_regex_matches_what_the_greedy_one_did(lines) -> None:
    text = "".join(lines)
    assert STATS.findall(text) == _GREEDY_STATS.findall(text)
    assert [m.span() for m in STATS.finditer(text)] == [m.span() for m in _GREEDY_STATS.finditer(text)]

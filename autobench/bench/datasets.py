"""Prompt datasets: ShareGPT V3 JSON, synthetic random-length prompts, and JSONL.

Everything here runs before the first request: a file that cannot be read or
does not have the expected shape raises ``BenchError`` (one line, with the file
and, for JSONL, the line number); single prompts that cannot be used are
skipped and counted by reason in ``Dataset.skipped``.

Prompt lengths (for building random prompts and for the ShareGPT / JSONL length
filter) are counted with the served model's tokenizer when one is given
(``autobench.bench.tokenizer``: what the server will count, special tokens
included); without one they are estimated as ``ceil(len(text) / 4)`` tokens
(``estimate_tokens``), and the dataset says so (``tokenizer`` = ``"estimated"``).
Every token count in the results comes from the server's usage report.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autobench.bench.records import MAX_DATASET_BYTES, MAX_RECORD_BYTES, FieldMap, PromptRecord, read_records
from autobench.errors import BenchError

if TYPE_CHECKING:
    from autobench.bench.tokenizer import BenchTokenizer
    from autobench.hub.datasets import DatasetFile

KINDS = ("sharegpt", "random", "jsonl", "parquet")
__all__ = ["MAX_DATASET_BYTES", "MAX_RECORD_BYTES", "Dataset", "Prompt", "load_dataset"]


@dataclass(frozen=True)
class Prompt:
    text: str
    est_tokens: int
    max_tokens: int
    #: The record's category (``bench.dataset.fields.category``), None when unmapped.
    category: str | None = None
    #: A conversation's later user turns (the record's turns[1:]); empty for a single-turn prompt.
    turns: tuple[str, ...] = ()


@dataclass
class Dataset:
    kind: str
    path: str | None
    prompts: list[Prompt]
    warmup: list[Prompt]
    available: int  # usable prompts in the source before sampling
    skipped: Counter[str] = field(default_factory=Counter)
    reused: int = 0  # prompts sent more than once because the source had too few
    #: The tokenizer that measured the prompts (``repo@sha``, ``path@sha256:...``) or "estimated".
    tokenizer: str = "estimated"
    #: Why no tokenizer was used, when one was wanted (None: a tokenizer was used, or none asked).
    tokenizer_fallback: str | None = None
    #: Context put before every question (autobench.bench.workload): ``depth`` and the shared
    #: prefix's ``shared_prefix_prompts`` / ``shared_prefix_tokens``; empty when none.
    context: dict[str, int] = field(default_factory=dict)
    #: The file the prompts came from: a Hub dataset's repo, commit and file, or a local path,
    #: with its sha256 (autobench.bench.source); None for random prompts.
    origin: DatasetFile | None = None

    def fingerprint(self) -> str:
        """sha256 over the measured prompts, in order: equal iff the sample is equal."""
        h = hashlib.sha256()
        for p in self.prompts:
            h.update(p.text.encode())
            h.update(b"\x00%d\x00" % p.max_tokens)
            if p.category is not None or p.turns:  # only then: a sample without them keeps its digest
                h.update(json.dumps([p.category, list(p.turns)]).encode() + b"\x00")
        return h.hexdigest()


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def infer_kind(kind: str | None, path: str | None) -> str:
    """``--dataset-kind`` if given; else ``.jsonl`` -> jsonl, ``.parquet`` -> parquet, any other
    file -> sharegpt, none -> random."""
    if kind:
        if kind not in KINDS:
            raise BenchError(f"unknown dataset kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
        return kind
    if path is None:
        return "random"
    if path.endswith(".parquet"):
        return "parquet"
    return "jsonl" if path.endswith(".jsonl") else "sharegpt"


def load_dataset(
    *,
    kind: str | None,
    path: str | None,
    num_prompts: int,
    warmup: int = 0,
    max_tokens: int = 256,
    seed: int = 0,
    min_prompt_tokens: int = 4,
    max_prompt_tokens: int = 1024,
    random_input_len: int = 256,
    random_range_ratio: float = 0.0,
    tokenizer: BenchTokenizer | None = None,
    tokenizer_fallback: str | None = None,
    fields: FieldMap | None = None,
    category: str | None = None,
) -> Dataset:
    """Load, filter and sample ``num_prompts`` measured prompts plus ``warmup`` distinct ones.

    With ``tokenizer``, lengths are real token counts; else estimates (``tokenizer_fallback``
    says why, and is recorded).
    """
    kind = infer_kind(kind, path)
    if num_prompts < 1:
        raise BenchError("--num-prompts must be at least 1")
    want = num_prompts + warmup
    rng = random.Random(seed)
    tok_id = tokenizer.id if tokenizer is not None else "estimated"
    why = None if tokenizer is not None else tokenizer_fallback
    if kind == "random" and category is not None:
        raise BenchError(
            f"--category {category}: random prompts have no category", hint="a dataset file with a category field"
        )
    if kind == "random":
        prompts = _random_prompts(want, rng, random_input_len, random_range_ratio, max_tokens, tokenizer)
        return Dataset(
            kind, None, prompts[:num_prompts], prompts[num_prompts:], want, tokenizer=tok_id, tokenizer_fallback=why
        )
    if path is None:
        raise BenchError(f"dataset kind {kind!r} needs a file", hint="pass --dataset PATH")
    skipped: Counter[str] = Counter()
    f = _Filter(skipped, min_prompt_tokens, max_prompt_tokens, tokenizer, rng)
    for record in read_records(path, kind, fields, skipped):  # autobench.bench.records
        f.add_record(record, max_tokens)
    pool = f.finish()
    if category is not None:
        pool = only_category(pool, category, want, path)
    if not pool:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) or "the file has no entries"
        raise BenchError(
            f"no usable prompt in the dataset ({detail})",
            location=path,
            hint="check the file format and --max-prompt-tokens / --min-prompt-tokens",
        )
    available = len(pool)
    rng.shuffle(pool)
    reused = 0
    if len(pool) < want:
        # Too few prompts: reuse them in the same shuffled order (counted as reused).
        reused = want - len(pool)
        pool = [pool[i % len(pool)] for i in range(want)]
    return Dataset(kind, path, pool[:num_prompts], pool[num_prompts:want], available, skipped, reused, tok_id, why)


def only_category(pool: list[Prompt], category: str, want: int, path: str) -> list[Prompt]:
    """The prompts of ``category``; fewer than ``want`` (measured + warm-up) is an error, never
    reuse: a category's cell must measure that category's own prompts."""
    got = [p for p in pool if p.category == category]
    if len(got) < want:
        seen = Counter(p.category for p in pool if p.category is not None)
        listed = ", ".join(f"{k} ({n})" for k, n in sorted(seen.items())) or "none (no category field mapped?)"
        raise BenchError(
            f"category {category!r} has {len(got):,} usable prompts, {want:,} asked (prompts + warm-up)",
            location=path,
            hint=f"ask for fewer, or another category; the dataset's categories: {listed}",
        )
    return got


class _Filter:
    """Collects candidate prompts, then measures them all at once (the tokenizer encodes in
    batches) and keeps those within [lo, hi] tokens."""

    def __init__(self, skipped: Counter[str], lo: int, hi: int, tok: BenchTokenizer | None, rng: random.Random):
        self.skipped, self.lo, self.hi, self.tok, self.rng = skipped, lo, hi, tok, rng
        self.texts: list[str] = []
        self.kept: list[tuple[int, PromptRecord]] = []  # (max_tokens, the record) of each text
        self.fixed: list[Prompt] = []  # built from a token count

    def add_record(self, record: PromptRecord, max_tokens: int) -> None:
        """A record from autobench.bench.records; its own max_tokens wins over the bench's."""
        mt = record.max_tokens if record.max_tokens is not None else max_tokens
        if record.prompt_tokens is not None:
            self.add_length(record.prompt_tokens, mt)
            return
        for turn in record.turns:
            if not turn.strip():
                self.skipped["empty_prompt"] += 1
                return
            if len(turn) > MAX_RECORD_BYTES or len(turn.encode("utf-8")) > MAX_RECORD_BYTES:
                self.skipped["record_too_large"] += 1
                return
        self.texts.append(record.text)
        self.kept.append((mt, record))

    def add_length(self, n_tokens: int, max_tokens: int) -> None:
        """A JSONL record giving a prompt length instead of text: a random prompt of that length."""
        if not self.lo <= n_tokens <= self.hi:
            self.skipped["prompt_too_short" if n_tokens < self.lo else "prompt_too_long"] += 1
            return
        text, n = _random_prompt(n_tokens, self.rng, self.tok)
        self.fixed.append(Prompt(text, n, max_tokens))

    def finish(self) -> list[Prompt]:
        """The kept records within [lo, hi] tokens (the first turn's length) as prompts."""
        counts = self.tok.count_many(self.texts) if self.tok is not None else [estimate_tokens(t) for t in self.texts]
        out: list[Prompt] = []
        for n, (mt, record) in zip(counts, self.kept, strict=True):
            if n < self.lo:
                self.skipped["prompt_too_short"] += 1
            elif n > self.hi:
                self.skipped["prompt_too_long"] += 1
            else:
                out.append(Prompt(record.text, n, mt, record.category, record.turns[1:]))
        return out + self.fixed  # (the pool is shuffled with the seed next)


_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "that",
    "with",
    "as",
    "it",
    "by",
    "at",
    "from",
    "this",
    "be",
    "are",
    "or",
    "an",
    "was",
    "which",
    "you",
    "not",
    "have",
    "but",
    "can",
    "all",
    "more",
    "one",
    "new",
    "will",
    "use",
    "time",
    "data",
    "model",
    "we",
    "their",
    "has",
    "been",
    "other",
    "if",
    "when",
    "they",
    "these",
    "two",
    "may",
    "some",
    "there",
    "would",
    "like",
    "also",
    "first",
    "any",
    "system",
    "over",
    "into",
    "only",
    "such",
    "about",
    "then",
    "its",
    "most",
]


def _random_prompt(n_tokens: int, rng: random.Random, tok: BenchTokenizer | None) -> tuple[str, int]:
    """(text, its length in tokens): exact with a tokenizer, else random words of ~n_tokens * 4 chars."""
    if tok is not None:
        return tok.prompt_of_length(n_tokens, rng)
    words: list[str] = []
    chars = 0
    while chars < n_tokens * 4:
        w = rng.choice(_WORDS)
        words.append(w)
        chars += len(w) + 1
    text = " ".join(words)
    return text, estimate_tokens(text)


def _random_prompts(
    n: int, rng: random.Random, input_len: int, ratio: float, max_tokens: int, tok: BenchTokenizer | None = None
) -> list[Prompt]:
    """Prompts of ``input_len`` tokens +/- ``ratio`` (uniform): exact token counts with a
    tokenizer (built as vLLM's random dataset builds them), estimated ones without."""
    if input_len < 1:
        raise BenchError("--random-input-len must be at least 1")
    if not 0.0 <= ratio < 1.0:
        raise BenchError("--random-range-ratio must be in [0, 1)")
    lo = max(1, int(input_len * (1 - ratio)))
    hi = max(lo, int(input_len * (1 + ratio)))
    out = []
    for _ in range(n):
        text, count = _random_prompt(rng.randint(lo, hi), rng, tok)
        out.append(Prompt(text, count, max_tokens))
    return out

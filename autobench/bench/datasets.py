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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autobench.digits import JSONLimitError, load_json
from autobench.errors import BenchError
from autobench.files import read_lines, read_regular

if TYPE_CHECKING:
    from autobench.bench.tokenizer import BenchTokenizer

KINDS = ("sharegpt", "random", "jsonl")


@dataclass(frozen=True)
class Prompt:
    text: str
    est_tokens: int
    max_tokens: int


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

    def fingerprint(self) -> str:
        """sha256 over the measured prompts, in order: equal iff the sample is equal."""
        h = hashlib.sha256()
        for p in self.prompts:
            h.update(p.text.encode())
            h.update(b"\x00%d\x00" % p.max_tokens)
        return h.hexdigest()


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def infer_kind(kind: str | None, path: str | None) -> str:
    """``--dataset-kind`` if given; else ``.jsonl`` -> jsonl, any other file -> sharegpt, none -> random."""
    if kind:
        if kind not in KINDS:
            raise BenchError(f"unknown dataset kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
        return kind
    if path is None:
        return "random"
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
    if kind == "random":
        prompts = _random_prompts(want, rng, random_input_len, random_range_ratio, max_tokens, tokenizer)
        return Dataset(
            kind, None, prompts[:num_prompts], prompts[num_prompts:], want, tokenizer=tok_id, tokenizer_fallback=why
        )
    if path is None:
        raise BenchError(f"dataset kind {kind!r} needs a file", hint="pass --dataset PATH")
    skipped: Counter[str] = Counter()
    f = _Filter(skipped, min_prompt_tokens, max_prompt_tokens, tokenizer, rng)
    if kind == "sharegpt":
        _sharegpt(path, f, max_tokens)
    else:
        _jsonl(path, f, max_tokens)
    pool = f.finish()
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


#: The largest dataset file read (ShareGPT V3 is 642 MiB; a JSON array is parsed whole).
MAX_DATASET_BYTES = 2**30
#: The largest record: one JSONL line, or one prompt's text (bytes of UTF-8).  A longer one is
#: skipped as ``record_too_large`` without being held in memory whole.
MAX_RECORD_BYTES = 2**20

_MISSING_HINT = "download ShareGPT_V3_unfiltered_cleaned_split.json or fix --dataset"


def _read_text(path: str) -> str:
    """The whole file as text: a regular file of at most MAX_DATASET_BYTES, UTF-8."""
    raw = read_regular(path, what="dataset file", limit=MAX_DATASET_BYTES, error=BenchError, missing_hint=_MISSING_HINT)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BenchError(f"dataset is not UTF-8 text (byte {exc.start})", location=path) from exc


def _loads(text: str, where: str, what: str, hint: str) -> Any:
    """``json.loads`` whose every failure is one BenchError line (not a RecursionError or a traceback)."""
    try:
        return load_json(text)
    except JSONLimitError as exc:
        if exc.too_deep:
            raise BenchError(f"{what} is nested too deeply to read ({exc.msg})", location=where, hint=hint) from exc
        raise BenchError(f"{what} has a value that cannot be read: {exc.msg}", location=where, hint=hint) from exc
    except json.JSONDecodeError as exc:
        loc = f"{where}:{exc.lineno}:{exc.colno}" if what == "dataset" else where
        raise BenchError(f"{what} is not valid JSON: {exc.msg}", location=loc, hint=hint) from exc
    except RecursionError as exc:
        raise BenchError(f"{what} is nested too deeply to read", location=where, hint=hint) from exc
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise BenchError(f"{what} has a value that cannot be read: {exc}", location=where, hint=hint) from exc


def _lines(path: str) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of each line; text None for a line over MAX_RECORD_BYTES (never held
    whole).  autobench.files.read_lines counts every byte read against MAX_DATASET_BYTES, those
    of a skipped line too (``/proc/self/pagemap`` read past 3.9 GB before)."""
    for lineno, line in read_lines(
        path,
        what="dataset file",
        limit=MAX_DATASET_BYTES,
        max_line=MAX_RECORD_BYTES,
        error=BenchError,
        missing_hint=_MISSING_HINT,
    ):
        if line is None:
            yield lineno, None
            continue
        try:
            yield lineno, line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BenchError(f"line is not UTF-8 text (byte {exc.start})", location=f"{path}:{lineno}") from exc


class _Filter:
    """Collects candidate prompts, then measures them all at once (the tokenizer encodes in
    batches) and keeps those within [lo, hi] tokens."""

    def __init__(self, skipped: Counter[str], lo: int, hi: int, tok: BenchTokenizer | None, rng: random.Random):
        self.skipped, self.lo, self.hi, self.tok, self.rng = skipped, lo, hi, tok, rng
        self.texts: list[str] = []
        self.max_tokens: list[int] = []
        self.fixed: list[Prompt] = []  # built from a token count

    def add(self, text: str, max_tokens: int) -> None:
        if not text.strip():
            self.skipped["empty_prompt"] += 1
            return
        if len(text) > MAX_RECORD_BYTES or len(text.encode("utf-8")) > MAX_RECORD_BYTES:
            self.skipped["record_too_large"] += 1
            return
        self.texts.append(text)
        self.max_tokens.append(max_tokens)

    def add_length(self, n_tokens: int, max_tokens: int) -> None:
        """A JSONL record giving a prompt length instead of text: a random prompt of that length."""
        if not self.lo <= n_tokens <= self.hi:
            self.skipped["prompt_too_short" if n_tokens < self.lo else "prompt_too_long"] += 1
            return
        text, n = _random_prompt(n_tokens, self.rng, self.tok)
        self.fixed.append(Prompt(text, n, max_tokens))

    def finish(self) -> list[Prompt]:
        counts = self.tok.count_many(self.texts) if self.tok is not None else [estimate_tokens(t) for t in self.texts]
        out: list[Prompt] = []
        for text, n, mt in zip(self.texts, counts, self.max_tokens, strict=True):
            if n < self.lo:
                self.skipped["prompt_too_short"] += 1
            elif n > self.hi:
                self.skipped["prompt_too_long"] += 1
            else:
                out.append(Prompt(text, n, mt))
        return out + self.fixed  # (the pool is shuffled with the seed next)


def _sharegpt(path: str, f: _Filter, max_tokens: int) -> None:
    data = _loads(
        _read_text(path), path, "dataset", "ShareGPT V3 is one JSON array; use --dataset-kind jsonl for JSON lines"
    )
    if not isinstance(data, list):
        raise BenchError(
            f"ShareGPT dataset must be a JSON array of conversations, got {type(data).__name__}", location=path
        )
    skipped = f.skipped
    for entry in data:
        conv = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(conv, list):
            skipped["no_conversations"] += 1
            continue
        if len(conv) < 2:
            skipped["fewer_than_2_turns"] += 1
            continue
        first = conv[0]
        if not isinstance(first, dict) or not isinstance(first.get("value"), str):
            skipped["bad_turn"] += 1
            continue
        if first.get("from", "human") not in ("human", "user"):
            skipped["first_turn_not_human"] += 1
            continue
        f.add(first["value"], max_tokens)


def _jsonl(path: str, f: _Filter, max_tokens: int) -> None:
    skipped = f.skipped
    for lineno, line in _lines(path):
        if line is None:
            skipped["record_too_large"] += 1
            continue
        if not line.strip():
            continue
        obj = _loads(line, f"{path}:{lineno}", "line", _JSONL_HINT)
        if isinstance(obj, str):
            f.add(obj, max_tokens)
            continue
        if not isinstance(obj, dict) or not (isinstance(obj.get("prompt"), str) or "prompt_tokens" in obj):
            skipped["no_prompt_field"] += 1
            continue
        mt = max_tokens
        if "max_tokens" in obj:
            mt = obj["max_tokens"]
            if not _positive_int(mt):
                skipped["bad_max_tokens"] += 1
                continue
        if isinstance(obj.get("prompt"), str):
            f.add(obj["prompt"], mt)
        elif _positive_int(obj["prompt_tokens"]) and obj["prompt_tokens"] <= MAX_RECORD_BYTES // 4:
            f.add_length(obj["prompt_tokens"], mt)
        else:
            skipped["bad_prompt_tokens"] += 1


_JSONL_HINT = (
    'each line must be a JSON string, {"prompt": "...", "max_tokens": N} or {"prompt_tokens": N, "max_tokens": M}'
)


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


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

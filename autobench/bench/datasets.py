"""Prompt datasets: ShareGPT V3 JSON, synthetic random-length prompts, and JSONL.

Everything here runs before the first request: a file that cannot be read or
does not have the expected shape raises ``BenchError`` (one line, with the file
and, for JSONL, the line number); single prompts that cannot be used are
skipped and counted by reason in ``Dataset.skipped``.

No tokenizer is loaded: lengths used for *filtering* are estimated as
``ceil(len(text) / 4)`` tokens (``estimate_tokens``); every token count in the
results comes from the server's usage report.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from autobench.errors import BenchError
from autobench.files import human_bytes, open_regular, read_regular

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
) -> Dataset:
    """Load, filter and sample ``num_prompts`` measured prompts plus ``warmup`` distinct ones."""
    kind = infer_kind(kind, path)
    if num_prompts < 1:
        raise BenchError("--num-prompts must be at least 1")
    want = num_prompts + warmup
    rng = random.Random(seed)
    if kind == "random":
        prompts = _random_prompts(want, rng, random_input_len, random_range_ratio, max_tokens)
        return Dataset(kind, None, prompts[:num_prompts], prompts[num_prompts:], available=want)
    if path is None:
        raise BenchError(f"dataset kind {kind!r} needs a file", hint="pass --dataset PATH")
    skipped: Counter[str] = Counter()
    if kind == "sharegpt":
        pool = _sharegpt(path, skipped, max_tokens, min_prompt_tokens, max_prompt_tokens)
    else:
        pool = _jsonl(path, skipped, max_tokens, min_prompt_tokens, max_prompt_tokens)
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
    return Dataset(kind, path, pool[:num_prompts], pool[num_prompts:want], available, skipped, reused)


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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        loc = f"{where}:{exc.lineno}:{exc.colno}" if what == "dataset" else where
        raise BenchError(f"{what} is not valid JSON: {exc.msg}", location=loc, hint=hint) from exc
    except RecursionError as exc:
        raise BenchError(f"{what} is nested too deeply to read", location=where, hint=hint) from exc
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise BenchError(f"{what} has a value that cannot be read: {exc}", location=where, hint=hint) from exc


def _lines(path: str) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of each line; text None for a line over MAX_RECORD_BYTES (never held whole)."""
    with open_regular(
        path, what="dataset file", error=BenchError, limit=MAX_DATASET_BYTES, missing_hint=_MISSING_HINT
    ) as f:
        total = 0
        lineno = 0
        while True:
            try:
                line = f.readline(MAX_RECORD_BYTES + 1)
            except OSError as exc:
                raise BenchError(f"cannot read dataset: {exc.strerror or exc}", location=path) from exc
            if not line:
                return
            lineno += 1
            total += len(line)
            too_large = len(line) > MAX_RECORD_BYTES and not line.endswith(b"\n")
            while too_large and not line.endswith(b"\n"):  # skip the rest of the line, a piece at a time
                line = f.readline(MAX_RECORD_BYTES)
                total += len(line)
                if not line:
                    break
            if total > MAX_DATASET_BYTES:  # it grew while it was read
                raise BenchError(f"dataset is over the {human_bytes(MAX_DATASET_BYTES)} limit", location=path)
            if too_large:
                yield lineno, None
                continue
            try:
                yield lineno, line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BenchError(f"line is not UTF-8 text (byte {exc.start})", location=f"{path}:{lineno}") from exc


def _accept(text: str, skipped: Counter[str], max_tokens: int, lo: int, hi: int) -> Prompt | None:
    if not text.strip():
        skipped["empty_prompt"] += 1
        return None
    if len(text) > MAX_RECORD_BYTES or len(text.encode("utf-8")) > MAX_RECORD_BYTES:
        skipped["record_too_large"] += 1
        return None
    est = estimate_tokens(text)
    if est < lo:
        skipped["prompt_too_short"] += 1
        return None
    if est > hi:
        skipped["prompt_too_long"] += 1
        return None
    return Prompt(text, est, max_tokens)


def _sharegpt(path: str, skipped: Counter[str], max_tokens: int, lo: int, hi: int) -> list[Prompt]:
    data = _loads(
        _read_text(path), path, "dataset", "ShareGPT V3 is one JSON array; use --dataset-kind jsonl for JSON lines"
    )
    if not isinstance(data, list):
        raise BenchError(
            f"ShareGPT dataset must be a JSON array of conversations, got {type(data).__name__}", location=path
        )
    out: list[Prompt] = []
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
        p = _accept(first["value"], skipped, max_tokens, lo, hi)
        if p is not None:
            out.append(p)
    return out


def _jsonl(path: str, skipped: Counter[str], max_tokens: int, lo: int, hi: int) -> list[Prompt]:
    out: list[Prompt] = []
    for lineno, line in _lines(path):
        if line is None:
            skipped["record_too_large"] += 1
            continue
        if not line.strip():
            continue
        obj = _loads(
            line, f"{path}:{lineno}", "line", 'each line must be a JSON string or {"prompt": "...", "max_tokens": N}'
        )
        mt = max_tokens
        if isinstance(obj, str):
            text = obj
        elif isinstance(obj, dict) and isinstance(obj.get("prompt"), str):
            text = obj["prompt"]
            if "max_tokens" in obj:
                v = obj["max_tokens"]
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    skipped["bad_max_tokens"] += 1
                    continue
                mt = v
        else:
            skipped["no_prompt_field"] += 1
            continue
        p = _accept(text, skipped, mt, lo, hi)
        if p is not None:
            out.append(p)
    return out


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


def _random_prompts(n: int, rng: random.Random, input_len: int, ratio: float, max_tokens: int) -> list[Prompt]:
    """Random word sequences of ~``input_len`` estimated tokens, +/- ``ratio`` (uniform)."""
    if input_len < 1:
        raise BenchError("--random-input-len must be at least 1")
    if not 0.0 <= ratio < 1.0:
        raise BenchError("--random-range-ratio must be in [0, 1)")
    lo = max(1, int(input_len * (1 - ratio)))
    hi = max(lo, int(input_len * (1 + ratio)))
    out = []
    for _ in range(n):
        target = rng.randint(lo, hi)
        words: list[str] = []
        chars = 0
        while chars < target * 4:
            w = rng.choice(_WORDS)
            words.append(w)
            chars += len(w) + 1
        text = " ".join(words)
        out.append(Prompt(text, estimate_tokens(text), max_tokens))
    return out

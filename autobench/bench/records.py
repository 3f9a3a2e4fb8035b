"""Prompt records read from a dataset file: ShareGPT, JSONL and parquet (issue #33).

``read_records(path, kind, fields, skipped)`` yields :class:`PromptRecord`\\ s, one per usable
record, streaming and bounded:

- ShareGPT V3 is one JSON array, parsed whole (at most ``MAX_DATASET_BYTES``); a record's turns
  are its human/user messages in order.
- JSONL is read line by line (a line at most ``MAX_RECORD_BYTES``, the file at most
  ``MAX_DATASET_BYTES``).  Without a field mapping a line is a JSON string, ``{"prompt": ...,
  "max_tokens": N}`` or ``{"prompt_tokens": N, ...}`` (as before); with one (``FieldMap``) the
  named fields are read.
- parquet is read with pyarrow, ``ParquetFile.iter_batches`` over the mapped columns only, a
  few rows at a time (``BATCH_ROWS``); without a mapping the columns ``prompt`` (and
  ``max_tokens``, when present) are read.

A record that cannot be used is skipped and counted by reason in ``skipped``.  A mapping that
does not fit the file -- a mapped field a JSONL record lacks, a column the parquet file lacks --
is one located BenchError (``file:line``, the field, the fields there), nothing benched.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from autobench.digits import JSONLimitError, load_json
from autobench.errors import BenchError
from autobench.files import read_lines, read_regular

#: The largest dataset file read (ShareGPT V3 is 642 MiB; a JSON array is parsed whole).
MAX_DATASET_BYTES = 2**30
#: The largest record: one JSONL line, or one prompt's text (bytes of UTF-8).  A longer one is
#: skipped as ``record_too_large`` without being held in memory whole.
MAX_RECORD_BYTES = 2**20
#: parquet rows converted to Python at once (each at most a few MAX_RECORD_BYTES of text).
BATCH_ROWS = 64
#: The roles whose messages are a conversation's user turns (OpenAI chat, ShareGPT).
USER_ROLES = frozenset({"user", "human"})

_MISSING_HINT = "download ShareGPT_V3_unfiltered_cleaned_split.json or fix --dataset"
_JSONL_HINT = (
    'each line must be a JSON string, {"prompt": "...", "max_tokens": N} or {"prompt_tokens": N, "max_tokens": M}'
)


@dataclass(frozen=True)
class FieldMap:
    """Which field of a record holds what (``bench.dataset.fields``): ``prompt`` (a string) or
    ``turns`` (a list of user turns or chat messages); optionally ``category`` and ``max_tokens``."""

    prompt: str | None = None
    turns: str | None = None
    category: str | None = None
    max_tokens: str | None = None

    def check(self) -> None:
        if (self.prompt is None) == (self.turns is None):
            raise BenchError(
                "the field mapping must name exactly one of prompt or turns",
                hint="e.g. --dataset-field prompt=question (or turns=messages)",
            )

    def named(self) -> list[tuple[str, str]]:
        """(role, field name) of every mapped field, prompt/turns first."""
        roles = ("prompt", "turns", "category", "max_tokens")
        return [(role, name) for role in roles if (name := getattr(self, role)) is not None]


#: parquet without a mapping: the column ``prompt`` (as a JSONL record's key).
DEFAULT_PARQUET_FIELDS = FieldMap(prompt="prompt", max_tokens="max_tokens")


@dataclass(frozen=True)
class PromptRecord:
    """One usable record: its user turns in order (one for a single-turn prompt, never none),
    its category, its own output cap, or a prompt length to build a random prompt of."""

    turns: tuple[str, ...]
    category: str | None = None
    max_tokens: int | None = None
    #: JSONL ``{"prompt_tokens": N}``: a random prompt of N tokens is wanted (turns is ("",)).
    prompt_tokens: int | None = None

    @property
    def text(self) -> str:
        """The first (or only) turn."""
        return self.turns[0]


def read_records(path: str, kind: str, fields: FieldMap | None, skipped: Counter[str]) -> Iterator[PromptRecord]:
    """The usable records of ``path`` (``kind``: sharegpt, jsonl or parquet), in file order."""
    if fields is not None:
        fields.check()
    if kind == "sharegpt":
        if fields is not None:
            raise BenchError("a field mapping applies to jsonl and parquet, not sharegpt", hint="drop the mapping")
        yield from _sharegpt(path, skipped)
    elif kind == "jsonl":
        yield from (_jsonl_mapped(path, fields, skipped) if fields is not None else _jsonl(path, skipped))
    elif kind == "parquet":
        yield from _parquet(path, fields or DEFAULT_PARQUET_FIELDS, fields is None, skipped)
    else:
        raise BenchError(f"dataset kind {kind!r} has no file to read", hint="use sharegpt, jsonl or parquet")


# -- reading ----------------------------------------------------------------------------------


def _read_text(path: str) -> str:
    """The whole file as text: a regular file of at most MAX_DATASET_BYTES, UTF-8."""
    raw = read_regular(path, what="dataset file", limit=MAX_DATASET_BYTES, error=BenchError, missing_hint=_MISSING_HINT)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BenchError(f"dataset is not UTF-8 text (byte {exc.start})", location=path) from exc


def _loads(text: str, where: str, what: str, hint: str) -> Any:
    """``json.loads`` whose every failure is one BenchError line (autobench.digits.load_json turns
    a RecursionError or an over-long integer into a JSONLimitError itself)."""
    try:
        return load_json(text)
    except JSONLimitError as exc:
        if exc.too_deep:
            raise BenchError(f"{what} is nested too deeply to read ({exc.msg})", location=where, hint=hint) from exc
        raise BenchError(f"{what} has a value that cannot be read: {exc.msg}", location=where, hint=hint) from exc
    except json.JSONDecodeError as exc:
        loc = f"{where}:{exc.lineno}:{exc.colno}" if what == "dataset" else where
        raise BenchError(f"{what} is not valid JSON: {exc.msg}", location=loc, hint=hint) from exc


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


def _positive_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


# -- ShareGPT ---------------------------------------------------------------------------------


def _sharegpt(path: str, skipped: Counter[str]) -> Iterator[PromptRecord]:
    data = _loads(
        _read_text(path), path, "dataset", "ShareGPT V3 is one JSON array; use --dataset-kind jsonl for JSON lines"
    )
    if not isinstance(data, list):
        raise BenchError(
            f"ShareGPT dataset must be a JSON array of conversations, got {type(data).__name__}", location=path
        )
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
        if first.get("from", "human") not in USER_ROLES:
            skipped["first_turn_not_human"] += 1
            continue
        later = (m.get("value") for m in conv[1:] if isinstance(m, dict) and m.get("from") in USER_ROLES)
        yield PromptRecord((first["value"], *(v for v in later if isinstance(v, str))))


# -- JSONL ------------------------------------------------------------------------------------


def _jsonl(path: str, skipped: Counter[str]) -> Iterator[PromptRecord]:
    """JSONL without a mapping: a string, ``{"prompt", "max_tokens"}`` or ``{"prompt_tokens"}``."""
    for lineno, line in _lines(path):
        if line is None:
            skipped["record_too_large"] += 1
            continue
        if not line.strip():
            continue
        obj = _loads(line, f"{path}:{lineno}", "line", _JSONL_HINT)
        if isinstance(obj, str):
            yield PromptRecord((obj,))
            continue
        if not isinstance(obj, dict) or not (isinstance(obj.get("prompt"), str) or "prompt_tokens" in obj):
            skipped["no_prompt_field"] += 1
            continue
        mt = obj.get("max_tokens")
        if "max_tokens" in obj and not _positive_int(mt):
            skipped["bad_max_tokens"] += 1
            continue
        if isinstance(obj.get("prompt"), str):
            yield PromptRecord((obj["prompt"],), max_tokens=mt)
        elif _positive_int(obj["prompt_tokens"]) and obj["prompt_tokens"] <= MAX_RECORD_BYTES // 4:
            yield PromptRecord(("",), max_tokens=mt, prompt_tokens=obj["prompt_tokens"])
        else:
            skipped["bad_prompt_tokens"] += 1


def _missing_field(
    where: str, role: str, name: str, present: list[str], what: str = "field", default: bool = False
) -> BenchError:
    shown = ", ".join(repr(p) for p in present[:20]) + (" ..." if len(present) > 20 else "")
    whose = "the file's columns" if what == "column" else "the record's fields"
    mapped = "the default, no field mapping given" if default else f"bench.dataset.fields.{role}"
    return BenchError(
        f"no {what} {name!r} ({mapped}); {whose}: {shown or '(none)'}",
        location=where,
        hint=f"set bench.dataset.fields.{role} to one of them (--dataset-field {role}=NAME)",
    )


def _jsonl_mapped(path: str, fields: FieldMap, skipped: Counter[str]) -> Iterator[PromptRecord]:
    """JSONL records (objects) read through the mapping; a record lacking a mapped key is an error."""
    named = fields.named()
    for lineno, line in _lines(path):
        if line is None:
            skipped["record_too_large"] += 1
            continue
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        obj = _loads(line, where, "line", "each line must be one JSON object holding the mapped fields")
        if not isinstance(obj, dict):
            raise BenchError(
                f"line is a JSON {type(obj).__name__}, not an object with the mapped fields",
                location=where,
                hint="a field mapping reads JSON objects, one a line",
            )
        for role, name in named:
            if name not in obj:
                raise _missing_field(where, role, name, [str(k) for k in obj])
        record = from_row(obj, fields, skipped)
        if record is not None:
            yield record


# -- one mapped row ---------------------------------------------------------------------------


def _turns(value: object, skipped: Counter[str]) -> tuple[str, ...] | None:
    """The user turns of a conversation: a list of strings, or of messages with a role
    (``role`` / ``from``) and a text (``content`` / ``value``), of which the user's are kept."""
    if not isinstance(value, list):
        skipped["turns_not_a_list"] += 1
        return None
    out: list[str] = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            skipped["bad_turn"] += 1
            return None
        role = item.get("role", item.get("from"))
        text = item.get("content", item.get("value"))
        if role in USER_ROLES:
            if not isinstance(text, str):
                skipped["bad_turn"] += 1
                return None
            out.append(text)
    if not out:
        skipped["no_user_turn"] += 1
        return None
    return tuple(out)


def from_row(row: Mapping[str, object], fields: FieldMap, skipped: Counter[str]) -> PromptRecord | None:
    """The record a mapped row (a JSONL object, a parquet row) makes, or None (counted in
    ``skipped``).  A null value is a skip; the caller checked every mapped key is there."""
    if fields.prompt is not None:
        text = row.get(fields.prompt)
        if not isinstance(text, str):
            skipped["null_prompt" if text is None else "prompt_not_a_string"] += 1
            return None
        turns: tuple[str, ...] = (text,)
    else:
        assert fields.turns is not None
        conversation = _turns(row.get(fields.turns), skipped)
        if conversation is None:
            return None
        turns = conversation
    category: str | None = None
    if fields.category is not None:
        value = row.get(fields.category)
        if isinstance(value, int) and not isinstance(value, bool):
            category = str(value)
        elif isinstance(value, str) and value.strip():
            category = value.strip()
        else:
            blank = value is None or (isinstance(value, str) and not value.strip())
            skipped["no_category" if blank else "bad_category"] += 1
            return None
    mt: int | None = None
    if fields.max_tokens is not None:
        value = row.get(fields.max_tokens)
        if value is not None and not _positive_int(value):
            skipped["bad_max_tokens"] += 1
            return None
        mt = value if isinstance(value, int) else None
    return PromptRecord(turns, category, mt)


# -- parquet ----------------------------------------------------------------------------------


def _parquet(path: str, fields: FieldMap, default: bool, skipped: Counter[str]) -> Iterator[PromptRecord]:
    """The mapped columns of a parquet file, BATCH_ROWS rows at a time (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        size = os.stat(path).st_size
        # pre_buffer (pyarrow's default) reads every column chunk of the file ahead: 66 MiB held for
        # a 75 MiB file (Spec-Bench's 480 questions x 200); without it, 1 MiB (docs/datasets.md).
        pf = pq.ParquetFile(path, pre_buffer=False)
    except FileNotFoundError as exc:
        raise BenchError("dataset file not found", location=path, hint="fix bench.dataset.path") from exc
    except OSError as exc:
        raise BenchError(f"cannot read the dataset file ({exc.strerror or exc})", location=path) from exc
    except (pa.ArrowException, ValueError) as exc:
        raise BenchError(
            f"not a parquet file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
            location=path,
            hint="use kind jsonl or sharegpt for JSON files",
        ) from exc
    if size > MAX_DATASET_BYTES:
        raise BenchError(
            f"dataset file is {size:,} bytes; at most {MAX_DATASET_BYTES:,} are read",
            location=path,
            hint="use a smaller file (a split or a shard of the dataset)",
        )
    columns = list(pf.schema_arrow.names)
    wanted: list[str] = []
    for role, name in fields.named():
        if name in columns:
            wanted.append(name)
        elif not (default and role == "max_tokens"):  # the default's max_tokens column is optional
            raise _missing_field(path, role, name, columns, what="column", default=default)
    if default and fields.max_tokens not in columns:
        fields = FieldMap(prompt=fields.prompt)
    row_no = 0
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
            for row in batch.to_pylist():
                row_no += 1
                record = from_row(row, fields, skipped)
                if record is not None:
                    yield record
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise BenchError(
            f"cannot read row {row_no + 1} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
            location=path,
        ) from exc

"""Streaming parser: one pass over a vLLM server log, constant memory.

``parse_log(path_or_lines)`` reads the file in binary, line by line, and skips
every line that contains none of a small set of byte substrings (the prefilter)
before any decoding or regex work.  Lines that pass are decoded, normalised into
records (:mod:`autobench.logs.lines`) and offered to the fact patterns, the
engine-stats and spec-decode summaries, and the root-cause tracker.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from autobench.errors import LogError
from autobench.logs.facts import (
    BOOT_KEYS,
    BOOT_PATTERNS,
    SPEC_NEEDLES,
    STATS,
    STATS_NEEDLE,
    SpecSummary,
    StatsSummary,
)
from autobench.logs.lines import split_records
from autobench.logs.rootcause import NEEDLES as CAUSE_NEEDLES
from autobench.logs.rootcause import RootCause, RootCauseTracker

_FACT_NEEDLES = tuple(p.needle for p in BOOT_PATTERNS)


def _trie_regex(words: Iterable[bytes]) -> re.Pattern[bytes]:
    """One regex matching any of ``words``, factored into a trie (Python's re tries
    alternatives one by one; sharing prefixes makes the prefilter ~2x faster)."""
    trie: dict[Any, Any] = {}
    for word in words:
        node = trie
        for byte in word:
            node = node.setdefault(byte, {})
        node[None] = True

    def emit(node: dict[Any, Any]) -> bytes:
        if None in node:  # a shorter needle ends here: matching it is enough
            return b""
        alts = [re.escape(bytes([k])) + emit(v) for k, v in sorted(node.items())]
        return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"

    return re.compile(emit(trie))


# The prefilter: a line none of these occur in can state no fact and no cause
# (frames of a traceback contain 'File "').
_PREFILTER = _trie_regex(
    n.encode() for n in set(_FACT_NEEDLES + CAUSE_NEEDLES + SPEC_NEEDLES + (STATS_NEEDLE, "assert"))
)
_STATS_B = STATS_NEEDLE.encode()
_STATS_BYTES = re.compile(STATS.pattern.encode())
_ACCESS_B = b' HTTP/1.1" '
_DEBUG_B = re.compile(rb"^(?:\S+ )*?(?:\([^)]*pid=\d+\) )?DEBUG \d\d-\d\d ")
_SNIFF = 8192


@dataclass
class LogReport:
    """What one server log states.  Every fact is None unless a line says it."""

    vllm_version: str | None = None
    architecture: str | None = None
    max_model_len: int | None = None
    model_load_gib: float | None = None
    model_load_s: float | None = None
    weights_load_s: float | None = None
    torch_compile_s: float | None = None
    kv_cache_tokens: int | None = None
    kv_cache_device: str | None = None
    kv_cache_gib: float | None = None
    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None
    attention_block_size: int | None = None
    mamba_padding_pct: float | None = None
    attention_backend: str | None = None
    linear_kernel: str | None = None
    moe_backend: str | None = None
    cuda_graph_s: float | None = None
    cuda_graph_gib: float | None = None
    engine_init_s: float | None = None
    ready: bool = False
    root_cause: RootCause | None = None
    stats: dict[str, Any] | None = None
    spec_decode: dict[str, Any] | None = None
    lines: dict[str, int] = field(default_factory=dict)  # fact name -> 1-based line number
    lines_read: int = 0

    def to_json_dict(self) -> dict[str, Any]:
        """Flat, JSON-safe dict (see docs/logs.md for every key)."""
        out: dict[str, Any] = {key: getattr(self, key) for key in BOOT_KEYS}
        out["root_cause"] = self.root_cause.to_dict() if self.root_cause else None
        out["stats"] = self.stats
        out["spec_decode"] = self.spec_decode
        out["lines"] = dict(self.lines)
        out["lines_read"] = self.lines_read
        return out


class _Parser:
    def __init__(self) -> None:
        self.report = LogReport()
        self.stats = StatsSummary()
        self.spec = SpecSummary()
        self.cause = RootCauseTracker()
        self._pending_age = 0

    def feed(self, raw: bytes | str, lineno: int) -> None:
        pending = self.cause._expect_code
        if pending:
            # a traceback frame was just seen: its source line carries no needle
            self._pending_age += 1
            if self._pending_age > 4:  # that process went quiet: stop waiting
                pending.clear()
        else:
            self._pending_age = 0
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "replace")
        if not pending:
            # Hot paths first: the lines a serving log is made of while a benchmark runs.
            if _STATS_B in raw:
                if b"Traceback" not in raw and b"Error" not in raw and b"metrics" not in raw:
                    for m in _STATS_BYTES.finditer(raw):
                        self.stats.add(m, lineno)
                    return
            elif _ACCESS_B in raw or (b"DEBUG " in raw and _DEBUG_B.search(raw)):
                return  # uvicorn access lines and DEBUG records state no fact and no cause
            if not _PREFILTER.search(raw):
                return
        text = raw.decode("utf-8", "replace")
        report = self.report
        for rec in split_records(text):
            msg = rec.msg
            if STATS_NEEDLE in msg:
                for m in STATS.finditer(msg):
                    self.stats.add(m, lineno)
                continue
            if "metrics" in msg and any(n in msg for n in SPEC_NEEDLES):
                self.spec.add(msg, lineno)
                continue
            for pattern in BOOT_PATTERNS:
                if pattern.needle in msg:
                    m = pattern.regex.search(msg)
                    if m is None:
                        continue
                    for key, value in pattern.facts(m).items():
                        if key not in report.lines:
                            setattr(report, key, value)
                            report.lines[key] = lineno
                    if report.ready:
                        self.cause.ready = True
            if self.cause._expect_code or (
                rec.level not in ("INFO", "DEBUG")
                and (any(n in msg for n in CAUSE_NEEDLES) or "assert" in msg)
            ):
                self.cause.feed(rec, lineno)

    def finish(self, lines_read: int) -> LogReport:
        report = self.report
        report.lines_read = lines_read
        report.stats = self.stats.to_dict()
        report.spec_decode = self.spec.to_dict()
        report.root_cause = self.cause.result()
        if report.root_cause is not None:
            report.lines["root_cause"] = report.root_cause.line
        return report


def _open(path: str | os.PathLike[str]) -> IO[bytes]:
    p = Path(path)
    try:
        if p.is_dir():
            raise LogError(f"{p} is a directory, not a log file", hint="pass the log file itself")
        f = open(p, "rb")  # noqa: SIM115 - returned to the caller
    except FileNotFoundError as exc:
        raise LogError(f"{p}: no such file", hint="check the path of the server log") from exc
    except PermissionError as exc:
        raise LogError(f"{p}: permission denied", hint="make the log readable") from exc
    except OSError as exc:
        raise LogError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    try:
        head = f.read(_SNIFF)
    except OSError as exc:
        f.close()
        raise LogError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    if b"\x00" in head:
        f.close()
        raise LogError(f"{p} looks binary (NUL bytes in its first {_SNIFF} bytes), not a text log",
                       hint="pass the text log the server wrote")
    f.seek(0)
    return f


def iter_lines(source: str | os.PathLike[str] | Iterable[str] | Iterable[bytes]
               ) -> Iterator[bytes | str]:
    if isinstance(source, (str, os.PathLike)):
        f = _open(source)
        try:
            yield from f
        except OSError as exc:
            raise LogError(f"{source}: read failed: {exc.strerror or exc}") from exc
        finally:
            f.close()
    else:
        yield from source


def parse_log(path_or_lines: str | os.PathLike[str] | Iterable[str] | Iterable[bytes]) -> LogReport:
    """Parse a vLLM server log: a path, or any iterable of lines (str or bytes, e.g. a file).

    A str is a path (use ``text.splitlines()`` to parse text).  Raises LogError for a
    missing, unreadable or binary file.
    """
    parser = _Parser()
    n = 0
    for n, raw in enumerate(iter_lines(path_or_lines), 1):
        parser.feed(raw, n)
    return parser.finish(n)

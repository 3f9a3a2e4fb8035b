"""Streaming parser: one pass over a vLLM server log, bounded memory.

``parse_log(path_or_lines)`` reads a file in binary blocks of :data:`BLOCK_SIZE`
bytes, splits each block into lines in bulk and classifies every line with a few
byte-substring tests, no decoding and no regex:

* **engine-stats lines** (``Avg prompt throughput``; the bulk of a long log) are
  joined per run and read with ONE ``findall`` of the stats regex; the summary is
  folded column-wise (:meth:`StatsSummary.add_rows`);
* **uvicorn access lines** and **DEBUG records** state nothing and are dropped;
* every other line must contain a *live* trigger (a fact, cause or spec-decode
  substring, one trie-factored regex) to be read at all.  A trigger dies when what
  it can state is known (facts are first-statement-wins; the root cause is final
  once found), so a long log that already stated its boot facts pays almost
  nothing per line.

Lines that survive go to :meth:`_Parser.feed`, the one-line reference path: decode,
normalise into records (:mod:`autobench.logs.lines`), fact patterns, spec-decode
summary and root-cause tracker.  The block path makes exactly the decisions
:meth:`_Parser.feed` would make line by line (``tests/logs/test_logs_blocks.py``
checks it against that path on mixed logs, tiny blocks and odd line endings).
"""

from __future__ import annotations

import codecs
import io
import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate, islice, repeat
from operator import add
from pathlib import Path
from typing import IO, Any, cast

from autobench.errors import LogError
from autobench.logs.facts import (
    BOOT_KEYS,
    BOOT_PATTERNS,
    SPEC_NEEDLES,
    STATS,
    STATS_BYTES,
    STATS_NEEDLE,
    SpecSummary,
    StatsSummary,
)
from autobench.logs.lines import Record, split_records
from autobench.logs.rootcause import NEEDLES as CAUSE_NEEDLES
from autobench.logs.rootcause import RootCause, RootCauseTracker, boot_oom
from autobench.logs.unwrap import INVISIBLE_CHARS

# Bytes per read.  1-16 MiB all run at the same speed; peak RSS grows with the block
# (about 25 MiB at 2 MiB, 52 MiB at 8 MiB), see docs/logs.md "Speed".
BLOCK_SIZE = 2 << 20
MAX_LINE = 16 << 20  # a longer line is cut there, so memory stays bounded
_BATCH = 8192  # lines per feed_lines() call for an iterable of lines


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


@lru_cache(maxsize=64)
def _trigger(needles: frozenset[str]) -> re.Pattern[bytes]:
    """The prefilter for one set of live needles: a line none of them occur in can
    state no fact and no cause that is still unknown (traceback frames contain
    'File "')."""
    return _trie_regex(sorted(n.encode() for n in needles))


_STATS_B = STATS_NEEDLE.encode()
# A stats line that also holds one of these may be interleaved with another record:
# it takes the full per-record path.
_MIXED = (b"Traceback", b"Error", b"metrics")
_ACCESS_B = b' HTTP/1.1" '
_DEBUG_NEEDLE = b"DEBUG "
# A DEBUG record: vLLM's "DEBUG MM-DD " header after nothing but single-spaced prefix tokens
# (a timestamp, "(EngineCore pid=2)").  Bounded, possessive tokens and a lazy count: each
# try is a few steps, and the pattern is linear by construction (autobench.logs.linear).
_DEBUG_B = re.compile(rb"(?:\S{1,512}+ ){0,16}?DEBUG \d\d-\d\d ")


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
    encoding: str | None = None  # how the bytes were read (docs/logs.md "Encodings"); None: text given

    def to_json_dict(self) -> dict[str, Any]:
        """Flat, JSON-safe dict (see docs/logs.md for every key)."""
        out: dict[str, Any] = {key: getattr(self, key) for key in BOOT_KEYS}
        out["root_cause"] = self.root_cause.to_dict() if self.root_cause else None
        out["stats"] = self.stats
        out["spec_decode"] = self.spec_decode
        out["lines"] = dict(self.lines)
        out["lines_read"] = self.lines_read
        out["encoding"] = self.encoding
        return out


# autobench's own note where it begins to stop the server (autobench/run/runtimes.py)
TEARDOWN_MARK = "[autobench] teardown"
_TEARDOWN_NEEDLE = TEARDOWN_MARK[1:]  # no "[" first: vLLM's "[core.py:1]" would try it everywhere
# Evidence that the server served a request: an access line of a POST, or vLLM's own
# request log lines.
_POST_B = b'"POST '
_OK_B = b'" 2'  # the status after the request line: 2xx
_REQUEST_NEEDLES = ("Received request", "Added request")
# Readiness (docs/logs.md "Ready means vLLM's server is up"): uvicorn's startup line, bound to
# vLLM's own API server -- its process ("(APIServer pid=N)"), or, without process prefixes,
# the last server the log announced: vLLM's ("Starting vLLM API server %d on %s",
# api_server.py; "Available routes are:" / "Route: %s, Methods: %s", launcher.py) and not a
# plug-in's (LMCache's "Starting LMCache HTTP server on http://...").
_STARTUP = "Application startup complete"
# uvicorn names the port it serves right after its startup line ("Uvicorn running on
# http://0.0.0.0:8000 (Press CTRL+C to quit)", or "... on socket ('0.0.0.0', 8000) ..." for
# the socket vLLM binds itself): a port other than vLLM's announced one (or the plug-in's
# own) shows whose startup line it was.
_UVICORN_RUNNING = "Uvicorn running on"
# (the trigger is decided once per block: uvicorn's port line must pass with the startup line)
_READY_NEEDLES = (_STARTUP, "erver on http", "Available routes", "Route: /", _UVICORN_RUNNING)


def _port_in(msg: str) -> str | None:
    """The port a server announcement names ("http://host:8000", "socket ('h', 8000)")."""
    at = msg.find("://")
    if at != -1:
        end = at + 3
        while end < len(msg) and msg[end] not in " )/(":
            end += 1
        port = msg[at + 3 : end].rpartition(":")[2]
        return port if port.isdigit() else None
    at = msg.find("socket (")
    if at != -1:
        port = msg[at + 8 : msg.find(")", at)].rpartition(",")[2].strip()
        return port if port.isdigit() else None
    return None


class _Parser:
    def __init__(self, teardown_line: int | None = None) -> None:
        self.report = LogReport()
        self.stats = StatsSummary()
        self.spec = SpecSummary()
        self.cause = RootCauseTracker()
        self.teardown_line = teardown_line  # lines after it are autobench's teardown
        self.ready_line: int | None = None
        self.served_line: int | None = None  # the first request served after ready
        self._foreign_server = False  # the last server announced is not vLLM's
        self._vllm_port: str | None = None  # the port vLLM's API server announced
        self._foreign_port: str | None = None  # ... and the last plug-in server's
        self._unconfirmed: int | None = None  # a startup line without a process name, port unknown yet
        self._pending_age = 0
        self._oom_unserved = False
        self._refresh()

    @property
    def _may_want_request(self) -> bool:
        """The same, before readiness is known: what the block classifier and the
        trigger (decided once per block) must let through.  After an out-of-memory
        cause found before any sign of serving, a request served later still counts:
        V0's access line for the request that ran out comes after its traceback."""
        return self.served_line is None and (not self._cause_done or self._oom_unserved)

    def _served(self, lineno: int, ok: bool = True) -> None:
        """A request reached the server at ``lineno``; ``ok``: it was answered (2xx) or
        accepted by vLLM itself -- evidence of serving, which makes the server ready."""
        if self.served_line is None:
            self.served_line = lineno
            # a server that served a request was up, even when the log (an excerpt) never
            # says so: what fails from here on is a runtime failure
            self.cause.ready = True
            if ok:
                self._ready(lineno)
            self._refresh()

    def _ready(self, lineno: int) -> None:
        report = self.report
        if not report.ready:
            report.ready = True
            report.lines["ready"] = lineno
            self.ready_line = lineno
            self.cause.ready = True

    def teardown(self) -> None:
        """Autobench began to stop the server: what follows is no cause."""
        if not self.cause.stopped:
            self.cause.stop()
            self._refresh()

    def _refresh(self) -> None:
        """Recompute the live trigger after a line changed what is known."""
        known = self.report.lines
        self._facts_known = len(known)
        self._cause_done = self.cause.done
        self._oom_unserved = self._cause_done and not self.cause.stopped and boot_oom(self.cause.cause)
        needles = set(SPEC_NEEDLES)
        needles.update(INVISIBLE_CHARS)  # may hide inside any needle: the full path strips them
        needles.update(p.needle for p in BOOT_PATTERNS if not all(k in known for k in p.keys))
        if not self.report.ready:
            needles.update(_READY_NEEDLES)
        if self._unconfirmed is not None:
            needles.add(_UVICORN_RUNNING)
        if not self._cause_done:
            needles.update(CAUSE_NEEDLES)
            needles.add("assert")
        if not self._cause_done or self._oom_unserved:
            needles.add(_TEARDOWN_NEEDLE)
            if self._may_want_request:
                needles.update(_REQUEST_NEEDLES)
        self._want_post = self._may_want_request
        self._trigger = _trigger(frozenset(needles))

    def _pending(self) -> bool:
        """A traceback frame was just seen: the next lines are read whatever they hold."""
        return not self._cause_done and bool(self.cause._expect_code)

    def feed(self, raw: bytes | str, lineno: int) -> None:
        """The reference path: one physical line (with or without its newline)."""
        pending = None if self._cause_done else self.cause._expect_code
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
                    for m in STATS_BYTES.finditer(raw):
                        self.stats.add(m, lineno)
                        if not self.report.ready and int(m[3]) > 0:
                            self._served(lineno)  # engine stats with running requests: serving
                    return
            elif _ACCESS_B in raw:
                if self._want_post and _POST_B in raw:
                    self._served(lineno, _OK_B in raw)
                return  # uvicorn access lines state no fact and no cause
            elif _DEBUG_NEEDLE in raw and _DEBUG_B.match(raw):
                return  # DEBUG records state no fact and no cause
            elif not self._trigger.search(raw):
                return
        self._records(raw, lineno)

    def _records(self, raw: bytes, lineno: int) -> None:
        text = raw.decode("utf-8", "replace")
        report = self.report
        cause = self.cause
        feed_cause = not self._cause_done
        for rec in split_records(text):
            msg = rec.msg
            if STATS_NEEDLE in msg:
                for m in STATS.finditer(msg):
                    self.stats.add(m, lineno)
                    if not report.ready and int(m[3]) > 0:
                        self._served(lineno)
                continue
            if "metrics" in msg and any(n in msg for n in SPEC_NEEDLES):
                self.spec.add(msg, lineno)
                continue
            for pattern in BOOT_PATTERNS:
                if pattern.needle in msg:
                    found = pattern.regex.search(msg)
                    if found is None:
                        continue
                    m = found
                    for key, value in pattern.facts(m).items():
                        if key not in report.lines:
                            setattr(report, key, value)
                            report.lines[key] = lineno
            if not report.ready or self._unconfirmed is not None:
                self._readiness(rec, msg, lineno)
            if self._want_post and any(n in msg for n in _REQUEST_NEEDLES):
                self._served(lineno)
            elif self._want_post and _ACCESS_B.decode() in msg and _POST_B.decode() in msg:
                self._served(lineno, _OK_B.decode() in msg)
            if (feed_cause or self._oom_unserved) and msg.startswith(TEARDOWN_MARK):
                self.teardown()
                feed_cause = False
                continue
            if feed_cause and (
                cause._expect_code
                or (rec.level not in ("INFO", "DEBUG") and (any(n in msg for n in CAUSE_NEEDLES) or "assert" in msg))
            ):
                cause.feed(rec, lineno)
        if len(report.lines) != self._facts_known or (feed_cause and cause.done):
            self._refresh()

    def _readiness(self, rec: Record, msg: str, lineno: int) -> None:
        """Readiness from one record (see :data:`_READY_NEEDLES`)."""
        if self._unconfirmed is not None:
            if _UVICORN_RUNNING in msg:
                self._confirm(_port_in(msg))
            return
        if _STARTUP in msg:
            proc = rec.proc or ""
            if proc.startswith("APIServer") or (not proc and not self._foreign_server):
                self._ready(lineno)
                if not proc:
                    self._unconfirmed = lineno
                    self._refresh()
        elif "erver on http" in msg:
            self._foreign_server = "vLLM" not in msg
            if self._foreign_server:
                self._foreign_port = _port_in(msg)
            else:
                self._vllm_port = _port_in(msg)
        elif "Available routes" in msg or msg.startswith("Route: /"):
            self._foreign_server = False
        elif rec.src is not None and rec.src.startswith("serving") and rec.level in ("INFO", "ERROR"):
            self._served(lineno)  # vLLM's request handlers (entrypoints/openai/serving*.py) logged

    def _confirm(self, port: str | None) -> None:
        """uvicorn named the port of the server whose startup line made the log ready: when
        it is not vLLM's, that line was a plug-in's, and nothing served since, it is no
        readiness."""
        line, self._unconfirmed = self._unconfirmed, None
        foreign = port is not None and (
            (self._vllm_port is not None and port != self._vllm_port)
            or (self._vllm_port is None and port == self._foreign_port)
        )
        report = self.report
        if foreign and self.served_line is None and report.lines.get("ready") == line:
            report.ready = False
            del report.lines["ready"]
            self.ready_line = None
            self.cause.ready = False
        self._refresh()

    def feed_lines(self, lines: list[bytes], base: int) -> None:
        """``feed(lines[k], base + k + 1)`` for every k, in bulk: the same decisions,
        with the per-line work done only where :meth:`feed` would do more than skip.
        Lines after ``teardown_line`` are fed after :meth:`teardown`."""
        cut = self.teardown_line
        if cut is not None and not self.cause.stopped and cut < base + len(lines):
            head = max(cut - base, 0)
            if head:
                self._feed_lines(lines[:head], base)
            self.teardown()
            lines, base = lines[head:], base + head
        self._feed_lines(lines, base)

    def _feed_lines(self, lines: list[bytes], base: int) -> None:
        n = len(lines)
        i = 0
        feed = self.feed
        while i < n and self._pending():  # a frame at the end of the previous block
            feed(lines[i], base + i + 1)
            i += 1
        stats, marked, joined = self._classify(lines, i)
        if not marked:  # the steady state of a serving log: stats, access and DEBUG lines
            if stats:
                self._stats_run(lines, stats, base, joined)
            return
        for j in marked:
            if j < i:  # already fed while a traceback frame was pending
                continue
            self._stats_run(lines, stats[bisect_left(stats, i) : bisect_left(stats, j)], base)
            feed(lines[j], base + j + 1)
            i = j + 1
            while i < n and self._pending():
                feed(lines[i], base + i + 1)
                i += 1
        self._stats_run(lines, stats[bisect_left(stats, i) :], base)

    def _classify(self, lines: list[bytes], start: int) -> tuple[list[int], list[int], bytes | None]:
        """Indices of the pure stats lines and of the lines :meth:`feed` must see
        (both ascending), and the stats lines joined when they are all pure."""
        stats: list[int] = []
        marked: list[int] = []
        add_stats = stats.append
        mark = marked.append
        trigger = self._trigger.search
        debug = _DEBUG_B.match
        s_b, a_b, d_b, post = _STATS_B, _ACCESS_B, _DEBUG_NEEDLE, _POST_B
        want_post = self._may_want_request
        for k, line in enumerate(islice(lines, start, None) if start else lines, start):
            if s_b in line:
                add_stats(k)
            elif b'"' in line and a_b in line:
                if want_post and post in line:
                    mark(k)  # maybe the first request after ready: feed() decides
            elif d_b in line and debug(line):
                continue
            elif trigger(line):
                mark(k)
        if not stats:
            return stats, marked, None
        rows = [lines[k] for k in stats]
        text = b"\n".join(rows)
        mixed: set[int] = set()  # positions in ``stats`` of lines that hold a _MIXED word
        ends: list[int] = []  # ends[r]: where row r + 1 starts in ``joined``
        for word in _MIXED:
            at = text.find(word)
            while at != -1:
                if not ends:
                    ends = list(accumulate(map(add, map(len, rows), repeat(1))))
                row = bisect_right(ends, at)
                mixed.add(row)
                at = text.find(word, ends[row])
        if mixed:  # rare: they take the full path
            marked = sorted(marked + [stats[r] for r in mixed])
            stats = [k for r, k in enumerate(stats) if r not in mixed]
            return stats, marked, None
        return stats, marked, text

    def _stats_run(self, lines: list[bytes], run: list[int], base: int, joined: bytes | None = None) -> None:
        """Add the samples of the pure stats lines ``run`` (indices into ``lines``)."""
        if not run:
            return
        if joined is None:
            joined = b"\n".join([lines[k] for k in run])
        rows = STATS_BYTES.findall(joined)
        if not rows:
            return
        search = STATS_BYTES.search
        last = next(k for k in reversed(run) if search(lines[k]))
        first = last
        if self.stats.first_line is None:
            first = next(k for k in run if search(lines[k]))
        self.stats.add_rows(rows, base + first + 1, base + last + 1)
        if not self.report.ready and self.stats.running_max > 0:
            # engine stats with running requests: the server was serving (the first such line)
            for k in run:
                m = search(lines[k])
                if m is not None and int(m[3]) > 0:
                    self._served(base + k + 1)
                    break

    def finish(self, lines_read: int) -> LogReport:
        report = self.report
        report.lines_read = lines_read
        report.stats = self.stats.to_dict()
        report.spec_decode = self.spec.to_dict()
        cause = report.root_cause = self.cause.result()
        if cause is not None:
            report.lines["root_cause"] = cause.line
            if boot_oom(cause) and self.served_line is not None and self.served_line > cause.line:
                cause.category = "cuda_oom"  # it served a request after: a runtime OOM
            ready_at = self.ready_line
            if (
                ready_at is not None
                and cause.line > ready_at
                and (self.served_line is None or self.served_line > cause.line)
            ):
                # ready means ready: the server failed after its startup line and before
                # it served anything (it never bound its port, or its engine died)
                report.ready = False
                del report.lines["ready"]
        return report


# Byte-order marks, longest first (a UTF-32 LE mark starts like a UTF-16 LE one).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
)


def sniff_encoding(head: bytes) -> tuple[str, int]:
    """The encoding of a log from its first bytes, and the length of its byte-order mark.

    A byte-order mark decides (UTF-32/16 in either byte order, UTF-8); without one the text
    is UTF-8 when the head decodes as UTF-8 (a character cut at the end of the head aside),
    else Latin-1, which decodes any byte (an editor's "ANSI" save of an accented path)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:
            return "latin-1", 0
    return "utf-8", 0


class _Transcoder(io.RawIOBase):
    """A binary stream read in ``encoding`` and handed on as UTF-8 bytes, block by block
    (an incremental decoder: a character split by a block boundary is kept for the next)."""

    def __init__(self, raw: IO[bytes], encoding: str, first: bytes) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)("replace")
        self._pending = first
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._done:
            chunk = self._raw.read(size if size and size > 0 else BLOCK_SIZE)
            if not chunk:
                self._done = True
                return self._decoder.decode(self._pending, final=True).encode("utf-8")
            data, self._pending = self._pending + chunk, b""
            out = self._decoder.decode(data).encode("utf-8")
            if out:
                return out
        return b""


def _reader(f: IO[bytes], head: bytes) -> tuple[IO[bytes], str]:
    """``f`` (already read up to ``head``) as UTF-8 bytes from its start, and its encoding."""
    encoding, bom = sniff_encoding(head)
    if encoding == "utf-8":
        return cast(IO[bytes], _Chain(head, f)), encoding
    if encoding == "utf-8-sig":
        return cast(IO[bytes], _Chain(head[bom:], f)), encoding
    return cast(IO[bytes], _Transcoder(f, encoding, head[bom:])), encoding


class _Chain(io.RawIOBase):
    """``head`` then the rest of ``f``: a stream whose first bytes were read to sniff it."""

    def __init__(self, head: bytes, f: IO[bytes]) -> None:
        self._head = head
        self._f = f

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        return self._f.read(size)


def _open(path: str | os.PathLike[str]) -> tuple[IO[bytes], IO[bytes], str]:
    """The opened file, a UTF-8 view of it, and its encoding."""
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
    encoding, _ = sniff_encoding(head)
    if b"\x00" in head and not encoding.startswith(("utf-16", "utf-32")):
        f.close()
        raise LogError(
            f"{p} looks binary (NUL bytes in its first {_SNIFF} bytes and no UTF-16/32 byte-order mark), "
            "not a text log",
            hint="pass the text log the server wrote",
        )
    stream, encoding = _reader(f, head)
    return f, stream, encoding


def _feed_reader(
    parser: _Parser, f: IO[bytes], name: str, block_size: int = BLOCK_SIZE, max_line: int = MAX_LINE
) -> int:
    """Feed a binary stream block by block; returns the number of lines.  Lines are
    split on b"\\n" exactly like iterating the file would; a line longer than
    ``max_line`` (>= ``block_size``) is cut there, so memory never exceeds a block
    plus ``max_line``."""
    n = 0
    parts: list[bytes] = []  # a line begun in an earlier block
    size = 0
    while True:
        try:
            data = f.read(block_size)
        except OSError as exc:
            raise LogError(f"{name}: read failed: {exc.strerror or exc}") from exc
        if not data:
            break
        lines = data.split(b"\n")
        tail = lines.pop()  # what follows the last newline (b"" when the block ends with one)
        if parts:
            piece = lines[0] if lines else tail
            if size < max_line:
                parts.append(piece)
                size += len(piece)
            if not lines:
                continue
            lines[0] = b"".join(parts)[:max_line]
            parts, size = [], 0
        if tail:
            parts, size = [tail], len(tail)
        if lines:
            parser.feed_lines(lines, n)
            n += len(lines)
    if parts:  # a last line without a newline
        parser.feed_lines([b"".join(parts)[:max_line]], n)
        n += 1
    return n


def _feed_iterable(
    parser: _Parser, source: Iterable[str] | Iterable[bytes], batch_size: int = _BATCH
) -> tuple[int, str | None]:
    """Feed an iterable of lines (each one physical line, newline or not) in batches; returns
    the line count and the encoding read ("utf-8" for bytes, None for text the caller decoded)."""
    n = 0
    encoding: str | None = None
    batch: list[bytes] = []
    for raw in source:
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "replace")
        else:
            encoding = "utf-8"
        batch.append(raw)
        if len(batch) == batch_size:
            parser.feed_lines(batch, n)
            n += len(batch)
            batch = []
    if batch:
        parser.feed_lines(batch, n)
        n += len(batch)
    return n, encoding


def parse_log(
    path_or_lines: str | os.PathLike[str] | IO[bytes] | Iterable[str] | Iterable[bytes],
    *,
    teardown_line: int | None = None,
) -> LogReport:
    """Parse a vLLM server log: a path, a binary file object, or any iterable of lines
    (str or bytes, e.g. a text file).

    A str is a path (use ``text.splitlines()`` to parse text).  ``teardown_line``: the
    number of lines the log had when autobench began to stop the server; what the
    server logs after it (its shutdown) is never a root cause.  A line starting with
    ``[autobench] teardown`` (autobench's own note) marks the same.  Raises LogError
    for a missing, unreadable or binary file.
    """
    parser = _Parser(teardown_line)
    encoding: str | None
    if isinstance(path_or_lines, (str, os.PathLike)):
        f, stream, encoding = _open(path_or_lines)
        with f:
            n = _feed_reader(parser, stream, str(path_or_lines))
    elif isinstance(path_or_lines, (io.RawIOBase, io.BufferedIOBase)):
        name = getattr(path_or_lines, "name", "log stream")
        raw = cast(IO[bytes], path_or_lines)
        try:
            head = raw.read(_SNIFF) or b""
        except OSError as exc:
            raise LogError(f"{name}: read failed: {exc.strerror or exc}") from exc
        stream, encoding = _reader(raw, head)
        n = _feed_reader(parser, stream, name)
    else:
        n, encoding = _feed_iterable(parser, path_or_lines)
    report = parser.finish(n)
    report.encoding = encoding
    return report

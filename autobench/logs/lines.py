"""Normalise one physical log line into logical records.

A vLLM server log as it reaches us has been through several hands: docker adds
an RFC 3339 timestamp, docker compose a ``service-1  | `` column, journald a
``Mon DD HH:MM:SS host prog[pid]: `` prefix, CI a ``[2025-03-10T15:07:20Z]``
stamp; vLLM's multiprocess logger adds ``(EngineCore pid=123)`` /
``(APIServer pid=1)`` / ``(VllmWorker rank=0 pid=9)`` before its own
``INFO 06-23 06:27:21 [core.py:1229]`` header; colour codes wrap the process
prefix (sometimes mangled to U+FFFD when pasted); tqdm rewrites its bar with
carriage returns; and processes writing to one pipe interleave, so one
physical line can hold several records.

:func:`split_records` turns one physical line into the :class:`Record` list it
really contains; nothing here knows about vLLM's facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autobench.logs.unwrap import strip_ansi, strip_controls, unwrap

__all__ = ["Record", "is_progress", "split_records", "strip_ansi", "strip_controls", "unwrap"]

# (EngineCore pid=123) (EngineCore_DP0 pid=9) (VllmWorker rank=0 pid=9) (VllmWorker TP1 pid=9)
# (Worker_TP0_EP0 pid=1) (APIServer pid=1) (RayWorkerWrapper pid=2202490, ip=10.0.0.1)
# Ray nests them: (MapWorker(MapBatches(vLLMEngineStageUDF)) pid=1) (Worker pid=2).
# Every quantifier is bounded: a match costs at most a constant number of steps.
_PROC = re.compile(
    r"\((?P<proc>[A-Za-z_][\w.()-]{0,120}?(?: [A-Za-z_][\w.:-]{0,40}(?:=[\w.:-]{1,64})?){0,4}? pid=\d{1,10}"
    r"(?:, ip=[\w.:-]{0,64})?)\) ?"
)
_PROC_LOOKBACK = 200  # how far before "pid=" a process prefix can start

# vLLM's own header, both generations:
#   INFO 04-27 10:11:03 llm_engine.py:70] msg            (V0, <= 0.8)
#   INFO 03-10 08:07:20 [gpu_model_runner.py:1067] msg  (>= 0.8)
_HEADER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) "
    r"\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})? \[?(?P<src>[\w./<>-]{1,256}:\d{1,9})\] ?"
)

# uvicorn's own records: "ERROR:    [Errno 98] error while attempting to bind ..."
_UVICORN = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?: {1,64}|$)")

# torch's C++ (glog-style) records: "[W923 17:01:42.510487211 ProcessGroupNCCL.cpp:981] Warning: ...",
# older torch without the date: "[rank0]:[E ProcessGroupNCCL.cpp:563] ..."
_GLOG = re.compile(
    r"^(?:\[rank\d{1,6}\]:)?\[(?P<level>[IWEF])(?:\d{3,4} [\d:.]{1,32}(?: \d{1,10})?)? "
    r"(?P<src>[\w.]{1,128}:\d{1,9})\] ?"
)
_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


@dataclass(frozen=True, slots=True)
class Record:
    """One logical log record: who wrote it, at what level, and the message."""

    proc: str | None  # "EngineCore pid=123", or None when unprefixed
    level: str | None  # INFO/WARNING/ERROR/... or None (tracebacks, prints)
    src: str | None  # "core.py:1229"
    msg: str  # the message, leading indentation kept (traceback frames)


def is_progress(text: str) -> bool:
    """A tqdm progress bar (the last frame of a \\r-rewritten line): a percentage, a bar
    between "|" and "|", then a rate.  String searches only: linear in the line's length."""
    bar = text.find("%|")
    if bar < 1 or not text[bar - 1].isdigit():
        return False
    end = text.find("|", bar + 2)
    if end == -1:
        return False
    rest = text[end + 1 :]
    return "it/s" in rest or "s/it" in rest


def _cuts(segment: str) -> list[int]:
    """Where process prefixes start records in the middle of ``segment`` (interleaved
    writers): the first "(" before each "pid=" that opens a whole prefix, not directly after
    another "(" (Ray nests its prefixes).  Each "pid=" looks back a bounded distance and each
    try is a bounded match: linear in the segment's length."""
    cuts: list[int] = []
    done = 0
    pos = segment.find("pid=", 1)
    while pos != -1:
        i = segment.find("(", max(done, pos - _PROC_LOOKBACK), pos)
        while i != -1:
            if i > 0 and segment[i - 1] != "(":
                m = _PROC.match(segment, i)
                if m is not None and m.end() > pos:
                    cuts.append(i)
                    done = m.end()
                    break
            i = segment.find("(", i + 1, pos)
        pos = segment.find("pid=", pos + 4)
    return cuts


def _record(text: str) -> Record:
    proc = None
    m = _PROC.match(text)
    while m:  # keep the innermost prefix: it names the process that wrote the record
        proc = m.group("proc")
        text = text[m.end() :]
        m = _PROC.match(text)
    level = src = None
    h = _HEADER.match(text)
    if h:
        level = "WARNING" if h.group("level") == "WARN" else h.group("level")
        src = h.group("src")
        text = text[h.end() :]
    elif text[:1] in "DIWEC":
        u = _UVICORN.match(text)
        if u:
            level = u.group("level")
            text = text[u.end() :]
    elif text[:1] == "[":
        g = _GLOG.match(text)
        if g:
            level = _GLOG_LEVEL[g.group("level")]
            src = g.group("src")
            text = text[g.end() :]
    return Record(proc, level, src, text)


def split_records(line: str) -> list[Record]:
    """All logical records of one physical line (without its newline)."""
    line = strip_controls(line.rstrip("\r\n"))
    out: list[Record] = []
    # tqdm redraws with \r; every segment is a frame or a record that followed it.
    for segment in line.split("\r") if "\r" in line else (line,):
        segment = unwrap(segment)
        if not segment.strip() or is_progress(segment):
            continue
        # Interleaved writers: a process prefix after the start begins a new record.
        cuts = _cuts(segment) if segment.find("pid=", 1) != -1 else []
        if cuts:
            bounds = [0, *cuts, len(segment)]
            parts = [
                segment[a:b].rstrip() if b != len(segment) else segment[a:b]
                for a, b in zip(bounds, bounds[1:], strict=False)
            ]
            parts = [p for p in parts if p.strip()]
        else:
            parts = [segment]
        for part in parts:
            rec = _record(unwrap(part))
            if rec.msg.strip():
                out.append(rec)
    return out

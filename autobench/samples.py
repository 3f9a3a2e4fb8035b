"""Raw per-request samples of one bench cell: columnar in memory, compact on disk, mergeable.

A leaf module (standard library and :mod:`autobench.errors` only).  The bench builds a
:class:`Samples` from its request records (``autobench.bench.samples_of``); the ledger
stores :func:`encode`'s bytes per cell and hands back :func:`decode`'s result.  Percentiles
over several repeats are computed from :func:`merge` of their raw samples, never from
percentiles of percentiles (those cannot be merged).

Columns (one entry per request unless said otherwise; times in milliseconds):

* ``ttft_ms``, ``tpot_ms``, ``e2el_ms``: NaN where the request had none (no first token;
  fewer than 2 output tokens; no token at all).
* ``itl_ms``: every inter-token gap of every request, flat; request ``i``'s gaps
  are ``itl_ms[itl_offsets[i]:itl_offsets[i + 1]]`` (``itl_offsets`` has n + 1 entries,
  starting at 0).  :meth:`Samples.itl` returns one request's list.
* ``prompt_tokens``, ``completion_tokens``: int; ``-1`` (:data:`UNKNOWN`) where unknown.
* ``status``: the bench's request status (``ok``, ``error``, ``incomplete``:
  autobench/bench/record.py); ``error_kind``: one of the bench's error kinds (docs/bench.md) or None.
* ``start_s``: seconds from the cell's start to the request's send (NaN if unknown), so
  throughput and goodput over time can be recomputed.
* ``dispatch_ms``: the client's own dispatch delay, from when the request was due (the
  closed loop's previous request on its worker ended, or the rate schedule's arrival) to
  its send (NaN if unknown: samples written before format version 2).  It is not part of
  any latency: it tells client delay from server delay.

Every time is kept to the microsecond: values are rounded to 1 µs when a :class:`Samples`
is built (the float columns are ``array('d')`` holding whole microseconds), so
``decode(encode(s)) == s`` exactly and statistics over stored samples equal those over
fresh ones (and differ from the bench's own, taken over unrounded times, by at most 0.5 µs).
NaN is one canonical NaN, so equality compares bytes.

Encoding (:data:`FORMAT_VERSION` 2; version 1, the same without ``dispatch_ms``, is
still read, and samples without any dispatch delay are still written as version 1, so a
blob stored before keeps its bytes and its hash): one version byte, then a zlib stream (level 6) of,
little-endian: ``n`` and the ITL count (uint32 each); a string table (uint16 count, each
string as uint8 length + UTF-8, in first-appearance order over ``status`` then
``error_kind``); status codes and error-kind codes (uint16 per request; error kind 0 is
None, k is table entry k - 1); prompt and completion tokens (int32); ITL counts per
request (uint32); then the time columns as int64 microseconds (NaN: the smallest int64),
byte-shuffled (all first bytes, then all second bytes, ...: the high bytes of a time are
mostly zero and compress to almost nothing, 1.7 bytes per ITL gap against 3.1 for shuffled
float32) -- ``ttft_ms``, ``tpot_ms``, ``e2el_ms``, ``start_s``, (version 2: ``dispatch_ms``,)
``itl_ms``.  The same samples always encode
to the same bytes (the ledger hashes them); :func:`decode` raises :class:`LedgerError` for
an unknown version or a blob that is damaged in any way it can see.

Percentiles (:func:`percentile`) are numpy's default (linear interpolation between closest
ranks), the one definition ``autobench.bench.metrics`` uses too.
"""

from __future__ import annotations

import math
import operator
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, NamedTuple

from autobench.errors import LedgerError

FORMAT_VERSION = 2
#: The versions :func:`decode` reads (1: before ``dispatch_ms``).
READ_VERSIONS = (1, 2)
#: An unknown token count.
UNKNOWN = -1
#: The bench's status of a request that completed (autobench.bench.record.OK).
OK = "ok"
#: The latency columns :meth:`Samples.values` and :func:`summary` know.
LATENCIES = ("ttft_ms", "tpot_ms", "e2el_ms", "itl_ms")
_PER_REQUEST_FLOATS = ("ttft_ms", "tpot_ms", "e2el_ms")
_TYPECODES = {
    **dict.fromkeys((*_PER_REQUEST_FLOATS, "itl_ms"), "d"),
    **dict.fromkeys(("itl_offsets", "prompt_tokens", "completion_tokens"), "q"),
    "start_s": "d",
    "dispatch_ms": "d",
}
#: The time columns in their stored order (version 1 stops before ``dispatch_ms``).
_PER_REQUEST_TIMES = (*_PER_REQUEST_FLOATS, "start_s", "dispatch_ms")
_TIMES = (*_PER_REQUEST_TIMES, "itl_ms")
_TIMES_V1 = tuple(name for name in _TIMES if name != "dispatch_ms")
_LITTLE = sys.byteorder == "little"
_ZLIB_LEVEL = 6
_INT32 = (-(2**31), 2**31 - 1)


class Request(NamedTuple):
    """One request's samples (None where it had none), for building and reading samples."""

    status: str
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None
    itl_ms: Sequence[float] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error_kind: str | None = None
    start_s: float | None = None
    dispatch_ms: float | None = None


#: Microseconds per unit of a column (ms columns: 1000; start_s: 1e6).
_SCALE = {**dict.fromkeys((*_PER_REQUEST_FLOATS, "itl_ms", "dispatch_ms"), 1000.0), "start_s": 1e6}
#: The stored int64 of NaN.
_NAN_US = -(2**63)
_MAX_US = 2**62


def _us(v: float, scale: float, name: str) -> int:
    """``v`` in whole microseconds (ValueError when it is not a finite, storable time)."""
    try:
        k = round(v * scale)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValueError(f"{name}: {v!r} is not a finite number") from exc
    if not -_MAX_US < k < _MAX_US:
        raise ValueError(f"{name}: {v!r} is too large")
    return k


def _round_ms(values: Iterable[float]) -> Iterable[float]:
    """``values`` (ms) rounded to 1 µs, at C speed (``round(v * 1000) / 1000`` each)."""
    return map(operator.truediv, map(round, map(operator.mul, values, repeat(1000.0))), repeat(1000.0))


def _floats(values: Iterable[float | None], name: str) -> array[float]:
    """Per-request times, rounded to 1 µs: None and any NaN become the one NaN."""
    scale = _SCALE[name]
    return array("d", (math.nan if v is None or v != v else _us(v, scale, name) / scale for v in values))


def _ints(values: Iterable[int | None], name: str) -> array[int]:
    out: array[int] = array("q")
    for v in values:
        if v is None:
            out.append(UNKNOWN)
        elif isinstance(v, bool) or not isinstance(v, int) or not (_INT32[0] <= v <= _INT32[1]):
            raise ValueError(f"{name}: {v!r} is not a 32-bit integer")
        else:
            out.append(v)
    return out


@dataclass(frozen=True, eq=False)
class Samples:
    """The raw per-request samples of one cell (see the module docstring for each column).

    Build one with :meth:`of` (columns) or :meth:`from_requests` (rows), which round every
    time to 1 µs; the fields are ``array.array`` columns -- treat them as read-only (the
    direct constructor, used by :func:`merge` and :func:`decode`, takes them as they are)."""

    ttft_ms: array[float]
    tpot_ms: array[float]
    e2el_ms: array[float]
    itl_ms: array[float]
    itl_offsets: array[int]
    prompt_tokens: array[int]
    completion_tokens: array[int]
    status: tuple[str, ...]
    error_kind: tuple[str | None, ...]
    start_s: array[float]
    dispatch_ms: array[float]

    def __post_init__(self) -> None:
        n = len(self.status)
        for name in (*_PER_REQUEST_TIMES, "prompt_tokens", "completion_tokens", "error_kind"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {n} requests")
        offsets = self.itl_offsets
        if len(offsets) != n + 1 or offsets[0] != 0 or offsets[-1] != len(self.itl_ms):
            raise ValueError("itl_offsets must have n + 1 entries, from 0 to len(itl_ms)")
        if any(b < a for a, b in zip(offsets, offsets[1:], strict=False)):
            raise ValueError("itl_offsets must not decrease")
        for name, code in _TYPECODES.items():
            if getattr(self, name).typecode != code:
                raise ValueError(f"{name} must be an array of typecode {code!r}")
        if not math.isfinite(sum(self.itl_ms)):
            raise ValueError("itl_ms: every gap must be a finite number")
        for name in ("status", "error_kind"):
            for text in getattr(self, name):
                if text is not None and (not isinstance(text, str) or not text or len(text.encode()) > 255):
                    raise ValueError(f"{name}: {text!r} is not a short non-empty string")

    # -- building
    @classmethod
    def of(
        cls,
        *,
        status: Sequence[str],
        ttft_ms: Sequence[float | None],
        tpot_ms: Sequence[float | None],
        e2el_ms: Sequence[float | None],
        itl_ms: Sequence[Sequence[float]],
        prompt_tokens: Sequence[int | None],
        completion_tokens: Sequence[int | None],
        error_kind: Sequence[str | None],
        start_s: Sequence[float | None],
        dispatch_ms: Sequence[float | None] | None = None,
    ) -> Samples:
        """Samples from columns; ``itl_ms`` is one list of gaps per request."""
        flat: array[float] = array("d")
        offsets: array[int] = array("q", [0])
        try:
            for gaps in itl_ms:
                flat.extend(_round_ms(gaps))
                offsets.append(len(flat))
        except (OverflowError, ValueError, TypeError) as exc:
            raise ValueError(f"itl_ms: a gap is not a finite number ({exc})") from exc
        if flat and max(max(flat), -min(flat)) >= _MAX_US / 1000.0:
            raise ValueError("itl_ms: a gap is too large")
        return cls(
            ttft_ms=_floats(ttft_ms, "ttft_ms"),
            tpot_ms=_floats(tpot_ms, "tpot_ms"),
            e2el_ms=_floats(e2el_ms, "e2el_ms"),
            itl_ms=flat,
            itl_offsets=offsets,
            prompt_tokens=_ints(prompt_tokens, "prompt_tokens"),
            completion_tokens=_ints(completion_tokens, "completion_tokens"),
            status=tuple(status),
            error_kind=tuple(error_kind),
            start_s=_floats(start_s, "start_s"),
            dispatch_ms=_floats([None] * len(status) if dispatch_ms is None else dispatch_ms, "dispatch_ms"),
        )

    @classmethod
    def from_requests(cls, requests: Iterable[Request]) -> Samples:
        rows = list(requests)
        return cls.of(
            status=[r.status for r in rows],
            ttft_ms=[r.ttft_ms for r in rows],
            tpot_ms=[r.tpot_ms for r in rows],
            e2el_ms=[r.e2el_ms for r in rows],
            itl_ms=[r.itl_ms for r in rows],
            prompt_tokens=[r.prompt_tokens for r in rows],
            completion_tokens=[r.completion_tokens for r in rows],
            error_kind=[r.error_kind for r in rows],
            start_s=[r.start_s for r in rows],
            dispatch_ms=[r.dispatch_ms for r in rows],
        )

    @classmethod
    def empty(cls) -> Samples:
        return cls.from_requests(())

    # -- reading
    def __len__(self) -> int:
        return len(self.status)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Samples):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        arrays = (self.ttft_ms, self.tpot_ms, self.e2el_ms, self.itl_ms, self.itl_offsets)
        more = (self.prompt_tokens, self.completion_tokens, self.start_s, self.dispatch_ms)
        return (*(a.tobytes() for a in (*arrays, *more)), self.status, self.error_kind)

    def __repr__(self) -> str:
        return f"Samples({len(self)} requests, {len(self.itl_ms)} ITL gaps)"

    def itl(self, i: int) -> list[float]:
        """Request ``i``'s inter-token gaps (ms)."""
        return self.itl_ms[self.itl_offsets[i] : self.itl_offsets[i + 1]].tolist()

    def request(self, i: int) -> Request:
        """Request ``i`` as a row (None where it had no value)."""

        def f(v: float) -> float | None:
            return None if v != v else v

        def k(v: int) -> int | None:
            return None if v == UNKNOWN else v

        return Request(
            status=self.status[i],
            ttft_ms=f(self.ttft_ms[i]),
            tpot_ms=f(self.tpot_ms[i]),
            e2el_ms=f(self.e2el_ms[i]),
            itl_ms=self.itl(i),
            prompt_tokens=k(self.prompt_tokens[i]),
            completion_tokens=k(self.completion_tokens[i]),
            error_kind=self.error_kind[i],
            start_s=f(self.start_s[i]),
            dispatch_ms=f(self.dispatch_ms[i]),
        )

    def requests(self) -> list[Request]:
        return [self.request(i) for i in range(len(self))]

    def count(self, status: str) -> int:
        return self.status.count(status)

    def values(self, metric: str, status: str | None = OK) -> list[float]:
        """The values of ``metric`` (one of :data:`LATENCIES`) over the requests of ``status``
        (None: every request), NaN left out: what the bench's statistics are computed over."""
        if metric not in LATENCIES:
            raise ValueError(f"unknown metric {metric!r}; one of {', '.join(LATENCIES)}")
        keep = range(len(self)) if status is None else [i for i, s in enumerate(self.status) if s == status]
        if metric == "itl_ms":
            if len(keep) == len(self):
                return self.itl_ms.tolist()
            out: list[float] = []
            for i in keep:
                out.extend(self.itl_ms[self.itl_offsets[i] : self.itl_offsets[i + 1]])
            return out
        column: array[float] = getattr(self, metric)
        return [v for v in (column[i] for i in keep) if v == v]


# ---- statistics ------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """``numpy.percentile(values, q)`` with the default linear method (``q`` in 0..100)."""
    if not values:
        raise ValueError("percentile of an empty sequence")
    return _percentile_sorted(sorted(values), q)


def percentiles(values: Sequence[float], qs: Sequence[float]) -> list[float]:
    """:func:`percentile` for several ``qs`` at once (one sort)."""
    if not values:
        raise ValueError("percentile of an empty sequence")
    xs = sorted(values)
    return [_percentile_sorted(xs, q) for q in qs]


def _percentile_sorted(xs: Sequence[float], q: float) -> float:
    if len(xs) == 1:
        return float(xs[0])
    rank = (len(xs) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    frac = rank - lo
    return float(xs[lo] + (xs[hi] - xs[lo]) * frac)


#: The statistics :func:`summary` gives per latency: name -> percentile (None: the mean).
SUMMARY_STATS: dict[str, float | None] = {"mean": None, "median": 50.0, "p90": 90.0, "p99": 99.0}


def summary(samples: Samples) -> dict[str, float | int | None]:
    """Counts and latency statistics over the successful requests, named as the ledger's
    metric columns: ``completed``, ``errors``, ``incomplete``, and per latency
    (ttft, tpot, itl, e2el) ``<latency>_<mean|median|p90|p99>_ms`` (None when no value)."""
    out: dict[str, float | int | None] = {
        "completed": samples.count(OK),
        "errors": samples.count("error"),
        "incomplete": samples.count("incomplete"),
    }
    for metric in LATENCIES:
        values = samples.values(metric)
        base = metric.removesuffix("_ms")
        qs = [q for q in SUMMARY_STATS.values() if q is not None]
        ps = dict(zip(qs, percentiles(values, qs), strict=True)) if values else {}
        for stat, q in SUMMARY_STATS.items():
            key = f"{base}_{stat}_ms"
            if not values:
                out[key] = None
            elif q is None:
                out[key] = math.fsum(values) / len(values)
            else:
                out[key] = ps[q]
    return out


def merge(parts: Sequence[Samples]) -> Samples:
    """One :class:`Samples` holding every request of ``parts``, in order (e.g. the repeats of
    a cell).  ``start_s`` stays relative to each part's own cell start."""
    if len(parts) == 1:
        return parts[0]
    floats = {name: array("d") for name in (*_PER_REQUEST_FLOATS, "itl_ms")}
    ints = {name: array("q") for name in ("prompt_tokens", "completion_tokens")}
    start_s: array[float] = array("d")
    dispatch_ms: array[float] = array("d")
    offsets: array[int] = array("q", [0])
    status: list[str] = []
    error_kind: list[str | None] = []
    for part in parts:
        base = len(floats["itl_ms"])
        for name, column in floats.items():
            column.extend(getattr(part, name))
        for name, icolumn in ints.items():
            icolumn.extend(getattr(part, name))
        start_s.extend(part.start_s)
        dispatch_ms.extend(part.dispatch_ms)
        offsets.extend(base + o for o in part.itl_offsets[1:])
        status.extend(part.status)
        error_kind.extend(part.error_kind)
    return Samples(
        ttft_ms=floats["ttft_ms"],
        tpot_ms=floats["tpot_ms"],
        e2el_ms=floats["e2el_ms"],
        itl_ms=floats["itl_ms"],
        itl_offsets=offsets,
        prompt_tokens=ints["prompt_tokens"],
        completion_tokens=ints["completion_tokens"],
        status=tuple(status),
        error_kind=tuple(error_kind),
        start_s=start_s,
        dispatch_ms=dispatch_ms,
    )


# ---- encoding --------------------------------------------------------------------


def _le(column: array[Any], code: str) -> bytes:
    """``column`` as little-endian bytes of type ``code`` (raises OverflowError when a value
    does not fit)."""
    out = column if column.typecode == code else array(code, column)
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        out = array(code, out)
        out.byteswap()
    return out.tobytes()


def _shuffle(raw: bytes, width: int) -> bytes:
    return b"".join(raw[i::width] for i in range(width))


def _unshuffle(raw: bytes, width: int) -> bytes:
    out = bytearray(len(raw))
    step = len(raw) // width
    for i in range(width):
        out[i::width] = raw[i * step : (i + 1) * step]
    return bytes(out)


def encode(samples: Samples) -> bytes:
    """The samples as bytes (see the module docstring); the same samples, the same bytes.
    Version 1 when no request has a dispatch delay (what was stored before keeps its bytes),
    else version 2."""
    version = 2 if any(v == v for v in samples.dispatch_ms) else 1
    table: dict[str, int] = {}
    for text in (*samples.status, *(k for k in samples.error_kind if k is not None)):
        table.setdefault(text, len(table))
    if len(table) > 0xFFFF:
        raise ValueError("more than 65535 distinct status / error-kind strings")
    n = len(samples)
    parts = [struct.pack("<IIH", n, len(samples.itl_ms), len(table))]
    for text in table:
        raw = text.encode("utf-8")
        parts.append(struct.pack("<B", len(raw)) + raw)
    parts.append(_le(array("H", (table[s] for s in samples.status)), "H"))
    parts.append(_le(array("H", (0 if k is None else table[k] + 1 for k in samples.error_kind)), "H"))
    parts.append(_le(samples.prompt_tokens, "i"))
    parts.append(_le(samples.completion_tokens, "i"))
    offsets = samples.itl_offsets
    parts.append(_le(array("I", (offsets[i + 1] - offsets[i] for i in range(n))), "I"))
    for name in _PER_REQUEST_TIMES if version == 2 else _PER_REQUEST_TIMES[:-1]:
        scale = _SCALE[name]
        micros = array("q", (_NAN_US if v != v else round(v * scale) for v in getattr(samples, name)))
        parts.append(_shuffle(_le(micros, "q"), 8))
    micros = array("q", map(round, map(operator.mul, samples.itl_ms, repeat(1000.0))))
    parts.append(_shuffle(_le(micros, "q"), 8))
    return bytes([version]) + zlib.compress(b"".join(parts), _ZLIB_LEVEL)


class _Reader:
    def __init__(self, body: bytes):
        self.body = body
        self.at = 0

    def take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.body):
            raise ValueError(f"it ends early (needs {size} bytes at offset {self.at} of {len(self.body)})")
        chunk = self.body[self.at : self.at + size]
        self.at += size
        return chunk

    def column(self, code: str, count: int, shuffled: bool = False) -> array[Any]:
        out: array[Any] = array(code)
        raw = self.take(count * out.itemsize)
        out.frombytes(_unshuffle(raw, out.itemsize) if shuffled else raw)
        if not _LITTLE:  # pragma: no cover - big-endian hosts
            out.byteswap()
        return out


def decode(blob: bytes, *, where: str | None = None) -> Samples:
    """The :class:`Samples` :func:`encode` wrote.  A blob of an unknown version, or damaged,
    raises LedgerError (``where`` names it, e.g. ``run #12 cell 3``)."""
    if not blob:
        raise LedgerError("the samples blob is empty", location=where)
    if blob[0] not in READ_VERSIONS:
        raise LedgerError(
            f"the samples blob has format version {blob[0]}; this autobench reads versions "
            f"{', '.join(map(str, READ_VERSIONS))}",
            location=where,
            hint="a newer autobench wrote it: upgrade autobench",
        )
    try:
        stream = zlib.decompressobj()
        body = stream.decompress(blob[1:])
        if not stream.eof:
            raise ValueError("the compressed stream ends early")
        if stream.unused_data:
            raise ValueError(f"{len(stream.unused_data)} bytes after the compressed stream")
        return _decode_body(body, blob[0])
    except (zlib.error, ValueError, struct.error, UnicodeDecodeError, IndexError) as exc:
        raise LedgerError(
            f"the samples blob is damaged ({exc})",
            location=where,
            hint="autobench ledger verify tells whether the ledger was changed after it was written",
        ) from exc


def _decode_body(body: bytes, version: int) -> Samples:
    r = _Reader(body)
    n, n_itl, n_table = struct.unpack("<IIH", r.take(10))
    table = [r.take(r.take(1)[0]).decode("utf-8") for _ in range(n_table)]
    status = tuple(table[c] for c in r.column("H", n))
    error_kind = tuple(None if c == 0 else table[c - 1] for c in r.column("H", n))
    prompt_tokens = array("q", r.column("i", n))
    completion_tokens = array("q", r.column("i", n))
    offsets: array[int] = array("q", [0])
    total = 0
    for count in r.column("I", n):
        total += count
        offsets.append(total)
    if total != n_itl:
        raise ValueError(f"the ITL counts add up to {total}, not {n_itl}")
    names = _TIMES if version == 2 else _TIMES_V1
    times = {name: _times(r.column("q", n_itl if name == "itl_ms" else n, shuffled=True), name) for name in names}
    dispatch = times.get("dispatch_ms", array("d", [math.nan] * n))
    if r.at != len(body):
        raise ValueError(f"{len(body) - r.at} bytes left over")
    return Samples(
        ttft_ms=times["ttft_ms"],
        tpot_ms=times["tpot_ms"],
        e2el_ms=times["e2el_ms"],
        itl_ms=times["itl_ms"],
        itl_offsets=offsets,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        status=status,
        error_kind=error_kind,
        start_s=times["start_s"],
        dispatch_ms=dispatch,
    )


def _times(micros: array[int], name: str) -> array[float]:
    scale = _SCALE[name]
    if name == "itl_ms":
        if _NAN_US in micros:
            raise ValueError("an ITL gap is NaN")
        return array("d", map(operator.truediv, micros, repeat(scale)))
    return array("d", (math.nan if k == _NAN_US else k / scale for k in micros))


__all__ = [
    "FORMAT_VERSION",
    "LATENCIES",
    "READ_VERSIONS",
    "OK",
    "UNKNOWN",
    "Request",
    "Samples",
    "decode",
    "encode",
    "merge",
    "percentile",
    "percentiles",
    "summary",
]

"""A bench run's request records as raw per-request samples (:class:`autobench.samples.Samples`).

The formulas are the bench's own (autobench.bench.metrics, docs/bench.md): TTFT = t1 - st,
E2EL = tl - st, TPOT = (tl - t1) / (N - 1) for N >= 2 output tokens, ITL = the gaps between
token-bearing chunks; all in milliseconds.  ``start_s`` is st - t0, the send time from the
start of the measured run; ``dispatch_ms`` is st - the time the request was due (the
client's own dispatch delay, ``RequestRecord.scheduled``).  Every record is kept, whatever
its status; statistics over the samples take the successful ones (``Samples.values``), as
the result's do.
"""

from __future__ import annotations

from collections.abc import Iterable

from autobench.bench.record import RequestRecord
from autobench.samples import Request, Samples


def request_of(record: RequestRecord, t0: float) -> Request:
    """One ``autobench.bench.record.RequestRecord`` as a :class:`Request` of samples."""
    start = record.start or None
    first = record.first if start is not None else None
    last = record.last if start is not None else None
    n = record.completion_tokens
    tpot = None
    if first is not None and last is not None and n is not None and n >= 2:
        tpot = 1000.0 * (last - first) / (n - 1)
    return Request(
        status=record.status,
        ttft_ms=1000.0 * (first - start) if first is not None and start is not None else None,
        tpot_ms=tpot,
        e2el_ms=1000.0 * (last - start) if last is not None and start is not None else None,
        itl_ms=[1000.0 * g for g in record.gaps],
        prompt_tokens=record.prompt_tokens,
        completion_tokens=n,
        error_kind=record.error_kind,
        start_s=(start - t0) if start is not None else None,
        dispatch_ms=dispatch_delay_ms(record),
    )


def dispatch_delay_ms(record: RequestRecord) -> float | None:
    """How long after it was due the request was written (ms), or None when it was never
    written or its due time is unknown."""
    if not record.start or not record.scheduled:
        return None
    return 1000.0 * (record.start - record.scheduled)


def samples_of(records: Iterable[RequestRecord], t0: float) -> Samples:
    """Every request record of a run (``t0``: the start of the measured run, perf_counter)."""
    return Samples.from_requests(request_of(r, t0) for r in records)

"""The per-request record the client fills in (plain data, no I/O)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import asyncio

# Status values
OK = "ok"
ERROR = "error"
INCOMPLETE = "incomplete"
INFLIGHT = "inflight"


class RequestRecord:
    __slots__ = (
        "index",
        "prompt_est",
        "arrival",
        "start",
        "first",
        "last",
        "gaps",
        "n_chunks",
        "shared_gaps",
        "unseen_gaps",
        "prompt_tokens",
        "completion_tokens",
        "finish_reason",
        "status",
        "error_kind",
        "error_message",
        "http_status",
        "usage_fallback",
        "first_srv",
        "arr_srv",
        "end",
        "dispatch",
        "scheduled",
        "io",
        "timed_out",
        "watchdog",
    )

    def __init__(self, index: int, prompt_est: int, arrival: float | None = None):
        self.index = index
        self.prompt_est = prompt_est
        self.arrival = arrival  # intended send time (rate mode) or None
        self.dispatch = 0.0  # perf_counter when the client called post (before building the request)
        # perf_counter of when the request was due: the closed loop's previous request on the same
        # worker ended (t0 for the first), or rate mode's arrival (or the moment a slot came free,
        # when it had to wait for one); 0.0 when unknown.  start - scheduled = the dispatch delay.
        self.scheduled = 0.0
        self.start = 0.0  # st, perf_counter right before the request is written to the socket
        self.first: float | None = None
        self.last: float | None = None
        self.gaps: list[float] = []  # ITL samples (autobench.bench.stream: how events of one read share it)
        self.n_chunks = 0
        self.shared_gaps = 0  # gaps in ``gaps`` that share one read's time with other token events
        self.unseen_gaps = 0  # token events that came in the read of the first token: no gap measured
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.finish_reason: str | None = None
        self.status = INFLIGHT
        self.error_kind: str | None = None
        self.error_message: str | None = None
        self.http_status: int | None = None
        self.usage_fallback = False
        self.first_srv: float | None = None  # server send time of the first token chunk, if sent
        self.arr_srv: float | None = None  # server arrival time of the request, if sent
        self.end: float | None = None  # end of the stream ([DONE] / EOF / error)
        # client internals: last socket activity, the read-timeout timer and whether it fired
        self.io = 0.0
        self.timed_out = False
        self.watchdog: asyncio.TimerHandle | None = None

    def fail(self, kind: str, message: str) -> None:
        if self.status == ERROR:  # keep the first error
            return
        self.status = ERROR
        self.error_kind = kind
        self.error_message = " ".join(message.split())[:300]


class Completed(NamedTuple):
    """A request that completed (status ``ok``), with what its statistics read known: a stream
    is ``ok`` only after a token and a usage report (or the chunk count, with
    ``--allow-missing-usage``) arrived (``autobench.bench.stream.StreamSink.on_end``)."""

    start: float
    first: float
    last: float
    gaps: list[float]
    n_chunks: int
    shared_gaps: int
    unseen_gaps: int
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    usage_fallback: bool
    first_srv: float | None
    arr_srv: float | None


def completed(records: list[RequestRecord]) -> list[Completed]:
    """The completed requests of ``records``, in order."""
    out: list[Completed] = []
    for r in records:
        if r.status != OK:
            continue
        if r.first is None or r.last is None or r.prompt_tokens is None or r.completion_tokens is None:
            raise ValueError(f"request {r.index} is ok without a token or its counts (a bug in the stream reader)")
        out.append(
            Completed(
                r.start,
                r.first,
                r.last,
                r.gaps,
                r.n_chunks,
                r.shared_gaps,
                r.unseen_gaps,
                r.prompt_tokens,
                r.completion_tokens,
                r.finish_reason,
                r.usage_fallback,
                r.first_srv,
                r.arr_srv,
            )
        )
    return out

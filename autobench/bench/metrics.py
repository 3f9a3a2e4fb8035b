"""Pure metric formulas (no I/O, no clocks).  Every formula is written out in docs/bench.md.

Statistics follow ``vllm bench serve``: population standard deviation and linear
interpolation between closest ranks for percentiles (numpy's default), computed
over successful requests only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# The one percentile definition (numpy's linear method); raw samples stored in the ledger
# are summarised with it too (autobench.samples).
from autobench.samples import percentile as percentile

PERCENTILES = (90.0, 99.0)


def mean(values: Sequence[float]) -> float:
    return float(math.fsum(values) / len(values))


def pstdev(values: Sequence[float]) -> float:
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


def summarize(values: Sequence[float], scale: float = 1.0) -> dict[str, float | None]:
    """mean, median, std, p90, p99 of ``values * scale``; all None when there are none."""
    keys = ["mean", "median", "std"] + [f"p{_pct_name(p)}" for p in PERCENTILES]
    if not values:
        return dict.fromkeys(keys)
    xs = [v * scale for v in values]
    out: dict[str, float | None] = {"mean": mean(xs), "median": percentile(xs, 50.0), "std": pstdev(xs)}
    for p in PERCENTILES:
        out[f"p{_pct_name(p)}"] = percentile(xs, p)
    return out


def _pct_name(p: float) -> str:
    return str(int(p)) if float(p).is_integer() else str(p)


@dataclass(frozen=True)
class RequestTiming:
    """One successful request, times in seconds relative to any common origin."""

    start: float  # st: just before the request is sent
    first: float  # t1: first chunk carrying a token
    last: float  # tl: last chunk carrying a token
    output_tokens: int  # N, from the server's usage report
    gaps: tuple[float, ...] = ()  # gaps between successive token-bearing chunks


def ttft(r: RequestTiming) -> float:
    """TTFT = t1 - st."""
    return r.first - r.start


def e2el(r: RequestTiming) -> float:
    """E2EL = tl - st (vLLM: the usage chunk and [DONE] are excluded)."""
    return r.last - r.start


def tpot(r: RequestTiming) -> float | None:
    """TPOT = (tl - t1) / (N - 1), defined for N >= 2; correct under multi-token chunks."""
    if r.output_tokens < 2:
        return None
    return (r.last - r.first) / (r.output_tokens - 1)


def throughput(total: float, duration: float) -> float | None:
    return total / duration if duration > 0 else None


@dataclass(frozen=True)
class SpecDecodeDelta:
    drafts: float
    draft_tokens: float
    accepted: float
    accepted_per_pos: tuple[float, ...]


def spec_decode_metrics(d: SpecDecodeDelta) -> dict[str, object] | None:
    """vLLM's formulas: length = 1 + accepted/drafts, rate = 100*accepted/draft_tokens (%),
    per_pos[i] = accepted_pos[i]/drafts (fractions).  None when no draft happened."""
    if d.drafts <= 0:
        return None
    return {
        "spec_decode_acceptance_length": 1.0 + d.accepted / d.drafts,
        "spec_decode_acceptance_rate": (100.0 * d.accepted / d.draft_tokens) if d.draft_tokens > 0 else None,
        "spec_decode_num_drafts": int(d.drafts),
        "spec_decode_draft_tokens": int(d.draft_tokens),
        "spec_decode_accepted_tokens": int(d.accepted),
        "spec_decode_per_position_acceptance_rates": [v / d.drafts for v in d.accepted_per_pos],
    }


@dataclass(frozen=True)
class PrefixCacheDelta:
    queries: float  # prompt tokens looked up in the prefix cache during the run
    hits: float  # of those, tokens found cached


def prefix_cache_metrics(d: PrefixCacheDelta) -> dict[str, object]:
    """hit rate = hits / queries (a fraction; None when nothing was looked up), and the counts."""
    return {
        "prefix_cache_queries": int(d.queries),
        "prefix_cache_hits": int(d.hits),
        "prefix_cache_hit_rate": d.hits / d.queries if d.queries > 0 else None,
    }

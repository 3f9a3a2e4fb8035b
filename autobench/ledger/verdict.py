"""Verdicts: did run B get faster or slower than run A, beyond run-to-run noise?

Pure statistics (stdlib only, no I/O), used by ``compare`` and ``regress``; the method is
written out in docs/verdicts.md.

Per cell (cells matched by their parameters without ``repeat``) and metric:

- **A, B**: the median of the metric over the cell's repeats (the value itself for one repeat);
  **ratio** = B / A.
- **band**: a confidence interval of the ratio (95 % before the correction below).  With
  at least two repeats on each side, Student's t interval (pooled variance) of the difference
  of the repeats' mean log values (a ratio of geometric means; the repeats' run-to-run noise, with the
  small-sample width a handful of repeats needs: a bootstrap of 2 or 3 values cannot see
  its own noise).  Otherwise, when both sides kept their per-request samples, a seeded
  percentile bootstrap (1000 resamples) over the requests (all repeats of a side merged): a
  latency percentile is drawn from the exact bootstrap distribution of that order statistic
  (``x[ceil(n*U)]``, ``U ~ Beta(k, n-k+1)``: the same distribution as sorting a resample, at
  O(1) per draw); a throughput is the run's value
  scaled by the resample's tokens per second of request time (``sum tokens / sum E2EL``)
  relative to the whole sample's, drawn from its normal (delta-method) approximation.
  This band holds request-to-request noise only, and a percentile gets one only with at
  least :data:`MIN_TAIL` requests beyond it.  Without either, there is no band.  Each
  band's level is Bonferroni-corrected over the metrics both runs have per cell (95 % over m
  metrics: each at 1 - 5 %/m), so noise alone makes any of a cell's metrics read faster or
  slower in under 5 % of comparisons.
- **verdict** (threshold ``t``, e.g. 5 %): *no change* when the band lies within
  [1 - t, 1 + t]; else *faster* / *slower* when the band lies wholly on one side of 1.0 and
  the ratio itself moved beyond ``t`` that way (throughputs: higher is faster; latencies:
  lower is faster); else *inconclusive*.  Without a band: *inconclusive*.  So *slower* says
  "worse by more than the threshold, and outside the noise", the very test of a regression.
- **regression** (``regress``): the verdict is *slower*.  Where neither run kept
  per-request samples and a side has one repeat (runs recorded by hand from a result
  file), there is no band and the ratio alone decides (worse by more than ``t``; the output
  says there was no band).  A metric whose runs kept samples but too few for its band (a p99
  of 200 requests) is inconclusive and never a regression.

A cell either side marked ``client_bound`` (the bench client was the bottleneck,
docs/bench.md), or whose figures carry another quality flag (``burst_stream``,
``prompts_estimated``, ...: ``autobench.metric_catalogue.FLAGS``), keeps its verdict but
carries the mark everywhere it is shown ("faster (flagged: burst_stream)").

The random stream of every (cell, metric, side) comes from ``random.Random`` seeded with a
string built from the seed, the cell and the metric, so a verdict does not depend on which
other cells or metrics were judged, and the same seed gives the same bands.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from autobench import metric_catalogue as catalogue

FASTER = "faster"
SLOWER = "slower"
NO_CHANGE = "no change"
INCONCLUSIVE = "inconclusive"

RESAMPLES = 1000
#: A percentile's band from requests needs this many requests beyond it (a p99: 1,000 requests);
#: the bootstrap of a quantile with fewer is too narrow (it cannot draw beyond the largest value).
MIN_TAIL = 10
#: A throughput's band from requests needs this many requests.
MIN_REQUESTS = 30
LEVEL = 0.95
SEED = 0

#: metric -> True when higher is better: the metrics the catalogue has verdicts judge
#: (``autobench.metric_catalogue``: ``verdict``, ``better``), in its order.
HIGHER_IS_BETTER: dict[str, bool] = {m.key: m.higher_is_better for m in catalogue.METRICS if m.verdict}

#: latency metric -> (per-request field, quantile)
LATENCY_SOURCES: dict[str, tuple[str, float]] = {
    m.key: m.sample for m in catalogue.METRICS if m.verdict and m.sample is not None
}

#: throughput metric -> the per-request token counts it sums
THROUGHPUT_TOKENS: dict[str, tuple[str, ...]] = {m.key: m.tokens for m in catalogue.METRICS if m.verdict and m.tokens}


@dataclass(frozen=True)
class Requests:
    """The successful requests of one cell (every repeat merged), one value per request that
    has it; ``itl_ms`` holds every inter-token gap of every request.  ``prompt_tokens``,
    ``completion_tokens`` and ``token_e2el_ms`` are aligned (request i, only requests whose
    three are known); ``token_e2el_ms`` empty means ``e2el_ms`` is aligned with them."""

    ttft_ms: Sequence[float] = ()
    tpot_ms: Sequence[float] = ()
    itl_ms: Sequence[float] = ()
    e2el_ms: Sequence[float] = ()
    prompt_tokens: Sequence[float] = ()
    completion_tokens: Sequence[float] = ()
    token_e2el_ms: Sequence[float] = ()


@dataclass
class CellData:
    """One cell of one run: its parameters (without ``repeat``), each repeat's metrics, and
    its per-request samples when the run kept them."""

    params: dict[str, object]
    repeats: list[Mapping[str, object]]
    requests: Requests | None = None

    @property
    def client_bound(self) -> bool:
        return any(bool(m.get("client_bound")) for m in self.repeats)

    @property
    def flags(self) -> dict[str, str]:
        """The quality flags any repeat raised (name -> why; ``autobench.metric_catalogue.FLAGS``)."""
        out: dict[str, str] = {}
        for m in self.repeats:
            raised = m.get("flags")
            if isinstance(raised, Mapping):
                for name, why in raised.items():
                    out.setdefault(str(name), str(why))
        return out

    def values(self, metric: str) -> list[float]:
        return [v for v in (number(m.get(metric)) for m in self.repeats) if v is not None]


@dataclass(frozen=True)
class MetricVerdict:
    metric: str
    a: float
    b: float
    ratio: float  # b / a
    band: tuple[float, float] | None
    method: str  # repeats | requests | few (samples, too few of them) | none (no samples, one repeat)
    verdict: str
    client_bound: bool = False
    #: The quality flags either side's figures carry (besides ``client_bound``), by name.
    flags: tuple[str, ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return HIGHER_IS_BETTER[self.metric]

    @property
    def change(self) -> float:
        return self.ratio - 1.0

    @property
    def worse_by(self) -> float:
        """How much worse B is than A (a fraction; negative when better)."""
        return -self.change if self.higher_is_better else self.change

    def regressed(self, threshold: float) -> bool:
        """Worse beyond ``threshold`` and, when there is a band, outside it (verdict slower;
        ``threshold`` is the one the verdict was judged with).  Without a band: a run kept no
        samples (method none) is judged by the threshold alone; a metric with too few requests
        for a band (method few) is not judged: a p99 of 200 requests is noise."""
        if self.method == "none":
            return self.worse_by > threshold
        return self.verdict == SLOWER

    def label(self, verdict: str | None = None) -> str:
        """The verdict (or ``verdict`` in its place) as shown: a client-bound or flagged cell's
        verdict always carries the mark."""
        marks = ["client-bound"] if self.client_bound else []
        if self.flags:
            marks.append("flagged: " + ", ".join(self.flags))
        shown = verdict or self.verdict
        return f"{shown} ({'; '.join(marks)})" if marks else shown

    def to_json_dict(self, threshold: float | None = None) -> dict[str, object]:
        out: dict[str, object] = {
            "metric": self.metric,
            "a": self.a,
            "b": self.b,
            "ratio": self.ratio,
            "change": self.change,
            "band": list(self.band) if self.band is not None else None,
            "method": self.method,
            "verdict": self.verdict,
            "client_bound": self.client_bound,
            "flags": list(self.flags),
            "higher_is_better": self.higher_is_better,
        }
        if threshold is not None:
            out["regressed"] = self.regressed(threshold)
        return out


@dataclass
class CellVerdict:
    params: dict[str, object]
    repeats: tuple[int, int]
    client_bound: tuple[bool, bool]
    metrics: list[MetricVerdict] = field(default_factory=list)
    #: Each side's quality flags (name -> why).
    flags: tuple[dict[str, str], dict[str, str]] = ({}, {})

    @property
    def label(self) -> str:
        return cell_label(self.params)

    def to_json_dict(self, threshold: float | None = None) -> dict[str, object]:
        return {
            "params": self.params,
            "repeats": {"a": self.repeats[0], "b": self.repeats[1]},
            "client_bound": {"a": self.client_bound[0], "b": self.client_bound[1]},
            "flags": {"a": dict(self.flags[0]), "b": dict(self.flags[1])},
            "metrics": [m.to_json_dict(threshold) for m in self.metrics],
        }


@dataclass
class Verdicts:
    threshold: float
    seed: int
    resamples: int
    level: float
    cells: list[CellVerdict]
    only_a: list[dict[str, object]] = field(default_factory=list)  # cells B lacks
    only_b: list[dict[str, object]] = field(default_factory=list)

    def rows(self) -> Iterable[tuple[CellVerdict, MetricVerdict]]:
        for cell in self.cells:
            for m in cell.metrics:
                yield cell, m

    @property
    def regressions(self) -> list[tuple[CellVerdict, MetricVerdict]]:
        return [(c, m) for c, m in self.rows() if m.regressed(self.threshold)]

    def to_json_dict(self, *, regress: bool = False) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "seed": self.seed,
            "resamples": self.resamples,
            "level": self.level,
            "cells": [c.to_json_dict(self.threshold if regress else None) for c in self.cells],
            "cells_only_in_a": self.only_a,
            "cells_only_in_b": self.only_b,
        }


# ---------------------------------------------------------------- helpers


def number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def median(values: Sequence[float]) -> float:
    xs = sorted(values)
    n = len(xs)
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2


def cell_key(params: Mapping[str, object]) -> str:
    return json.dumps({k: v for k, v in params.items() if k != "repeat"}, sort_keys=True, default=str)


def cell_label(params: Mapping[str, object]) -> str:
    """``concurrency=4 input_len=256``; ``run`` for a run without cells."""
    shown = [f"{k}={v}" for k, v in sorted(params.items()) if k != "repeat"]
    return " ".join(shown) or "run"


def verdict_of(ratio: float, band: tuple[float, float] | None, higher_is_better: bool, threshold: float) -> str:
    """The rule of the module docstring: no change, faster, slower or inconclusive."""
    if band is None:
        return INCONCLUSIVE
    lo, hi = band
    if 1.0 - threshold <= lo and hi <= 1.0 + threshold:
        return NO_CHANGE
    if lo > 1.0 and ratio > 1.0 + threshold:
        return FASTER if higher_is_better else SLOWER
    if hi < 1.0 and ratio < 1.0 - threshold:
        return SLOWER if higher_is_better else FASTER
    return INCONCLUSIVE


# ---------------------------------------------------------------- bootstrap

Draw = Callable[[random.Random], float]


def _quantile_band(ratios: list[float], level: float) -> tuple[float, float]:
    xs = sorted(ratios)
    tail = (1.0 - level) / 2
    n = len(xs)
    lo = xs[max(0, math.floor(tail * n))]
    hi = xs[min(n - 1, math.ceil((1.0 - tail) * n) - 1)]
    return lo, hi


def ratio_band(
    draw_a: Draw, draw_b: Draw, *, rng_a: random.Random, rng_b: random.Random, resamples: int, level: float
) -> tuple[float, float] | None:
    """The percentile-bootstrap band of draw_b / draw_a; None when A's draws hit zero."""
    ratios = []
    for _ in range(resamples):
        a = draw_a(rng_a)
        if a == 0:
            return None
        ratios.append(draw_b(rng_b) / a)
    return _quantile_band(ratios, level)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (0.5 < p < 1): the t with P(T <= t) = p, by bisection on its CDF."""

    def upper_tail(t: float) -> float:  # P(T > t) for t >= 0
        return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))

    target = 1.0 - p
    lo, hi = 0.0, 1.0
    while upper_tail(hi) > target and hi < 1e12:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if upper_tail(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def log_t_band(a: Sequence[float], b: Sequence[float], level: float) -> tuple[float, float] | None:
    """Student's two-sample t interval of mean(log b) - mean(log a), pooled variance, as a ratio
    band; with a value <= 0, of mean(b) - mean(a) relative to mean(a) (None when that is <= 0).

    Repeats are few (2 to 5, typically): a bootstrap of so few values cannot see its own noise
    (with 2 repeats a side a resample's median takes 3 values, and two runs of one server were
    told apart in half the trials), so the repeats' band is the small-sample interval.  The
    variance is pooled (A and B are the same benchmark, so their run-to-run spread is one): with
    3 repeats a side that is 4 degrees of freedom, where Welch's would fall towards 2 whenever one
    side's repeats happen to agree, and its band would span orders of magnitude."""
    logs = min(a) > 0 and min(b) > 0  # else (an ITL median of 0: coalesced chunks) on the values
    la, lb = ([math.log(v) for v in a], [math.log(v) for v in b]) if logs else (list(a), list(b))
    na, nb = len(la), len(lb)
    ma, mb = math.fsum(la) / na, math.fsum(lb) / nb
    df = na + nb - 2
    pooled = (math.fsum((x - ma) ** 2 for x in la) + math.fsum((x - mb) ** 2 for x in lb)) / df
    half = 0.0 if pooled == 0.0 else t_quantile(1.0 - (1.0 - level) / 2.0, df) * math.sqrt(pooled * (1 / na + 1 / nb))
    if logs:
        return math.exp(mb - ma - half), math.exp(mb - ma + half)
    if ma <= 0:
        return None
    return 1.0 + (mb - ma - half) / ma, 1.0 + (mb - ma + half) / ma


def quantile_draw(values: Sequence[float], q: float) -> Draw:
    """The ``q`` order statistic of a resample of ``values``, drawn exactly: the k-th smallest of
    n draws from the sample is ``x[ceil(n*U)]`` (1-based) with ``U ~ Beta(k, n-k+1)``."""
    xs = sorted(values)
    n = len(xs)
    k = min(n, max(1, math.ceil(q * n)))

    def draw(rng: random.Random) -> float:
        u = rng.betavariate(k, n - k + 1)
        return xs[min(n - 1, max(0, math.ceil(n * u) - 1))]

    return draw


def throughput_draw(observed: float, tokens: Sequence[float], e2el_ms: Sequence[float]) -> Draw:
    """The run's throughput scaled by a request resample's tokens per second of request time
    (R = sum tokens / sum E2EL) relative to the whole sample's.  For the n >= MIN_REQUESTS
    requests it needs, resampling R is normal with the delta-method standard error
    ``sd(t_i - R e_i) / (mean(e) * sqrt(n))``; that is drawn, at O(1) per draw."""
    n = len(tokens)
    r = math.fsum(tokens) / math.fsum(e2el_ms)
    mean_e = math.fsum(e2el_ms) / n
    resid = [t - r * e for t, e in zip(tokens, e2el_ms, strict=True)]
    se = math.sqrt(math.fsum(x * x for x in resid) / n) / (mean_e * math.sqrt(n))

    def draw(rng: random.Random) -> float:
        return observed * max(0.0, r + rng.gauss(0.0, se)) / r

    return draw


def _request_draw(metric: str, cell: CellData, observed: float) -> Draw | None:
    req = cell.requests
    if req is None:
        return None
    if metric in LATENCY_SOURCES:
        name, q = LATENCY_SOURCES[metric]
        values = [float(v) for v in getattr(req, name)]
        if len(values) * (1.0 - q) < MIN_TAIL:  # a p99 of 200 requests rests on its top 2
            return None
        return quantile_draw(values, q)
    if metric in THROUGHPUT_TOKENS:
        e2el = req.token_e2el_ms or req.e2el_ms
        n = len(e2el)
        if n < MIN_REQUESTS or math.fsum(e2el) <= 0:
            return None
        columns = [getattr(req, name) for name in THROUGHPUT_TOKENS[metric]]
        if any(len(c) != n for c in columns):
            return None
        tokens = [float(sum(c[i] for c in columns)) for i in range(n)]
        if math.fsum(tokens) <= 0:
            return None
        return throughput_draw(observed, tokens, e2el)
    return None


def requests_of(samples: Sequence[object]) -> Requests:
    """The successful requests of a cell's repeats (``autobench.samples.Samples``, one per
    repeat), merged: per-request columns read by name, a request kept when its ``status`` is
    ``ok``; NaN (none) and -1 (unknown) values left out; ITL gaps cut per request by
    ``itl_offsets``; throughput triples (prompt, completion tokens, E2EL) only whole."""
    out: dict[str, list[float]] = {
        k: []
        for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "prompt_tokens", "completion_tokens", "token_e2el_ms")
    }
    for s in samples:
        ok = [i for i, st in enumerate(getattr(s, "status", ())) if st == "ok"]
        ttft, tpot = list(getattr(s, "ttft_ms", ())), list(getattr(s, "tpot_ms", ()))
        e2el = list(getattr(s, "e2el_ms", ()))
        prompt, completion = list(getattr(s, "prompt_tokens", ())), list(getattr(s, "completion_tokens", ()))
        flat, offsets = list(getattr(s, "itl_ms", ())), list(getattr(s, "itl_offsets", ()))
        for i in ok:
            for name, column in (("ttft_ms", ttft), ("tpot_ms", tpot), ("e2el_ms", e2el)):
                v = number(column[i]) if i < len(column) else None
                if v is not None:
                    out[name].append(v)
            if i + 1 < len(offsets):
                out["itl_ms"] += [g for g in (number(x) for x in flat[offsets[i] : offsets[i + 1]]) if g is not None]
            triple = [number(c[i]) if i < len(c) else None for c in (e2el, prompt, completion)]
            if all(v is not None and v >= 0 for v in triple):
                out["token_e2el_ms"].append(triple[0])  # type: ignore[arg-type]
                out["prompt_tokens"].append(triple[1])  # type: ignore[arg-type]
                out["completion_tokens"].append(triple[2])  # type: ignore[arg-type]
    return Requests(**out)


def judge_metric(
    metric: str,
    a: CellData,
    b: CellData,
    *,
    threshold: float,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> MetricVerdict | None:
    """The verdict on ``metric`` for one cell; None when either side lacks it (or A's is 0)."""
    va, vb = a.values(metric), b.values(metric)
    if not va or not vb:
        return None
    ma, mb = median(va), median(vb)
    if ma == 0:
        return None
    key = cell_key(a.params)
    rng_a = random.Random(f"{seed}|{key}|{metric}|a")
    rng_b = random.Random(f"{seed}|{key}|{metric}|b")
    band: tuple[float, float] | None = None
    method = "none"
    if len(va) >= 2 and len(vb) >= 2:
        band = log_t_band(va, vb, level)
        method = "repeats" if band is not None else "few"
    else:
        ra, rb = _request_draw(metric, a, ma), _request_draw(metric, b, mb)
        if ra is not None and rb is not None:
            method = "requests"
            band = ratio_band(ra, rb, rng_a=rng_a, rng_b=rng_b, resamples=resamples, level=level)
        elif a.requests is not None and b.requests is not None:
            method = "few"  # samples kept, but too few requests for this metric's band
    if band is None and method != "few":
        method = "none"
    verdict = verdict_of(mb / ma, band, HIGHER_IS_BETTER[metric], threshold)
    flags = tuple(sorted({*a.flags, *b.flags} - {"client_bound"}))
    return MetricVerdict(metric, ma, mb, mb / ma, band, method, verdict, a.client_bound or b.client_bound, flags)


def judge_cells(
    a: Sequence[CellData],
    b: Sequence[CellData],
    *,
    threshold: float,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    metrics: Sequence[str] = tuple(HIGHER_IS_BETTER),
) -> Verdicts:
    """Every cell both runs have (matched by parameters without ``repeat``), every metric both have."""
    by_key_b = {cell_key(c.params): c for c in b}
    keys_a = {cell_key(c.params) for c in a}
    out = Verdicts(threshold, seed, resamples, level, [])
    for cell_a in a:
        cell_b = by_key_b.get(cell_key(cell_a.params))
        if cell_b is None:
            out.only_a.append(cell_a.params)
            continue
        cv = CellVerdict(
            cell_a.params,
            (len(cell_a.repeats), len(cell_b.repeats)),
            (cell_a.client_bound, cell_b.client_bound),
            flags=(cell_a.flags, cell_b.flags),
        )
        # Bonferroni: each metric's band at 1 - (1 - level) / m over the m metrics both sides
        # have, so the chance that any of them reads faster or slower by noise alone stays under
        # 1 - level.
        present = [m for m in metrics if cell_a.values(m) and cell_b.values(m)]
        each = 1.0 - (1.0 - level) / max(1, len(present))
        for metric in present:
            mv = judge_metric(metric, cell_a, cell_b, threshold=threshold, seed=seed, resamples=resamples, level=each)
            if mv is not None:
                cv.metrics.append(mv)
        out.cells.append(cv)
    out.only_b = [c.params for c in b if cell_key(c.params) not in keys_a]
    return out


__all__ = [
    "FASTER",
    "HIGHER_IS_BETTER",
    "INCONCLUSIVE",
    "LEVEL",
    "NO_CHANGE",
    "RESAMPLES",
    "SEED",
    "SLOWER",
    "CellData",
    "CellVerdict",
    "MetricVerdict",
    "Requests",
    "Verdicts",
    "cell_label",
    "judge_cells",
    "judge_metric",
    "requests_of",
    "verdict_of",
]

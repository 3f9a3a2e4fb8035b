"""The metric catalogue: every metric autobench measures, named once.

A :class:`Metric` says what a figure is (key, label, unit), which way is better, how it is
shown (significant figures), where it comes from (the field of a bench result JSON -- ours
and ``vllm bench serve``'s share vLLM's names -- and which of the two fill it), how the
repeats of one grid point merge, and where the ledger keeps it.  Everything else is derived
from :data:`METRICS`:

* the bench result's normalized keys and the reading of a ``bench.json``
  (``autobench.bench.result.normalize``: vLLM's JSON names appear there and nowhere else);
* the ledger's metric keys (``autobench.ledger.models.METRIC_KEYS``): a metric with
  ``column=True`` is one of the ``runs`` table's v1 columns, any other stored metric goes to
  the run's ``more_metrics`` JSON (schema v9) and to its cells;
* the headline of a multi-cell run (``autobench.ledger.cells.headline_metrics``: ``merge``);
* the verdicts of ``compare`` and ``regress`` (``autobench.ledger.verdict``: ``better``,
  ``verdict``, ``sample``, ``tokens``);
* ``ledger show``, ``compare`` and the report's tables (``label``, ``unit``, ``sig``).

**Adding a metric** is one entry here plus the code that measures it (the bench writes the
field named ``result``); ``tests/test_metric_catalogue.py`` shows a metric defined only
here reaching the bench result, the ledger row and cell, a verdict and the report page.

This module is a leaf: it imports nothing of autobench.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Kind = Literal["float", "int", "bool", "floats", "flags"]
Better = Literal["higher", "lower"]
#: How the repeats of one grid point merge into one figure (a multi-cell run's row):
#: ``sum`` (counts, durations), ``samples`` (latency percentiles: from the merged raw samples,
#: else the median of the repeats' values), ``mean``, ``any`` (a flag), ``first`` (a setting
#: every repeat shares), ``positions`` (a list: the mean at each position), ``union`` (quality
#: flags: every flag any repeat raised).
Merge = Literal["sum", "samples", "mean", "any", "first", "positions", "union"]
#: Who fills a metric: ``autobench`` (our bench's result JSON), ``vllm`` (``vllm bench serve``'s
#: ``--save-result`` JSON), ``report`` (computed when shown, never stored).
Source = Literal["autobench", "vllm", "report"]

BOTH: tuple[Source, ...] = ("autobench", "vllm")
OURS: tuple[Source, ...] = ("autobench",)


@dataclass(frozen=True)
class Metric:
    """One metric.  ``key`` is its one name in autobench (ledger column / cell key)."""

    key: str
    label: str
    unit: str = ""
    kind: Kind = "float"
    #: Which way is better; None: neither (a count, a setting).
    better: Better | None = None
    #: Judged by ``compare``/``regress`` verdicts (needs ``better``).
    verdict: bool = False
    #: Significant figures when shown (integers are shown whole).
    sig: int = 5
    #: The field of a bench result JSON (vLLM's name where vLLM has one) and the factor from it
    #: over this metric's unit (100: the field is a percentage of the metric's fraction); None:
    #: not read from a result (computed elsewhere).
    result: str | None = None
    divide_by: float = 1.0
    sources: tuple[Source, ...] = BOTH
    merge: Merge = "mean"
    #: A latency statistic: the per-request sample column (``autobench.samples``) and quantile.
    sample: tuple[str, float] | None = None
    #: A throughput: the per-request token columns it sums (its verdict band from requests).
    tokens: tuple[str, ...] = ()
    #: One of the ledger ``runs`` table's own columns (schema v1's); else, when stored, kept in
    #: the run's ``more_metrics`` (schema v9).
    column: bool = False
    #: Kept in the ledger (run row and cells).
    stored: bool = True
    #: A row of the report's result table (``ledger show`` and ``compare`` show every stored
    #: metric a run has).
    shown: bool = True
    #: A column of the report's by-cell table.
    in_cells: bool = False

    @property
    def higher_is_better(self) -> bool:
        return self.better == "higher"

    def format(self, value: object) -> str:
        """``value`` as shown: see :func:`format_value`."""
        return format_value(value, self.sig)


def _latency(name: str, label: str, stat: str, q: float) -> Metric:
    return Metric(
        f"{name}_{stat}_ms",
        f"{label} {stat}",
        "ms",
        better="lower",
        verdict=True,
        result=f"{stat}_{name}_ms",
        merge="samples",
        sample=(f"{name}_ms", q),
        column=True,
        in_cells=True,
    )


_LATENCIES = tuple(
    _latency(name, label, stat, q)
    for name, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2E latency"))
    for stat, q in (("median", 0.5), ("p99", 0.99))
)

#: Every metric, in the order tables show them.
METRICS: tuple[Metric, ...] = (
    Metric(
        "prefill_tok_s",
        "prefill",
        "tok/s",
        better="higher",
        verdict=True,
        result="input_throughput",
        tokens=("prompt_tokens",),
        column=True,
    ),
    Metric(
        "decode_tok_s",
        "decode",
        "tok/s",
        better="higher",
        verdict=True,
        result="output_throughput",
        tokens=("completion_tokens",),
        column=True,
        in_cells=True,
    ),
    Metric(
        "total_tok_s",
        "total",
        "tok/s",
        better="higher",
        verdict=True,
        result="total_token_throughput",
        tokens=("prompt_tokens", "completion_tokens"),
        column=True,
        in_cells=True,
    ),
    Metric(
        "flags",
        "quality flags",
        kind="flags",
        result="quality_flags",
        merge="union",
        shown=False,
    ),
    Metric(
        "per_user_tok_s",
        "per-user",
        "tok/s",
        better="higher",
        sources=("report",),
        stored=False,
        shown=False,
        in_cells=True,
    ),
    Metric("completed", "completed", kind="int", result="completed", merge="sum", column=True),
    Metric("errors", "errors", kind="int", result="failed", merge="sum", column=True),
    Metric("incomplete", "incomplete", kind="int", result="incomplete", sources=OURS, merge="sum", column=True),
    Metric("duration_s", "duration", "s", result="duration", merge="sum", column=True),
    Metric("time_cap_hit", "time cap hit", kind="bool", result="time_cap_hit", merge="any", column=True),
    Metric("concurrency", "concurrency", kind="int", result="max_concurrency", merge="first", column=True, shown=False),
    Metric("num_prompts", "prompts", kind="int", result="num_prompts", merge="sum", column=True, shown=False),
    *_LATENCIES,
    Metric(
        "spec_acceptance_length",
        "mean acceptance length",
        better="higher",
        result="spec_decode_acceptance_length",
        column=True,
        shown=False,
    ),
    Metric(
        "spec_per_position",
        "per-position acceptance",
        kind="floats",
        result="spec_decode_per_position_acceptance_rates",
        merge="positions",
        column=True,
        shown=False,
    ),
    Metric(
        "spec_draft_acceptance_rate",
        "draft acceptance rate",
        better="higher",
        result="spec_decode_acceptance_rate",
        divide_by=100.0,  # vLLM states a percentage; the ledger keeps a fraction
        column=True,
        shown=False,
    ),
    Metric(
        "prefix_cache_hit_rate",
        "prefix-cache hit rate",
        result="prefix_cache_hit_rate",  # Δhits / Δqueries from the server's /metrics (tokens)
        sources=OURS,
        shown=False,
    ),
    Metric("request_rate", "request rate", "req/s", better="higher", result="request_throughput", stored=False),
    Metric("goodput", "goodput", "req/s", better="higher", verdict=True, result="request_goodput", shown=False),
    Metric("good_requests", "requests within the SLOs", kind="int", result="good_requests", sources=OURS, merge="sum"),
    Metric(
        "client_bound",
        "client-bound",
        kind="bool",
        result="client_bound_warning",
        sources=OURS,
        merge="any",
        shown=False,
    ),
)

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


# ---------------------------------------------------------------- quality flags


@dataclass(frozen=True)
class Flag:
    """A reason not to take a result's figures at face value.  A result's ``flags`` metric maps
    each raised flag's name to why it was raised (the figures behind it)."""

    name: str
    meaning: str  # what it says about the figures


#: Tokens per chunk above which a stream is a burst: TPOT and ITL then average over bursts.  Under
#: speculative decoding the limit is this times the acceptance length (autobench.bench.result).
BURST_TOKENS_PER_CHUNK = 1.5
#: Fewer completed requests than this: a p99 is one of the few largest values.
FEW_SAMPLES = 100

FLAGS: tuple[Flag, ...] = (
    Flag(
        "prompts_estimated",
        "prompt lengths were estimated (characters / 4), not counted with the model's tokenizer: "
        "input lengths and prefill tok/s are approximate",
    ),
    Flag(
        "burst_stream",
        f"the stream carried more than {BURST_TOKENS_PER_CHUNK:g} tokens per chunk ({BURST_TOKENS_PER_CHUNK:g} times "
        "the acceptance length under speculative decoding, whose steps stream their accepted tokens together): "
        "TPOT and ITL are averaged over bursts, the gaps inside a chunk are not seen",
    ),
    Flag(
        "no_drafts",
        "speculative decoding is configured but no draft was counted: no acceptance figure, and the "
        "throughput is not that of speculative decoding",
    ),
    Flag("client_bound", "the bench client was the bottleneck: the figures measure the client as much as the server"),
    Flag("time_capped", "the bench stopped at its time cap: fewer requests than asked, the late ones cancelled"),
    Flag("few_samples", f"fewer than {FEW_SAMPLES} requests completed: a p99 is one of the few largest values"),
)
FLAG_BY_NAME: dict[str, Flag] = {f.name: f for f in FLAGS}


def flags_text(flags: object, *, meaning: bool = False) -> str:
    """A ``flags`` value as one line: ``burst_stream (3.03 tokens per chunk); few_samples (...)``;
    "" when there are none.  ``meaning`` adds what each flag says about the figures."""
    if not isinstance(flags, dict) or not flags:
        return ""
    parts = []
    for name in sorted(flags, key=lambda n: (list(FLAG_BY_NAME).index(n) if n in FLAG_BY_NAME else len(FLAGS), n)):
        why = flags[name]
        text = f"{name} ({why})" if why else str(name)
        if meaning and name in FLAG_BY_NAME:
            text += f": {FLAG_BY_NAME[name].meaning}"
        parts.append(text)
    return "; ".join(parts)


def metric(key: str) -> Metric:
    """The catalogue entry of ``key`` (KeyError when it names none)."""
    return BY_KEY[key]


def keys(*, stored: bool | None = None, column: bool | None = None) -> tuple[str, ...]:
    """Metric keys in catalogue order, filtered by where the ledger keeps them."""
    return tuple(
        m.key
        for m in METRICS
        if (stored is None or m.stored == stored) and (column is None or (m.stored and m.column) == column)
    )


def format_value(value: object, sig: int = 5) -> str:
    """One number format for every figure: integers whole with thousands separators; other
    numbers to ``sig`` significant figures (never fewer than the integer digits: 17,209 not
    17,210), thousands separators, no trailing zeros; booleans yes/no; None "—"."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        magnitude = math.floor(math.log10(abs(value))) + 1 if value else 1
        decimals = max(0, sig - magnitude)
        text = f"{value:,.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text in {"-0", ""} else text
    if isinstance(value, list | tuple):
        return "/".join(format_value(v, sig) for v in value)
    if isinstance(value, dict):
        return flags_text(value)
    return str(value)


__all__ = [
    "BURST_TOKENS_PER_CHUNK",
    "BY_KEY",
    "FEW_SAMPLES",
    "FLAGS",
    "FLAG_BY_NAME",
    "METRICS",
    "Flag",
    "Metric",
    "flags_text",
    "format_value",
    "keys",
    "metric",
]

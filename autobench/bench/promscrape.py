"""Prometheus text-format parsing, reduced to what the benchmark needs: spec-decode and
prefix-cache deltas.

Only samples whose metric name starts with ``vllm:spec_decode`` and ends in
``_total`` count (``_created`` and the V0 gauges are dropped); values are summed
over label sets (engines), except ``position``, which is kept per position.  The names are
vLLM V1's (vllm/v1/spec_decode/metrics.py, ``SpecDecodingProm``).

The prefix cache: ``vllm:prefix_cache_queries_total`` and ``vllm:prefix_cache_hits_total``
(tokens looked up, tokens found cached; vllm/v1/metrics/loggers.py, ``PrometheusStatLogger``),
summed over engines.  The deprecated ``vllm:gpu_prefix_cache_*`` twins of older versions
count the same tokens again and are not read.  A real sample (vLLM 0.32.0, CPU testbed,
4 prompts of 331 tokens sharing 319, block size 128) read queries 1324 and hits 768: three
later prompts hit two full blocks each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from autobench.bench.metrics import PrefixCacheDelta, SpecDecodeDelta

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
PREFIX_HITS = "vllm:prefix_cache_hits_total"


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample line as (name, labels, value); comments and unparsable lines are skipped."""
    out: list[tuple[str, dict[str, str], float]] = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())  # a comment or a blank line does not match
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        out.append((m.group(1), labels, value))
    return out


@dataclass
class SpecCounters:
    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    per_pos: dict[int, float] = field(default_factory=dict)
    present: bool = False
    prefix_queries: float = 0.0
    prefix_hits: float = 0.0
    prefix_present: bool = False


def spec_counters(text: str) -> SpecCounters:
    """The spec-decode and prefix-cache counters of one scrape (both in one pass)."""
    c = SpecCounters()
    for name, labels, value in parse_samples(text):
        if name in (PREFIX_QUERIES, PREFIX_HITS):
            c.prefix_present = True
            if name == PREFIX_QUERIES:
                c.prefix_queries += value
            else:
                c.prefix_hits += value
        elif name.startswith("vllm:spec_decode") and name.endswith("_total"):
            _spec_sample(c, name, labels, value)
    return c


def _spec_sample(c: SpecCounters, name: str, labels: dict[str, str], value: float) -> None:
    """One spec-decode ``_total`` sample into ``c`` (a per-position one without a whole position
    is left out)."""
    c.present = True
    if name == DRAFTS:
        c.drafts += value
    elif name == DRAFT_TOKENS:
        c.draft_tokens += value
    elif name == ACCEPTED:
        c.accepted += value
    elif name == PER_POS:
        try:
            pos = int(labels.get("position", ""))
        except ValueError:
            return
        c.per_pos[pos] = c.per_pos.get(pos, 0.0) + value


def spec_delta(before: SpecCounters, after: SpecCounters) -> SpecDecodeDelta | None:
    """after - before, or None when the server exposes no spec-decode counters."""
    if not after.present:
        return None
    n = max(list(after.per_pos) + list(before.per_pos), default=-1) + 1
    return SpecDecodeDelta(
        drafts=after.drafts - before.drafts,
        draft_tokens=after.draft_tokens - before.draft_tokens,
        accepted=after.accepted - before.accepted,
        accepted_per_pos=tuple(after.per_pos.get(i, 0.0) - before.per_pos.get(i, 0.0) for i in range(n)),
    )


def prefix_delta(before: SpecCounters, after: SpecCounters) -> PrefixCacheDelta | None:
    """after - before of the prefix-cache counters, or None when the server exposes none."""
    if not after.prefix_present:
        return None
    return PrefixCacheDelta(
        queries=after.prefix_queries - before.prefix_queries, hits=after.prefix_hits - before.prefix_hits
    )

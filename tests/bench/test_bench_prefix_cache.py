"""The prefix-cache hit rate: vLLM's counters read as /metrics deltas, and the synthetic
server's emulation of them (issue 33).

The /metrics lines below are a real sample: vLLM 0.32.0 (CPU build, the project's testbed,
``--enable-prefix-caching`` and n-gram speculative decoding), after four completions prompts of
331 tokens sharing their first 319 (block size 128, the CPU default) were sent one after the
other.  Expected before reading: the first prompt hits nothing and caches blocks 0-1 (two full
blocks of 128); each later one hits both (at most ``(331 - 1) // 128 = 2`` blocks): queries
4 x 331 = 1324, hits 3 x 256 = 768.  Read: 1324 and 768.
"""

from __future__ import annotations

from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.datasets import Dataset, Prompt
from autobench.bench.metrics import PrefixCacheDelta, prefix_cache_metrics
from autobench.bench.prefixcache import PrefixCache
from autobench.bench.promscrape import prefix_delta, spec_counters, spec_delta

REAL_BEFORE = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 0.0
vllm:prefix_cache_queries_created{engine="0",model_name="tiny"} 1.796660187281314e+09
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 0.0
vllm:prefix_cache_hits_created{engine="0",model_name="tiny"} 1.7966601872813256e+09
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 0.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 0.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 0.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 0.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="1"} 0.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="2"} 0.0
"""
REAL_AFTER = """\
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 1324.0
vllm:prefix_cache_queries_created{engine="0",model_name="tiny"} 1.796660187281314e+09
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 768.0
vllm:prefix_cache_hits_created{engine="0",model_name="tiny"} 1.7966601872813256e+09
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 42.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 124.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 9.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 4.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="1"} 3.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="2"} 2.0
"""


def test_real_vllm_sample_reads_as_expected() -> None:
    before, after = spec_counters(REAL_BEFORE), spec_counters(REAL_AFTER)
    d = prefix_delta(before, after)
    assert d == PrefixCacheDelta(queries=1324.0, hits=768.0)
    assert prefix_cache_metrics(d) == {
        "prefix_cache_queries": 1324,
        "prefix_cache_hits": 768,
        "prefix_cache_hit_rate": pytest.approx(768 / 1324),
    }
    s = spec_delta(before, after)
    assert s is not None and (s.drafts, s.draft_tokens, s.accepted, s.accepted_per_pos) == (42, 124, 9, (4, 3, 2))


def test_prefix_counters_summed_over_engines_and_deprecated_twins_ignored() -> None:
    text = (
        'vllm:prefix_cache_queries_total{engine="0"} 100\n'
        'vllm:prefix_cache_queries_total{engine="1"} 50\n'
        'vllm:prefix_cache_hits_total{engine="0"} 30\n'
        'vllm:prefix_cache_hits_total{engine="1"} 2\n'
        'vllm:gpu_prefix_cache_queries_total{engine="0"} 100\n'
        'vllm:gpu_prefix_cache_hits_total{engine="0"} 30\n'
        "vllm:prefix_cache_hits_created 17\n"
    )
    c = spec_counters(text)
    assert (c.prefix_queries, c.prefix_hits, c.prefix_present, c.present) == (150.0, 32.0, True, False)
    assert prefix_delta(spec_counters(""), c) == PrefixCacheDelta(150.0, 32.0)
    assert prefix_delta(c, spec_counters("vllm:generation_tokens_total 5\n")) is None  # no prefix counters
    assert prefix_cache_metrics(PrefixCacheDelta(0.0, 0.0))["prefix_cache_hit_rate"] is None


def test_cache_hits_whole_leading_blocks_at_most_all_but_the_last_token() -> None:
    c = PrefixCache(block_size=4)
    a = list(range(10))  # blocks [0-3] [4-7], 2 tokens left over
    assert c.lookup(a) == 0 and (c.queries, c.hits) == (10, 0)
    assert c.lookup(a) == 8  # both full blocks
    assert c.lookup(a[:8]) == 4  # 8 tokens: at most 7 can hit, so one block
    assert c.lookup(a[:9]) == 8
    assert c.lookup([0, 1, 2, 9, 4, 5, 6, 7, 8]) == 0  # the first block differs: the chain breaks
    assert c.lookup([0, 1, 2, 3, 9, 9, 9, 9, 4, 5, 6, 7, 1]) == 4  # same second block after a different one: no hit
    assert (c.queries, c.hits) == (10 + 10 + 8 + 9 + 9 + 13, 8 + 4 + 8 + 4)


def test_cache_evicts_the_least_recently_used_block() -> None:
    c = PrefixCache(block_size=2, max_blocks=2)
    c.lookup([1, 2, 3])  # caches (1,2)
    c.lookup([5, 6, 7])  # caches (5,6)
    assert c.lookup([1, 2, 3]) == 2  # both blocks kept: a hit, (1,2) now the most recent
    c.lookup([8, 9, 0])  # evicts (5,6)
    assert c.lookup([5, 6, 7]) == 0 and c.lookup([1, 2, 3]) == 0  # (1,2) went when (5,6) came back
    with pytest.raises(ValueError):
        PrefixCache(block_size=0)


def _words(n: int, first: int) -> str:
    return " ".join(f"w{first + i}" for i in range(n))


def test_synthetic_server_reproduces_the_real_sample(synth: Any) -> None:
    """Four prompts of 331 words (the synthetic server's tokens) sharing 319, block 128: the real
    testbed's 1324 / 768 again, read through the bench's own before/after scrape."""
    srv = synth(ttft_ms=1, itl_ms=0.5, block_size=128)
    shared = _words(319, 0)
    prompts = [Prompt(shared + " " + _words(12, 1000 * (i + 1)), 331, 4) for i in range(4)]
    ds = Dataset("jsonl", "x.jsonl", prompts, [], 4)
    cfg = BenchConfig(base_url=srv.base_url, model="m", num_prompts=4, max_tokens=4, read_timeout=10.0)
    d = run_bench(cfg, dataset=ds).to_json_dict()
    assert (d["prefix_cache_queries"], d["prefix_cache_hits"]) == (1324, 768)
    assert d["prefix_cache_hit_rate"] == pytest.approx(768 / 1324)
    text = srv.server.prometheus_text()
    assert 'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1324.0' in text
    assert 'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 768.0' in text


def test_synthetic_server_without_prefix_caching_counts_nothing(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.5, prefix_caching=False)
    cfg = BenchConfig(base_url=srv.base_url, model="m", num_prompts=4, max_tokens=4, read_timeout=10.0)
    d = run_bench(cfg).to_json_dict()
    assert (d["prefix_cache_queries"], d["prefix_cache_hits"], d["prefix_cache_hit_rate"]) == (0, 0, None)


def test_cache_sizes() -> None:
    c = PrefixCache()  # vLLM's GPU default: 16 tokens a block
    c.lookup(list(range(40)))
    assert c.lookup(list(range(40))) == 32
    one = PrefixCache(block_size=1, max_blocks=1)  # the smallest
    one.lookup([7, 8])
    assert one.lookup([7, 8]) == 0  # only the last block (8) is kept: 7 was evicted
    for bad in ({"block_size": 0}, {"max_blocks": 0}):
        with pytest.raises(ValueError, match="at least 1"):
            PrefixCache(**bad)


def test_unreadable_sample_lines_are_skipped() -> None:
    from autobench.bench.promscrape import parse_samples

    text = 'vllm:prefix_cache_hits_total{engine="0"} 4\n9bad 1\nvllm:prefix_cache_queries_total notanumber\n'
    assert parse_samples(text) == [("vllm:prefix_cache_hits_total", {"engine": "0"}, 4.0)]
    c = spec_counters(text)
    assert (c.prefix_hits, c.prefix_queries) == (4.0, 0.0)


def test_deltas_subtract_every_counter() -> None:
    before = spec_counters(
        'vllm:spec_decode_num_drafts_total{engine="0"} 10\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 30\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 20\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 8\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 5\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0"} 99\n'  # no position: left out
        'vllm:prefix_cache_queries_total{engine="0"} 100\n'
        'vllm:prefix_cache_hits_total{engine="0"} 40\n'
    )
    after = spec_counters(
        'vllm:spec_decode_num_drafts_total{engine="0"} 15\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0"} 45\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 29\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 12\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 8\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="2"} 2\n'
        'vllm:prefix_cache_queries_total{engine="0"} 160\n'
        'vllm:prefix_cache_hits_total{engine="0"} 70\n'
    )
    s = spec_delta(before, after)
    assert s is not None
    assert (s.drafts, s.draft_tokens, s.accepted, s.accepted_per_pos) == (5.0, 15.0, 9.0, (4.0, 3.0, 2.0))
    assert prefix_delta(before, after) == PrefixCacheDelta(queries=60.0, hits=30.0)
    # only _total samples are counters: a scrape of _created lines alone has none
    created = spec_counters('vllm:spec_decode_num_drafts_created{engine="0"} 1.7e9\n')
    assert not created.present and spec_delta(created, created) is None


def test_positions_of_either_scrape_and_none() -> None:
    before = spec_counters('vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 4\n')
    after = spec_counters('vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 3\n')
    s = spec_delta(before, after)
    assert s is not None and s.accepted_per_pos == (3.0, -4.0)  # a position only the earlier scrape had
    drafts_only = spec_counters("vllm:spec_decode_num_drafts_total 5\n")
    d = spec_delta(spec_counters(""), drafts_only)
    assert d is not None and d.drafts == 5.0 and d.accepted_per_pos == ()

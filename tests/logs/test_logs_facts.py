"""The engine-stats and spec-decode summaries by themselves: every column they fold, the V0
and CPU wordings, and the column-wise fold (add_rows) agreeing with the line-by-line one (add)."""

from __future__ import annotations

import pytest

from autobench.logs import parse_log
from autobench.logs.facts import BOOT_KEYS, STATS, STATS_BYTES, SpecSummary, StatsSummary

IDLE = (
    "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%"
)
LINES = [
    IDLE,
    "Avg prompt throughput: 1200.5 tokens/s, Avg generation throughput: 80.0 tokens/s, Running: 8 reqs, "
    "Waiting: 2 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 40.0%",
    # V0: Swapped and Pending, a GPU and a CPU column (the GPU one counts)
    "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 120.0 tokens/s, Running: 5 reqs, "
    "Swapped: 1 reqs, Pending: 7 reqs, GPU KV cache usage: 30.0%, CPU KV cache usage: 1.0%",
    # the CPU backend: only a CPU column
    "Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 1 req, "
    "Waiting: 0 reqs, CPU KV cache usage: 55.5%",
]
EXPECTED = {
    "samples": 4,
    "active_samples": 3,
    "prompt_tps_mean_active": 403.5,  # (1200.5 + 0 + 10) / 3: idle samples do not count
    "gen_tps_mean_active": 66.667,
    "prompt_tps_max": 1200.5,
    "gen_tps_max": 120.0,
    "running_max": 8,
    "waiting_max": 7,
    "swapped_max": 1,
    "kv_usage_pct_max": 55.5,
    "prefix_cache_hit_rate_pct_last": 40.0,
    "first_line": 10,
    "last_line": 13,
}


def _by_line(lines: list[str], first: int = 10) -> StatsSummary:
    s = StatsSummary()
    for i, line in enumerate(lines, first):
        m = STATS.search(line)
        assert m is not None, line
        s.add(m, i)
    return s


def test_stats_are_folded_line_by_line():
    assert _by_line(LINES).to_dict() == EXPECTED


@pytest.mark.parametrize("split", [0, 1, 2, 3, 4])
def test_the_column_wise_fold_agrees_with_the_line_by_line_one(split):
    s = StatsSummary()
    s.add_rows(STATS_BYTES.findall("\n".join(LINES[:split]).encode()), 10, 10 + split - 1)
    s.add_rows(STATS_BYTES.findall("\n".join(LINES[split:]).encode()), 10 + split, 13)
    assert s.to_dict() == EXPECTED


def test_many_repeated_values_fold_the_same():
    lines = [IDLE] * 9 + [LINES[1]] * 3
    s = StatsSummary()
    s.add_rows(STATS_BYTES.findall("\n".join(lines).encode()), 1, 12)
    assert s.to_dict() == _by_line(lines, 1).to_dict()
    assert s.to_dict()["active_samples"] == 3 and s.to_dict()["prompt_tps_mean_active"] == 1200.5


def test_no_stats_line_is_no_summary_and_idle_only_has_no_mean():
    assert StatsSummary().to_dict() is None
    s = StatsSummary()
    s.add_rows([], 1, 1)
    assert s.to_dict() is None
    idle = _by_line([IDLE, IDLE]).to_dict()
    assert idle is not None and idle["active_samples"] == 0
    assert idle["prompt_tps_mean_active"] is None and idle["gen_tps_mean_active"] is None
    assert idle["swapped_max"] is None and idle["kv_usage_pct_max"] == 0.0


SPEC_V1_NEW = (
    "SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 10.00 tokens/s, Drafted throughput: "
    "20.00 tokens/s, Accepted: 30 tokens, Drafted: 60 tokens, Per-position acceptance rate: 0.800, 0.500, 0.200, "
    "Avg Draft acceptance rate: 50.0%"
)
SPEC_V1_OLD = (
    "SpecDecoding metrics: Draft acceptance rate: 40.0%, Mean acceptance length: 1.50, Accepted: 10 tokens, "
    "Drafted: 40 tokens, Per-position acceptance rate: 0.600, 0.200"
)
SPEC_V0 = "Speculative metrics: Draft acceptance rate: 0.250, Number of accepted tokens: 5, Number of draft tokens: 20,"


def test_each_spec_decode_wording_is_read():
    s = SpecSummary()
    s.add(SPEC_V1_NEW, 5)
    assert s.to_dict() == {
        "samples": 1,
        "accepted_tokens": 30,
        "drafted_tokens": 60,
        "acceptance_rate_pct": 50.0,
        "mean_acceptance_length_mean": 2.5,
        "mean_acceptance_length_last": 2.5,
        "per_position_acceptance_mean": [0.8, 0.5, 0.2],
        "per_position_acceptance_last": [0.8, 0.5, 0.2],
        "avg_draft_acceptance_rate_pct_last": 50.0,
        "draft_acceptance_rate_pct_last": None,  # "Avg Draft acceptance rate" is not this one
        "accepted_tps_last": 10.0,
        "drafted_tps_last": 20.0,
        "first_line": 5,
        "last_line": 5,
    }
    s = SpecSummary()
    s.add(SPEC_V0, 7)
    d = s.to_dict()
    assert d is not None
    assert (d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (5, 20, 25.0)
    assert d["draft_acceptance_rate_pct_last"] == 25.0  # a fraction in V0: turned into a percentage


def test_spec_samples_are_summed_and_averaged():
    s = SpecSummary()
    for line, text in ((5, SPEC_V1_NEW), (9, SPEC_V1_OLD), (12, SPEC_V0), (13, "SpecDecoding metrics: nothing")):
        s.add(text, line)
    d = s.to_dict()
    assert d is not None
    assert (d["samples"], d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (3, 45, 120, 37.5)
    assert d["mean_acceptance_length_mean"] == 2.0 and d["mean_acceptance_length_last"] is None
    # a position a sample does not state counts as 0 for that sample
    assert d["per_position_acceptance_mean"] == [0.7, 0.35, 0.1]
    assert d["draft_acceptance_rate_pct_last"] == 25.0 and (d["first_line"], d["last_line"]) == (5, 12)


def test_spec_lines_without_counts():
    assert SpecSummary().to_dict() is None
    s = SpecSummary()
    s.add("SpecDecoding metrics: Mean acceptance length: 3.00", 1)
    d = s.to_dict()
    assert d is not None and d["accepted_tokens"] is None and d["drafted_tokens"] is None
    assert d["acceptance_rate_pct"] is None and d["per_position_acceptance_mean"] is None
    s.add("SpecDecoding metrics: Accepted: 0 tokens, Drafted: 0 tokens", 2)
    d = s.to_dict()
    assert d is not None and (d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (0, 0, None)


# One line per wording of every boot fact, and exactly the facts it states (every other stays unset).
BOOT_LINES = [
    ("INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.11.0", {"vllm_version": "0.11.0"}),
    (
        "INFO 01-01 00:00:00 [core.py:1] Initializing a V1 LLM engine (v0.8.5.post1) with config: model='m'",
        {"vllm_version": "0.8.5.post1"},
    ),
    (
        "INFO 01-01 00:00:00 [llm_engine.py:1] Initializing an LLM engine (v0.5.4) with config",
        {"vllm_version": "0.5.4"},
    ),
    (
        "(APIServer pid=1) INFO 01-01 00:00:00 [utils.py:1] █▄█▀ █     █     █     █  version 0.19.1rc1",
        {"vllm_version": "0.19.1rc1"},
    ),
    ("INFO 01-01 00:00:00 [model.py:1] Resolved architecture: Qwen3ForCausalLM", {"architecture": "Qwen3ForCausalLM"}),
    ("INFO 01-01 00:00:00 [model.py:1] Using max model len 32768", {"max_model_len": 32768}),
    (
        "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Model loading took 15.2500 GiB and 30.123456 seconds",
        {"model_load_gib": 15.25, "model_load_s": 30.123456},
    ),
    (
        "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Model loading took 0.9 GiB memory and 2.5 seconds",
        {"model_load_gib": 0.9, "model_load_s": 2.5},
    ),
    (
        "INFO 01-01 00:00:00 [model_runner.py:1] Model loading took 1.5 GB and 3.25 secs",
        {"model_load_gib": 1.5, "model_load_s": 3.25},
    ),
    ("INFO 01-01 00:00:00 [model_runner.py:1] Loading model weights took 14.9595 GB", {"model_load_gib": 14.9595}),
    ("INFO 01-01 00:00:00 [default_loader.py:1] Loading weights took 12.34 seconds", {"weights_load_s": 12.34}),
    ("INFO 01-01 00:00:00 [monitor.py:1] torch.compile takes 21.5 s in total", {"torch_compile_s": 21.5}),
    ("INFO 01-01 00:00:00 [monitor.py:1] torch.compile took 7.25 s in total", {"torch_compile_s": 7.25}),
    ("INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 20.5 GiB", {"kv_cache_gib": 20.5}),
    ("INFO 01-01 00:00:00 [cpu_worker.py:1] Auto set (2.5/18.0) GiB for KV cache on node 0", {"kv_cache_gib": 2.5}),
    (
        "INFO 01-01 00:00:00 [cpu_worker.py:1] Explicitly set (4.0/17.09) GiB for KV cache on node 0.",
        {"kv_cache_gib": 4.0},
    ),
    (
        "WARNING 01-01 00:00:00 [cpu.py:1] VLLM_CPU_KVCACHE_SPACE not set. Using 3.5 GiB for KV cache.",
        {"kv_cache_gib": 3.5},
    ),
    (
        "INFO 01-01 00:00:00 [worker.py:1] the rest of the memory reserved for KV Cache is 6.75GiB.",
        {"kv_cache_gib": 6.75},
    ),
    ("INFO 01-01 00:00:00 [worker.py:1] Memory profiling results: kv_cache_size=5.25GiB", {"kv_cache_gib": 5.25}),
    (
        "INFO 01-01 00:00:00 [kv_cache_utils.py:1] CPU KV cache size: 1,234,567 tokens",
        {"kv_cache_tokens": 1234567, "kv_cache_device": "CPU"},
    ),
    (
        "INFO 01-01 00:00:00 [kv_cache_utils.py:1] Maximum concurrency for 32,768 tokens per request: 12.34x",
        {"max_concurrency_tokens": 32768, "max_concurrency": 12.34},
    ),
    (
        "INFO 01-01 00:00:00 [executor_base.py:1] # cuda blocks: 2048, # CPU blocks: 512",
        {"num_gpu_blocks": 2048, "num_cpu_blocks": 512},
    ),
    (
        "INFO 01-01 00:00:00 [interface.py:1] Setting attention block size to 528 tokens to ensure that attention page size is >= mamba page size.",
        {"attention_block_size": 528},
    ),
    (
        "INFO 01-01 00:00:00 [interface.py:1] Padding mamba page size by 0.19% to ensure that",
        {"mamba_padding_pct": 0.19},
    ),
    ("INFO 01-01 00:00:00 [oracle.py:1] Using 'MARLIN' WNA16 MoE backend.", {"moe_backend": "MARLIN WNA16"}),
    ("INFO 01-01 00:00:00 [oracle.py:1] Using TRITON MoE backend", {"moe_backend": "TRITON"}),
    (
        "INFO 01-01 00:00:00 [cuda.py:1] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN']",
        {"attention_backend": "FLASH_ATTN"},
    ),
    ("INFO 01-01 00:00:00 [selector.py:1] Using Flash Attention backend.", {"attention_backend": "Flash Attention"}),
    (
        "INFO 01-01 00:00:00 [marlin.py:1] Using MarlinLinearKernel for GPTQMarlinLinearMethod",
        {"linear_kernel": "MarlinLinearKernel"},
    ),
    (
        "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Graph capturing finished in 7 secs, took 0.95 GiB",
        {"cuda_graph_s": 7.0, "cuda_graph_gib": 0.95},
    ),
    ("INFO 01-01 00:00:00 [model_runner.py:1] Graph capturing finished in 12 secs", {"cuda_graph_s": 12.0}),
    (
        "INFO 01-01 00:00:00 [core.py:1] init engine (profile, create kv cache, warmup model) took 84.52 seconds",
        {"engine_init_s": 84.52},
    ),
    ("INFO:     Application startup complete.", {"ready": True}),
]


@pytest.mark.parametrize(("line", "facts"), BOOT_LINES, ids=[f"{i}" for i in range(len(BOOT_LINES))])
def test_each_boot_wording_states_exactly_its_facts(line, facts):
    got = parse_log([line]).to_json_dict()
    assert {k: got[k] for k in BOOT_KEYS if got[k] not in (None, False)} == facts
    assert {k for k, v in got["lines"].items()} == set(facts)


def test_idle_samples_fold_to_zeros_and_small_throughputs_are_activity():
    idle = _by_line([IDLE, IDLE]).to_dict()
    assert idle == {
        "samples": 2,
        "active_samples": 0,
        "prompt_tps_mean_active": None,
        "gen_tps_mean_active": None,
        "prompt_tps_max": 0.0,
        "gen_tps_max": 0.0,
        "running_max": 0,
        "waiting_max": 0,
        "swapped_max": None,
        "kv_usage_pct_max": 0.0,
        "prefix_cache_hit_rate_pct_last": 0.0,
        "first_line": 10,
        "last_line": 11,
    }
    # under one token per second is still a sample that did work
    slow = [
        IDLE.replace("Avg prompt throughput: 0.0", "Avg prompt throughput: 0.5"),
        IDLE.replace("Avg generation throughput: 0.0", "Avg generation throughput: 0.4"),
    ]
    d = _by_line(slow).to_dict()
    assert d is not None and (d["active_samples"], d["prompt_tps_mean_active"], d["gen_tps_mean_active"]) == (
        2,
        0.25,
        0.2,
    )
    s = StatsSummary()
    s.add_rows(STATS_BYTES.findall("\n".join(slow).encode()), 10, 11)
    assert s.to_dict() == d


V0_SWAP = (
    "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 2 reqs, "
    "Swapped: {} reqs, Pending: 0 reqs, GPU KV cache usage: {}%, CPU KV cache usage: {}%"
)
NO_KV = "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs"


@pytest.mark.parametrize(
    ("lines", "swapped", "kv"),
    [
        ([V0_SWAP.format(0, "10.0", "2.0")], 0, 10.0),  # nothing swapped is 0, not unknown
        ([V0_SWAP.format(3, "10.0", "2.0"), V0_SWAP.format(1, "12.0", "2.0")], 3, 12.0),
        ([V0_SWAP.format(1, "12.0", "2.0"), V0_SWAP.format(3, "10.0", "2.0")], 3, 12.0),
        # V0 logged a CPU column after the GPU one: the GPU column counts even beside a CPU-only line
        ([V0_SWAP.format(0, "10.0", "90.0"), LINES[3].replace("55.5", "5.0")], 0, 10.0),
        ([NO_KV], None, None),  # no KV column at all
        ([NO_KV, LINES[3]], None, 55.5),
    ],
)
def test_swapped_and_kv_columns_fold_the_same_both_ways(lines, swapped, kv):
    by_line = _by_line(lines).to_dict()
    assert by_line is not None and (by_line["swapped_max"], by_line["kv_usage_pct_max"]) == (swapped, kv)
    s = StatsSummary()
    s.add_rows(STATS_BYTES.findall("\n".join(lines).encode()), 10, 10 + len(lines) - 1)
    assert s.to_dict() == by_line
    s = StatsSummary()  # one block per line: the maxima carry over from block to block
    for n, line in enumerate(lines, 10):
        s.add_rows(STATS_BYTES.findall(line.encode()), n, n)
    assert s.to_dict() == by_line


def test_spec_means_are_rounded_not_truncated():
    s = SpecSummary()
    for n, line in enumerate(
        [
            "SpecDecoding metrics: Mean acceptance length: 1.00, Accepted: 1 tokens, Drafted: 3 tokens, "
            "Per-position acceptance rate: 0.100, 0.200",
            "SpecDecoding metrics: Mean acceptance length: 1.00, Accepted: 0 tokens, Drafted: 0 tokens, "
            "Per-position acceptance rate: 0.100, 0.100",
            "SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 0 tokens, Drafted: 0 tokens, "
            "Per-position acceptance rate: 0.100, 0.100",
        ],
        1,
    ):
        s.add(line, n)
    d = s.to_dict()
    assert d is not None
    assert d["acceptance_rate_pct"] == 33.333  # 1 of 3, to 3 decimals
    assert d["mean_acceptance_length_mean"] == 1.3333  # 4 / 3, to 4 decimals
    assert d["per_position_acceptance_mean"] == [0.1, 0.1333]


def test_a_spec_sample_with_only_one_count_adds_to_neither():
    s = SpecSummary()
    s.add("SpecDecoding metrics: Mean acceptance length: 2.00, Accepted: 5 tokens", 1)
    s.add("SpecDecoding metrics: Mean acceptance length: 2.00, Drafted: 9 tokens", 2)
    d = s.to_dict()
    assert d is not None and (d["samples"], d["accepted_tokens"], d["drafted_tokens"]) == (2, None, None)
    s.add("SpecDecoding metrics: Accepted: 1 tokens, Drafted: 4 tokens", 3)
    d = s.to_dict()
    assert d is not None and (d["accepted_tokens"], d["drafted_tokens"], d["acceptance_rate_pct"]) == (1, 4, 25.0)


def test_a_prompt_throughput_is_read_only_right_after_its_label():
    # a negative reading (a clock step) is no sample, not a positive one read past the minus sign
    line = IDLE.replace("Avg prompt throughput: 0.0", "Avg prompt throughput: -1.0")
    assert STATS.search(line) is None and STATS_BYTES.search(line.encode()) is None
    r = parse_log(
        [f"INFO 01-01 00:00:00 [loggers.py:1] Engine 000: {line}", f"INFO 01-01 00:00:10 [loggers.py:1] {IDLE}"]
    )
    assert r.stats is not None and (r.stats["samples"], r.stats["first_line"]) == (1, 2)


def test_mean_throughputs_are_rounded_to_3_decimals():
    lines = [
        IDLE.replace("Avg prompt throughput: 0.0", "Avg prompt throughput: 1.0"),
        IDLE.replace("Avg generation throughput: 0.0", "Avg generation throughput: 1.0"),
        IDLE.replace("Avg generation throughput: 0.0", "Avg generation throughput: 1.0"),
    ]
    d = _by_line(lines).to_dict()
    assert d is not None and (d["prompt_tps_mean_active"], d["gen_tps_mean_active"]) == (0.333, 0.667)

"""Huge numbers on the command line are bounded: no hang, no memory blow-up, one clear line."""

from __future__ import annotations

import socket

import inprocess
import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.errors import BenchError


@pytest.mark.timeout(10)
def test_concurrency_far_above_the_prompt_count_opens_only_what_can_be_used(synth) -> None:
    # Before the fix the pool warm-up sent one GET /health per unit of concurrency
    # (50,000 connections for 2 prompts, ~30 s; --concurrency 1e20 was killed by the OOM killer).
    srv = synth(ttft_ms=1, itl_ms=0.1)
    d = run_bench(
        BenchConfig(base_url=srv.base_url, model="m", num_prompts=2, concurrency=50_000, max_tokens=4)
    ).to_json_dict()
    assert d["completed"] == 2 and d["failed"] == 0
    assert d["max_concurrency"] == 50_000  # recorded as asked


def test_more_prompts_than_memory_can_hold_is_refused_before_any_work() -> None:
    with pytest.raises(BenchError, match="is more than 1,000,000") as e:
        run_bench(BenchConfig(base_url="http://127.0.0.1:9", model="m", num_prompts=10**20))
    assert e.value.location == "--num-prompts"
    with pytest.raises(BenchError, match="1,000,000 prompts [+] 1 warm-up is more than 1,000,000") as e:
        run_bench(BenchConfig(base_url="http://127.0.0.1:9", model="m", num_prompts=1_000_000, warmup=1))
    assert e.value.location == "--warmup"


@pytest.mark.timeout(20)
def test_cli_huge_num_prompts_is_one_usage_line_exit_2() -> None:
    # refused where the options are read, by the rule a recipe's bench.num_prompts follows too
    r = inprocess.autobench("bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--num-prompts", str(10**20))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("error: --num-prompts: ")
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_no_busy_client_warning_from_a_run_too_short_to_measure() -> None:
    # All requests refused in ~2 ms: a CPU fraction over such a window is noise (it read ~95 %).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connections are refused
    d = run_bench(BenchConfig(base_url=f"http://127.0.0.1:{port}", model="m", num_prompts=5)).to_json_dict()
    assert d["failed"] == 5 and d["errors_by_kind"] == {"connect": 5}
    assert d["client_bound_warning"] is False

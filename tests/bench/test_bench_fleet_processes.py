"""``--workers 2`` for real: two load generator processes against the synthetic server, their
records merged (the protocol and the merge are tested in-process in test_bench_fleet.py)."""

from __future__ import annotations

from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.record import OK


@pytest.mark.integration
def test_two_load_generator_processes_make_one_result(synth: Any) -> None:
    srv = synth(ttft_ms=2, itl_ms=1)
    res = run_bench(
        BenchConfig(
            base_url=srv.base_url,
            model="m",
            num_prompts=40,
            concurrency=8,
            max_tokens=6,
            random_input_len=16,
            workers=2,
            warmup=2,
            tokenizer="estimated",
        )
    )
    d = res.to_json_dict()
    assert (d["completed"], d["failed"], d["incomplete"]) == (40, 0, 0)
    assert d["total_output_tokens"] == 40 * 6 and d["itl_samples"] + d["itl_unseen_gaps"] == 40 * 5
    gens = d["workers"]["generators"]  # type: ignore[index]
    assert [g["requests"] for g in gens] == [20, 20] and [g["concurrency"] for g in gens] == [4, 4]
    assert all(g["cpu_seconds"] > 0 for g in gens)
    assert all(abs(g["clock_offset_ms"]) <= g["clock_round_trip_ms"] / 2 + 1e-6 for g in gens)  # one host, one clock
    assert res.samples is not None and res.samples.count(OK) == 40
    assert d["client"]["cpu_seconds"] == pytest.approx(sum(g["cpu_seconds"] for g in gens))  # type: ignore[index]

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.result import NORMALIZED_KEYS, load_result_json
from autobench.errors import BenchError

# Shape of `vllm bench serve --save-result` (serve.py), spec-decode run, values from the seed page.
VLLM_RESULT = {
    "date": "20260624-101500",
    "endpoint_type": "openai",
    "backend": "openai",
    "label": None,
    "model_id": "qwen",
    "tokenizer_id": "qwen",
    "num_prompts": 500,
    "request_rate": "inf",
    "burstiness": 1.0,
    "max_concurrency": 8,
    "duration": 915.0,
    "completed": 385,
    "failed": 0,
    "total_input_tokens": 105829,
    "total_output_tokens": 98298,
    "request_throughput": 0.4208,
    "request_goodput": None,
    "output_throughput": 107.43,
    "total_token_throughput": 223.09,
    "max_output_tokens_per_s": 180.0,
    "max_concurrent_requests": 8,
    "mean_ttft_ms": 700.0,
    "median_ttft_ms": 681.0,
    "std_ttft_ms": 50.0,
    "p99_ttft_ms": 1200.0,
    "mean_tpot_ms": 68.0,
    "median_tpot_ms": 67.5,
    "std_tpot_ms": 5.0,
    "p99_tpot_ms": 80.0,
    "mean_itl_ms": 210.0,
    "median_itl_ms": 205.0,
    "std_itl_ms": 9.0,
    "p99_itl_ms": 260.0,
    "spec_decode_acceptance_rate": 44.6,
    "spec_decode_acceptance_length": 3.23,
    "spec_decode_num_drafts": 100,
    "spec_decode_draft_tokens": 500,
    "spec_decode_accepted_tokens": 223,
    "spec_decode_per_position_acceptance_rates": [0.78, 0.56, 0.39, 0.29, 0.21],
}


def write(tmp_path: Path, obj: Any, name: str = "r.json") -> Path:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


def test_vllm_result_normalized(tmp_path: Path) -> None:
    n = load_result_json(write(tmp_path, VLLM_RESULT))
    assert set(n) == set(NORMALIZED_KEYS)
    assert n["decode_tok_s"] == 107.43
    assert n["prefill_tok_s"] == pytest.approx(115.66)  # total - output (vLLM writes no input_throughput)
    assert (n["completed"], n["errors"], n["duration_s"], n["concurrency"], n["num_prompts"]) == (385, 0, 915.0, 8, 500)
    assert (n["ttft_median_ms"], n["tpot_median_ms"], n["itl_p99_ms"]) == (681.0, 67.5, 260.0)
    assert n["spec_acceptance_length"] == 3.23
    assert n["spec_draft_acceptance_rate"] == pytest.approx(0.446)
    assert n["spec_per_position"] == [0.78, 0.56, 0.39, 0.29, 0.21]
    assert n["request_rate"] == 0.4208
    # vLLM has no such notions / did not write e2el: None, never 0
    assert n["incomplete"] is None and n["time_cap_hit"] is None and n["e2el_median_ms"] is None


def test_vllm_result_without_spec_or_totals(tmp_path: Path) -> None:
    d = {k: v for k, v in VLLM_RESULT.items() if not k.startswith("spec_") and k != "total_token_throughput"}
    n = load_result_json(write(tmp_path, d))
    assert n["spec_acceptance_length"] is None and n["spec_per_position"] is None
    assert n["total_tok_s"] is None
    assert n["prefill_tok_s"] == pytest.approx(105829 / 915.0)


def test_own_result_round_trips(synth: Any, tmp_path: Path) -> None:
    srv = synth(ttft_ms=2, itl_ms=1, tokens_per_chunk=2)
    res = run_bench(
        BenchConfig(
            base_url=srv.base_url,
            model="m",
            num_prompts=6,
            concurrency=3,
            max_tokens=10,
            max_seconds=60,
            random_input_len=16,
        )
    )
    res.write(tmp_path / "own.json")
    n = load_result_json(tmp_path / "own.json")
    d = res.to_json_dict()
    assert n == res.normalized()
    assert (n["completed"], n["errors"], n["incomplete"], n["time_cap_hit"]) == (6, 0, 0, False)
    assert n["decode_tok_s"] == d["output_throughput"] and n["prefill_tok_s"] == d["input_throughput"]
    assert n["spec_acceptance_length"] == pytest.approx(2.0)
    assert n["spec_draft_acceptance_rate"] == pytest.approx(1.0)
    assert n["e2el_median_ms"] is not None and n["concurrency"] == 3 and n["num_prompts"] == 6


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json at all", "r.json:1:1: result file is not JSON"),
        ("[1, 2]", "result must be a JSON object"),
        ('{"foo": 1}', "not a benchmark result"),
        ('{"completed": "many", "duration": 1, "output_throughput": 2}', "'completed' must be a number"),
        (
            '{"completed": 1, "duration": 1, "output_throughput": 2, "spec_decode_per_position_acceptance_rates": "x"}',
            "must be a list of numbers",
        ),
    ],
)
def test_bad_result_files(tmp_path: Path, content: str, needle: str) -> None:
    with pytest.raises(BenchError) as e:
        load_result_json(write(tmp_path, content))
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_missing_result_file(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="result file not found"):
        load_result_json(tmp_path / "nope.json")


@pytest.mark.integration
def test_result_module_does_not_import_the_transport() -> None:
    import subprocess
    import sys

    code = "import sys, autobench.bench.result; print([m for m in ('httptools', 'autobench.bench.transport') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_result_carries_the_raw_samples_it_was_computed_from(synth: Any) -> None:
    """BenchResult.samples: one row per request (errors too), and the result's percentiles
    recomputed from them agree to the microsecond the samples keep."""
    from autobench.samples import decode, encode, summary

    srv = synth(ttft_ms=3, itl_ms=1, tokens_per_chunk=1, error_rate=0.25)
    res = run_bench(
        BenchConfig(
            base_url=srv.base_url,
            model="m",
            num_prompts=12,
            concurrency=4,
            max_tokens=8,
            max_seconds=60,
            random_input_len=16,
        )
    )
    d = res.to_json_dict()
    s = res.samples
    assert s is not None and len(s) == d["dispatched"] == 12
    assert s.count("ok") == d["completed"] and s.count("error") == d["failed"] > 0
    assert {k for k in s.error_kind if k} == set(d["errors_by_kind"])
    assert len(s.values("itl_ms")) == d["itl_samples"]
    got = summary(s)
    for name in ("ttft", "tpot", "itl", "e2el"):
        for stat in ("median", "p99", "mean"):
            assert got[f"{name}_{stat}_ms"] == pytest.approx(d[f"{stat}_{name}_ms"], abs=0.0005), (name, stat)
    assert all(0 <= t <= d["duration"] for t in s.start_s)
    ok = [s.request(i) for i in range(len(s)) if s.status[i] == "ok"]
    assert sum(r.completion_tokens or 0 for r in ok) == d["total_output_tokens"]
    assert decode(encode(s)) == s

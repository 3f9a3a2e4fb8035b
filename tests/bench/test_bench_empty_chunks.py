"""Empty-text token chunks (issue 14): vLLM sends ``"text": ""`` for a token that ends inside a
UTF-8 sequence (5-19 % of chunks with byte-level tokenizers).  Each is still a token: TTFT,
TPOT, ITL and E2EL count it, with one chunk per token."""

from __future__ import annotations

from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.synthetic import fault_hit


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_empty_text_chunks_are_tokens(synth: Any, endpoint: str) -> None:
    n_req, n_tok, warm = 20, 20, 4
    srv = synth(ttft_ms=5, itl_ms=2, empty_chunk_rate=0.1)
    cfg = BenchConfig(
        base_url=srv.base_url,
        model="m",
        endpoint=endpoint,
        num_prompts=n_req,
        warmup=warm,
        concurrency=4,
        max_tokens=n_tok,
        random_input_len=16,
        read_timeout=5.0,
    )
    d = run_bench(cfg).to_json_dict()
    assert (d["completed"], d["failed"], d["incomplete"]) == (n_req, 0, 0)
    assert d["total_output_tokens"] == n_req * n_tok
    # Every request has empty chunks; among them some first chunks and some last chunks.
    hits = [[fault_hit(0.1, n + i) for i in range(n_tok)] for n in range(48)]
    assert all(any(h) for h in hits) and any(h[0] for h in hits) and any(h[-1] for h in hits)
    assert d["mean_tokens_per_chunk"] == pytest.approx(1.0)
    assert d["token_chunks"] == n_req * n_tok
    # one gap per later token, except those that came in the read of the first token (a busy
    # machine): those have no gap measured; and the gaps add up to each request's t_last - t_first
    assert d["itl_samples"] + d["itl_unseen_gaps"] == n_req * (n_tok - 1)
    assert d["mean_itl_ms"] * d["itl_samples"] == pytest.approx(n_req * (d["mean_e2el_ms"] - d["mean_ttft_ms"]))
    # TPOT covers every later token, the empty ones included: exactly so on the means.  How close
    # the figures come to the injected timings (an empty first chunk must not move TTFT by an
    # ITL) is measured, not asserted: benchmarks/bench_accuracy.py --empty-chunk-rate 0.1.
    assert d["mean_tpot_ms"] * (n_tok - 1) == pytest.approx(d["mean_e2el_ms"] - d["mean_ttft_ms"], abs=1e-6)

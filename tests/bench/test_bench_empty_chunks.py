"""Empty-text token chunks (issue 14): vLLM sends ``"text": ""`` for a token that ends inside a
UTF-8 sequence (5-19 % of chunks with byte-level tokenizers).  Each is still a token: TTFT,
TPOT, ITL and E2EL must come out as injected, with one chunk per token."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.synthetic import fault_hit


@pytest.fixture(scope="module")
def empty_chunk_server() -> Iterator[str]:
    """The synthetic server in its own process: ttft 50 ms, itl 10 ms, 10 % empty-text chunks."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "autobench", "synthetic-server", "--port", str(port), "--model", "m"]
        + ["--ttft-ms", "50", "--itl-ms", "10", "--empty-chunk-rate", "0.1", "--log-stats-interval", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Application startup complete." in line:
            break
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_empty_text_chunks_are_tokens(empty_chunk_server: str, endpoint: str) -> None:
    n_req, n_tok, warm = 20, 20, 4
    # The server numbers requests from 0 across runs; the plan below is for what this run sends.
    cfg = BenchConfig(
        base_url=empty_chunk_server,
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
    assert d["itl_samples"] == n_req * (n_tok - 1)
    # (bounds with room for a loaded 2-core machine; the counts above are exact whatever the load)
    assert 49.5 <= d["median_ttft_ms"] < 55.0
    assert 49.5 <= d["p99_ttft_ms"] < 60.0  # an empty first chunk must not add an ITL (10 ms) to TTFT
    assert d["median_tpot_ms"] == pytest.approx(10.0, abs=0.3)
    assert d["median_itl_ms"] == pytest.approx(10.0, abs=1.0)
    assert d["median_e2el_ms"] == pytest.approx(50 + (n_tok - 1) * 10, abs=5.0)
    assert d["p99_e2el_ms"] == pytest.approx(50 + (n_tok - 1) * 10, abs=12.0)

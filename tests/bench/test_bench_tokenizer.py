"""Prompt lengths from the served model's tokenizer (issue 14).

A byte-level BPE tokenizer is trained here on the spot (the shape of a small Llama's: BOS
added by the post-processor), the synthetic server counts usage.prompt_tokens with it, and
``--random-input-len 64`` must arrive as 64 +/- 1 prompt tokens on every request.  Without
the tokenizer the estimate misses by a wide margin, and the result says so.  The Hub fetch
goes through the real huggingface_hub client against the loopback fake Hub.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import inprocess
import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.datasets import load_dataset
from autobench.bench.tokenizer import TokenizerUnavailable, load_hub, load_local

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hub"))
from fakehub import FakeCommit, FakeHub, FakeRepo  # noqa: E402

SHA = "1f0e8d9c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e"
CORPUS = [
    "The quick brown fox jumps over the lazy dog; naïve café déjà vu, 東京 and Zürich. " * 3 + str(i)
    for i in range(400)
] + [
    "Benchmarks measure servers: tokens, latency, throughput, prompts of every length. " * 2 + str(i)
    for i in range(400)
]


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tokenizer.json (+ config) of a byte-level BPE trained here: vocabulary 600, <s> prepended."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    d = tmp_path_factory.mktemp("tok")
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    return d


def bench(url: str, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "num_prompts": 24,
        "concurrency": 4,
        "max_tokens": 4,
        "random_input_len": 64,
        "read_timeout": 10.0,
        "scrape_metrics": False,
    }
    base.update(kw)
    return run_bench(BenchConfig(**base)).to_json_dict()


def test_random_prompts_arrive_with_exactly_the_asked_token_count(synth: Any, tok_dir: Path) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir))  # usage counted with the same tokenizer
    d = bench(srv.base_url, tokenizer=str(tok_dir))
    assert d["completed"] == 24 and d["failed"] == 0
    assert d["min_input_tokens"] >= 63 and d["max_input_tokens"] <= 65, (d["min_input_tokens"], d["max_input_tokens"])
    assert d["tokenizer_id"].startswith(str((tok_dir / "tokenizer.json").resolve()) + "@sha256:")
    assert d["tokenizer_fallback"] is None
    # The estimate (characters / 4) against the same server is far off: that was the defect.
    est = bench(srv.base_url, tokenizer="estimated")
    assert est["tokenizer_id"] == "estimated" and est["tokenizer_fallback"] is None
    assert est["min_input_tokens"] > 70 or est["max_input_tokens"] < 58, (
        est["min_input_tokens"],
        est["max_input_tokens"],
    )


def test_prompt_building_against_the_tokenizer_itself(tok_dir: Path) -> None:
    tok = load_local(str(tok_dir))
    assert tok.n_special == 1 and 1 in tok.special_ids and 1 not in tok.allowed
    rng = random.Random(3)
    for target in (1, 2, 5, 64, 200, 700):
        text, n = tok.prompt_of_length(target, rng)
        assert n == tok.count(text)
        assert abs(n - target) <= 1, (target, n)


def test_range_ratio_and_sharegpt_filter_count_real_tokens(tok_dir: Path, tmp_path: Path) -> None:
    tok = load_local(str(tok_dir))
    ds = load_dataset(
        kind="random", path=None, num_prompts=40, random_input_len=100, random_range_ratio=0.5, tokenizer=tok
    )
    assert all(49 <= p.est_tokens <= 151 for p in ds.prompts) and ds.tokenizer == tok.id
    # A ShareGPT prompt of 1,000 characters of CJK is ~1,000+ tokens here but 250 by the estimate.
    long_cjk = "東京" * 500
    short = "the quick brown fox jumps over the lazy dog"
    conv = [
        {"conversations": [{"from": "human", "value": v}, {"from": "gpt", "value": "ok"}]} for v in (long_cjk, short)
    ]
    (tmp_path / "sg.json").write_text(json.dumps(conv))
    real = load_dataset(kind=None, path=str(tmp_path / "sg.json"), num_prompts=1, max_prompt_tokens=512, tokenizer=tok)
    assert real.available == 1 and real.skipped["prompt_too_long"] == 1 and real.prompts[0].text == short
    assert real.prompts[0].est_tokens == tok.count(short)
    guess = load_dataset(kind=None, path=str(tmp_path / "sg.json"), num_prompts=1, max_prompt_tokens=512)
    assert guess.available == 2 and guess.tokenizer == "estimated"  # the estimate let it through


def test_jsonl_records_may_give_a_token_count(tok_dir: Path, tmp_path: Path) -> None:
    tok = load_local(str(tok_dir))
    p = tmp_path / "d.jsonl"
    p.write_text('{"prompt_tokens": 32, "max_tokens": 5}\n{"prompt": "a text prompt here"}\n{"prompt_tokens": 0}\n')
    ds = load_dataset(kind=None, path=str(p), num_prompts=2, tokenizer=tok, min_prompt_tokens=1)
    counted = sorted((pr.est_tokens, pr.max_tokens) for pr in ds.prompts)
    assert abs(counted[1][0] - 32) <= 1 and counted[1][1] == 5 and tok.count(ds.prompts[0].text) > 0
    assert ds.skipped["bad_prompt_tokens"] == 1


def _fake_hub(tok_dir: Path) -> FakeHub:
    files: dict[str, bytes | int] = {
        "config.json": b'{"model_type": "llama"}',
        "tokenizer.json": (tok_dir / "tokenizer.json").read_bytes(),
        "tokenizer_config.json": (tok_dir / "tokenizer_config.json").read_bytes(),
    }
    hub = FakeHub()
    hub.add(FakeRepo("acme/tiny-llama", commits={SHA: FakeCommit(SHA, files)}, refs={"main": SHA}))
    return hub.start()


def test_hub_fetch_at_the_revision_then_offline_from_the_cache(
    tok_dir: Path, monkeypatch: pytest.MonkeyPatch, synth: Any
) -> None:
    hub = _fake_hub(tok_dir)
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("AUTOBENCH_HUB_TIMEOUT", "2")
        tok = load_hub("acme/tiny-llama", "main")
        assert tok.id == f"acme/tiny-llama@{SHA}" and tok.n_special == 1
        assert any("tokenizer.json" in r.path for r in hub.requests)
    finally:
        hub.stop()
    # The Hub is gone: offline, the HF cache answers (by branch and by sha).
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_hub("acme/tiny-llama", "main").id == f"acme/tiny-llama@{SHA}"
    assert load_hub("acme/tiny-llama", SHA).id == f"acme/tiny-llama@{SHA}"
    with pytest.raises(TokenizerUnavailable, match="acme/other"):
        load_hub("acme/other", "main")
    # bench --model REPO without --tokenizer uses the model's repo, as vllm bench serve does.
    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir), model="acme/tiny-llama")
    d = bench(srv.base_url, model="acme/tiny-llama", num_prompts=4)
    assert d["tokenizer_id"] == f"acme/tiny-llama@{SHA}" and 63 <= d["min_input_tokens"] <= d["max_input_tokens"] <= 65


def test_no_tokenizer_reachable_falls_back_loudly(synth: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # an empty HF cache: nothing to load
    srv = synth(ttft_ms=1, itl_ms=0.5)
    r = inprocess.autobench(
        *["bench", "--base-url", srv.base_url, "--model", "m"],
        *["--num-prompts", "2", "--max-tokens", "2", "--tokenizer", "acme/missing", "--result", "r.json"],
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "warning: prompt lengths were ESTIMATED (characters / 4), not counted: " in r.stderr
    assert "acme/missing" in r.stderr
    assert "tokenizer" in r.stdout and "estimated (characters / 4)" in r.stdout
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["tokenizer_id"] == "estimated" and "acme/missing" in d["tokenizer_fallback"]


def test_a_bad_local_tokenizer_path_is_one_line(tmp_path: Path) -> None:
    r = inprocess.autobench(
        "bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", str(tmp_path / "nope.json")
    )
    assert r.returncode == 5 and r.stderr.count("\n") == 1 and "tokenizer path not found" in r.stderr

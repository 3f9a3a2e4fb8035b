"""Context depth and shared prefixes (issue 33): what the server counts is depth + question.

A byte-level BPE tokenizer (a small Llama's shape: BOS added by the post-processor) is trained
here on the spot; the synthetic server counts ``usage.prompt_tokens`` with the same tokenizer,
as vLLM does, so every request's prompt tokens are checked against depth + question.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.datasets import Dataset, Prompt, estimate_tokens
from autobench.bench.tokenizer import BenchTokenizer, load_local
from autobench.bench.workload import (
    SharedPrefix,
    add_context,
    check_depth,
    check_fits,
    context_prompts,
    model_len,
    parse_shared_prefix,
)
from autobench.errors import BenchError

CORPUS = [
    "The quick brown fox jumps over the lazy dog; naïve café déjà vu, 東京 and Zürich. " * 3 + str(i)
    for i in range(400)
] + [
    "Benchmarks measure servers: tokens, latency, throughput, prompts of every length. " * 2 + str(i)
    for i in range(400)
]
QUESTIONS = [
    "What is the capital of France?",
    "Write a poem about the sea.",
    "Zürich 東京 café?",
    " a question with a leading space",
    "x",
    "Explain prefix caching\nin two lines.",
]


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    d = tmp_path_factory.mktemp("tok")
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))
    return d


@pytest.fixture(scope="module")
def tok(tok_dir: Path) -> BenchTokenizer:
    return load_local(str(tok_dir))


def prompts_of(tok: BenchTokenizer | None, n: int = 12) -> list[Prompt]:
    qs = [QUESTIONS[i % len(QUESTIONS)] for i in range(n)]
    return [Prompt(q, tok.count(q) if tok is not None else estimate_tokens(q), 8) for q in qs]


@pytest.mark.parametrize("depth", [0, 1, 2, 7, 8, 100, 1000])
def test_depth_adds_exactly_depth_tokens_before_each_question(tok: BenchTokenizer, depth: int) -> None:
    ps = prompts_of(tok)
    out = context_prompts(ps, depth=depth, tokenizer=tok, rng=random.Random(1))
    for p, o in zip(ps, out, strict=True):
        assert tok.count(o.text) == depth + p.est_tokens == o.est_tokens
        assert o.text.endswith(p.text) and o.max_tokens == p.max_tokens
    if depth:
        assert len({o.text[: -len(p.text)] for p, o in zip(ps, out, strict=True)}) == len(ps)  # each its own context
        assert all("\n\n" in o.text[-len(p.text) - 2 :] for p, o in zip(ps, out, strict=True)) == (depth >= 8)
    else:
        assert out == ps


def test_depth_without_a_tokenizer_is_the_estimate(tok: BenchTokenizer) -> None:
    ps = prompts_of(None)
    out = context_prompts(ps, depth=50, tokenizer=None, rng=random.Random(0))
    for p, o in zip(ps, out, strict=True):
        assert estimate_tokens(o.text) == 50 + p.est_tokens == o.est_tokens and o.text.endswith(p.text)


def test_shared_prefix_groups_share_exact_token_ids(tok: BenchTokenizer) -> None:
    ps = prompts_of(tok, 10)
    out = context_prompts(ps, depth=20, shared_prefix=SharedPrefix(4, 48), tokenizer=tok, rng=random.Random(3))
    ids = [tok.encode(o.text) for o in out]
    for i, (p, o) in enumerate(zip(ps, out, strict=True)):
        assert tok.count(o.text) == 48 + 20 + p.est_tokens == o.est_tokens
        lead = i - i % 4  # the first prompt of its group
        assert ids[i][:48] == ids[lead][:48]
    groups = {tuple(x[:48]) for x in ids}
    assert len(groups) == 3  # prompts 0-3, 4-7, 8-9: one prefix each, all different
    assert len({tuple(x[48:60]) for x in ids}) == 10  # after the prefix, each prompt its own context


def test_add_context_records_and_shapes_warmup(tok: BenchTokenizer) -> None:
    ds = Dataset("random", None, prompts_of(tok, 4), prompts_of(tok, 2), 6)
    out = add_context(ds, 30, SharedPrefix(2, 16), tok, seed=9)
    assert out.context == {"depth": 30, "shared_prefix_prompts": 2, "shared_prefix_tokens": 16}
    assert [p.est_tokens for p in out.warmup] == [46 + p.est_tokens for p in ds.warmup]
    assert out.fingerprint() != ds.fingerprint()
    assert add_context(ds, 30, SharedPrefix(2, 16), tok, seed=9).fingerprint() == out.fingerprint()
    assert add_context(ds, 30, SharedPrefix(2, 16), tok, seed=8).fingerprint() != out.fingerprint()
    assert add_context(ds, 0, None, tok).context == {"depth": 0}
    assert add_context(ds).context == {"depth": 0} and add_context(ds).prompts == ds.prompts
    assert add_context(ds, 30, None, tok).fingerprint() == add_context(ds, 30, None, tok, seed=0).fingerprint()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("8:", "not N:L"),
        ("a:3", "not N:L"),
        ("0:5", "at least 1"),
        ("2:0", "at least 1"),
        ("٣:4", "not N:L"),
        ("0", "at least 1"),
        ("", "not N:L"),
    ],
)
def test_shared_prefix_refusals(text: str, words: str) -> None:
    with pytest.raises(BenchError, match=words):
        parse_shared_prefix(text)


def test_depth_refusals() -> None:
    assert parse_shared_prefix("8:512") == SharedPrefix(8, 512) and SharedPrefix(8, 512).text() == "8:512"
    with pytest.raises(BenchError) as bad:
        parse_shared_prefix("x")
    assert bad.value.hint is not None and bad.value.hint.startswith("e.g. --shared-prefix 8:512 (every 8 prompts")
    with pytest.raises(BenchError, match="--depth must be a whole number"):
        check_depth("5")  # type: ignore[arg-type]
    assert parse_shared_prefix("1:1") == SharedPrefix(1, 1)  # the smallest
    with pytest.raises(BenchError) as err:
        SharedPrefix(1, 0).check()
    assert err.value.hint == "--shared-prefix N:L shares one prefix of L tokens among every N prompts"
    check_depth(0)
    for bad in (-1, True, 10_000_001):
        with pytest.raises(BenchError, match="depth"):
            check_depth(bad)  # type: ignore[arg-type]


def test_fits_refuses_a_context_over_max_model_len(tok: BenchTokenizer) -> None:
    short, long_ = Prompt("x", tok.count("x"), 30), Prompt("a much longer question " * 6, 0, 8)
    long_ = replace(long_, est_tokens=tok.count(long_.text))
    ds = add_context(Dataset("random", None, [short], [long_], 2), 100, None, tok)  # warm-up prompts count too
    need = ds.warmup[0].est_tokens + 8  # the most tokens any request needs: the long one's
    assert need > ds.prompts[0].est_tokens + 30
    check_fits(ds, [{"id": "m", "max_model_len": need}], "m", "http://h")  # exactly fits
    with pytest.raises(BenchError) as err:
        check_fits(ds, [{"id": "m", "max_model_len": need - 1}], "m", "http://h")
    assert str(err.value).startswith(f"http://h: depth 100: a prompt of {need - 8:,} tokens (context included)")
    assert f"is {need:,} tokens, over the server's max_model_len {need - 1:,}" in str(err.value)
    assert err.value.hint == "a smaller depth or shared prefix, or a server with a longer --max-model-len"
    # a short prompt asking for many tokens needs the most
    greedy = add_context(Dataset("random", None, [replace(short, max_tokens=1000)], [long_], 2), 100, None, tok)
    most = greedy.prompts[0].est_tokens + 1000
    check_fits(greedy, [{"id": "m", "max_model_len": most}], "m", "h")
    with pytest.raises(BenchError, match=f"is {most:,} tokens"):
        check_fits(greedy, [{"id": "m", "max_model_len": most - 1}], "m", "h")
    assert model_len([{"id": "x", "max_model_len": 5}, {"root": "m", "max_model_len": 9}], "m") == 9
    assert model_len([{"id": "m", "max_model_len": True}, "junk"], "m") is None
    check_fits(Dataset("random", None, prompts_of(tok, 2), [], 2), [{"id": "m", "max_model_len": 1}], "m", "h")


def _bench(url: str, tok_dir: Path, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "num_prompts": 6,
        "concurrency": 2,
        "max_tokens": 4,
        "random_input_len": 24,
        "read_timeout": 10.0,
        "tokenizer": str(tok_dir),
    }
    base.update(kw)
    return run_bench(BenchConfig(**base)).to_json_dict()


@pytest.mark.parametrize("depth", [0, 1000, 4000])
def test_depth_grid_arrives_as_depth_plus_question(synth: Any, tok_dir: Path, depth: int) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir), max_model_len=8192)
    d = _bench(srv.base_url, tok_dir, depth=depth)
    assert d["completed"] == 6 and d["dataset"]["depth"] == depth
    # random prompts of 24 tokens: every request's server-counted prompt is depth + 24
    assert d["min_input_tokens"] == d["max_input_tokens"] == depth + 24


def test_depth_beyond_max_model_len_sends_nothing(synth: Any, tok_dir: Path) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir), max_model_len=1024)
    with pytest.raises(BenchError, match=r"depth 1,000: .* over the server's max_model_len 1,024"):
        _bench(srv.base_url, tok_dir, depth=1000)
    assert srv.server.counters.requests == 0


def test_shared_prefix_hit_rate_from_metrics(synth: Any, tok_dir: Path) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir))
    d = _bench(srv.base_url, tok_dir, num_prompts=8, concurrency=1, shared_prefix=SharedPrefix(4, 64))
    # 2 groups of 4 prompts of 64 + 24 = 88 tokens: the 3 later prompts of a group hit the
    # prefix's 4 full blocks of 16 (64 tokens); nothing else is shared
    assert d["dataset"]["shared_prefix_prompts"] == 4 and d["dataset"]["shared_prefix_tokens"] == 64
    assert d["prefix_cache_queries"] == 8 * 88
    assert d["prefix_cache_hits"] == 6 * 64
    assert d["prefix_cache_hit_rate"] == pytest.approx(6 * 64 / (8 * 88))


def test_depth_cells_do_not_share_their_contexts(tok: BenchTokenizer) -> None:
    """With one random stream for every depth, depth 512's contexts began with depth 256's: on the
    real vLLM testbed the 512 cell then hit the prefix cache (640 tokens).  Each (seed, depth,
    prefix) has its own stream now; the same seed and depth give the same contexts."""
    ds = Dataset("random", None, prompts_of(tok, 6), [], 6)
    a, b = add_context(ds, 256, None, tok, seed=0), add_context(ds, 512, None, tok, seed=0)
    firsts = {tuple(tok.encode(p.text)[:16]) for p in [*a.prompts, *b.prompts]}
    assert len(firsts) == 12
    assert add_context(ds, 256, None, tok, seed=0).fingerprint() == a.fingerprint()
    c = add_context(ds, 256, SharedPrefix(2, 16), tok, seed=0)
    assert tok.encode(c.prompts[0].text)[:16] != tok.encode(a.prompts[0].text)[:16]


class _Overshooting:
    """A tokenizer whose decoded text re-encodes one token longer (a leading space of its own):
    the first guess overshoots by one, so the builder has to trim."""

    allowed = list(range(26))

    def encode(self, text: str) -> list[int]:
        return [ord(ch) for ch in text]

    def decode(self, ids: list[int]) -> str:
        return " " + "".join(chr(97 + i) for i in ids)

    def count(self, text: str) -> int:
        return len(text) + 1  # a BOS


@pytest.mark.parametrize("depth", [3, 8, 40])
def test_a_first_guess_that_overshoots_is_trimmed(depth: int) -> None:
    fake: Any = _Overshooting()
    ps = [Prompt("question?", fake.count("question?"), 4)]
    out = context_prompts(ps, depth=depth, tokenizer=fake, rng=random.Random(0))
    assert fake.count(out[0].text) == depth + ps[0].est_tokens == out[0].est_tokens


def test_estimated_context_is_words() -> None:
    ps = prompts_of(None, 3)
    for p, o in zip(ps, context_prompts(ps, depth=40, rng=random.Random(0)), strict=True):
        context = o.text[: -len(p.text)]
        assert len(context.split()) >= 20 and context.endswith("\n\n")


def test_add_context_checks_its_arguments(tok: BenchTokenizer) -> None:
    from autobench.bench.workload import MAX_CONTEXT_TOKENS

    ds = Dataset("random", None, prompts_of(tok, 2), [], 2)
    with pytest.raises(BenchError, match="--depth must be"):
        add_context(ds, -1, None, tok)
    with pytest.raises(BenchError, match="at least 1"):
        add_context(ds, 0, SharedPrefix(0, 4), tok)
    with pytest.raises(BenchError, match="over 10,000,000"):
        SharedPrefix(1, MAX_CONTEXT_TOKENS + 1).check()
    check_depth(MAX_CONTEXT_TOKENS)
    SharedPrefix(1, MAX_CONTEXT_TOKENS).check()


def test_model_len_takes_only_a_positive_whole_number() -> None:
    for bad in (0, -5, 1.5, "1024", None, False):
        assert model_len([{"id": "m", "max_model_len": bad}], "m") is None
    assert model_len([{"id": "m", "max_model_len": 1}], "m") == 1


def test_fits_checks_a_shared_prefix_alone(tok: BenchTokenizer) -> None:
    ds = add_context(Dataset("random", None, prompts_of(tok, 2), [], 2), 0, SharedPrefix(2, 64), tok)
    longest = max(p.est_tokens for p in ds.prompts)
    with pytest.raises(BenchError, match=r"^h: shared prefix 64: a prompt of .* over the server's max_model_len"):
        check_fits(ds, [{"id": "m", "max_model_len": longest}], "m", "h")
    plain = add_context(Dataset("random", None, prompts_of(tok, 2), [], 2), 0, None, tok)
    check_fits(plain, [{"id": "m", "max_model_len": 1}], "m", "h")  # the dataset's own prompts: not checked


def test_a_group_shares_its_depth_context_without_a_length(tok: BenchTokenizer) -> None:
    """llama-benchy's prefix caching: each context sent twice, the second time from the cache."""
    ps = prompts_of(tok, 6)
    out = context_prompts(ps, depth=40, shared_prefix=SharedPrefix(2), tokenizer=tok, rng=random.Random(5))
    ids = [tok.encode(o.text) for o in out]
    for i, (p, o) in enumerate(zip(ps, out, strict=True)):
        assert abs(tok.count(o.text) - (40 + p.est_tokens)) <= 1 and o.est_tokens == tok.count(o.text)
        if i % 2:
            assert ids[i][:38] == ids[i - 1][:38]  # the group's one context
    assert len({tuple(x[:38]) for x in ids}) == 3
    assert parse_shared_prefix("2") == SharedPrefix(2, None) and SharedPrefix(2).text() == "2"
    ds = add_context(Dataset("random", None, ps, [], 6), 40, SharedPrefix(2), tok)
    assert ds.context == {"depth": 40, "shared_prefix_prompts": 2}
    assert add_context(Dataset("random", None, ps, [], 6), 0, SharedPrefix(2), tok).prompts == ps  # nothing to share


def test_shared_depth_context_hits_the_synthetic_prefix_cache(synth: Any, tok_dir: Path) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir))
    d = _bench(srv.base_url, tok_dir, num_prompts=8, concurrency=1, depth=96, shared_prefix=SharedPrefix(2))
    # 4 pairs: the second of each pair hits the context's whole blocks (BOS + 96 - 1 tokens -> 6 blocks of 16)
    assert d["min_input_tokens"] == d["max_input_tokens"] == 96 + 24
    assert d["prefix_cache_hits"] == 4 * 6 * 16


def test_the_bench_command_takes_depth_and_shared_prefix(synth: Any, tok_dir: Path) -> None:
    import inprocess

    srv = synth(ttft_ms=1, itl_ms=0.5, tokenizer=str(tok_dir))
    r = inprocess.autobench(
        "bench", "--base-url", srv.base_url, "--model", "m", "--num-prompts", "4", "--max-tokens", "2",
        "--random-input-len", "24", "--depth", "40", "--shared-prefix", "2", "--tokenizer", str(tok_dir),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = {line.split("  ")[0]: line for line in r.stdout.splitlines()}
    assert "40" in rows["context depth (tokens)"]
    assert "every 2 prompts share the depth context" in rows["shared prefix"]
    assert "prefix cache hit rate" in rows
    bad = inprocess.autobench("bench", "--base-url", srv.base_url, "--model", "m", "--shared-prefix", "2:x")
    assert bad.returncode == 5 and bad.stderr.startswith("error: --shared-prefix '2:x' is not N:L or N")


def test_estimated_contexts_are_exact_even_when_the_words_fall_short() -> None:
    """The words can end one character short of 4n; the padding makes up for it (a question of
    one character is where a short context would show: ceil((4n - 1 + 1) / 4) is one short)."""
    q = Prompt("x", 1, 4)
    for n in range(1, 8):
        for seed in range(60):
            (o,) = context_prompts([q], depth=n, rng=random.Random(seed))
            assert estimate_tokens(o.text) == n + 1 == o.est_tokens, (n, seed)

"""Context put before each prompt's question: a depth of prior context, a prefix shared by groups.

``depth`` (``bench.dataset.depth``, ``--depth``): every prompt gets ``depth`` tokens of prior
context before its question, so the server counts ``depth + question`` prompt tokens (the
question counted as vLLM counts a completions prompt, special tokens included).  The
context is built as vLLM's random dataset builds a prompt (a run of ordinary token ids
from a random offset, decoded; ``BenchTokenizer.prompt_of_length``), then measured *joined
to its question* and trimmed or extended until the joined text counts exactly
``depth + question`` tokens: a token can merge across the join, so counting the context
alone is not enough.  (llama-benchy's ``--depth`` puts the same amount of prior text before
each question; sparkrun profiles carry it as ``depth``.)

``shared_prefix`` (``bench.dataset.shared_prefix: {prompts: N, length: L}``,
``--shared-prefix N:L``): the measured prompts, in the order they are sent, are taken in
groups of N; each group's prompts start with the same prefix of L tokens (one prefix per
group, different between groups), before the depth context and the question.  Without a
length (``{prompts: N}``, ``--shared-prefix N``) a group's prompts share their depth context
instead (the group's first prompt's), as llama-benchy's ``--enable-prefix-caching`` sends a
context twice, the second time from the cache.  With the
server's prefix cache on, every prompt of a group after the first can reuse the prefix's
KV blocks: the run's ``prefix_cache_hit_rate`` (``/metrics`` deltas,
``autobench.bench.promscrape``) shows how much it did.

Without a tokenizer the lengths are estimated (words of about 4 characters a token), as
for every other prompt length; the dataset then says ``estimated``.  Pure functions, no
I/O.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from autobench.errors import BenchError
from autobench.recipe import bounds as B

if TYPE_CHECKING:
    from autobench.bench.datasets import Dataset, Prompt
    from autobench.bench.tokenizer import BenchTokenizer

#: Between the context and the question: a paragraph break (its tokens count towards the depth).
SEPARATOR = "\n\n"
#: Rounds of measure-and-adjust per joined prompt (one or two settle it in practice).
MAX_ROUNDS = 16
#: The largest depth or prefix (tokens): the longest context window of a served model today is
#: 10M tokens; anything larger is a typo (and would be built in memory).  One figure with the
#: recipe's bound (autobench.recipe.bounds), so a recipe validate passes is one the bench builds.
MAX_CONTEXT_TOKENS = B.MAX_CONTEXT_TOKENS


@dataclass(frozen=True)
class SharedPrefix:
    """``prompts`` consecutive prompts share one prefix of ``length`` tokens; without a length
    they share their depth context (the group's first prompt's): llama-benchy's
    ``--enable-prefix-caching``, whose second request reuses the context the first loaded."""

    prompts: int
    length: int | None = None

    def check(self) -> None:
        if self.prompts < 1 or (self.length is not None and self.length < 1):
            raise BenchError(
                f"shared prefix {self.text()}: both numbers must be at least 1",
                hint="--shared-prefix N:L shares one prefix of L tokens among every N prompts",
            )
        if self.length is not None and self.length > MAX_CONTEXT_TOKENS:
            raise BenchError(f"shared prefix of {self.length:,} tokens is over {MAX_CONTEXT_TOKENS:,}")

    def text(self) -> str:
        """``N:L``, or ``N`` (the depth context shared), as ``--shared-prefix`` takes it."""
        return str(self.prompts) if self.length is None else f"{self.prompts}:{self.length}"


def parse_shared_prefix(text: str) -> SharedPrefix:
    """``N:L`` (prompts per prefix, prefix tokens), or ``N`` (every N prompts share their depth
    context), as ``--shared-prefix`` takes it."""
    n, sep, length = text.partition(":")
    if not _whole(n) or (sep and not _whole(length)):
        raise BenchError(
            f"--shared-prefix {text!r} is not N:L or N",
            hint="e.g. --shared-prefix 8:512 (every 8 prompts share a prefix of 512 tokens), or "
            "--shared-prefix 2 with --depth D (every 2 prompts share one context of D tokens)",
        )
    sp = SharedPrefix(int(n), int(length) if sep else None)
    sp.check()
    return sp


def _whole(text: str) -> bool:
    return text.strip().isdigit() and text.isascii()


def check_depth(depth: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise BenchError(f"--depth must be a whole number of tokens, 0 or more, got {depth!r}")
    if depth > MAX_CONTEXT_TOKENS:
        raise BenchError(f"--depth {depth:,} is over {MAX_CONTEXT_TOKENS:,} tokens")


class _Builder:
    """Filler text of a given token length, joined exactly (with a tokenizer) or estimated."""

    def __init__(self, tok: BenchTokenizer | None, rng: random.Random):
        self.tok, self.rng = tok, rng

    def count(self, text: str) -> int:
        from autobench.bench.datasets import estimate_tokens

        return self.tok.count(text) if self.tok is not None else estimate_tokens(text)

    def ids(self, n: int) -> list[int]:
        """``n`` ordinary token ids from a random offset (vLLM's random dataset method)."""
        assert self.tok is not None
        allowed = self.tok.allowed
        offset = self.rng.randrange(len(allowed))
        return [allowed[(offset + k) % len(allowed)] for k in range(n)]

    def words(self, n: int) -> str:
        from autobench.bench.datasets import _random_prompt

        return _random_prompt(n, self.rng, None)[0]

    def before(self, n: int, rest: str) -> str:
        """Text ``t`` such that ``t + rest`` counts ``n`` tokens more than ``rest`` alone
        (exactly when the tokenizer settles, else the closest of MAX_ROUNDS; estimated without one).
        """
        if n <= 0:
            return ""
        sep = SEPARATOR if n >= 8 else ""
        if self.tok is None:
            # the estimate counts characters: n tokens are 4n characters, the separator included
            return (self.words(n) + " " * (4 * n))[: 4 * n - len(sep)] + sep  # exactly 4n characters
        tok = self.tok
        target = n + self.count(rest)
        seq = self.ids(max(1, n - len(tok.encode(sep))))
        best: tuple[int, str] | None = None
        for _ in range(MAX_ROUNDS):
            text = tok.decode(seq) + sep
            miss = self.count(text + rest) - target
            if best is None or abs(miss) < best[0]:
                best = (abs(miss), text)
            if miss == 0:
                break
            if miss > 0:
                seq = seq[: max(1, len(seq) - miss)]
            else:
                seq += self.ids(-miss)
        assert best is not None
        return best[1]


def context_prompts(
    prompts: list[Prompt],
    *,
    depth: int = 0,
    shared_prefix: SharedPrefix | None = None,
    tokenizer: BenchTokenizer | None = None,
    rng: random.Random,
) -> list[Prompt]:
    """``prompts`` with the shared prefix and the depth context put before each question,
    in order; each prompt's ``est_tokens`` is the joined text's count."""
    if depth == 0 and shared_prefix is None:
        return prompts
    b = _Builder(tokenizer, rng)
    out: list[Prompt] = []
    prefix = context = ""
    for i, p in enumerate(prompts):
        first = shared_prefix is not None and i % shared_prefix.prompts == 0
        if shared_prefix is None or shared_prefix.length is not None or first:
            context = b.before(depth, p.text)  # the group's first context is the one shared
        body = context + p.text
        if first and shared_prefix is not None and shared_prefix.length is not None:
            # one new prefix per group, measured against the group's first prompt
            prefix = b.before(shared_prefix.length, body)
        text = prefix + body
        out.append(replace(p, text=text, est_tokens=b.count(text)))
    return out


def add_context(
    dataset: Dataset,
    depth: int = 0,
    shared_prefix: SharedPrefix | None = None,
    tokenizer: BenchTokenizer | None = None,
    seed: int = 0,
) -> Dataset:
    """The dataset with its measured and warm-up prompts given the context (``context_prompts``),
    and the context recorded (``Dataset.context``: the result's ``dataset`` section)."""
    check_depth(depth)
    if shared_prefix is not None:
        shared_prefix.check()
    # One stream per (seed, depth, prefix): the cells of a depth grid get contexts of their own.
    # With the same stream, depth 512's contexts began with depth 256's, and on the real vLLM
    # testbed the 512 cell hit the prefix cache for 640 of its tokens (benchmarks/workloads_real.py).
    sp = shared_prefix.text() if shared_prefix is not None else "-"
    rng = random.Random(f"autobench-context-{seed}-{depth}-{sp}")

    def shaped(prompts: list[Prompt]) -> list[Prompt]:
        return context_prompts(prompts, depth=depth, shared_prefix=shared_prefix, tokenizer=tokenizer, rng=rng)

    context: dict[str, int] = {"depth": depth}
    if shared_prefix is not None:
        context["shared_prefix_prompts"] = shared_prefix.prompts
        if shared_prefix.length is not None:  # else a group shares its depth context
            context["shared_prefix_tokens"] = shared_prefix.length
    return replace(
        dataset,
        prompts=shaped(dataset.prompts),
        warmup=shaped(dataset.warmup),
        context=context,
    )


def model_len(models: list[object], model: str) -> int | None:
    """``max_model_len`` of ``model`` in a ``/v1/models`` list (vLLM's field), or None."""
    for m in models:
        if isinstance(m, dict) and model in (m.get("id"), m.get("root")):
            n = m.get("max_model_len")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                return n
    return None


def check_fits(dataset: Dataset, models: list[object], model: str, where: str) -> None:
    """Refuse, before any measured request, a context that the server cannot hold: the
    longest prompt (depth and prefix included) plus the tokens asked for over the server's
    ``max_model_len`` (vLLM would answer each such request 400)."""
    if not dataset.context.get("depth") and "shared_prefix_tokens" not in dataset.context:
        return  # no context added: the prompts are the dataset's own
    limit = model_len(models, model)
    prompts = [*dataset.prompts, *dataset.warmup]
    if limit is None or not prompts:
        return
    longest = max(prompts, key=lambda p: p.est_tokens + p.max_tokens)
    need = longest.est_tokens + longest.max_tokens
    if need > limit:
        ctx = dataset.context
        parts = [f"depth {ctx['depth']:,}"] if ctx.get("depth") else []
        if "shared_prefix_tokens" in ctx:
            parts.append(f"shared prefix {ctx['shared_prefix_tokens']:,}")
        raise BenchError(
            f"{' + '.join(parts)}: a prompt of {longest.est_tokens:,} tokens (context included) plus "
            f"max_tokens {longest.max_tokens:,} is {need:,} tokens, over the server's max_model_len {limit:,}",
            location=where,
            hint="a smaller depth or shared prefix, or a server with a longer --max-model-len",
        )


__all__ = [
    "MAX_CONTEXT_TOKENS",
    "SharedPrefix",
    "add_context",
    "check_depth",
    "check_fits",
    "context_prompts",
    "model_len",
    "parse_shared_prefix",
]

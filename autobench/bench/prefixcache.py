"""vLLM's automatic prefix caching, as its counters see it (for the synthetic server).

vLLM V1 (``KVCacheManager.get_computed_blocks``, vllm/v1/core/kv_cache_manager.py) looks
every new request up once: ``queries`` grows by the request's prompt tokens, ``hits`` by the
tokens of the longest run of leading *full* blocks already cached -- at most
``prompt_tokens - 1`` (the last token is always recomputed, for its logits), in whole blocks.
Block hashes are chained (a block's hash covers every token before it), so a run of hits
stops at the first miss.  The blocks a request fills are cached when it is scheduled
(``allocate_slots`` -> ``cache_blocks``), so a later request -- even one scheduled in the same
step -- can hit them.  Both counters are exported as ``vllm:prefix_cache_queries_total`` and
``vllm:prefix_cache_hits_total`` (vllm/v1/metrics/loggers.py, ``PrometheusStatLogger``).

Eviction here is least-recently-used over ``max_blocks`` blocks (vLLM evicts the free blocks
least recently used when it needs room).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

#: vLLM's default block size (tokens) on GPUs; ``--block-size`` sets another.
BLOCK_SIZE = 16
#: Blocks kept before the least recently used is evicted (1M blocks of 16 tokens: 16M tokens).
MAX_BLOCKS = 1_000_000


class PrefixCache:
    def __init__(self, block_size: int = BLOCK_SIZE, max_blocks: int = MAX_BLOCKS):
        if block_size < 1 or max_blocks < 1:
            raise ValueError("block_size and max_blocks must be at least 1")
        self.block_size = block_size
        self.max_blocks = max_blocks
        self.blocks: OrderedDict[int, None] = OrderedDict()
        self.queries = 0
        self.hits = 0

    def lookup(self, tokens: Sequence[int | str]) -> int:
        """Look ``tokens`` (a prompt) up, count it, cache its full blocks; the tokens hit."""
        bs = self.block_size
        n = len(tokens)
        full = n // bs
        hashes: list[int] = []
        h = 0
        for b in range(full):
            h = hash((h, tuple(tokens[b * bs : (b + 1) * bs])))
            hashes.append(h)
        hit_blocks = 0
        for h in hashes[: max(0, n - 1) // bs]:
            if h not in self.blocks:
                break
            hit_blocks += 1
        hit = hit_blocks * bs
        self.queries += n
        self.hits += hit
        for h in hashes:
            self.blocks[h] = None
            self.blocks.move_to_end(h)
        while len(self.blocks) > self.max_blocks:
            self.blocks.popitem(last=False)
        return hit


__all__ = ["BLOCK_SIZE", "MAX_BLOCKS", "PrefixCache"]

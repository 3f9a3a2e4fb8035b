"""The KV budget: how many blocks the GPU memory left after weights buys, with its uncertainty.

    available = GPU memory x gpu_memory_utilization - weights per GPU - allowance
    num_blocks = available // memory per block            (vLLM: get_num_blocks)
    concurrency = num_blocks / blocks per request          (get_max_concurrency_for_kv_cache_config)

The allowance (activation peak, CUDA graphs, non-torch memory) is not computable from configs: it
is a band, ``low .. high`` GiB, growing with ``max_num_batched_tokens``:

    low  = 1.0 GiB
    high = 2.0 GiB + 0.3 GiB per 1,024 max_num_batched_tokens

calibrated on the seed's GB10 boot (10.31 GiB at 32,768 batched tokens: 101.75 GiB budget - 63.71
weights - 27.72 KV) and docs/preflight.md's other boots.  Every figure derived from it is a range.
``--kv-blocks N`` replaces the estimate with the figure a real boot printed: then concurrency and
KV tokens are exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from autobench.errors import PreflightError
from autobench.preflight.layout import Layout

GIB = 1024**3
# Total memory torch reports per device, GiB (what gpu_memory_utilization multiplies), as boots logged it.
GPU_MEMORY_GIB = {
    "GB10": 119.7,  # DGX Spark, unified memory ("Free memory on device (.../119.7 GiB)")
    "H200": 139.8,  # "Free memory on device (137.64/139.8 GiB) on startup"
}
ALLOWANCE_LOW_GIB = 1.0
ALLOWANCE_BASE_GIB = 2.0
ALLOWANCE_PER_1K_TOKENS_GIB = 0.3
DEFAULT_BATCHED_TOKENS = 8192


def allowance_band(max_num_batched_tokens: int | None) -> tuple[float, float]:
    tokens = max_num_batched_tokens or DEFAULT_BATCHED_TOKENS
    return ALLOWANCE_LOW_GIB, ALLOWANCE_BASE_GIB + ALLOWANCE_PER_1K_TOKENS_GIB * tokens / 1024


def gpu_memory_gib(name: str) -> float:
    key = name.upper().replace("NVIDIA", "").strip().replace(" ", "")
    if key not in GPU_MEMORY_GIB:
        raise PreflightError(
            f"cannot estimate the KV budget: GPU {name!r} is not in preflight's table ({', '.join(GPU_MEMORY_GIB)})",
            hint="pass --gpu-memory-gib with the total memory torch reports for one GPU",
        )
    return GPU_MEMORY_GIB[key]


@dataclass(frozen=True)
class Budget:
    gpu_memory_gib: float
    utilization: float
    weights_gib: float  # per GPU
    allowance_gib: tuple[float, float]
    available_gib: tuple[float, float]  # KV memory, low .. high
    num_blocks: tuple[int, int]
    concurrency: tuple[float, float]
    kv_tokens: tuple[int, int]
    fits: str  # yes | no | uncertain: does one max_model_len request fit?


def estimate(
    layout: Layout,
    *,
    gpu_memory: float,
    utilization: float,
    weights_bytes: int,
    tensor_parallel_size: int,
    max_model_len: int,
    max_num_batched_tokens: int | None,
    allowance: tuple[float, float] | None = None,
) -> Budget:
    weights = weights_bytes / tensor_parallel_size / GIB
    low_allow, high_allow = allowance or allowance_band(max_num_batched_tokens)
    budget = gpu_memory * utilization - weights
    avail = (max(0.0, budget - high_allow), max(0.0, budget - low_allow))
    blocks = (layout.blocks_for_memory(avail[0] * GIB), layout.blocks_for_memory(avail[1] * GIB))
    need = layout.blocks_per_request
    fits = "yes" if blocks[0] >= need else "no" if blocks[1] < need else "uncertain"
    return Budget(
        gpu_memory_gib=gpu_memory,
        utilization=utilization,
        weights_gib=weights,
        allowance_gib=(low_allow, high_allow),
        available_gib=avail,
        num_blocks=blocks,
        concurrency=(layout.concurrency(blocks[0]), layout.concurrency(blocks[1])),
        kv_tokens=(layout.kv_tokens(blocks[0], max_model_len), layout.kv_tokens(blocks[1], max_model_len)),
        fits=fits,
    )


def from_logged_memory(layout: Layout, available_gib: float, max_model_len: int) -> tuple[tuple[int, int], ...]:
    """Blocks, tokens for a logged "Available KV cache memory: X GiB" (printed to 0.01 GiB: a range)."""
    lo, hi = (available_gib - 0.005) * GIB, (available_gib + 0.005) * GIB
    blocks = (layout.blocks_for_memory(lo), layout.blocks_for_memory(hi))
    tokens = (layout.kv_tokens(blocks[0], max_model_len), layout.kv_tokens(blocks[1], max_model_len))
    return blocks, tokens

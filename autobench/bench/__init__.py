"""The benchmark client, its datasets, metrics, result JSON and the synthetic server.

Public API (imports are lazy so ``autobench.bench.result`` stays free of the HTTP client)::

    from autobench.bench import BenchConfig, run_bench, load_result_json
    result = run_bench(BenchConfig(base_url="http://127.0.0.1:8000", model="qwen", num_prompts=10))
    result.to_json_dict(); result.normalized()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy attributes below are
    from autobench.bench.client import BenchConfig, run_bench
    from autobench.bench.result import BenchResult, load_result_json

__all__ = ["BenchConfig", "BenchResult", "load_result_json", "run_bench"]


def __getattr__(name: str) -> object:
    if name in ("BenchConfig", "run_bench"):
        from autobench.bench import client

        return getattr(client, name)
    if name in ("BenchResult", "load_result_json"):
        from autobench.bench import result

        return getattr(result, name)
    raise AttributeError(name)

"""Compile a recipe into exact, shell-safe commands.

Public API (used by the run orchestration):
    compile_recipe(loaded, target="full", *, frozen=False, check=True) -> str   bash script
    serve_argv(recipe, *, home=None) -> list[str]    ["vllm", "serve", MODEL, "--revision", REV, ...]
    docker_argv(recipe, *, home=None) -> list[str]   ["docker", "run", "-d", "--name", NAME, ...]
    bench_argv(recipe, *, home=None) -> list[str]    ["autobench", "bench", ...] or docker exec form
    base_url(recipe), container_name(recipe), speculative_json(recipe), check_frozen(loaded),
    bench_api_key_env(recipe), bench_tokenizer(recipe)
Multi-node recipes: ``autobench.compile.cluster.compile_cluster(loaded, hosts, remote)`` ->
{"driver.sh": ..., "node-K.sh": ...}.
The script is built from the same argument lists through one quoting path
(autobench.compile.quoting), so what the script runs is exactly these lists.
"""

from __future__ import annotations

from autobench.compile.argv import (
    base_url,
    bench_api_key_env,
    bench_argv,
    bench_tokenizer,
    container_name,
    docker_argv,
    serve_argv,
    speculative_json,
)
from autobench.compile.render import TARGETS, check_frozen, compile_recipe

__all__ = [
    "TARGETS",
    "base_url",
    "bench_api_key_env",
    "bench_argv",
    "bench_tokenizer",
    "check_frozen",
    "compile_recipe",
    "container_name",
    "docker_argv",
    "serve_argv",
    "speculative_json",
]

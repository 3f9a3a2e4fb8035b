"""A sparkrun recipe's ``benchmark:`` block for llama-benchy: its context ``depth`` and its
``prefix_caching`` measurement, carried into ``bench.dataset`` (issue #33).

Read at spark-arena/sparkrun 0041b8f and eugr/llama-benchy ae09cab:

- sparkrun (``core/benchmark_profiles.py``, ``BenchmarkSpec.from_recipe``): the framework
  defaults to ``llama-benchy``; ``args`` are taken, and every other key of the block but
  ``framework``, ``args``, ``metadata``, ``timeout`` and ``schedule`` is swept into them
  (``args`` wins).  ``benchmarking/llama_benchy.py``: ``depth`` is a list argument (a profile may
  hold it as a comma-separated string), ``prefix_caching`` is the alias of the flag
  ``enable_prefix_caching``.
- llama-benchy (``config.py``, README "Prefix Caching Benchmarking"): ``--depth`` is "context
  depths (previous conversation tokens)", default [0]; ``--enable-prefix-caching`` "(with
  depth > 0) performs a two-step benchmark: first loading the context, then running the prompt
  with the cached context".

Carried: ``depth`` -> ``bench.dataset.depth`` (a list is a grid axis, as llama-benchy sweeps it);
``prefix_caching`` with a depth above 0 -> ``bench.dataset.shared_prefix: {prompts: 2}`` (no
length: each pair of prompts shares its cell's depth context, the second reusing the first's
cached prefix, as llama-benchy's inference step reuses its context load).  Without a depth above 0
llama-benchy measures no prefix caching: noted.  Every other llama-benchy argument is noted, with
its line.
"""

from __future__ import annotations

from typing import Any

from autobench.recipe.bounds import MAX_CONTEXT_TOKENS
from autobench.recipe.importer._source import Imported, Src, shown

#: sparkrun's keys of the benchmark block that are not framework arguments (_KNOWN_BENCHMARK_KEYS).
BLOCK_KEYS = frozenset({"framework", "args", "metadata", "timeout", "schedule"})
#: The largest depth carried: llama-benchy's own sweeps stop at 100,000 tokens; a depth past
#: 10M tokens is no served model's context (the recipe's and the bench's bound).
MAX_DEPTH = MAX_CONTEXT_TOKENS


def _args(src: Src) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    """The llama-benchy arguments, each with the keys of where it is written."""
    block = src.data["benchmark"]
    args: dict[str, tuple[Any, tuple[Any, ...]]] = {}
    explicit = block.get("args")
    if explicit is not None and not isinstance(explicit, dict):
        raise src.fail(("benchmark", "args"), "benchmark.args must be a mapping", "write args: {depth: [0, 4096]}")
    for key, value in (explicit or {}).items():
        args[str(key)] = (value, ("benchmark", "args", key))
    for key, value in block.items():
        if key not in BLOCK_KEYS and str(key) not in args:
            args[str(key)] = (value, ("benchmark", key))
    return args


def _depths(src: Src, value: Any, keys: tuple[Any, ...]) -> list[int]:
    """``[0, 4096]``, ``4096`` or ``"0,4096"`` as a list of whole numbers of tokens."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    out: list[int] = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        number = int(text) if isinstance(text, str) and text.isdigit() else text
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_DEPTH:
            raise src.fail(
                keys,
                f"benchmark depth {shown(item)} is not a whole number of tokens from 0 to {MAX_DEPTH:,}",
                "write depth: [0, 4096] (tokens of context before each prompt)",
            )
        if number not in out:
            out.append(number)
    if not out:
        raise src.fail(keys, "benchmark depth is empty", "write depth: [0, 4096], or drop it (llama-benchy: [0])")
    return out


def _flag(src: Src, value: Any, keys: tuple[Any, ...]) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"  # sparkrun's interpret_arg reads "true" as the flag
    raise src.fail(keys, f"benchmark prefix_caching {shown(value)} is not true or false", "write true or false")


def carry(recipe: dict[str, Any], src: Src, out: Imported) -> None:
    """Carry the ``benchmark:`` block's depth and prefix caching into ``recipe``'s bench dataset;
    note the rest.  ``recipe`` already has its bench section (``_common.bench``)."""
    block = src.data.get("benchmark")
    if block is None:
        return
    if not isinstance(block, dict):
        raise src.fail(("benchmark",), "benchmark must be a mapping", "write benchmark: {framework: llama-benchy, ...}")
    framework = block.get("framework", "llama-benchy")  # sparkrun's default
    if framework != "llama-benchy":
        out.notes.append(f"{src.line('benchmark')}: not carried: benchmark framework {shown(framework)}")
        return
    args = _args(src)
    depths: list[int] = []
    prefix, prefix_keys = False, ("benchmark",)
    for key, (value, keys) in args.items():
        if key == "depth":
            depths = _depths(src, value, keys)
        elif key in ("prefix_caching", "enable_prefix_caching"):
            prefix, prefix_keys = _flag(src, value, keys), keys
        else:
            out.notes.append(f"{src.line(*keys)}: not carried: llama-benchy {key} {shown(value)}")
    for key in block:
        if key in BLOCK_KEYS - {"args", "framework"}:
            out.notes.append(f"{src.line('benchmark', key)}: not carried: benchmark {key} (sparkrun's runner)")
    dataset = recipe["bench"]["dataset"]
    if depths:
        dataset["depth"] = depths[0] if len(depths) == 1 else depths
    if not prefix:
        return
    if any(d > 0 for d in depths):
        dataset["shared_prefix"] = {"prompts": 2}  # no length: each pair shares its cell's depth context
        out.notes.append(
            f"{src.line(*prefix_keys)}: prefix_caching: every 2 prompts share their depth context "
            "(bench.dataset.shared_prefix), the second reusing the first's cache"
        )
    else:  # llama-benchy measures prefix caching only with depth > 0
        out.notes.append(f"{src.line(*prefix_keys)}: not carried: prefix_caching (no depth above 0)")

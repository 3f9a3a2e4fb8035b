"""The bench's rules between its settings, written once and worded in the caller's names: a
recipe's keys (``bench.num_prompts``, checked when the recipe loads: autobench.recipe.schema) or
``autobench bench``'s options (``--num-prompts``, checked where the options are read:
autobench.cli.bench_options; and again by the client itself, autobench.bench.fleet/client).

    check_load(Load(generators=4, num_prompts=2), RECIPE)
        -> LoadRuleError(key="num_prompts", "2 prompts for 4 load generators: ...")

A refusal names the setting it belongs to (``key``, a field of :class:`Names`); the caller puts
that setting's name before the message (``bench.num_prompts: 2 prompts for ...``), so no message
starts with a setting's name of its own.  Only what autobench's client would refuse is refused
(a recipe benched with ``client: vllm`` is not checked here: vLLM's bench sends one process's
prompts, warm-ups included, and ignores the multi-turn setting).
"""

from __future__ import annotations

from dataclasses import dataclass

from autobench.recipe.bounds import MAX_CLIENT_PROMPTS


@dataclass(frozen=True)
class Names:
    """What a caller calls each setting of the bench."""

    workers: str
    hosts: str
    num_prompts: str
    concurrency: str
    warmup: str
    request_rate: str
    multi_turn: str
    max_seconds: str


#: A recipe's keys (the loader points at the key a refusal names).
RECIPE = Names(
    workers="bench.workers",
    hosts="bench.worker_hosts",
    num_prompts="bench.num_prompts",
    concurrency="bench.concurrency",
    warmup="bench.warmup",
    request_rate="bench.request_rate",
    multi_turn="bench.dataset.multi_turn",
    max_seconds="bench.max_seconds",
)
#: ``autobench bench``'s options.
CLI = Names(
    workers="--workers",
    hosts="--worker-host",
    num_prompts="--num-prompts",
    concurrency="--concurrency",
    warmup="--warmup",
    request_rate="--request-rate",
    multi_turn="--multi-turn",
    max_seconds="--max-seconds",
)


@dataclass(frozen=True)
class Load:
    """The settings the rules read: ``generators`` load generators (on hosts, one each, when
    ``on_hosts``), ``concurrency`` (a grid's lowest), whether any request rate is set."""

    generators: int = 1
    num_prompts: int = 1
    concurrency: int = 1
    warmup: int = 0
    rate: bool = False
    multi_turn: bool = False
    on_hosts: bool = False


class LoadRuleError(ValueError):
    """A refused combination: ``message`` and ``hint`` in the caller's names, ``key`` the
    :class:`Names` field of the setting it belongs to."""

    def __init__(self, key: str, message: str, hint: str):
        super().__init__(message)
        self.key = key
        self.message = message
        self.hint = hint


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def check_load(load: Load, names: Names) -> None:
    """Refuse (LoadRuleError) what autobench's client cannot bench: several load generators
    with a multi-turn dataset, a load generator without a request in flight or without a
    prompt, a request rate with a multi-turn dataset, more prompts than are built in memory."""
    n = load.generators
    gens = "hosts" if load.on_hosts else "workers"
    fewer = f"fewer {gens} ({names.hosts})" if load.on_hosts else f"fewer {names.workers}"
    if load.multi_turn and n > 1:
        one = f"one host in {names.hosts}" if load.on_hosts else f"drop {names.workers}"
        raise LoadRuleError(
            gens,
            f"{n} load generators with a multi-turn dataset: a conversation's turns run in one load generator",
            f"{one} (a conversation's turns are not dealt to several processes yet), or drop {names.multi_turn}",
        )
    if n > load.concurrency:
        raise LoadRuleError(
            gens,
            f"{n} load generators for concurrency {load.concurrency}: each needs at least one request in flight",
            f"{fewer}, or {names.concurrency} {n} or more",
        )
    if n > load.num_prompts:
        raise LoadRuleError(
            "num_prompts",
            f"{_plural(load.num_prompts, 'prompt')} for {n} load generators: each needs at least one prompt",
            f"set {names.num_prompts} to {n} or more, or {fewer}",
        )
    if load.multi_turn and load.rate:
        raise LoadRuleError(
            "request_rate",
            "a multi-turn dataset sends each conversation's next turn when its answer has ended (a closed loop)",
            f"drop {names.request_rate}, or {names.multi_turn}",
        )
    total = load.num_prompts + load.warmup
    if total > MAX_CLIENT_PROMPTS:
        warm = f" + {load.warmup:,} warm-up" if load.warmup else ""
        raise LoadRuleError(
            "warmup" if load.warmup else "num_prompts",
            f"{_plural(load.num_prompts, 'prompt')}{warm} is more than {MAX_CLIENT_PROMPTS:,}",
            "every prompt is built in memory before the clock starts: fewer prompts "
            f"({names.max_seconds} caps the duration)",
        )


__all__ = ["CLI", "RECIPE", "Load", "LoadRuleError", "Names", "check_load"]

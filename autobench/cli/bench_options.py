"""The options of ``autobench bench``, declared once, each named as the
:class:`autobench.bench.client.BenchConfig` field it fills.

    @bench_options()            # every option below, as ``config: BenchConfig``
    def bench(..., config: BenchConfig): ...

    DATASET                     # where the prompts come from: a file, or a Hub dataset's file

A new bench option is one spec here (and the field): its value reaches the config by its name;
what needs parsing is parsed by the option's callback (``--slo``, ``--shared-prefix``,
``--dataset-field``, ``--dataset-sha256``).  Options that are not config fields
(``--api-key-env``, ``--result``, ``--json``) stay with the command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from autobench.cli.option_group import Spec, opt, option_group
from autobench.cli.params import Finite

if TYPE_CHECKING:
    from autobench.bench.client import BenchConfig
    from autobench.bench.records import FieldMap
    from autobench.bench.workload import SharedPrefix

F = TypeVar("F", bound=Callable[..., Any])


def _sha256(ctx: click.Context, param: click.Parameter, text: str | None) -> str | None:
    if text is not None and (len(text) != 64 or any(c not in "0123456789abcdef" for c in text)):
        raise click.BadParameter(f"{text!r} is not a sha256 (64 lower-case hex digits)", param_hint="--dataset-sha256")
    return text


def _field_map(ctx: click.Context, param: click.Parameter, pairs: tuple[str, ...]) -> FieldMap | None:
    """``prompt=question category=task`` -> FieldMap; a bad pair is a usage error (exit 2)."""
    from autobench.bench.records import FieldMap

    if not pairs:
        return None
    roles: dict[str, str] = {}
    for pair in pairs:
        role, sep, name = pair.partition("=")
        if not sep or not name or role not in ("prompt", "turns", "category", "max_tokens") or role in roles:
            raise click.BadParameter(
                f"{pair!r} is not ROLE=NAME with ROLE one of prompt, turns, category, max_tokens (each once)",
                param_hint="--dataset-field",
            )
        roles[role] = name
    return FieldMap(**roles)


def _remote(ctx: click.Context, param: click.Parameter, text: str | None) -> str:
    """``--remote``, else ``AUTOBENCH_REMOTE``, else the cluster runtime's default ssh."""
    import os

    from autobench.compile.cluster import DEFAULT_REMOTE

    return text or os.environ.get("AUTOBENCH_REMOTE") or DEFAULT_REMOTE


def _shared_prefix(ctx: click.Context, param: click.Parameter, text: str | None) -> SharedPrefix | None:
    from autobench.bench.workload import parse_shared_prefix

    return parse_shared_prefix(text) if text is not None else None


def _slo(ctx: click.Context, param: click.Parameter, text: str | None) -> dict[str, float] | None:
    from autobench.bench.slo import parse_slo

    return parse_slo(text) if text is not None else None


#: Where the prompts come from: a local file, or a file of a Hub dataset repo at a revision.
DATASET: tuple[Spec, ...] = (
    opt(
        "--dataset-kind",
        type=click.Choice(["sharegpt", "random", "jsonl", "parquet"]),
        default=None,
        help="Default: jsonl for *.jsonl, parquet for *.parquet, sharegpt for other files, random without a dataset.",
    ),
    opt("--dataset", default=None, help="Dataset file (ShareGPT V3 JSON, JSONL or parquet)."),
    opt("--dataset-repo", default=None, help="A Hub dataset repo (owner/name) instead of --dataset."),
    opt("--dataset-file", default=None, help="The file in --dataset-repo, e.g. data/test.parquet."),
    opt("--dataset-revision", default=None, help="Branch, tag or commit sha of --dataset-repo (default main)."),
    opt(
        "--dataset-sha256",
        default=None,
        callback=_sha256,
        help="The dataset file's sha256; a file that differs is refused.",
    ),
    opt(
        "--dataset-field",
        "dataset_fields",
        callback=_field_map,
        multiple=True,
        metavar="ROLE=NAME",
        help="jsonl/parquet: the field holding the prompt (or turns), category or max_tokens, e.g. prompt=question.",
    ),
)

SPECS: tuple[Spec, ...] = (
    opt("--base-url", required=True, help="Server root, e.g. http://127.0.0.1:8000 (a /v1 suffix is ok)."),
    opt("--model", required=True, help="Served model name (checked against GET /v1/models)."),
    opt("--endpoint", type=click.Choice(["completions", "chat"]), default="completions", show_default=True),
    *DATASET,
    opt("--num-prompts", type=click.IntRange(min=1), default=1000, show_default=True),
    opt(
        "--max-seconds",
        type=Finite(min=0, min_open=True),
        default=None,
        help="Time cap: stop sending new requests after this many seconds.",
    ),
    opt(
        "--grace-seconds",
        type=Finite(min=0),
        default=30.0,
        show_default=True,
        help="After the cap, in-flight requests may finish this long; then they are cancelled and counted incomplete.",
    ),
    opt("--concurrency", type=click.IntRange(min=1), default=1, show_default=True),
    opt(
        "--workers",
        type=click.IntRange(1, 64),
        default=1,
        show_default=True,
        help="Load generator processes, each with its share of --concurrency (or of the arrivals) and its "
        "own event loop, started together; their raw samples are merged into one result.",
    ),
    opt(
        "--worker-host",
        "worker_hosts",
        multiple=True,
        metavar="HOST",
        help="Run a load generator on this host (repeat for several; --workers follows their number), "
        "reached with --remote and started there as --worker-python -m autobench.bench.worker.",
    ),
    opt(
        "--remote",
        default=None,
        metavar="CMD",
        callback=_remote,
        help="How --worker-host hosts are reached [env AUTOBENCH_REMOTE; default ssh -o BatchMode=yes "
        "with connect and keep-alive timeouts].",
    ),
    opt(
        "--worker-python",
        default="python3",
        show_default=True,
        metavar="CMD",
        help="The Python with autobench installed on the --worker-host hosts.",
    ),
    opt("--max-tokens", type=click.IntRange(min=1), default=256, show_default=True),
    opt("--temperature", type=Finite(), default=None),
    opt("--top-p", type=Finite(), default=None),
    opt("--top-k", type=int, default=None),
    opt("--presence-penalty", type=Finite(), default=None),
    opt("--ignore-eos", is_flag=True, help="Ask the server to generate max-tokens tokens."),
    opt("--seed", type=int, default=0, show_default=True, help="Seed of the prompt sample and arrivals."),
    opt(
        "--warmup",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Warm-up requests (distinct prompts), excluded from the results.",
    ),
    opt(
        "--request-rate",
        type=Finite(min=0, min_open=True),
        default=None,
        help="Poisson arrivals at this many requests/s (capped by --concurrency); default: closed loop.",
    ),
    opt(
        "--read-timeout",
        type=Finite(min=0, min_open=True),
        default=300.0,
        show_default=True,
        help="Seconds without a byte before a request counts as a timeout.",
    ),
    opt(
        "--allow-missing-usage",
        is_flag=True,
        help="Count tokens as chunks when the server sends no usage (else: error no_usage).",
    ),
    opt("--min-prompt-tokens", type=click.IntRange(min=1), default=4, show_default=True),
    opt("--max-prompt-tokens", type=click.IntRange(min=1), default=1024, show_default=True),
    opt("--random-input-len", type=click.IntRange(min=1), default=256, show_default=True),
    opt("--random-range-ratio", type=Finite(0, 1, max_open=True), default=0.0, show_default=True),
    opt(
        "--depth",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Tokens of prior context put before every question (counted with the tokenizer).",
    ),
    opt(
        "--shared-prefix",
        default=None,
        callback=_shared_prefix,
        metavar="N:L|N",
        help="Every N prompts (in the order sent) share one prefix of L tokens, or without :L their --depth "
        "context (prefix-cache hit rate from /metrics).",
    ),
    opt(
        "--category",
        default=None,
        metavar="NAME",
        help="Bench only the prompts of this category (the dataset's category field; too few is an error).",
    ),
    opt(
        "--multi-turn",
        is_flag=True,
        help="Send each record's turns as one conversation, in order, the model's answers appended (per-turn TTFT).",
    ),
    opt("--label", default=None, help="Free-text label stored in the result."),
    opt(
        "--tokenizer",
        default=None,
        metavar="REPO|PATH",
        help="Tokenizer that measures prompt lengths: a Hub repo id (fetched at --tokenizer-revision, or read "
        "from the HF cache offline), a tokenizer.json or a model directory; 'estimated' for characters / 4. "
        "Default: --model when it is a Hub repo id, else the estimate (with a warning).",
    ),
    opt(
        "--tokenizer-revision",
        default=None,
        metavar="REV",
        help="Branch, tag or commit sha of --tokenizer (default main).",
    ),
    opt(
        "--require-tokenizer",
        is_flag=True,
        help="Refuse to estimate prompt lengths: without a tokenizer the bench fails instead of flagging "
        "the result prompts_estimated.",
    ),
    opt(
        "--slo",
        default=None,
        callback=_slo,
        metavar="ttft=MS,tpot=MS,e2el=MS",
        help="Service-level objectives (ms): the result counts the requests meeting all of them and "
        "their rate (goodput, as vllm bench serve --goodput).",
    ),
)


def build(values: dict[str, Any]) -> BenchConfig:
    """The :class:`BenchConfig` of the options' values (each named as the field it fills); with
    ``--worker-host`` and no ``--workers``, one load generator per host.  What the options cannot
    bench together is refused here, before anything starts: a usage error at the option, in the
    words of the rules a recipe's bench follows (autobench.recipe.workerhosts, .benchrules)."""
    from autobench.bench.client import BenchConfig
    from autobench.errors import UsageError
    from autobench.recipe.benchrules import CLI, LoadRuleError, check_load
    from autobench.recipe.workerhosts import WorkerHostsError, follow_hosts

    hosts = tuple(values.get("worker_hosts") or ())
    values["worker_hosts"] = hosts
    try:
        values["workers"] = follow_hosts(values["workers"], len(hosts))
    except WorkerHostsError as exc:
        raise UsageError(exc.message, hint=exc.hint, location=CLI.workers) from None
    config = BenchConfig(**values)
    try:
        check_load(config.load(), CLI)
    except LoadRuleError as exc:
        raise UsageError(exc.message, hint=exc.hint, location=getattr(CLI, exc.key)) from None
    return config


def bench_options() -> Callable[[F], F]:
    """Every option of :data:`SPECS` on the command, handed to it as ``config: BenchConfig``."""
    return option_group(SPECS, "config", build)


__all__ = ["DATASET", "SPECS", "bench_options", "build"]

"""``autobench bench`` and ``autobench synthetic-server``: parse options, call the library, print."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from autobench.cli.bench_options import bench_options
from autobench.cli.options import json_option, print_json, print_table
from autobench.cli.output import say
from autobench.cli.params import Finite
from autobench.errors import BenchError, UsageError

if TYPE_CHECKING:
    from autobench.bench.client import BenchConfig

F = TypeVar("F", bound=Callable[..., Any])


def _float_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[float, ...]:
    if not value:
        return ()
    try:
        vals = tuple(float(x) for x in value.split(","))
    except ValueError as exc:
        raise click.BadParameter("expected comma-separated numbers, e.g. 0.78,0.56,0.39") from exc
    if any(not 0 <= v <= 1 for v in vals) or any(b > a for a, b in zip(vals, vals[1:], strict=False)):
        raise click.BadParameter("rates must be in [0, 1] and non-increasing")
    return vals


def _category_profile(text: str) -> tuple[str, tuple[float, ...]]:
    """``MARKER=0.9,0.8`` -> (marker, rates); a bad one is a usage error (exit 2)."""
    marker, sep, rates = text.rpartition("=")
    if not sep or not marker:
        raise click.BadParameter(
            f"{text!r} is not MARKER=RATES, e.g. 'def =0.9,0.8,0.7'", param_hint="--category-profile"
        )
    try:
        return marker, _float_list(click.get_current_context(), click.Option(["--x"]), rates)
    except click.BadParameter as exc:
        raise click.BadParameter(f"{text!r}: {exc.message}", param_hint="--category-profile") from exc


@click.command("bench")
@bench_options()
@click.option(
    "--api-key-env",
    "api_key_env",
    default=None,
    metavar="NAME",
    help="Environment variable holding the server's API key (sent as a Bearer token; must be set). "
    "Default: OPENAI_API_KEY when set.",
)
@click.option("--result", "result_path", default=None, help="Write the result JSON to this file.")
@json_option("Print the result JSON on stdout.")
@click.pass_context
def bench(
    ctx: click.Context,
    config: BenchConfig,
    api_key_env: str | None,
    result_path: str | None,
    as_json: bool,
) -> None:
    """Benchmark an OpenAI-compatible streaming server (closed loop or Poisson arrivals)."""
    from autobench.bench.client import run_bench

    cfg = config
    if api_key_env is not None:  # a name given explicitly must be set
        cfg = dataclasses.replace(config, api_key_env=api_key_env, api_key_required=True)
    with _Progress(enabled=not as_json and sys.stderr.isatty()) as prog:
        result = run_bench(cfg, progress=prog.update)
    if result_path:
        result.write(result_path)
    if as_json:
        print_json(result.to_json_dict())
    else:
        _print_summary(result.to_json_dict())
    d = result.to_json_dict()
    if d.get("tokenizer_fallback"):
        click.echo(
            f"warning: prompt lengths were ESTIMATED (characters / 4), not counted: {d['tokenizer_fallback']} "
            '(pass --tokenizer REPO|PATH; the result records tokenizer_id "estimated")',
            err=True,
        )
    if d.get("interrupted"):
        where = f"; written to {result_path}" if result_path else ""
        say(
            f"interrupted: partial result ({d['completed']} completed, {d['incomplete']} cancelled in "
            f"flight, {d['not_dispatched']} not sent){where}",
            err=True,
        )
        ctx.exit(130)
    if d["completed"] == 0:  # nothing measured: failed, cancelled at the time cap, or never sent
        by_kind = d["errors_by_kind"]
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted(by_kind.items())) if isinstance(by_kind, dict) else ""
        parts = [f"{d['failed']} failed" + (f" ({kinds})" if kinds else "")]
        if d["incomplete"]:
            parts.append(f"{d['incomplete']} cancelled in flight at the time cap")
        if d["not_dispatched"]:
            parts.append(f"{d['not_dispatched']} not sent")
        where = f"; the result is in {result_path}" if result_path else ""
        hint = (
            "the summary's error samples say why"
            if d["failed"]
            else "raise --max-seconds / --grace-seconds so at least one request can finish"
        )
        raise BenchError(f"no request completed: {', '.join(parts)}{where}", hint=hint)


class _Progress:
    """A rich progress bar on a TTY; nothing otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._p: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._p = Progress(
                TextColumn("bench"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[errors]} errors"),
                transient=True,
            )
            self._p.start()
        return self

    def update(self, done: int, total: int, elapsed: float, errors: int) -> None:
        if self._p is None:
            return
        if self._task is None:
            self._task = self._p.add_task("bench", total=total, errors=0)
        self._p.update(self._task, completed=done, errors=errors)

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _summary_rows(d: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [
        ("completed", _fmt(d["completed"])),
        ("errors", _fmt(d["failed"]) + (f"  {d['errors_by_kind']}" if d["errors_by_kind"] else "")),
        ("incomplete (cancelled at cap)", _fmt(d["incomplete"])),
        ("not dispatched", _fmt(d["not_dispatched"])),
        ("time cap hit", "yes" if d["time_cap_hit"] else "no"),
        (
            "tokenizer",
            str(d.get("tokenizer_id")) + (" (characters / 4)" if d.get("tokenizer_id") == "estimated" else ""),
        ),
        *([("interrupted (Ctrl-C)", "yes")] if d.get("interrupted") else []),
        ("duration (s)", _fmt(d["duration"])),
        ("prefill (input) tok/s", _fmt(d["input_throughput"])),
        ("decode (output) tok/s", _fmt(d["output_throughput"])),
        ("total tok/s", _fmt(d["total_token_throughput"])),
        ("requests/s", _fmt(d["request_throughput"], 3)),
    ]
    if d.get("slo"):
        from autobench.bench.slo import slo_text

        rows.append((f"goodput req/s ({slo_text(d['slo'])})", _fmt(d.get("request_goodput"), 3)))
        rows.append(("requests meeting the SLOs", f"{d.get('good_requests')} of {d['completed']}"))
    for m in ("ttft", "tpot", "itl", "e2el"):
        rows.append(
            (
                f"{m.upper()} median / p90 / p99 (ms)",
                " / ".join(_fmt(d.get(f"{k}_{m}_ms")) for k in ("median", "p90", "p99")),
            )
        )
    if d.get("spec_decode_available"):
        pp = ", ".join(f"{x:.2f}" for x in d["spec_decode_per_position_acceptance_rates"])
        rows.append(("spec acceptance length", _fmt(d["spec_decode_acceptance_length"])))
        rows.append(("spec draft acceptance (%)", _fmt(d["spec_decode_acceptance_rate"], 1)))
        rows.append(("spec per-position", pp))
    rows += _workload_rows(d)
    c = d["client"]
    rows.append(("client CPU ms / 1k tokens", _fmt(c["cpu_ms_per_1k_tokens"])))
    rows.append(("event-loop lag p99 (ms)", _fmt(c["loop_lag_ms"]["p99"])))
    delay = c.get("dispatch_delay_ms") or {}
    rows.append(("dispatch delay p50 / p99 (ms)", f"{_fmt(delay.get('median'))} / {_fmt(delay.get('p99'))}"))
    if c.get("schedule_adherence_ms"):
        adh = c["schedule_adherence_ms"]
        rows.append(("schedule adherence p50 / p99 (ms)", f"{_fmt(adh.get('median'))} / {_fmt(adh.get('p99'))}"))
    if d.get("workers"):
        rows.append(("load generators", str(d["workers"]["count"])))
    rows.append(("tokens per chunk", _fmt(d.get("mean_tokens_per_chunk"))))
    flags = d.get("quality_flags") or {}
    rows.append(("quality flags", ", ".join(flags) if flags else "none"))
    return rows


def _workload_rows(d: dict[str, Any]) -> list[tuple[str, str]]:
    """The workload's own rows (docs/bench.md, "Workloads"): its category, context, the prefix
    cache's hit rate, a multi-turn run's conversations and TTFT by turn."""
    rows: list[tuple[str, str]] = []
    ds = d.get("dataset") or {}
    if ds.get("category") is not None:
        rows.append(("category", str(ds["category"])))
    if ds.get("depth"):
        rows.append(("context depth (tokens)", _fmt(ds["depth"])))
    if ds.get("shared_prefix_prompts"):
        shared = f"{ds['shared_prefix_tokens']:,} tokens" if ds.get("shared_prefix_tokens") else "the depth context"
        rows.append(("shared prefix", f"every {ds['shared_prefix_prompts']} prompts share {shared}"))
    if d.get("prefix_cache_hit_rate") is not None:
        rows.append(
            (
                "prefix cache hit rate",
                f"{100 * d['prefix_cache_hit_rate']:.1f} % ({_fmt(d['prefix_cache_hits'])} of "
                f"{_fmt(d['prefix_cache_queries'])} tokens)",
            )
        )
    mt = d.get("multi_turn")
    if isinstance(mt, dict):
        rows.append(
            (
                "conversations (completed / all)",
                f"{mt['conversations_completed']} / {mt['conversations']}, {mt['turns_sent']} of "
                f"{mt['turns_planned']} turns sent",
            )
        )
        by_turn = mt.get("ttft_by_turn_ms") or {}
        rows.append(("TTFT median by turn (ms)", " / ".join(_fmt(v.get("median")) for v in by_turn.values())))
    return rows


def _print_summary(d: dict[str, Any]) -> None:
    print_table(
        None,
        _summary_rows(d),
        title=f"autobench bench: {d['model_id']} @ {d['base_url']}",
        justify=("left", "right"),
        plain_title=False,
    )
    if d.get("client_bound_warning"):
        say(
            "warning: client-bound: the client itself was busy (CPU > 75% of a core, loop lag p99 > 5 ms or "
            "dispatch delay p99 > 2 ms); "
            "latencies may be inflated (the result and its verdicts are marked client_bound)",
            err=True,
        )
    from autobench.metric_catalogue import flags_text

    for name, why in (d.get("quality_flags") or {}).items():
        if name not in ("client_bound", "prompts_estimated"):  # each has its own warning
            say(f"warning: FLAG {flags_text({name: why}, meaning=True)}", err=True)


def _fraction(flag: str, text: str) -> Callable[[F], F]:
    """A synthetic-server option: the fraction (0 to 1, default 0) of requests or streams treated so."""
    return click.option(flag, type=Finite(0, 1), default=0.0, show_default=True, help=text)


@click.command("synthetic-server")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--model", default="synthetic", show_default=True, help="The one served model name.")
@click.option("--ttft-ms", type=Finite(min=0), default=50.0, show_default=True)
@click.option("--itl-ms", type=Finite(min=0), default=10.0, show_default=True, help="Delay between chunks.")
@click.option(
    "--tokens-per-chunk",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Tokens per chunk (> 1 emulates speculative decoding; acceptance length = this).",
)
@click.option(
    "--accept-profile",
    callback=_float_list,
    default=None,
    help="Per-position acceptance rates, e.g. 0.78,0.56,0.39,0.29,0.21 (varies tokens per chunk).",
)
@click.option(
    "--category-profile",
    "category_profiles",
    multiple=True,
    metavar="MARKER=RATES",
    help="A prompt containing MARKER is drafted with these per-position rates (e.g. 'def =0.9,0.8,0.7'; "
    "repeatable, the first marker found wins); its category's acceptance converges on them.",
)
@click.option(
    "--no-prefix-caching", is_flag=True, help="No prefix cache (vLLM's --no-enable-prefix-caching): no hits counted."
)
@click.option(
    "--block-size",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Prefix-cache block size in tokens (vLLM's --block-size).",
)
@click.option(
    "--spec-tokens",
    type=click.IntRange(min=0),
    default=None,
    help="Draft tokens per step (default: profile length or tokens-per-chunk - 1).",
)
@click.option(
    "--output-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Fixed output length (default: honour max_tokens).",
)
@_fraction("--error-rate", "Fraction of requests answered with --error-status.")
@click.option("--error-status", type=click.IntRange(400, 599), default=500, show_default=True)
@_fraction("--midstream-error-rate", 'Fraction of streams that send an {"error": ...} event half-way.')
@_fraction("--drop-rate", "Fraction of streams closed abruptly half-way.")
@_fraction("--non-json-rate", "Fraction of streams that send a non-JSON event half-way.")
@_fraction("--stall-rate", "Fraction of requests that wait --stall-seconds before answering.")
@click.option("--stall-seconds", type=Finite(min=0), default=30.0, show_default=True)
@_fraction(
    "--empty-chunk-rate",
    'Fraction of token chunks sent with empty text ("text": "", as vLLM does for a token '
    "ending inside a UTF-8 sequence); they still count as tokens.",
)
@click.option(
    "--tokenizer",
    default=None,
    metavar="PATH",
    help="tokenizer.json or model directory: usage.prompt_tokens counted with it (default: words).",
)
@click.option("--no-usage", is_flag=True, help="Never send the usage chunk.")
@click.option(
    "--boot-delay",
    type=Finite(min=0),
    default=0.0,
    show_default=True,
    help="Seconds to wait (not listening) before serving, like model loading.",
)
@click.option(
    "--fail-boot-with", default=None, help="Print a vLLM-like traceback ending in 'AssertionError: TEXT' and exit 1."
)
@click.option(
    "--die-after-requests",
    type=click.IntRange(min=1),
    default=None,
    help="Exit abruptly (code 1) once this many requests have finished.",
)
@click.option(
    "--log-stats-interval",
    type=Finite(min=0),
    default=10.0,
    show_default=True,
    help="Seconds between vLLM-like throughput/spec-decode log lines (0: off).",
)
@click.pass_context
def synthetic_server(
    ctx: click.Context,
    host: str,
    port: int,
    model: str,
    ttft_ms: float,
    itl_ms: float,
    tokens_per_chunk: int,
    accept_profile: tuple[float, ...],
    category_profiles: tuple[str, ...],
    no_prefix_caching: bool,
    block_size: int,
    spec_tokens: int | None,
    output_tokens: int | None,
    error_rate: float,
    error_status: int,
    midstream_error_rate: float,
    drop_rate: float,
    non_json_rate: float,
    stall_rate: float,
    stall_seconds: float,
    empty_chunk_rate: float,
    tokenizer: str | None,
    no_usage: bool,
    boot_delay: float,
    fail_boot_with: str | None,
    die_after_requests: int | None,
    log_stats_interval: float,
) -> None:
    """Serve a fake OpenAI-compatible streaming model with known timings (a vllm serve stand-in).

    Like vllm serve, a set VLLM_API_KEY makes /v1/* require "Authorization: Bearer <key>".
    """
    from autobench.bench.synthetic import SyntheticConfig, run

    if accept_profile and tokens_per_chunk != 1:
        raise UsageError("--accept-profile and --tokens-per-chunk are exclusive (the profile sets chunk sizes)")
    config = SyntheticConfig(
        host=host,
        port=port,
        model=model,
        ttft_ms=ttft_ms,
        itl_ms=itl_ms,
        tokens_per_chunk=tokens_per_chunk,
        accept_profile=accept_profile,
        category_profiles=tuple(_category_profile(text) for text in category_profiles),
        prefix_caching=not no_prefix_caching,
        block_size=block_size,
        spec_tokens=spec_tokens,
        output_tokens=output_tokens,
        error_rate=error_rate,
        error_status=error_status,
        midstream_error_rate=midstream_error_rate,
        drop_rate=drop_rate,
        non_json_rate=non_json_rate,
        stall_rate=stall_rate,
        stall_seconds=stall_seconds,
        empty_chunk_rate=empty_chunk_rate,
        tokenizer=tokenizer,
        no_usage=no_usage,
        boot_delay=boot_delay,
        fail_boot_with=fail_boot_with,
        die_after_requests=die_after_requests,
        log_stats_interval=log_stats_interval,
        # Like vllm serve: VLLM_API_KEY, when set, guards /v1/* (read by name, never printed).
        api_key=os.environ.get("VLLM_API_KEY") or None,
    )
    ctx.exit(run(config))

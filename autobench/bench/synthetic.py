"""A synthetic OpenAI-compatible streaming server (a stand-in for ``vllm serve``).

It streams tokens on an absolute schedule (first token at ``ttft_ms`` after the
request arrived, then one chunk every ``itl_ms``), so sleep overshoot never
accumulates, and it embeds its own send time (``t_srv``, ``time.perf_counter()``)
in every chunk (and the request's arrival time ``t_arr`` in the first one).

Faults are injected deterministically: with rate ``r`` the
request number ``n`` (0-based, counted per server) is hit when
``floor((n + 1) * r) > floor(n * r)``, so exactly ``floor(N * r)`` of the first
``N`` requests are hit, evenly spread.  Empty-text chunks (``empty_chunk_rate``,
like the tokens of a byte-level tokenizer that end inside a UTF-8 sequence) use
the same rule on ``n + i`` for chunk ``i`` of request ``n``, so across requests
the first and the last chunk are hit too.

Speculative decoding is emulated: every chunk is one verify step of
``j`` tokens, which adds 1 draft, ``spec_tokens`` draft tokens, ``j - 1``
accepted tokens and one accepted token at each position ``i < j - 1``.  The
counters are exposed on ``GET /metrics`` under the vLLM V1 names, split over two
``engine`` label sets, with ``_created`` lines, so a client's parser and delta
math can be checked exactly.  ``chunk_plan`` is the pure function that decides
the chunk sizes; tests use it to compute the expected counters.

The HTTP layer is a lean ``asyncio.Protocol`` (``synthetic_http``) and chunks are
emitted by ``loop.call_at``-style timer callbacks, writes batched, so the server
costs little per request and per chunk and stays out of the way of the client
being measured.  uvloop is used when it is installed.

Run it with ``autobench synthetic-server ...`` or ``python -m autobench.bench.synthetic ...``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import json
import math
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from autobench.bench.loop import loop_factory
from autobench.bench.prefixcache import BLOCK_SIZE, PrefixCache
from autobench.bench.synthetic_http import HttpConn, Pacer, json_bytes

GOLDEN = 0.6180339887498949
TIMER_STEP = 5e-6  # seconds: the timer-error median tracker moves this much per timer
FIRST_EARLY = 0.0012  # the first chunk's timer is armed this early, then the loop spins to the time
SPIN_SLACK = 1e-5  # a spinning chunk goes out this close to its time
VLLM_VERSION = "0.23.1"


@dataclass
class SyntheticConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    model: str = "synthetic"
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens_per_chunk: int = 1
    output_tokens: int | None = None  # None: honour max_tokens
    default_max_tokens: int = 16
    accept_profile: tuple[float, ...] = ()  # per-position acceptance, non-increasing
    #: (marker, profile): a prompt containing ``marker`` is drafted with ``profile`` (the first
    #: marker found wins; else ``accept_profile``).  Each category's verify steps continue one
    #: sequence across its requests (``category_plan``), so its acceptance converges on the profile.
    category_profiles: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: Emulate vLLM's automatic prefix caching: hits and queries (tokens) on /metrics.
    prefix_caching: bool = True
    block_size: int = BLOCK_SIZE
    spec_tokens: int | None = None  # draft tokens per step; default: len(profile) or k - 1
    error_rate: float = 0.0
    error_status: int = 500
    midstream_error_rate: float = 0.0
    drop_rate: float = 0.0
    non_json_rate: float = 0.0
    stall_rate: float = 0.0
    stall_seconds: float = 30.0
    no_usage: bool = False
    empty_chunk_rate: float = 0.0  # fraction of token chunks sent with "text": "" (a partial UTF-8 token)
    tokenizer: str | None = None  # tokenizer.json / model dir: usage.prompt_tokens counted with it
    boot_delay: float = 0.0
    fail_boot_with: str | None = None
    die_after_requests: int | None = None
    log_stats_interval: float = 10.0
    max_model_len: int = 262144
    timer_compensation: bool = True  # aim timers by the tracked median timer error
    api_key: str | None = field(default=None, repr=False)  # like vLLM's --api-key / VLLM_API_KEY

    @property
    def steps_draft_tokens(self) -> int:
        if self.spec_tokens is not None:
            return self.spec_tokens
        if self.accept_profile or self.category_profiles:
            return max([len(self.accept_profile), *(len(p) for _, p in self.category_profiles)])
        return max(self.tokens_per_chunk - 1, 0)

    @property
    def spec_enabled(self) -> bool:
        return (
            bool(self.accept_profile)
            or bool(self.category_profiles)
            or self.tokens_per_chunk > 1
            or bool(self.spec_tokens)
        )

    def category_of(self, prompt: str) -> int | None:
        """Index of the first category profile whose marker ``prompt`` contains, or None."""
        for i, (marker, _) in enumerate(self.category_profiles):
            if marker in prompt:
                return i
        return None


def chunk_plan(n_tokens: int, tokens_per_chunk: int = 1, accept_profile: tuple[float, ...] = ()) -> list[int]:
    """Sizes of the chunks that carry ``n_tokens`` output tokens (the same for every request).

    Without a profile every chunk has ``tokens_per_chunk`` tokens (the last may have fewer).
    With a profile ``p`` (non-increasing), verify step ``s`` accepts
    ``a_s = #{i : u_s < p[i]}`` draft tokens with ``u_s = frac((s + 1) * golden ratio)``,
    a low-discrepancy sequence, so the long-run per-position rates tend to ``p``;
    the chunk then carries ``a_s + 1`` tokens (the bonus token).
    """
    plan: list[int] = []
    left = n_tokens
    step = 0
    while left > 0:
        size = 1 + _accepted(step, accept_profile) if accept_profile else max(tokens_per_chunk, 1)
        size = min(size, left)
        plan.append(size)
        left -= size
        step += 1
    return plan


def _accepted(step: int, accept_profile: tuple[float, ...]) -> int:
    """Drafts accepted at verify step ``step``: ``#{i : u < p[i]}``, ``u = frac((step + 1) * golden)``."""
    u = ((step + 1) * GOLDEN) % 1.0
    return sum(1 for p in accept_profile if u < p)


def category_plan(n_tokens: int, accept_profile: tuple[float, ...], start: int) -> tuple[list[int], list[int]]:
    """(chunk sizes, verify-step sizes) of a request of a category whose steps so far number
    ``start``: step ``s`` of the request is step ``start + s`` of the category's one sequence, so
    over its requests the category's per-position rates tend to ``accept_profile`` however long
    each request is.  The last chunk carries what ``n_tokens`` leaves, but its step counts every
    token it accepted: vLLM counts a verify step's accepted drafts before the output is cut at
    ``max_tokens`` (``Scheduler.update_from_output`` in vllm/v1/core/sched/scheduler.py)."""
    chunks: list[int] = []
    steps: list[int] = []
    left = n_tokens
    while left > 0:
        size = 1 + _accepted(start + len(steps), accept_profile)
        steps.append(size)
        chunks.append(min(size, left))
        left -= chunks[-1]
    return chunks, steps


@functools.lru_cache(maxsize=4096)
def _cached_plan(n_tokens: int, tokens_per_chunk: int, accept_profile: tuple[float, ...]) -> tuple[int, ...]:
    return tuple(chunk_plan(n_tokens, tokens_per_chunk, accept_profile))


def fault_hit(rate: float, n: int) -> bool:
    """Deterministic, evenly spread selection: exactly floor(N*rate) of the first N."""
    if rate <= 0:
        return False
    return math.floor((n + 1) * rate + 1e-9) > math.floor(n * rate + 1e-9)


def _ts() -> str:
    return time.strftime("%m-%d %H:%M:%S")


def vlog(level: str, where: str, msg: str) -> None:
    """A vLLM-style log line on stdout: ``INFO 06-24 12:00:00 [api_server.py:1] msg``."""
    sys.stdout.write(f"{level} {_ts()} [{where}] {msg}\n")
    sys.stdout.flush()


def uvlog(msg: str) -> None:
    """A uvicorn-style log line on stderr: ``INFO:     msg``."""
    sys.stderr.write(f"INFO:     {msg}\n")
    sys.stderr.flush()


@dataclass
class Counters:
    drafts: list[int] = field(default_factory=lambda: [0, 0])
    draft_tokens: list[int] = field(default_factory=lambda: [0, 0])
    accepted: list[int] = field(default_factory=lambda: [0, 0])
    per_pos: list[list[int]] = field(default_factory=lambda: [[], []])
    prompt_tokens: int = 0
    generation_tokens: int = 0
    success: int = 0
    running: int = 0
    requests: int = 0  # completion requests accepted (the fault counter)
    prefix_queries: int = 0  # prompt tokens looked up in the prefix cache
    prefix_hits: int = 0  # of those, tokens found cached
    category_steps: list[int] = field(default_factory=list)  # verify steps so far, per category profile

    def step(self, engine: int, size: int, spec_tokens: int) -> None:
        self.drafts[engine] += 1
        self.draft_tokens[engine] += spec_tokens
        acc = size - 1
        self.accepted[engine] += acc
        pos = self.per_pos[engine]
        while len(pos) < max(spec_tokens, acc):
            pos.append(0)
        for i in range(acc):
            pos[i] += 1


class SyntheticServer:
    """The request handlers plus their state, on a lean HTTP/1.1 protocol (``synthetic_http``).

    Start it with ``run`` (its own process) or ``ThreadedServer`` (a thread).  Token
    chunks are emitted by ``loop.call_at`` callbacks on an absolute schedule counted
    from the request's arrival: no task, coroutine or future per chunk.
    """

    def __init__(self, config: SyntheticConfig):
        self.config = config
        self.counters = Counters()
        self.created = time.time()
        self._last_stats = (0, 0, 0, 0, 0)
        self.port: int | None = None
        self._finished = 0
        # Median error of a timer (epoll and libuv count timeouts in whole milliseconds,
        # and a busy loop adds lag); chunks are aimed this much early.
        # The first chunk of a stream is timed exactly (early timer + spin, see _Stream).
        self.overshoot = 0.0002 if config.timer_compensation else 0.0
        self._timer_fires = 0
        n_pos = config.steps_draft_tokens
        self.counters.per_pos = [[0] * n_pos, [0] * n_pos]
        self.conns: set[HttpConn] = set()
        self.pacer = Pacer()  # parsing and chunk emission in slices, so arrivals are read promptly
        self.spinner = Spinner(self)
        self.ticker = Ticker()
        self._streams: set[_Stream] = set()
        self._models_body = b""
        # At a raised priority (nice < 0) a first chunk spinning to its time yields the CPU on each
        # turn, or it would starve the client it is timing on a small box (and its priority gets the
        # CPU back at once).  At normal priority it does not: a yield can then cost a whole time
        # slice behind any other busy process.
        self.spin_yield = hasattr(os, "getpriority") and os.getpriority(os.PRIO_PROCESS, 0) < 0
        self.tokenizer: Any = None
        if config.tokenizer is not None:
            from autobench.bench.tokenizer import load_local

            self.tokenizer = load_local(config.tokenizer)
        self.counters.category_steps = [0] * len(config.category_profiles)
        self.prefix_cache = PrefixCache(config.block_size) if config.prefix_caching else None

    def protocol(self) -> HttpConn:
        return HttpConn(self.dispatch, self.conns, self.pacer)

    def close_all(self) -> None:
        for s in list(self._streams):
            s.cancel()
        for c in list(self.conns):
            c.abort()

    # ---- routing -----------------------------------------------------------
    def dispatch(self, conn: HttpConn, method: str, path: str, body: bytes, t_arrival: float) -> None:
        key = self.config.api_key
        if key and path.startswith("/v1/") and conn.headers.get("authorization") != f"Bearer {key}":
            conn.respond(401, b'{"error":"Unauthorized"}')  # vLLM's answer; /health and /metrics stay open
            return
        if path in ("/v1/completions", "/v1/chat/completions"):
            if method != "POST":
                conn.respond(405, b'{"detail":"Method Not Allowed"}')
                return
            self._generate(conn, body, t_arrival, chat=path == "/v1/chat/completions")
            return
        if method != "GET":
            conn.respond(
                405 if path in ("/health", "/v1/models", "/metrics") else 404, b'{"detail":"Method Not Allowed"}'
            )
            return
        if path == "/health":
            conn.respond(200, b"", "text/plain; charset=utf-8")
        elif path == "/v1/models":
            conn.respond(200, self.models_body())
        elif path == "/metrics":
            conn.respond(200, self.prometheus_text().encode(), "text/plain; version=0.0.4; charset=utf-8")
        else:
            conn.respond(404, b'{"detail":"Not Found"}')

    def models_body(self) -> bytes:
        if not self._models_body:
            m = self.config.model
            self._models_body = json_bytes(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": m,
                            "object": "model",
                            "created": int(self.created),
                            "owned_by": "vllm",
                            "root": m,
                            "parent": None,
                            "max_model_len": self.config.max_model_len,
                            "permission": [],
                        }
                    ],
                }
            )
        return self._models_body

    def prometheus_text(self) -> str:
        c = self.counters
        m = self.config.model
        out: list[str] = []

        def counter(name: str, help_: str, values: list[tuple[str, float]]) -> None:
            out.append(f"# HELP {name}_total {help_}")
            out.append(f"# TYPE {name}_total counter")
            for labels, v in values:
                out.append(f"{name}_total{{{labels}}} {float(v)}")
            out.append(f"# HELP {name}_created {help_}")
            out.append(f"# TYPE {name}_created gauge")
            for labels, _ in values:
                out.append(f"{name}_created{{{labels}}} {self.created}")

        eng = [f'engine="{e}",model_name="{m}"' for e in (0, 1)]
        counter("vllm:prompt_tokens", "Number of prefill tokens processed.", [(eng[0], c.prompt_tokens)])
        counter("vllm:generation_tokens", "Number of generation tokens processed.", [(eng[0], c.generation_tokens)])
        counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [(f'engine="0",finished_reason="length",model_name="{m}"', c.success)],
        )
        counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            [(eng[0], c.prefix_queries)],
        )
        counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            [(eng[0], c.prefix_hits)],
        )
        out.append("# HELP vllm:num_requests_running Number of requests in model execution batches.")
        out.append("# TYPE vllm:num_requests_running gauge")
        out.append(f'vllm:num_requests_running{{engine="0",model_name="{m}"}} {float(c.running)}')
        if self.config.spec_enabled:
            counter(
                "vllm:spec_decode_num_drafts",
                "Number of spec decoding drafts.",
                [(eng[e], c.drafts[e]) for e in (0, 1)],
            )
            counter(
                "vllm:spec_decode_num_draft_tokens",
                "Number of draft tokens.",
                [(eng[e], c.draft_tokens[e]) for e in (0, 1)],
            )
            counter(
                "vllm:spec_decode_num_accepted_tokens",
                "Number of accepted tokens.",
                [(eng[e], c.accepted[e]) for e in (0, 1)],
            )
            pos_values: list[tuple[str, float]] = []
            for e in (0, 1):
                for i, v in enumerate(c.per_pos[e]):
                    pos_values.append((f'engine="{e}",model_name="{m}",position="{i}"', v))
            counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.", pos_values)
        return "\n".join(out) + "\n"

    # ---- completions -------------------------------------------------------
    @staticmethod
    def _error(conn: HttpConn, status: int, message: str, type_: str, param: str | None = None) -> None:
        conn.respond(status, json_bytes({"error": {"message": message, "type": type_, "param": param, "code": status}}))

    def _generate(self, conn: HttpConn, body: bytes, t_arrival: float, *, chat: bool) -> None:
        cfg = self.config
        try:
            req = json.loads(body)
            if not isinstance(req, dict):
                raise ValueError("body must be a JSON object")
        except ValueError as exc:
            self._error(conn, 400, f"Invalid request body: {exc}", "BadRequestError")
            return
        if req.get("model") != cfg.model:
            self._error(conn, 404, f"The model `{req.get('model')}` does not exist.", "NotFoundError", "model")
            return
        if chat:
            msgs = req.get("messages")
            if not isinstance(msgs, list) or not msgs:
                self._error(conn, 400, "messages must be a non-empty list", "BadRequestError", "messages")
                return
            prompt = " ".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
            max_tokens = req.get("max_completion_tokens", req.get("max_tokens"))
        else:
            given = req.get("prompt")
            if not isinstance(given, str):
                self._error(conn, 400, "prompt must be a string", "BadRequestError", "prompt")
                return
            prompt = given
            max_tokens = req.get("max_tokens")
        if max_tokens is None:
            max_tokens = cfg.default_max_tokens
        try:
            n_out = max(int(cfg.output_tokens if cfg.output_tokens is not None else max_tokens), 1)
        except (TypeError, ValueError):
            self._error(conn, 400, "max_tokens must be an integer", "BadRequestError", "max_tokens")
            return
        # Like vLLM: the prompt's tokens with special tokens (a BOS), when a tokenizer is given.
        tokens: list[int] | list[str] = (
            list(self.tokenizer.tok.encode(prompt, add_special_tokens=True).ids)
            if self.tokenizer is not None
            else prompt.split()
        )
        prompt_tokens = max(1, len(tokens))
        if self.prefix_cache is not None:
            self.prefix_cache.lookup(tokens)
            self.counters.prefix_queries, self.counters.prefix_hits = self.prefix_cache.queries, self.prefix_cache.hits
        stream = bool(req.get("stream", False))
        include_usage = bool((req.get("stream_options") or {}).get("include_usage")) and not cfg.no_usage

        n = self.counters.requests
        self.counters.requests += 1
        if fault_hit(cfg.error_rate, n):
            self._error(
                conn,
                cfg.error_status,
                "synthetic injected error",
                "InternalServerError" if cfg.error_status >= 500 else "BadRequestError",
            )
            return
        fault = None
        for kind, rate in (
            ("drop", cfg.drop_rate),
            ("midstream", cfg.midstream_error_rate),
            ("non_json", cfg.non_json_rate),
            ("stall", cfg.stall_rate),
        ):
            if fault_hit(rate, n):
                fault = kind
                break
        s = _Stream(
            self,
            conn,
            chat=chat,
            n=n,
            n_out=n_out,
            prompt_tokens=prompt_tokens,
            include_usage=include_usage,
            fault=fault,
            t_arrival=t_arrival,
            stream=stream,
        )
        cat = cfg.category_of(prompt) if cfg.category_profiles else None
        if cat is not None:
            chunks, steps = category_plan(n_out, cfg.category_profiles[cat][1], self.counters.category_steps[cat])
            self.counters.category_steps[cat] += len(steps)
            s.plan, s.steps = tuple(chunks), tuple(steps)
            s.fault_at = len(s.plan) // 2 if fault else -1
        if fault == "stall":
            s.shift(cfg.stall_seconds)
            s.handle = asyncio.get_running_loop().call_later(cfg.stall_seconds, s.begin)
            self._streams.add(s)
            conn.on_close = s.cancel
        else:
            s.begin()

    def _request_done(self) -> None:
        self._finished += 1
        limit = self.config.die_after_requests
        if limit is not None and self._finished >= limit:
            vlog(
                "ERROR",
                "core_client.py:564",
                "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
            )
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    # ---- periodic stats, like vLLM's LoggingStatLogger ------------------
    async def _stats_loop(self) -> None:
        interval = self.config.log_stats_interval
        while True:
            await asyncio.sleep(interval)
            c = self.counters
            d_draft = sum(c.drafts)
            d_acc = sum(c.accepted)
            d_dt = sum(c.draft_tokens)
            prev = self._last_stats
            self._last_stats = (c.prompt_tokens, c.generation_tokens, d_draft, d_acc, d_dt)
            p_rate = (c.prompt_tokens - prev[0]) / interval
            g_rate = (c.generation_tokens - prev[1]) / interval
            vlog(
                "INFO",
                "loggers.py:123",
                f"Engine 000: Avg prompt throughput: {p_rate:.1f} tokens/s, Avg generation throughput: "
                f"{g_rate:.1f} tokens/s, Running: {c.running} reqs, Waiting: 0 reqs, "
                f"GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%",
            )
            drafts = d_draft - prev[2]
            if self.config.spec_enabled and drafts > 0:
                acc = d_acc - prev[3]
                dt = d_dt - prev[4]
                per_pos = [sum(c.per_pos[e][i] for e in (0, 1)) for i in range(len(c.per_pos[0]))]
                rates = ", ".join(f"{v / max(d_draft, 1):.3f}" for v in per_pos)
                vlog(
                    "INFO",
                    "metrics.py:98",
                    f"SpecDecoding metrics: Mean acceptance length: {1 + acc / drafts:.2f}, "
                    f"Accepted throughput: {acc / interval:.2f} tokens/s, Drafted throughput: "
                    f"{dt / interval:.2f} tokens/s, Accepted: {acc} tokens, Drafted: {dt} tokens, "
                    f"Per-position acceptance rate: {rates}, "
                    f"Avg Draft acceptance rate: {100 * acc / max(dt, 1):.1f}%",
                )

    # ---- running -----------------------------------------------------
    def _boot_logs(self) -> None:
        cfg = self.config
        vlog("INFO", "api_server.py:1880", f"vLLM API server version {VLLM_VERSION} (synthetic)")
        vlog(
            "INFO",
            "utils.py:328",
            f"non-default args: {{'model': '{cfg.model}', 'host': '{cfg.host}', 'port': {cfg.port}}}",
        )
        vlog("INFO", "model.py:547", "Resolved architecture: SyntheticForCausalLM")
        vlog("INFO", "model.py:1510", f"Using max model len {cfg.max_model_len}")

    def _fail_boot(self, text: str) -> None:
        vlog("ERROR", "core.py:708", "EngineCore failed to start.")
        tb = (
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 699, '
            "in run_engine_core\n"
            "    engine_core = EngineCoreProc(*args, **kwargs)\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 1077, '
            "in unify_kv_cache_spec_page_size\n"
            "    assert new_spec.page_size_bytes == max_page_size\n"
            f"AssertionError: {text}\n"
        )
        sys.stdout.write(tb)
        sys.stdout.write(
            "RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {'EngineCore_DP0': 1}\n"
        )
        sys.stdout.flush()

    async def serve_forever(self) -> None:
        cfg = self.config
        self._boot_logs()
        if cfg.boot_delay > 0:
            vlog(
                "INFO",
                "gpu_model_runner.py:2000",
                f"Starting to load model (synthetic boot delay {cfg.boot_delay:g} s)...",
            )
            await asyncio.sleep(cfg.boot_delay)
        if cfg.fail_boot_with is not None:
            self._fail_boot(cfg.fail_boot_with)
            raise SystemExit(1)
        loop = asyncio.get_running_loop()
        server = await loop.create_server(self.protocol, cfg.host, cfg.port, reuse_address=True, backlog=4096)
        sock = server.sockets[0] if server.sockets else None
        self.port = sock.getsockname()[1] if sock is not None else cfg.port
        vlog("INFO", "api_server.py:1971", f"Starting vLLM API server 0 on http://{cfg.host}:{self.port}")
        uvlog(f"Started server process [{os.getpid()}]")
        uvlog("Waiting for application startup.")
        uvlog("Application startup complete.")
        stats = asyncio.ensure_future(self._stats_loop()) if cfg.log_stats_interval > 0 else None
        try:
            await asyncio.Event().wait()
        finally:
            if stats is not None:
                stats.cancel()
            server.close()
            self.close_all()


# What follows a token chunk's text up to its t_srv stamp: [not the last chunk, the last].
_TEXT_TAILS = (
    b'","logprobs":null,"finish_reason":null,"stop_reason":null}],"t_srv":',
    b'","logprobs":null,"finish_reason":"length","stop_reason":null}],"t_srv":',
)
_CHAT_TAILS = (
    b'"},"logprobs":null,"finish_reason":null}],"t_srv":',
    b'"},"logprobs":null,"finish_reason":"length"}],"t_srv":',
)


class Spinner:
    """The first chunks whose timers fired ``FIRST_EARLY`` ahead, waiting for their exact time.

    One spin for all of them: each turn of the loop sends every first chunk whose time has come
    (in time order, through the pacer) and, while any wait, comes back with ``call_soon`` (the
    loop keeps serving sockets) after one ``sched_yield`` at a raised priority.  A spin per
    stream cost, with C first chunks due within a few milliseconds, C callbacks and C yields on
    every turn; a yield can hand the CPU to another session's process for a time slice.
    """

    __slots__ = ("srv", "heap", "seq", "scheduled")

    def __init__(self, srv: SyntheticServer):
        self.srv = srv
        self.heap: list[tuple[float, int, _Stream]] = []
        self.seq = 0  # ties in time keep their order of arrival
        self.scheduled = False

    def add(self, s: _Stream) -> None:
        """``s``'s early timer fired: spin with the others to its ``target``."""
        s.handle = None
        s.spinning = True
        heapq.heappush(self.heap, (s.target, self.seq, s))
        self.seq += 1
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self.spin)

    def spin(self) -> None:
        self.scheduled = False
        heap, pacer = self.heap, self.srv.pacer
        now = time.perf_counter()
        while heap and heap[0][0] - SPIN_SLACK <= now:
            s = heapq.heappop(heap)[2]
            if s.spinning:  # not cancelled meanwhile
                s.spinning = False
                pacer.run(s._due)
        if heap:
            if self.srv.spin_yield:
                os.sched_yield()
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self.spin)


class Ticker:
    """The timers of the chunks after the first: one loop timer per millisecond of aim.

    uvloop's (libuv's) timers count whole milliseconds, so chunks aimed within the same
    millisecond share one timer, fired in the order they were added; at C = 1,024 streams in
    lockstep that is ~50 chunks a timer instead of a timer (a heap entry and a handle) each.
    The timer error this adds (half a millisecond either way) is what the server's tracked
    median timer error (``overshoot``) already absorbs.
    """

    __slots__ = ("buckets",)

    def __init__(self) -> None:
        self.buckets: dict[int, list[_Stream]] = {}

    def add(self, s: _Stream, now: float) -> None:
        key = round(s.aim * 1000)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = []
            # call_later from "now" (not call_at): uvloop's loop.time() is a cached millisecond clock.
            asyncio.get_running_loop().call_later(max(0.0, key / 1000 - now), self.fire, key)
        bucket.append(s)
        s.ticking = True

    def fire(self, key: int) -> None:
        for s in self.buckets.pop(key):
            if s.ticking:  # not cancelled meanwhile
                s.ticking = False
                s._fire()


class _Stream:
    """One completion request: its chunk schedule, driven by timer callbacks."""

    __slots__ = (
        "srv",
        "conn",
        "chat",
        "n",
        "engine",
        "n_out",
        "prompt_tokens",
        "include_usage",
        "fault",
        "t_arr",
        "stream",
        "plan",
        "fault_at",
        "idx",
        "emitted",
        "target",
        "aim",
        "handle",
        "created",
        "head",
        "running",
        "steps",
        "spinning",
        "ticking",
    )

    def __init__(
        self,
        srv: SyntheticServer,
        conn: HttpConn,
        *,
        chat: bool,
        n: int,
        n_out: int,
        prompt_tokens: int,
        include_usage: bool,
        fault: str | None,
        t_arrival: float,
        stream: bool,
    ):
        cfg = srv.config
        self.srv = srv
        self.conn = conn
        self.chat = chat
        self.n = n
        self.engine = n % 2
        self.n_out = n_out
        self.prompt_tokens = prompt_tokens
        self.include_usage = include_usage
        self.fault = fault
        self.t_arr = t_arrival
        self.stream = stream
        self.plan = _cached_plan(n_out, cfg.tokens_per_chunk, cfg.accept_profile)
        self.steps: tuple[int, ...] | None = None  # verify-step sizes when they differ from the chunks
        self.fault_at = len(self.plan) // 2 if fault else -1
        self.idx = 0
        self.emitted = 0
        self.target = t_arrival + cfg.ttft_ms / 1e3  # absolute perf_counter time of the next chunk
        self.aim = self.target
        self.handle: asyncio.TimerHandle | None = None
        self.created = int(time.time())
        self.head = b""
        self.running = False
        self.spinning = False  # waiting in the server's Spinner for its first chunk's time
        self.ticking = False  # waiting in the server's Ticker for its next chunk's timer

    def shift(self, seconds: float) -> None:
        self.target += seconds

    def cancel(self) -> None:
        """The connection went away (or the server stops): stop emitting."""
        self.spinning = self.ticking = False
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        self._finish()

    def _finish(self) -> None:
        srv = self.srv
        if self in srv._streams:
            srv._streams.discard(self)
            if self.running:
                self.running = False
                srv.counters.running -= 1
                srv._request_done()

    def _schedule(self) -> None:
        srv = self.srv
        loop = asyncio.get_running_loop()
        now = time.perf_counter()
        if self.idx == 0 and srv.config.timer_compensation:
            # The first chunk decides TTFT: arm the timer FIRST_EARLY ahead, then spin
            # (call_soon, the loop keeps serving I/O) to the exact time.  uvloop's timers
            # count in whole milliseconds from a cached clock and scatter by +-1 ms.
            self.aim = self.target - FIRST_EARLY
            self.handle = loop.call_later(max(0.0, self.aim - now), srv.spinner.add, self)
            return
        self.aim = self.target - srv.overshoot
        srv.ticker.add(self, now)

    def _due(self) -> None:
        if self.stream:
            self._emit(due=True)
        else:
            self._answer_whole()

    def _fire(self) -> None:
        """The chunk's timer fired: send it when the pacer lets it run."""
        self.srv.pacer.run(self._send_due)

    def _send_due(self) -> None:
        srv = self.srv
        if srv.config.timer_compensation:
            # Track the median lateness of a chunk's send against its aim (a stochastic median:
            # robust to the long tail of a busy loop), coarse steps for the first 32 chunks; aim
            # that much early.  Measured here, when the chunk goes out, not when its timer fired:
            # the timer's error and the wait in the pacer's queue both make a token late (at
            # C = 1,024 in lockstep the queue held chunks 1.5 ms at the median while the timers
            # alone were early, so every chunk went out late; docs/bench.md, "Load at scale").
            err = time.perf_counter() - self.aim
            n = srv._timer_fires = srv._timer_fires + 1
            step = TIMER_STEP * (8 if n <= 32 else 1)
            srv.overshoot = min(max(srv.overshoot + (step if err > srv.overshoot else -step), -0.002), 0.005)
        self._due()

    def begin(self) -> None:
        """Start answering (at arrival, or after an injected stall)."""
        self.handle = None
        srv, conn, cfg = self.srv, self.conn, self.srv.config
        if conn.closed:
            srv._streams.discard(self)
            return
        srv._streams.add(self)
        conn.on_close = self.cancel
        if not self.stream:
            self.target += (len(self.plan) - 1) * cfg.itl_ms / 1e3
            self._schedule()
            return
        conn.start_stream()
        self.running = True
        srv.counters.running += 1
        srv.counters.prompt_tokens += self.prompt_tokens
        n, m, created = self.n, cfg.model, self.created
        if self.chat:
            self.head = (
                f'data: {{"id":"chatcmpl-{n}","object":"chat.completion.chunk","created":{created},'
                f'"model":"{m}","choices":[{{"index":0,"delta":{{"content":"'
            ).encode()
        else:
            self.head = (
                f'data: {{"id":"cmpl-{n}","object":"text_completion","created":{created},'
                f'"model":"{m}","choices":[{{"index":0,"text":"'
            ).encode()
        self._emit()

    def _emit(self, due: bool = False) -> None:
        """Send every chunk that is due (in one write), then schedule the next one.

        ``due``: the timer aimed at the next chunk fired, so it is sent now even if
        the clock is a little short of the aim (an early timer is not re-armed).
        """
        srv, conn, cfg = self.srv, self.conn, self.srv.config
        if conn.closed:
            self._finish()
            return
        plan = self.plan
        itl = cfg.itl_ms / 1e3
        parts: list[bytes] = []
        pc = time.perf_counter
        counters = srv.counters
        spec = cfg.spec_enabled
        early = srv.overshoot
        empty = cfg.empty_chunk_rate
        tails = _CHAT_TAILS if self.chat else _TEXT_TAILS
        # Chunks after the first may leave ``early`` ahead (the tracked lateness of a send); the
        # first never before its time: its timer is spun to the exact time (Spinner), and here,
        # at arrival, it goes only if its time has already passed (an injected stall).
        while self.idx < len(plan) and (due or self.target - (early if self.idx else 0.0) <= pc()):
            due = False
            idx = self.idx
            if idx == self.fault_at:
                self._fault(parts)
                return
            size = plan[idx]
            e = self.emitted
            # A token whose text ends inside a UTF-8 sequence: vLLM sends "text": "".
            empty_text = empty and fault_hit(empty, self.n + idx)
            if empty_text:
                toks = b""
            elif size == 1:
                toks = b" t%d" % e
            else:
                toks = b"".join([b" t%d" % (e + i) for i in range(size)])
            self.emitted = e + size
            tail = tails[self.emitted >= self.n_out]
            if idx:
                parts.append(b"%b%b%b%.9f}\n\n" % (self.head, toks, tail, pc()))
            else:
                if self.chat:
                    parts.append(self._role_chunk())
                parts.append(b'%b%b%b%.9f,"t_arr":%.9f}\n\n' % (self.head, toks, tail, pc(), self.t_arr))
            if spec:
                counters.step(self.engine, size if self.steps is None else self.steps[idx], cfg.steps_draft_tokens)
            counters.generation_tokens += size
            self.idx = idx + 1
            self.target += itl
        if self.idx < len(plan):
            if parts:
                conn.write_chunk(b"".join(parts))
            self._schedule()
            return
        if self.include_usage:
            obj = "chat.completion.chunk" if self.chat else "text_completion"
            pt, n_out = self.prompt_tokens, self.n_out
            parts.append(
                b"data: "
                + json_bytes(
                    {
                        "id": f"cmpl-{self.n}",
                        "object": obj,
                        "created": self.created,
                        "model": cfg.model,
                        "choices": [],
                        "usage": {"prompt_tokens": pt, "total_tokens": pt + n_out, "completion_tokens": n_out},
                    }
                )
                + b"\n\n"
            )
        parts.append(b"data: [DONE]\n\n")
        counters.success += 1
        conn.end_stream(b"".join(parts))
        self._finish()

    def _role_chunk(self) -> bytes:
        return (
            f'data: {{"id":"chatcmpl-{self.n}","object":"chat.completion.chunk","created":{self.created},'
            f'"model":"{self.srv.config.model}","choices":[{{"index":0,"delta":{{"role":"assistant",'
            f'"content":""}},"logprobs":null,"finish_reason":null}}]}}\n\n'
        ).encode()

    def _fault(self, parts: list[bytes]) -> None:
        conn = self.conn
        if self.fault == "drop":  # an abrupt close in the middle of a chunked body
            if parts:
                conn.write_chunk(b"".join(parts))
            self._finish()
            conn.abort()
            return
        if self.fault == "midstream":
            parts.append(
                b"data: "
                + json_bytes(
                    {
                        "error": {
                            "message": "synthetic mid-stream error",
                            "type": "InternalServerError",
                            "param": None,
                            "code": 500,
                        }
                    }
                )
                + b"\n\ndata: [DONE]\n\n"
            )
        else:  # non_json
            parts.append(b"data: this is not json {\n\ndata: [DONE]\n\n")
        conn.end_stream(b"".join(parts))
        self._finish()

    def _answer_whole(self) -> None:
        """A non-streaming answer, sent when the last chunk would have been."""
        srv, cfg = self.srv, self.srv.config
        srv._streams.discard(self)
        if self.conn.closed:
            return
        n_out, pt = self.n_out, self.prompt_tokens
        text = "".join(f" t{i}" for i in range(n_out))
        usage = {"prompt_tokens": pt, "total_tokens": pt + n_out, "completion_tokens": n_out}
        srv.counters.generation_tokens += n_out
        srv.counters.success += 1
        srv._request_done()
        if self.chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "length",
            }
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "finish_reason": "length"}
            obj = "text_completion"
        self.conn.respond(
            200,
            json_bytes(
                {
                    "id": f"cmpl-{self.n}",
                    "object": obj,
                    "created": int(time.time()),
                    "model": cfg.model,
                    "choices": [choice],
                    "usage": usage,
                }
            ),
        )


def run(config: SyntheticConfig) -> int:
    """Serve until interrupted; return the process exit code."""
    server = SyntheticServer(config)
    factory, _ = loop_factory()
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(server.serve_forever())
    except KeyboardInterrupt:
        return 0
    except SystemExit as exc:
        return int(exc.code or 0)
    except OSError as exc:
        vlog("ERROR", "api_server.py:1971", f"Could not bind {config.host}:{config.port}: {exc}")
        return 1
    return 0


class ThreadedServer:
    """The synthetic server on its own event loop in a daemon thread (for in-process tests).

    ``with ThreadedServer(SyntheticConfig(ttft_ms=50)) as srv: srv.base_url``.
    Port 0 picks a free ephemeral port.
    """

    def __init__(self, config: SyntheticConfig):
        self.config = config
        self.server = SyntheticServer(config)
        factory, self.event_loop = loop_factory()
        self.loop = factory() if factory is not None else asyncio.new_event_loop()
        self._srv: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ThreadedServer:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._start(), self.loop)
        self.port = fut.result(timeout=10)
        return self

    async def _start(self) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, self.config.port))
        self._srv = await asyncio.get_running_loop().create_server(self.server.protocol, sock=sock, backlog=4096)
        return int(sock.getsockname()[1])

    async def _stop(self) -> None:
        if self._srv is not None:
            self._srv.close()
        self.server.close_all()

    def stop(self) -> None:
        if self._thread.is_alive():
            fut = asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
            with contextlib.suppress(Exception):  # best-effort teardown
                fut.result(timeout=10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

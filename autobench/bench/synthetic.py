"""A synthetic OpenAI-compatible streaming server (a stand-in for ``vllm serve``).

It streams tokens on an absolute schedule (first token at ``ttft_ms`` after the
request arrived, then one chunk every ``itl_ms``), so sleep overshoot never
accumulates, and it embeds its own send time (``t_srv``, ``time.perf_counter()``)
in every chunk (and the request's arrival time ``t_arr`` in the first one).  Faults are injected deterministically: with rate ``r`` the
request number ``n`` (0-based, counted per server) is hit when
``floor((n + 1) * r) > floor(n * r)``, so exactly ``floor(N * r)`` of the first
``N`` requests are hit, evenly spread.

Speculative decoding is emulated: every chunk is one verify step of
``j`` tokens, which adds 1 draft, ``spec_tokens`` draft tokens, ``j - 1``
accepted tokens and one accepted token at each position ``i < j - 1``.  The
counters are exposed on ``GET /metrics`` under the vLLM V1 names, split over two
``engine`` label sets, with ``_created`` lines, so a client's parser and delta
math can be checked exactly.  ``chunk_plan`` is the pure function that decides
the chunk sizes; tests use it to compute the expected counters.

Run it with ``autobench synthetic-server ...`` or ``python -m autobench.bench.synthetic ...``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

GOLDEN = 0.6180339887498949
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
    spec_tokens: int | None = None  # draft tokens per step; default: len(profile) or k - 1
    error_rate: float = 0.0
    error_status: int = 500
    midstream_error_rate: float = 0.0
    drop_rate: float = 0.0
    non_json_rate: float = 0.0
    stall_rate: float = 0.0
    stall_seconds: float = 30.0
    no_usage: bool = False
    boot_delay: float = 0.0
    fail_boot_with: str | None = None
    die_after_requests: int | None = None
    log_stats_interval: float = 10.0
    max_model_len: int = 262144
    timer_compensation: bool = True  # aim early by the measured mean wake-up overshoot

    @property
    def steps_draft_tokens(self) -> int:
        if self.spec_tokens is not None:
            return self.spec_tokens
        if self.accept_profile:
            return len(self.accept_profile)
        return max(self.tokens_per_chunk - 1, 0)

    @property
    def spec_enabled(self) -> bool:
        return bool(self.accept_profile) or self.tokens_per_chunk > 1 or bool(self.spec_tokens)


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
        if accept_profile:
            u = ((step + 1) * GOLDEN) % 1.0
            size = 1 + sum(1 for p in accept_profile if u < p)
        else:
            size = max(tokens_per_chunk, 1)
        size = min(size, left)
        plan.append(size)
        left -= size
        step += 1
    return plan


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
    """The aiohttp application plus its state; start it with ``run`` or ``start_in_thread``."""

    def __init__(self, config: SyntheticConfig):
        self.config = config
        self.counters = Counters()
        self.created = time.time()
        self._last_stats = (0, 0, 0, 0, 0)
        self.port: int | None = None
        self._finished = 0
        # Mean wake-up overshoot of a timed sleep (asyncio rounds epoll timeouts up to
        # the next millisecond, and a busy loop adds lag); chunks are aimed this much early.
        self.overshoot = 0.0005 if config.timer_compensation else 0.0
        n_pos = config.steps_draft_tokens
        self.counters.per_pos = [[0] * n_pos, [0] * n_pos]

    # ---- application -------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat)
        return app

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        m = self.config.model
        body = {
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
        return web.json_response(body)

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=self.prometheus_text(), content_type="text/plain")

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
        counter("vllm:generation_tokens", "Number of generation tokens processed.",
                [(eng[0], c.generation_tokens)])
        counter("vllm:request_success", "Count of successfully processed requests.",
                [(f'engine="0",finished_reason="length",model_name="{m}"', c.success)])
        out.append("# HELP vllm:num_requests_running Number of requests in model execution batches.")
        out.append("# TYPE vllm:num_requests_running gauge")
        out.append(f'vllm:num_requests_running{{engine="0",model_name="{m}"}} {float(c.running)}')
        if self.config.spec_enabled:
            counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.",
                    [(eng[e], c.drafts[e]) for e in (0, 1)])
            counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
                    [(eng[e], c.draft_tokens[e]) for e in (0, 1)])
            counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
                    [(eng[e], c.accepted[e]) for e in (0, 1)])
            pos_values: list[tuple[str, float]] = []
            for e in (0, 1):
                for i, v in enumerate(c.per_pos[e]):
                    pos_values.append((f'engine="{e}",model_name="{m}",position="{i}"', v))
            counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                    "Accepted tokens per draft position.", pos_values)
        return "\n".join(out) + "\n"

    # ---- completions -------------------------------------------------
    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    def _error(self, status: int, message: str, type_: str, param: str | None = None) -> web.Response:
        body = {"error": {"message": message, "type": type_, "param": param, "code": status}}
        return web.json_response(body, status=status)

    async def _generate(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        t_arrival = time.perf_counter()
        cfg = self.config
        try:
            req = json.loads(await request.read())
            if not isinstance(req, dict):
                raise ValueError("body must be a JSON object")
        except ValueError as exc:
            return self._error(400, f"Invalid request body: {exc}", "BadRequestError")
        if req.get("model") != cfg.model:
            return self._error(404, f"The model `{req.get('model')}` does not exist.", "NotFoundError",
                               "model")
        if chat:
            msgs = req.get("messages")
            if not isinstance(msgs, list) or not msgs:
                return self._error(400, "messages must be a non-empty list", "BadRequestError", "messages")
            prompt = " ".join(str(m.get("content", "")) for m in msgs if isinstance(m, dict))
            max_tokens = req.get("max_completion_tokens", req.get("max_tokens"))
        else:
            prompt = req.get("prompt")
            if not isinstance(prompt, str):
                return self._error(400, "prompt must be a string", "BadRequestError", "prompt")
            max_tokens = req.get("max_tokens")
        if max_tokens is None:
            max_tokens = cfg.default_max_tokens
        n_out = int(cfg.output_tokens if cfg.output_tokens is not None else max_tokens)
        n_out = max(n_out, 1)
        prompt_tokens = max(1, len(prompt.split()))
        stream = bool(req.get("stream", False))
        include_usage = bool((req.get("stream_options") or {}).get("include_usage")) and not cfg.no_usage

        n = self.counters.requests
        self.counters.requests += 1
        engine = n % 2
        if fault_hit(cfg.error_rate, n):
            return self._error(cfg.error_status, "synthetic injected error",
                               "InternalServerError" if cfg.error_status >= 500 else "BadRequestError")
        fault = None
        for kind, rate in (("drop", cfg.drop_rate), ("midstream", cfg.midstream_error_rate),
                           ("non_json", cfg.non_json_rate), ("stall", cfg.stall_rate)):
            if fault_hit(rate, n):
                fault = kind
                break
        if fault == "stall":
            await asyncio.sleep(cfg.stall_seconds)

        if not stream:
            return await self._non_stream(chat, n, n_out, prompt_tokens, t_arrival)

        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream",
                                                       "Cache-Control": "no-cache"})
        await resp.prepare(request)
        self.counters.running += 1
        self.counters.prompt_tokens += prompt_tokens
        try:
            await self._stream(request, resp, chat=chat, n=n, engine=engine, n_out=n_out,
                               prompt_tokens=prompt_tokens, include_usage=include_usage,
                               fault=fault, t_arrival=t_arrival)
        finally:
            self.counters.running -= 1
            self._request_done()
        return resp

    async def _non_stream(self, chat: bool, n: int, n_out: int, prompt_tokens: int,
                          t_arrival: float) -> web.Response:
        cfg = self.config
        plan = chunk_plan(n_out, cfg.tokens_per_chunk, cfg.accept_profile)
        delay = cfg.ttft_ms / 1e3 + (len(plan) - 1) * cfg.itl_ms / 1e3
        await asyncio.sleep(max(0.0, t_arrival + delay - time.perf_counter()))
        text = "".join(f" t{i}" for i in range(n_out))
        usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + n_out,
                 "completion_tokens": n_out}
        self.counters.generation_tokens += n_out
        self.counters.success += 1
        self._request_done()
        if chat:
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "length"}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "finish_reason": "length"}
            obj = "text_completion"
        return web.json_response({"id": f"cmpl-{n}", "object": obj, "created": int(time.time()),
                                  "model": cfg.model, "choices": [choice], "usage": usage})

    async def _stream(self, request: web.Request, resp: web.StreamResponse, *, chat: bool, n: int,
                      engine: int, n_out: int, prompt_tokens: int, include_usage: bool,
                      fault: str | None, t_arrival: float) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        created = int(time.time())
        if chat:
            head = (f'data: {{"id":"chatcmpl-{n}","object":"chat.completion.chunk","created":{created},'
                    f'"model":"{cfg.model}","choices":[{{"index":0,"delta":{{"content":"').encode()
        else:
            head = (f'data: {{"id":"cmpl-{n}","object":"text_completion","created":{created},'
                    f'"model":"{cfg.model}","choices":[{{"index":0,"text":"').encode()
        plan = chunk_plan(n_out, cfg.tokens_per_chunk, cfg.accept_profile)
        fault_at = len(plan) // 2 if fault else -1
        spec = cfg.spec_enabled
        spec_tokens = cfg.steps_draft_tokens
        adapt = cfg.timer_compensation
        # perf_counter and loop.time() are both CLOCK_MONOTONIC on Linux; convert once anyway.
        offset = loop.time() - time.perf_counter()
        target = t_arrival + cfg.ttft_ms / 1e3
        itl = cfg.itl_ms / 1e3
        emitted = 0
        for idx, size in enumerate(plan):
            aim = target - self.overshoot
            if aim > time.perf_counter():
                fut = loop.create_future()
                h = loop.call_at(aim + offset, fut.set_result, None)
                try:
                    await fut
                finally:
                    h.cancel()
                if adapt:
                    late = time.perf_counter() - aim
                    self.overshoot += 0.02 * (min(max(late, 0.0), 0.005) - self.overshoot)
            if idx == fault_at:
                if fault == "drop":
                    # An abrupt close in the middle of a chunked body.
                    if request.transport is not None:
                        request.transport.abort()
                    return
                if fault == "midstream":
                    err = {"error": {"message": "synthetic mid-stream error", "type": "InternalServerError",
                                     "param": None, "code": 500}}
                    await resp.write(b"data: " + json.dumps(err).encode() + b"\n\ndata: [DONE]\n\n")
                    return
                if fault == "non_json":
                    await resp.write(b"data: this is not json {\n\n")
                    await resp.write(b"data: [DONE]\n\n")
                    return
            toks = "".join(f" t{emitted + i}" for i in range(size))
            emitted += size
            last = emitted >= n_out
            finish = '"length"' if last else "null"
            t_srv = time.perf_counter()
            stamp = f'"t_srv":{t_srv:.9f}' + (f',"t_arr":{t_arrival:.9f}' if idx == 0 else "")
            if chat:
                tail = f'"}},"logprobs":null,"finish_reason":{finish}}}],{stamp}}}\n\n'
            else:
                tail = f'","logprobs":null,"finish_reason":{finish},"stop_reason":null}}],{stamp}}}\n\n'
            payload = head + toks.encode() + tail.encode()
            if idx == 0 and chat:
                role = (f'data: {{"id":"chatcmpl-{n}","object":"chat.completion.chunk","created":{created},'
                        f'"model":"{cfg.model}","choices":[{{"index":0,"delta":{{"role":"assistant",'
                        f'"content":""}},"logprobs":null,"finish_reason":null}}]}}\n\n').encode()
                payload = role + payload
            if spec:
                self.counters.step(engine, size, spec_tokens)
            self.counters.generation_tokens += size
            await resp.write(payload)
            target += itl
        tail_parts = []
        if include_usage:
            obj = "chat.completion.chunk" if chat else "text_completion"
            usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + n_out,
                     "completion_tokens": n_out}
            tail_parts.append(b"data: " + json.dumps(
                {"id": f"cmpl-{n}", "object": obj, "created": created, "model": cfg.model,
                 "choices": [], "usage": usage}, separators=(",", ":")).encode() + b"\n\n")
        tail_parts.append(b"data: [DONE]\n\n")
        await resp.write(b"".join(tail_parts))
        self.counters.success += 1
        await resp.write_eof()

    def _request_done(self) -> None:
        self._finished += 1
        limit = self.config.die_after_requests
        if limit is not None and self._finished >= limit:
            vlog("ERROR", "core_client.py:564",
                 "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
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
            vlog("INFO", "loggers.py:123",
                 f"Engine 000: Avg prompt throughput: {p_rate:.1f} tokens/s, Avg generation throughput: "
                 f"{g_rate:.1f} tokens/s, Running: {c.running} reqs, Waiting: 0 reqs, "
                 f"GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%")
            drafts = d_draft - prev[2]
            if self.config.spec_enabled and drafts > 0:
                acc = d_acc - prev[3]
                dt = d_dt - prev[4]
                per_pos = [sum(c.per_pos[e][i] for e in (0, 1)) for i in range(len(c.per_pos[0]))]
                rates = ", ".join(f"{v / max(d_draft, 1):.3f}" for v in per_pos)
                vlog("INFO", "metrics.py:98",
                     f"SpecDecoding metrics: Mean acceptance length: {1 + acc / drafts:.2f}, "
                     f"Accepted throughput: {acc / interval:.2f} tokens/s, Drafted throughput: "
                     f"{dt / interval:.2f} tokens/s, Accepted: {acc} tokens, Drafted: {dt} tokens, "
                     f"Per-position acceptance rate: {rates}, "
                     f"Avg Draft acceptance rate: {100 * acc / max(dt, 1):.1f}%")

    # ---- running -----------------------------------------------------
    def _boot_logs(self) -> None:
        cfg = self.config
        vlog("INFO", "api_server.py:1880", f"vLLM API server version {VLLM_VERSION} (synthetic)")
        vlog("INFO", "utils.py:328", f"non-default args: {{'model': '{cfg.model}', 'host': '{cfg.host}', "
             f"'port': {cfg.port}}}")
        vlog("INFO", "model.py:547", f"Resolved architecture: SyntheticForCausalLM")
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
        sys.stdout.write("RuntimeError: Engine core initialization failed. See root cause above. "
                         "Failed core proc(s): {'EngineCore_DP0': 1}\n")
        sys.stdout.flush()

    async def serve_forever(self) -> None:
        cfg = self.config
        self._boot_logs()
        if cfg.boot_delay > 0:
            vlog("INFO", "gpu_model_runner.py:2000", "Starting to load model (synthetic boot delay "
                 f"{cfg.boot_delay:g} s)...")
            await asyncio.sleep(cfg.boot_delay)
        if cfg.fail_boot_with is not None:
            self._fail_boot(cfg.fail_boot_with)
            raise SystemExit(1)
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, cfg.host, cfg.port, reuse_address=True)
        await site.start()
        sock = site._server.sockets[0] if site._server and site._server.sockets else None  # type: ignore[union-attr]
        self.port = sock.getsockname()[1] if sock is not None else cfg.port
        vlog("INFO", "api_server.py:1971",
             f"Starting vLLM API server 0 on http://{cfg.host}:{self.port}")
        uvlog(f"Started server process [{os.getpid()}]")
        uvlog("Waiting for application startup.")
        uvlog("Application startup complete.")
        stats = asyncio.ensure_future(self._stats_loop()) if cfg.log_stats_interval > 0 else None
        try:
            await asyncio.Event().wait()
        finally:
            if stats is not None:
                stats.cancel()
            await runner.cleanup()


def run(config: SyntheticConfig) -> int:
    """Serve until interrupted; return the process exit code."""
    server = SyntheticServer(config)
    try:
        import uvloop  # type: ignore[import-not-found]

        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
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
        self.loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
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
        sock.bind((self.config.host, self.config.port))
        self._runner = web.AppRunner(self.server.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.SockSite(self._runner, sock)
        await site.start()
        return int(sock.getsockname()[1])

    def stop(self) -> None:
        if self._runner is not None:
            fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop)
            try:
                fut.result(timeout=10)
            except Exception:  # noqa: BLE001 - best effort teardown
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m autobench.bench.synthetic ...``: the same options as ``autobench synthetic-server``."""
    from autobench.cli import main as cli_main

    return cli_main(["synthetic-server", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

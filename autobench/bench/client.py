"""The asynchronous benchmark client (aiohttp, one session, one event loop).

Closed loop: ``concurrency`` workers each take the next prompt, send it, read the
stream to the end, and take the next one.  Rate mode (``request_rate``): arrival
times are drawn once from a seeded exponential distribution (Poisson process) and
each request is sent at its arrival time, at most ``concurrency`` at once (an open
loop with a cap; the wait for a free slot is recorded as queue time).

Time cap: at ``t0 + max_seconds`` no new request is sent; requests in flight may
finish during ``grace_seconds`` and are then cancelled and counted *incomplete*
(never errors).  See docs/bench.md for every definition.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from autobench.bench.datasets import Dataset, Prompt, load_dataset
from autobench.bench.promscrape import SpecCounters, spec_counters, spec_delta
from autobench.bench.record import ERROR, INCOMPLETE, INFLIGHT, OK, RequestRecord
from autobench.bench.result import BenchResult, ClientStats, build_result
from autobench.bench.sse import SSEParser
from autobench.errors import BenchError

ProgressFn = Callable[[int, int, float, int], None]  # (finished, total, elapsed_s, errors)

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass
class BenchConfig:
    base_url: str
    model: str
    endpoint: str = "completions"
    dataset_kind: str | None = None
    dataset: str | None = None
    num_prompts: int = 1000
    max_seconds: float | None = None
    concurrency: int = 1
    max_tokens: int = 256
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    ignore_eos: bool = False
    seed: int = 0
    warmup: int = 0
    request_rate: float | None = None  # None = closed loop (no rate)
    grace_seconds: float = 30.0
    read_timeout: float = 300.0
    connect_timeout: float = 10.0
    allow_missing_usage: bool = False
    min_prompt_tokens: int = 4
    max_prompt_tokens: int = 1024
    random_input_len: int = 256
    random_range_ratio: float = 0.0
    scrape_metrics: bool = True
    label: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if self.endpoint not in ENDPOINTS:
            raise BenchError(f"unknown endpoint {self.endpoint!r}", hint="use completions or chat")
        if self.concurrency < 1:
            raise BenchError("--concurrency must be at least 1")
        if self.max_tokens < 1:
            raise BenchError("--max-tokens must be at least 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise BenchError("--max-seconds must be positive")
        if self.request_rate is not None and self.request_rate <= 0:
            raise BenchError("--request-rate must be positive (omit it for a closed loop)")
        if self.grace_seconds < 0 or self.warmup < 0:
            raise BenchError("--grace-seconds and --warmup must not be negative")
        if not self.base_url.startswith(("http://", "https://")):
            raise BenchError(f"--base-url must start with http:// or https://, got {self.base_url!r}")


def normalize_base_url(url: str) -> str:
    """Strip a trailing ``/`` and ``/v1``; ``localhost`` becomes ``127.0.0.1`` (IPv4, as vLLM's client)."""
    url = url.rstrip("/")
    if url.endswith("/v1"):
        url = url[:-3]
    return url.replace("://localhost", "://127.0.0.1", 1)


def run_bench(config: BenchConfig, *, progress: ProgressFn | None = None,
              dataset: Dataset | None = None) -> BenchResult:
    """Load the dataset (errors before any request), run the benchmark, return the result."""
    config.check()
    if dataset is None:
        dataset = load_dataset(
            kind=config.dataset_kind, path=config.dataset, num_prompts=config.num_prompts,
            warmup=config.warmup, max_tokens=config.max_tokens, seed=config.seed,
            min_prompt_tokens=config.min_prompt_tokens, max_prompt_tokens=config.max_prompt_tokens,
            random_input_len=config.random_input_len, random_range_ratio=config.random_range_ratio,
        )
    runner = _Runner(config, dataset, progress)
    loop_name = "asyncio"
    try:
        import uvloop  # type: ignore[import-not-found]

        loop_factory = uvloop.new_event_loop
        loop_name = "uvloop"
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as r:
        result = r.run(runner.run())
    result.data["event_loop"] = loop_name
    return result


class _Runner:
    def __init__(self, config: BenchConfig, dataset: Dataset, progress: ProgressFn | None):
        self.cfg = config
        self.ds = dataset
        self.progress = progress
        self.base = normalize_base_url(config.base_url)
        self.url = self.base + ENDPOINTS[config.endpoint]
        self.stop = False
        self.stop_event: asyncio.Event | None = None
        self.records: list[RequestRecord] = []
        self.finished = 0
        self.errors = 0
        self.lags: list[float] = []
        self.session: aiohttp.ClientSession | None = None
        self._headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}

    # ---- request bodies ---------------------------------------------------
    def body(self, p: Prompt) -> bytes:
        c = self.cfg
        b: dict[str, Any] = {"model": c.model}
        if c.endpoint == "chat":
            b["messages"] = [{"role": "user", "content": p.text}]
            b["max_completion_tokens"] = p.max_tokens
        else:
            b["prompt"] = p.text
            b["max_tokens"] = p.max_tokens
        b["stream"] = True
        b["stream_options"] = {"include_usage": True}
        for k in ("temperature", "top_p", "top_k", "presence_penalty"):
            v = getattr(c, k)
            if v is not None:
                b[k] = v
        if c.ignore_eos:
            b["ignore_eos"] = True
        b.update(c.extra_body)
        return json.dumps(b, separators=(",", ":")).encode()

    # ---- main flow --------------------------------------------------------
    async def run(self) -> BenchResult:
        c = self.cfg
        self.stop_event = asyncio.Event()
        connector = aiohttp.TCPConnector(limit=max(2 * c.concurrency, 16), limit_per_host=0,
                                         keepalive_timeout=75, ttl_dns_cache=300, force_close=False)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=c.connect_timeout, sock_read=c.read_timeout)
        bodies = [self.body(p) for p in self.ds.prompts]
        warm_bodies = [self.body(p) for p in self.ds.warmup]
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, read_bufsize=2**22,
                                         auto_decompress=False, skip_auto_headers=("User-Agent",)) as s:
            self.session = s
            served = await self._preflight()
            await self._open_connections()
            if warm_bodies:
                await self._closed_loop(warm_bodies, [], min(c.concurrency, len(warm_bodies)), warm=True)
            before = await self._scrape() if c.scrape_metrics else None
            gc.collect()
            gc.freeze()
            try:
                t0, t_end, cap_hit, cpu, lag = await self._measure(bodies)
            finally:
                gc.unfreeze()
            after = await self._scrape() if c.scrape_metrics else None
        spec = spec_delta(before, after) if before is not None and after is not None else None
        for r in self.records:
            if r.status == INFLIGHT:
                r.status = INCOMPLETE
        stats = ClientStats(cpu_seconds=cpu, loop_lag_s=self.lags, served_models=served)
        return build_result(self.cfg, self.ds, self.records, t0=t0, t_end=t_end, time_cap_hit=cap_hit,
                            spec=spec, client=stats, base_url=self.base)

    async def _preflight(self) -> list[str] | None:
        """Check the model name against GET /v1/models; fail fast with the server's own message."""
        assert self.session is not None
        try:
            async with self.session.get(self.base + "/v1/models",
                                        timeout=aiohttp.ClientTimeout(total=self.cfg.connect_timeout)) as r:
                if r.status != 200:
                    return None
                data = await r.json(content_type=None)
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            return None  # the run itself counts connection errors
        models = data.get("data") if isinstance(data, dict) else None
        if not isinstance(models, list):
            return None
        served = sorted({str(m.get(k)) for m in models if isinstance(m, dict) for k in ("id", "root")
                         if m.get(k)})
        if self.cfg.model in served:
            return served
        # Ask the server itself, so the user sees its message (and aliases still work).
        probe = self.body(Prompt("Hello", 1, 1))
        try:
            async with self.session.post(self.url, data=probe, headers=self._headers) as r:
                text = await r.text(errors="replace")
                if r.status == 200:
                    return served
        except (aiohttp.ClientError, asyncio.TimeoutError):
            return served
        raise BenchError(f"model {self.cfg.model!r} rejected by {self.base}: HTTP {r.status}: "
                         f"{_error_message(text)}",
                         hint=f"served models: {', '.join(served) or 'none'}; fix --model")

    async def _open_connections(self) -> None:
        """Fill the keep-alive pool so TCP handshakes stay out of TTFT (GET /health, errors ignored)."""
        assert self.session is not None

        async def one() -> None:
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                async with self.session.get(self.base + "/health",  # type: ignore[union-attr]
                                            timeout=aiohttp.ClientTimeout(total=self.cfg.connect_timeout)) as r:
                    await r.read()

        await asyncio.gather(*(one() for _ in range(self.cfg.concurrency)))

    async def _scrape(self) -> SpecCounters | None:
        assert self.session is not None
        try:
            async with self.session.get(self.base + "/metrics",
                                        timeout=aiohttp.ClientTimeout(total=self.cfg.connect_timeout)) as r:
                if r.status != 200:
                    return None
                return spec_counters(await r.text(errors="replace"))
        except (aiohttp.ClientError, asyncio.TimeoutError):
            return None

    async def _measure(self, bodies: list[bytes]) -> tuple[float, float, bool, float, list[float]]:
        c = self.cfg
        assert self.stop_event is not None
        lag_task = asyncio.ensure_future(self._lag_monitor())
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        self.t0 = t0
        prog = asyncio.ensure_future(self._progress_loop(len(bodies))) if self.progress else None
        if c.request_rate is None:
            main = asyncio.ensure_future(self._closed_loop(bodies, self.records, c.concurrency))
        else:
            main = asyncio.ensure_future(self._rate_loop(bodies, t0))
        cap_hit = False
        try:
            if c.max_seconds is None:
                await main
            else:
                try:
                    await asyncio.wait_for(asyncio.shield(main), timeout=c.max_seconds)
                except asyncio.TimeoutError:
                    cap_hit = not main.done()
                if not main.done():
                    self.stop = True
                    self.stop_event.set()
                    try:
                        await asyncio.wait_for(asyncio.shield(main), timeout=c.grace_seconds)
                    except asyncio.TimeoutError:
                        main.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await main
            t_end = time.perf_counter()
            cpu = time.process_time() - cpu0
        finally:
            lag_task.cancel()
            if prog is not None:
                prog.cancel()
        if main.done() and not main.cancelled() and main.exception() is not None:
            raise main.exception()  # type: ignore[misc]
        if self.progress:
            self.progress(self.finished, len(bodies), t_end - t0, self.errors)
        return t0, t_end, cap_hit, cpu, self.lags

    async def _closed_loop(self, bodies: list[bytes], sink: list[RequestRecord], conc: int,
                           warm: bool = False) -> None:
        it = iter(range(len(bodies)))
        ests = self.ds.warmup if warm else self.ds.prompts

        async def worker() -> None:
            for i in it:
                if self.stop and not warm:
                    return
                rec = RequestRecord(i, ests[i].est_tokens)
                sink.append(rec)
                await self._send(rec, bodies[i])
                if not warm:
                    self._done(rec)

        await asyncio.gather(*(worker() for _ in range(min(conc, len(bodies)))))

    async def _rate_loop(self, bodies: list[bytes], t0: float) -> None:
        c = self.cfg
        assert c.request_rate is not None and self.stop_event is not None
        rng = random.Random(c.seed)
        arrivals = []
        t = 0.0
        for _ in bodies:
            t += rng.expovariate(c.request_rate)
            arrivals.append(t)
        sem = asyncio.Semaphore(c.concurrency)
        tasks: list[asyncio.Task[None]] = []

        async def one(rec: RequestRecord, body: bytes) -> None:
            try:
                await self._send(rec, body)
                self._done(rec)
            finally:
                sem.release()

        try:
            for i, body in enumerate(bodies):
                target = t0 + arrivals[i]
                delay = target - time.perf_counter()
                if delay > 0:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self.stop_event.wait(), timeout=delay)
                if self.stop:
                    break
                await sem.acquire()
                if self.stop:
                    sem.release()
                    break
                rec = RequestRecord(i, self.ds.prompts[i].est_tokens, arrival=target)
                self.records.append(rec)
                tasks.append(asyncio.ensure_future(one(rec, body)))
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _done(self, rec: RequestRecord) -> None:
        self.finished += 1
        if rec.status == ERROR:
            self.errors += 1

    async def _lag_monitor(self) -> None:
        """Event-loop lag: how late a 5 ms sleep wakes up, sampled all run long."""
        period = 0.005
        pc = time.perf_counter
        while True:
            t = pc()
            await asyncio.sleep(period)
            self.lags.append(max(0.0, pc() - t - period))

    async def _progress_loop(self, total: int) -> None:
        assert self.progress is not None
        while True:
            await asyncio.sleep(0.5)
            self.progress(self.finished, total, time.perf_counter() - self.t0, self.errors)

    # ---- one request ------------------------------------------------------
    async def _send(self, rec: RequestRecord, body: bytes) -> None:
        assert self.session is not None
        pc = time.perf_counter
        got_headers = False
        try:
            rec.start = pc()
            async with self.session.post(self.url, data=body, headers=self._headers) as resp:
                got_headers = True
                rec.http_status = resp.status
                if resp.status != 200:
                    text = (await resp.content.read(4096)).decode("utf-8", "replace")
                    kind = "http_5xx" if resp.status >= 500 else "http_4xx"
                    rec.fail(kind, f"HTTP {resp.status}: {_error_message(text)}")
                    rec.end = pc()
                    return
                await self._read_stream(rec, resp)
        except asyncio.CancelledError:
            raise
        except (aiohttp.ConnectionTimeoutError, aiohttp.ClientConnectorError) as exc:
            rec.fail("connect", f"{type(exc).__name__}: {exc}")
        except (aiohttp.SocketTimeoutError, asyncio.TimeoutError) as exc:
            rec.fail("timeout", f"no data for {self.cfg.read_timeout:g} s ({type(exc).__name__})")
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            kind = "stream_dropped" if got_headers else "connection_lost"
            rec.fail(kind, f"{type(exc).__name__}: {exc}")
        except aiohttp.ClientError as exc:
            rec.fail("client_error", f"{type(exc).__name__}: {exc}")
        if rec.end is None:
            rec.end = pc()

    async def _read_stream(self, rec: RequestRecord, resp: aiohttp.ClientResponse) -> None:
        pc = time.perf_counter
        parser = SSEParser()
        loads = json.loads
        done = False
        usage: dict[str, Any] | None = None
        gaps = rec.gaps
        events: list[bytes]
        async for buf in resp.content.iter_any():
            now = pc()
            events = parser.feed(buf)
            for ev in events:
                if ev == b"[DONE]":
                    done = True
                    continue
                try:
                    obj = loads(ev)
                except ValueError:
                    rec.fail("non_json", f"event is not JSON: {ev[:80]!r}")
                    return
                if not isinstance(obj, dict):
                    rec.fail("non_json", f"event is not a JSON object: {ev[:80]!r}")
                    return
                if "error" in obj or obj.get("object") == "error":
                    err = obj.get("error", obj)
                    msg = err.get("message") if isinstance(err, dict) else err
                    rec.fail("in_stream_error", f"error in stream after {rec.n_chunks} chunks: {msg}")
                    return
                choices = obj.get("choices")
                if choices:
                    ch = choices[0]
                    tok = ch.get("text")
                    if tok is None:
                        d = ch.get("delta")
                        if d:
                            tok = (d.get("content") or d.get("reasoning_content") or d.get("reasoning")
                                   or d.get("tool_calls"))
                    if tok:
                        if rec.first is None:
                            rec.first = now
                            rec.first_srv = obj.get("t_srv")
                            rec.arr_srv = obj.get("t_arr")
                        else:
                            gaps.append(now - rec.last)  # type: ignore[operator]
                        rec.last = now
                        rec.last_srv = obj.get("t_srv")
                        rec.n_chunks += 1
                    fr = ch.get("finish_reason")
                    if fr:
                        rec.finish_reason = fr
                u = obj.get("usage")
                if u:
                    usage = u
        rec.end = pc()
        for ev in parser.finish():
            if ev == b"[DONE]":
                done = True
        if not done and rec.finish_reason is None:
            rec.fail("stream_dropped", f"stream ended without [DONE] after {rec.n_chunks} chunks")
            return
        if rec.first is None:
            rec.fail("no_tokens", "the stream finished without any token")
            return
        if usage is not None and isinstance(usage.get("completion_tokens"), int):
            rec.completion_tokens = usage["completion_tokens"]
            pt = usage.get("prompt_tokens")
            rec.prompt_tokens = pt if isinstance(pt, int) else rec.prompt_est
        elif self.cfg.allow_missing_usage:
            rec.usage_fallback = True
            rec.completion_tokens = rec.n_chunks
            rec.prompt_tokens = rec.prompt_est
        else:
            rec.fail("no_usage", "the stream carried no usage report (stream_options.include_usage "
                                 "ignored?); see --allow-missing-usage")
            return
        rec.status = OK


def _error_message(text: str) -> str:
    """The message of an OpenAI/vLLM error body, else the (truncated) body itself."""
    try:
        obj = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:200] or "(empty body)"
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(obj.get("message"), str):
            return obj["message"]
        if isinstance(err, str):
            return err
    return " ".join(text.split())[:200]

"""The asynchronous benchmark client (one event loop, keep-alive connections of its own).

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
import math
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from autobench.bench.closedloop import ClosedLoop
from autobench.bench.datasets import Dataset, Prompt, load_dataset
from autobench.bench.loop import loop_factory
from autobench.bench.promscrape import SpecCounters, prefix_delta, spec_counters, spec_delta
from autobench.bench.record import ERROR, INCOMPLETE, INFLIGHT, RequestRecord
from autobench.bench.records import FieldMap
from autobench.bench.result import BenchResult, ClientStats, build_result
from autobench.bench.schedule import poisson_arrivals
from autobench.bench.source import hub_file, local_file
from autobench.bench.stream import StreamSink, error_message
from autobench.bench.transport import Conn, ConnectFailed, Pool, normalize_base_url
from autobench.bench.workload import SharedPrefix, add_context, check_depth, check_fits
from autobench.digits import load_json
from autobench.errors import BenchError
from autobench.recipe.benchrules import Load

if TYPE_CHECKING:
    from autobench.bench.conversation import ConversationLoop
    from autobench.bench.tokenizer import BenchTokenizer

T = TypeVar("T")
ProgressFn = Callable[[int, int, float, int], None]  # (finished, total, elapsed_s, errors)
#: A request already written (rate mode): its connection and the future that ends with it.
Started = tuple[Conn, "asyncio.Future[None]"]

ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}

#: The young-generation threshold of the garbage collector during the measured run (CPython's
#: default is 700).  A burst of C requests allocates C times the per-request objects at
#: once; at 700 that triggers a collection every few requests, each walking every young
#: in-flight object (measured with the earlier aiohttp transport, since replaced by
#: ``transport``: 30 ms of pauses, up to 8 ms each, in a 1,024-request run at C=256,
#: landing on the dispatch path).  The happy path creates no
#: reference cycles (refcounting frees everything), so collecting less often only delays
#: reclaiming the cycles of error paths, by at most this many objects.
YOUNG_GC_THRESHOLD = 10_000

#: Rate mode: a wait for the next arrival longer than this (s) can be cut short by the time cap
#: or Ctrl-C (a task and a timer more); a shorter one is a plain sleep.
LONG_WAIT_S = 0.05

#: BenchConfig's float fields: each must be finite (``check``).
FLOAT_FIELDS = (
    "max_seconds",
    "temperature",
    "top_p",
    "presence_penalty",
    "request_rate",
    "grace_seconds",
    "read_timeout",
    "connect_timeout",
    "random_range_ratio",
)


@dataclass(frozen=True)
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
    #: The tokenizer that measures prompt lengths: a Hub repo id (at ``tokenizer_revision``), a
    #: tokenizer.json or a model directory; "estimated" for characters / 4; None: ``model`` when it
    #: looks like a Hub repo id (as vllm bench serve does), else the estimate.
    tokenizer: str | None = None
    tokenizer_revision: str | None = None
    scrape_metrics: bool = True
    #: Refuse to estimate prompt lengths: no tokenizer is an error, never "estimated".
    require_tokenizer: bool = False
    label: str | None = None
    #: The environment variable holding the server's API key (sent as ``Authorization: Bearer``).
    #: The default is used only when set; a name given explicitly must be set.  Never the value.
    api_key_env: str = "OPENAI_API_KEY"
    api_key_required: bool = False
    extra_body: dict[str, object] = field(default_factory=dict)
    #: Service-level objectives in ms (``ttft``, ``tpot``, ``e2el``): the result counts the
    #: requests meeting all of them and their goodput (autobench.bench.slo).
    slo: dict[str, float] | None = None
    #: Load generator processes (autobench.bench.fleet): each with its share of the concurrency
    #: (or of the arrivals) and its own event loop; their records merged into one result.
    workers: int = 1
    #: Hosts that run the load generators, one each (instead of local processes), reached with
    #: ``remote`` (e.g. ``ssh -o BatchMode=yes``: the words before the host) and started there as
    #: ``worker_python -m autobench.bench.worker``; the protocol is the local one, over the
    #: remote command's stdin/stdout (autobench.bench.fleet).
    worker_hosts: tuple[str, ...] = ()
    remote: str | None = None
    worker_python: str = "python3"
    #: Tokens of prior context before each question, and a prefix shared by groups of prompts
    #: (autobench.bench.workload).
    depth: int = 0
    shared_prefix: SharedPrefix | None = None
    #: A file of a Hub dataset repo at a revision, instead of ``dataset`` (a local path), fetched
    #: into the HF cache and verified (autobench.bench.source); its commit and sha256 are recorded.
    dataset_repo: str | None = None
    dataset_file: str | None = None
    dataset_revision: str | None = None
    #: The dataset file's sha256 (a file that does not match is refused) and who stated it.
    dataset_sha256: str | None = None
    dataset_sha256_from: str = "bench.dataset.sha256"
    #: Which field of a jsonl/parquet record holds the prompt (or turns), category, output cap.
    dataset_fields: FieldMap | None = None
    #: Only the prompts of this category (the dataset's category field); too few is an error.
    category: str | None = None
    #: Each record's turns sent as one conversation, the answers appended (bench.conversation).
    multi_turn: bool = False

    def check(self) -> None:
        for name in FLOAT_FIELDS:
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
                raise BenchError(
                    f"--{name.replace('_', '-')} must be a finite number, got {v!r}",
                    hint="NaN and infinity are refused (they are not valid JSON and compare false)",
                )
        try:
            json.dumps(self.extra_body, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise BenchError(f"extra request body fields are not strict JSON: {exc}") from exc
        if self.endpoint not in ENDPOINTS:
            raise BenchError(f"unknown endpoint {self.endpoint!r}", hint="use completions or chat")
        if self.concurrency < 1:
            raise BenchError("--concurrency must be at least 1")
        from autobench.bench.fleet import check_fleet, check_rules

        if self.workers != 1 or self.worker_hosts:
            check_fleet(self)
        check_rules(self.load())  # the rules a recipe's bench follows too (autobench.recipe.benchrules)
        if self.max_tokens < 1:
            raise BenchError("--max-tokens must be at least 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise BenchError("--max-seconds must be positive")
        if self.request_rate is not None and self.request_rate <= 0:
            raise BenchError("--request-rate must be positive (omit it for a closed loop)")
        if self.read_timeout <= 0 or self.connect_timeout <= 0:
            raise BenchError("--read-timeout and the connect timeout must be positive")
        if self.grace_seconds < 0 or self.warmup < 0:
            raise BenchError("--grace-seconds and --warmup must not be negative")
        if not self.base_url.startswith(("http://", "https://")):
            raise BenchError(f"--base-url must start with http:// or https://, got {self.base_url!r}")
        if self.dataset_repo is not None and (self.dataset_file is None or self.dataset is not None):
            raise BenchError(
                "--dataset-repo needs --dataset-file (the file in the repo) and no --dataset",
                hint="e.g. --dataset-repo org/prompts --dataset-file data/test.jsonl --dataset-revision SHA",
            )
        if self.dataset_repo is None and (self.dataset_file is not None or self.dataset_revision is not None):
            raise BenchError("--dataset-file and --dataset-revision need --dataset-repo")
        if self.dataset_fields is not None:
            self.dataset_fields.check()
        check_depth(self.depth)
        if self.shared_prefix is not None:
            self.shared_prefix.check()
        if self.api_key_required and not self.auth_headers():
            raise BenchError(
                f"--api-key-env {self.api_key_env}: the variable is not set",
                hint=f"export {self.api_key_env}=... (the key itself never goes on the command line)",
            )

    def load(self) -> Load:
        """The settings autobench.recipe.benchrules reads."""
        rate = self.request_rate is not None
        hosts = bool(self.worker_hosts)
        return Load(self.workers, self.num_prompts, self.concurrency, self.warmup, rate, self.multi_turn, hosts)

    def auth_headers(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """``{"Authorization": "Bearer ..."}`` from ``api_key_env`` in ``env`` (the process
        environment by default), or ``{}`` when it is not set."""
        key = (os.environ if env is None else env).get(self.api_key_env, "").strip()
        if not key:
            return {}
        if any(ch in key for ch in "\r\n"):
            raise BenchError(f"${self.api_key_env} contains a line break", hint="store the key on one line")
        return {"Authorization": f"Bearer {key}"}


def run_bench(
    config: BenchConfig, *, progress: ProgressFn | None = None, dataset: Dataset | None = None
) -> BenchResult:
    """Load the dataset (errors before any request), run the benchmark, return the result.

    The server's words (error bodies, the models probe) are kept in the result and in errors;
    any secret in them -- the API key (some proxies echo the Authorization header), any
    secret-named variable -- is redacted here, the one exit of both."""
    from autobench.redaction import environment_secrets, redact, redact_tree

    secrets = environment_secrets([config.api_key_env] if config.api_key_env else [])
    try:
        result = _run_bench(config, progress=progress, dataset=dataset)
    except BenchError as exc:
        exc.message = redact(exc.message, secrets)
        if exc.hint:  # "served models: ..." lists what the server says, the key included
            exc.hint = redact(exc.hint, secrets)
        raise
    result.data = redact_tree(result.data, secrets)
    return result


def prepare_dataset(config: BenchConfig) -> Dataset:
    """The prompts ``config`` benches, every check of them made (errors before any request): the
    tokenizer, the file (a Hub dataset's fetched and verified), the category, the context."""
    tok, why = choose_tokenizer(config)
    if tok is None and config.require_tokenizer:
        raise BenchError(
            "refusing to estimate prompt lengths (--require-tokenizer): "
            + (why or "--tokenizer estimated was asked for"),
            hint="pass --tokenizer REPO|PATH (a tokenizer.json or a model directory), or drop --require-tokenizer",
        )
    origin = None
    if config.dataset_repo is not None and config.dataset_file is not None:
        origin = hub_file(
            config.dataset_repo,
            config.dataset_file,
            config.dataset_revision,
            config.dataset_sha256,
            config.dataset_sha256_from,
        )
    dataset = load_dataset(
        kind=config.dataset_kind,
        path=str(origin.path) if origin is not None else config.dataset,
        num_prompts=config.num_prompts,
        warmup=config.warmup,
        max_tokens=config.max_tokens,
        seed=config.seed,
        min_prompt_tokens=config.min_prompt_tokens,
        max_prompt_tokens=config.max_prompt_tokens,
        random_input_len=config.random_input_len,
        random_range_ratio=config.random_range_ratio,
        tokenizer=tok,
        tokenizer_fallback=why,
        fields=config.dataset_fields,
        category=config.category,
    )
    if origin is None and dataset.path is not None:  # a local file: recorded by its sha256
        origin = local_file(dataset.path, config.dataset_sha256)
    dataset.origin = origin
    return add_context(dataset, config.depth, config.shared_prefix, tok, config.seed)


def _run_bench(config: BenchConfig, *, progress: ProgressFn | None, dataset: Dataset | None) -> BenchResult:
    config.check()
    if dataset is None:
        dataset = prepare_dataset(config)
    factory, loop_name = loop_factory()
    if config.workers > 1 or config.worker_hosts:
        from autobench.bench.fleet import run_fleet

        result = run_fleet(config, dataset)
        result.data["event_loop"] = loop_name
        return result
    runner = _Runner(config, dataset, progress)
    with asyncio.Runner(loop_factory=factory) as r:
        try:
            result = r.run(runner.run_interruptible(runner.run))
        except asyncio.CancelledError:
            if runner.interrupted:  # Ctrl-C before the measured run started, or a second Ctrl-C
                raise KeyboardInterrupt from None
            raise
    result.data["event_loop"] = loop_name
    return result


async def wait_until(t: float) -> None:
    """Sleep until ``perf_counter() >= t``: the loop's timer for most of it (it may fire up to a
    millisecond early), then yielding to I/O until the time has come."""
    delay = t - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
    while time.perf_counter() < t:
        await asyncio.sleep(0)


def choose_tokenizer(config: BenchConfig) -> tuple[BenchTokenizer | None, str | None]:
    """(tokenizer or None, why the estimate is used instead).  A bad local path is an error."""
    from autobench.bench.tokenizer import ESTIMATED, TokenizerChoice, looks_local

    spec = config.tokenizer
    if spec is None:
        m = config.model
        if "/" in m and not looks_local(m) and m.count("/") == 1:
            spec = m  # like vllm bench serve: the model name is the tokenizer's repo
        else:
            return None, f"no --tokenizer, and the model name {m!r} is not a Hub repo id"
    if spec == ESTIMATED:
        return None, None  # asked for: no warning, recorded as "estimated"
    return TokenizerChoice(spec, config.tokenizer_revision).load()


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
        self.pool: Pool | None = None
        self.interrupted = False
        self._main: asyncio.Future[None] | None = None
        self._top: asyncio.Task[Any] | None = None
        self.path = ENDPOINTS[config.endpoint]
        self.stream_tokens = config.max_tokens  # set from the prompts in run()
        self.chat = config.endpoint == "chat"
        self.conversations: ConversationLoop | None = None  # a multi-turn run's loop
        #: Rate mode's send times (s from t0) when given (a load generator's share); else drawn.
        self.arrivals: list[float] | None = None

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
        return json.dumps(b, separators=(",", ":"), allow_nan=False).encode()

    # ---- main flow --------------------------------------------------------
    async def run_interruptible(self, body: Callable[[], Awaitable[T]]) -> T:
        """``body()`` (``run``, or a load generator's session); on the main thread, Ctrl-C
        (SIGINT) during the measured run stops it like a time cap without grace: nothing new is
        sent, requests in flight are cancelled (incomplete), and the partial result says
        ``interrupted``."""
        loop = asyncio.get_running_loop()
        self._top = asyncio.current_task()
        installed = False
        if threading.current_thread() is threading.main_thread():
            try:
                loop.add_signal_handler(signal.SIGINT, self._on_sigint)
                installed = True
            except (NotImplementedError, RuntimeError, ValueError):  # no signal support here
                pass
        try:
            return await body()
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)

    def _on_sigint(self) -> None:
        if self.interrupted or self._main is None:  # a second Ctrl-C, or not measuring yet: stop now
            self.interrupted = True
            if self._top is not None:
                self._top.cancel()
            return
        self.interrupted = True
        self.stop = True
        if self.stop_event is not None:
            self.stop_event.set()
        if not self._main.done():
            self._main.cancel()

    async def run(self) -> BenchResult:
        c = self.cfg
        self.stop_event = asyncio.Event()
        auth = c.auth_headers()
        self.pool = Pool(self.base, c.connect_timeout, headers=auth)
        try:
            served, bodies = await self.prepare()
            before = await self._scrape() if c.scrape_metrics else None
            t0, t_end, cap_hit, cpu, lag = await self.measure(bodies)
            after = await self._scrape() if c.scrape_metrics and not self.interrupted else None
        finally:
            self.pool.close()
        spec = spec_delta(before, after) if before is not None and after is not None else None
        prefix = prefix_delta(before, after) if before is not None and after is not None else None
        self.end_in_flight()
        stats = ClientStats(cpu_seconds=cpu, loop_lag_s=self.lags, served_models=served)
        result = build_result(
            self.cfg,
            self.ds,
            self.records,
            t0=t0,
            t_end=t_end,
            time_cap_hit=cap_hit,
            spec=spec,
            client=stats,
            base_url=self.base,
            prefix=prefix,
        )
        result.data["interrupted"] = self.interrupted
        result.data["api_key_env"] = c.api_key_env if auth else None  # the name only, never the key
        if self.conversations is not None:
            from autobench.bench.conversation import add_turns

            add_turns(result.data, self.ds.prompts, self.records, self.conversations)
        return result

    async def prepare(self) -> tuple[list[str] | None, list[bytes]]:
        """Everything before the clock: the requests built whole, the model checked (GET
        /v1/models), the connections opened, the warm-up; (served models, request bytes)."""
        c = self.cfg
        pool = self.pool
        assert pool is not None

        def request(p: Prompt) -> bytes:
            return pool.request_bytes("POST", self.path, self.body(p), accept="text/event-stream")

        bodies = [request(p) for p in self.ds.prompts]
        warm_bodies = [request(p) for p in self.ds.warmup]
        # the stream caps (autobench.bench.stream.stream_caps) follow the most tokens any request asks for
        self.stream_tokens = max((p.max_tokens for p in [*self.ds.prompts, *self.ds.warmup]), default=c.max_tokens)
        served = await self._preflight()
        await self._open_connections()
        if warm_bodies:
            await self._closed_loop(warm_bodies, [], min(c.concurrency, len(warm_bodies)), warm=True)
        return served, bodies

    async def measure(
        self, bodies: list[bytes], t_start: float | None = None
    ) -> tuple[float, float, bool, float, list[float]]:
        """The measured run (garbage collector frozen and quiet), from ``t_start`` (perf_counter,
        waited for; default now): (t0, t_end, time cap hit, CPU seconds, loop lags)."""
        gc.collect()
        gc.freeze()
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], YOUNG_GC_THRESHOLD), *thresholds[1:])
        try:
            if t_start is not None:
                await wait_until(t_start)
            return await self._measure(bodies, t_start)
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()

    def end_in_flight(self) -> None:
        """Requests still in flight when the run ended were cancelled: incomplete."""
        for r in self.records:
            if r.status == INFLIGHT:
                r.status = INCOMPLETE

    async def _get(self, path: str, body: bytes | None = None) -> tuple[int, str] | None:
        """(status, text) of one small request, or None when it could not be made."""
        assert self.pool is not None
        try:
            r = await self.pool.fetch(
                "POST" if body is not None else "GET", path, body, timeout=self.cfg.connect_timeout
            )
        except (ConnectFailed, TimeoutError):
            return None
        if r.error is not None:
            return None
        return r.status, r.body.decode("utf-8", "replace")

    async def _preflight(self) -> list[str] | None:
        """Check the model name against GET /v1/models; fail fast with the server's own message."""
        got = await self._get("/v1/models")
        if got is None or got[0] != 200:
            return None  # the run itself counts connection errors
        try:
            data = load_json(got[1])
        except ValueError:
            return None
        models = data.get("data") if isinstance(data, dict) else None
        if not isinstance(models, list):
            return None
        served = sorted({str(m.get(k)) for m in models if isinstance(m, dict) for k in ("id", "root") if m.get(k)})
        if self.cfg.model in served:
            check_fits(self.ds, models, self.cfg.model, self.base)
            return served
        # Ask the server itself, so the user sees its message (and aliases still work).
        probe = await self._get(self.path, self.body(Prompt("Hello", 1, 1)))
        if probe is None or probe[0] == 200:
            return served
        raise BenchError(
            f"model {self.cfg.model!r} rejected by {self.base}: HTTP {probe[0]}: {error_message(probe[1])}",
            hint=f"served models: {', '.join(served) or 'none'}; fix --model",
        )

    async def _open_connections(self) -> None:
        """Open the keep-alive connections first, so TCP handshakes stay out of TTFT."""
        assert self.pool is not None
        # Never more than can be in flight at once: min(concurrency, prompts).
        await self.pool.prefill(min(self.cfg.concurrency, len(self.ds.prompts)))

    async def _scrape(self) -> SpecCounters | None:
        got = await self._get("/metrics")
        if got is None or got[0] != 200:
            return None
        return spec_counters(got[1])

    async def _measure(
        self, bodies: list[bytes], t_start: float | None = None
    ) -> tuple[float, float, bool, float, list[float]]:
        c = self.cfg
        assert self.stop_event is not None
        lag_task = asyncio.ensure_future(self._lag_monitor())
        cpu0 = time.process_time()
        t0 = time.perf_counter() if t_start is None else t_start
        self.t0 = t0
        total = len(bodies) + (sum(len(p.turns) for p in self.ds.prompts) if c.multi_turn else 0)  # every turn
        prog = asyncio.ensure_future(self._progress_loop(total)) if self.progress else None
        if c.request_rate is None:
            main = asyncio.ensure_future(self._closed_loop(bodies, self.records, c.concurrency, t_start=t0))
        else:
            main = asyncio.ensure_future(self._rate_loop(bodies, t0))
        cap_hit = False
        self._main = main
        try:
            try:
                if c.max_seconds is None:
                    await main
                else:
                    try:
                        await asyncio.wait_for(asyncio.shield(main), timeout=c.max_seconds)
                    except TimeoutError:
                        cap_hit = not main.done()
                    if not main.done():
                        self.stop = True
                        self.stop_event.set()
                        try:
                            await asyncio.wait_for(asyncio.shield(main), timeout=c.grace_seconds)
                        except TimeoutError:
                            main.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await main
            except asyncio.CancelledError:
                if not (self.interrupted and main.cancelled()):
                    raise
                # Ctrl-C (_on_sigint) cancelled the measured run: what finished counts.
            t_end = time.perf_counter()
            cpu = time.process_time() - cpu0
        finally:
            lag_task.cancel()
            if prog is not None:
                prog.cancel()
        if main.done() and not main.cancelled() and main.exception() is not None:
            raise main.exception()  # type: ignore[misc]
        if self.progress:
            self.progress(self.finished, total, t_end - t0, self.errors)
        return t0, t_end, cap_hit, cpu, self.lags

    async def _closed_loop(
        self,
        bodies: list[bytes],
        sink: list[RequestRecord],
        conc: int,
        warm: bool = False,
        t_start: float | None = None,
    ) -> None:
        """``conc`` slots driven from the transport's callbacks (``autobench.bench.closedloop``);
        ``t_start``: when the first requests are due (perf_counter; now)."""
        assert self.pool is not None
        ests = self.ds.warmup if warm else self.ds.prompts
        if not warm and self.cfg.multi_turn:  # each prompt a conversation (autobench.bench.conversation)
            from autobench.bench.conversation import conversation_loop

            self.conversations = conversation_loop(self, self.pool, sink, conc, stopped=lambda: self.stop)
            await self.conversations.run(t_start)
            return
        loop = ClosedLoop(
            pool=self.pool,
            bodies=bodies,
            prompt_tokens=[p.est_tokens for p in ests],
            records=sink,
            conc=conc,
            make_sink=self._sink,
            read_timeout=self.cfg.read_timeout,
            stopped=(lambda: False) if warm else (lambda: self.stop),
            done=None if warm else self._done,
        )
        await loop.run(t_start)

    def _sink(self, rec: RequestRecord) -> StreamSink:
        return StreamSink(
            rec, chat=self.chat, allow_missing_usage=self.cfg.allow_missing_usage, max_tokens=self.stream_tokens
        )

    async def _rate_loop(self, bodies: list[bytes], t0: float) -> None:
        c = self.cfg
        assert c.request_rate is not None and self.stop_event is not None
        arrivals = self.arrivals if self.arrivals is not None else poisson_arrivals(c.request_rate, len(bodies), c.seed)
        sem = asyncio.Semaphore(c.concurrency)
        tasks: list[asyncio.Task[None]] = []
        freed = [0.0]  # when the last slot came free (perf_counter)

        async def one(rec: RequestRecord, body: bytes, started: Started | None) -> None:
            try:
                await self._send(rec, body, started)
                self._done(rec)
            finally:
                freed[0] = rec.end or time.perf_counter()
                sem.release()

        try:
            for i, body in enumerate(bodies):
                target = t0 + arrivals[i]
                delay = target - time.perf_counter()
                if delay > LONG_WAIT_S:  # a time cap or Ctrl-C ends a long wait at once
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self.stop_event.wait(), timeout=delay)
                elif delay > 0:
                    await asyncio.sleep(delay)  # no task and no second timer per arrival
                # The loop's timers fire up to ~1 ms early (uvloop counts whole milliseconds from
                # a cached clock): never send before the arrival time; yield to I/O until it comes.
                while time.perf_counter() < target and not self.stop:
                    await asyncio.sleep(0)
                if self.stop:
                    break
                waited = sem.locked()
                await sem.acquire()
                if self.stop:
                    sem.release()
                    break
                rec = RequestRecord(i, self.ds.prompts[i].est_tokens, arrival=target)
                # Due at its arrival, or when a slot came free if all C were busy then (that wait
                # is the server's: client_queue_time); the dispatch delay is the client's own.
                rec.scheduled = max(target, freed[0]) if waited else target
                self.records.append(rec)
                tasks.append(asyncio.ensure_future(one(rec, body, self._write_now(rec, body))))
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
    def _write_now(self, rec: RequestRecord, data: bytes) -> Started | None:
        """Write ``rec``'s request at once on an idle connection (None when none is idle): the
        rate loop sends at the arrival time itself, not one loop turn later from the request's
        task (that turn parsed whatever the poll had read first: ~0.4 ms median at 200 req/s)."""
        pool = self.pool
        assert pool is not None
        rec.dispatch = rec.start = rec.io = time.perf_counter()
        conn = pool.take_idle()
        if conn is None:
            return None
        sink = self._sink(rec)
        rec.start = rec.io = time.perf_counter()  # the request reaches the kernel right after
        return conn, conn.send(data, sink)

    async def _send(self, rec: RequestRecord, data: bytes, started: Started | None = None) -> None:
        """Send ``rec``'s request (or, ``started``, wait for the one :meth:`_write_now` wrote)."""
        pool = self.pool
        assert pool is not None
        pc = time.perf_counter
        if started is None:
            rec.dispatch = rec.start = rec.io = pc()
            try:
                conn = await pool.acquire()
            except ConnectFailed as exc:
                rec.fail("connect", str(exc))
                rec.end = pc()
                return
        else:
            conn = started[0]
        task = asyncio.current_task()
        assert task is not None
        rec.watchdog = asyncio.get_running_loop().call_later(self.cfg.read_timeout, self._idle_check, rec, task)
        try:
            if started is None:
                sink = self._sink(rec)
                rec.start = rec.io = pc()  # the request reaches the kernel right after
                await conn.send(data, sink)
            else:
                await started[1]
        except asyncio.CancelledError:
            conn.abort()
            # Our own read-timeout watchdog cancelled the request (and nothing else did).
            if rec.timed_out and task.uncancel() == 0:
                rec.fail("timeout", f"no response head or SSE data event for {self.cfg.read_timeout:g} s")
            else:
                raise
        finally:
            if rec.watchdog is not None:
                rec.watchdog.cancel()
                rec.watchdog = None
            pool.release(conn)
        if rec.end is None:
            rec.end = pc()

    def _idle_check(self, rec: RequestRecord, task: asyncio.Task[Any]) -> None:
        """The read timeout: one timer per request, re-armed lazily (reads only store ``rec.io``).

        A timer re-armed on every socket read would cost a heap operation per chunk; this
        one costs nothing per chunk.  After ``read_timeout`` seconds without progress (the response
        head, an SSE data event; comments and partial events do not count) the
        request's task is cancelled and the request counted as a ``timeout``.
        """
        idle = time.perf_counter() - rec.io
        left = self.cfg.read_timeout - idle
        if left > 1e-3:
            rec.watchdog = asyncio.get_running_loop().call_later(left, self._idle_check, rec, task)
            return
        rec.watchdog = None
        rec.timed_out = True
        task.cancel()

"""Several load generators for one bench (``--workers N``): the protocol, the shares, the merge.

Each load generator is a process with its own event loop (``python -m autobench.bench.worker``),
given its share of the prompts and of the concurrency (or of the arrival schedule in rate
mode).  They start together, and when their measured run is over they send their raw
per-request records to the parent, which merges them into one result: every statistic is
computed from the merged records (percentiles of the union of the requests, never averaged
percentiles), and the merged raw samples are what the ledger's cell keeps.

The protocol is JSON lines over a byte stream (the worker's stdin and stdout; for a load
generator on another host, ``--worker-host``, the same stream through ``REMOTE HOST 'PYTHON -m
autobench.bench.worker'``: :func:`remote_worker_command`), one message per line,
``{"t": TYPE, ...}``:

parent -> worker
    ``plan``   version, worker number, the bench settings the worker needs (never a secret:
               the API key is read by the worker from its own environment, by name), its prompts
               ``[text, estimated tokens, max_tokens, category, later turns]`` and warm-up prompts, and in rate mode
               its send times (s from the common start)
    ``ping``   (clock synchronisation; answered at once)
    ``start``  ``at``: the common start, in the *worker's* clock
worker -> parent
    ``ready``  the model checked, the connections open, the warm-up done; ``served`` models
    ``pong``   ``clock``: the worker's ``perf_counter()`` when it answered
    ``error``  ``message``, ``hint``: a BenchError before the start (the parent raises it)
    ``records`` ``rows``: up to ROWS_PER_MESSAGE request records (ROW_FIELDS, in that order)
    ``done``   ``t0``, ``t_end``, ``cap_hit``, ``cpu``, ``lags``, ``interrupted``

Clocks: before the start the parent sends PINGS pings to each worker and keeps the one with
the shortest round trip (Cristian's algorithm): offset = worker clock - (sent + received) / 2,
within +- round trip / 2.  The start is sent in each worker's clock (parent start + offset), and
every time a worker reports is moved back to the parent's clock (- offset).  On one host all
processes read the same CLOCK_MONOTONIC, so the measured offsets are ~0 (their size is the
error bound); across hosts the offset is what makes the start common and the times comparable.
The synthetic server's stamps (``t_arr``, ``t_srv``) are moved with their worker's times: the
client-vs-server figures assume the server shares the worker's clock (one host).

Records are sent after the worker's measured run, not during it: encoding them in the
measured loop would add its CPU to the client being measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import autobench
from autobench.bench.record import INFLIGHT, RequestRecord
from autobench.errors import BenchError
from autobench.recipe.benchrules import CLI, Load, LoadRuleError, check_load
from autobench.recipe.bounds import MAX_WORKERS
from autobench.recipe.workerhosts import WorkerHostsError, follow_hosts, host_problem, python_problem

if TYPE_CHECKING:
    from autobench.bench.client import BenchConfig
    from autobench.bench.datasets import Dataset, Prompt
    from autobench.bench.result import BenchResult

PROTOCOL_VERSION = 1
#: Clock pings per worker; the shortest round trip wins.
PINGS = 9
#: How far ahead of the last clock ping the common start is set (s): every worker must have
#: read its ``start`` before then.
START_LEAD_S = 0.2
ROWS_PER_MESSAGE = 256

#: A request record on the wire, in this order.
ROW_FIELDS = (
    "index",
    "status",
    "error_kind",
    "error_message",
    "http_status",
    "arrival",
    "scheduled",
    "dispatch",
    "start",
    "first",
    "last",
    "end",
    "gaps",
    "n_chunks",
    "shared_gaps",
    "unseen_gaps",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "usage_fallback",
    "first_srv",
    "arr_srv",
    "timed_out",
)
#: The clock readings of a row (moved by the worker's clock offset; 0.0 and None mean "none").
TIME_FIELDS = ("arrival", "scheduled", "dispatch", "start", "first", "last", "end", "first_srv", "arr_srv")

#: The settings a worker's own BenchConfig takes from the parent's (the rest is the parent's:
#: the dataset, the tokenizer, the metrics scrape).
CONFIG_FIELDS = (
    "base_url",
    "model",
    "endpoint",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "presence_penalty",
    "ignore_eos",
    "seed",
    "request_rate",
    "max_seconds",
    "grace_seconds",
    "read_timeout",
    "connect_timeout",
    "allow_missing_usage",
    "api_key_env",
    "api_key_required",
    "extra_body",
)


# ---- shares -------------------------------------------------------------------------
def shares(n: int, workers: int) -> list[list[int]]:
    """Item indices ``0..n-1`` dealt round-robin to ``workers`` load generators."""
    return [list(range(w, n, workers)) for w in range(workers)]


def concurrency_shares(conc: int, workers: int) -> list[int]:
    """``conc`` split as evenly as it goes (the first ones get the remainder)."""
    return [conc // workers + (1 if w < conc % workers else 0) for w in range(workers)]


def check_workers(
    workers: int, concurrency: int, num_prompts: int, *, multi_turn: bool = False, on_hosts: bool = False
) -> None:
    """``workers`` load generators for these settings: the rules a recipe's bench follows too
    (autobench.recipe.benchrules), worded as ``autobench bench``'s options."""
    if not 1 <= workers <= MAX_WORKERS:
        raise BenchError(f"--workers must be between 1 and {MAX_WORKERS}, got {workers}")
    check_rules(Load(workers, num_prompts, concurrency, multi_turn=multi_turn, on_hosts=on_hosts))


def check_rules(load: Load) -> None:
    """autobench.recipe.benchrules.check_load in the CLI's words, a refusal a BenchError at the
    option it names."""
    try:
        check_load(load, CLI)
    except LoadRuleError as exc:
        raise BenchError(exc.message, hint=exc.hint, location=getattr(CLI, exc.key)) from None


def check_fleet(config: BenchConfig) -> None:
    """The load generators of ``config``: their number and, on other hosts, one per host, a way
    to reach them and an interpreter there."""
    hosts = config.worker_hosts
    check_workers(
        config.workers, config.concurrency, config.num_prompts, multi_turn=config.multi_turn, on_hosts=bool(hosts)
    )
    if not hosts:
        return
    try:
        follow_hosts(config.workers, len(hosts), resolved=True)
    except WorkerHostsError as exc:
        raise BenchError(exc.message, hint=exc.hint, location="--workers") from None
    for host in hosts:
        problem = host_problem(host)
        if problem is not None:
            raise BenchError(
                f"--worker-host {host!r} is not a host name: it {problem}", hint="e.g. --worker-host user@10.0.0.2"
            )
    if not config.remote or not shlex.split(config.remote):
        raise BenchError(
            "--worker-host needs a way to reach the hosts (--remote, or AUTOBENCH_REMOTE)",
            hint="e.g. --remote 'ssh -o BatchMode=yes'",
        )
    problem = python_problem(config.worker_python)
    if problem is not None:
        raise BenchError(
            f"--worker-python {config.worker_python!r} {problem}", hint="the interpreter on the hosts, e.g. python3"
        )


def remote_worker_command(remote: str, host: str, python: str) -> list[str]:
    """How load generator ``host`` is started: ``REMOTE HOST 'PYTHON -m autobench.bench.worker'``
    (the cluster runtime's ``--remote`` convention: the words of ``remote``, the host, then one
    command line for the remote shell)."""
    return [*shlex.split(remote), host, shlex.join([*shlex.split(python), "-m", "autobench.bench.worker"])]


# ---- clocks -------------------------------------------------------------------------
def clock_offset(pings: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """(offset, round trip) from pings ``(sent, worker clock, received)`` (parent clock for sent
    and received): the ping with the shortest round trip; offset = worker - parent."""
    if not pings:
        raise ValueError("no clock pings")
    sent, worker, received = min(pings, key=lambda p: p[2] - p[0])
    return worker - (sent + received) / 2.0, received - sent


# ---- rows ---------------------------------------------------------------------------
def row_of(rec: RequestRecord) -> list[object]:
    return [getattr(rec, name) for name in ROW_FIELDS]


def record_of(row: Sequence[object], offset: float = 0.0, index: int | None = None) -> RequestRecord:
    """A record from a worker's ``row``, its times moved to the parent's clock (- ``offset``),
    its index replaced by ``index`` (the prompt's index in the whole run) when given."""
    if len(row) != len(ROW_FIELDS):
        raise BenchError(f"a load generator sent a record of {len(row)} fields, not {len(ROW_FIELDS)}")
    values = dict(zip(ROW_FIELDS, row, strict=True))
    rec = RequestRecord(number(values["index"], "index") if index is None else index, 0)
    for name in ROW_FIELDS[1:]:
        value = values[name]
        if name in TIME_FIELDS and isinstance(value, (int, float)) and value:
            value = float(value) - offset
        if name == "gaps":
            gaps = value if isinstance(value, list) else []
            value = [float(g) for g in gaps if isinstance(g, (int, float)) and not isinstance(g, bool)]
        setattr(rec, name, value)
    return rec


def number(value: object, what: str) -> int:
    """``value`` as an int (a record's index), else BenchError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchError(f"a load generator sent {what} {value!r}, not a number")
    return int(value)


def seconds(msg: dict[str, object], key: str) -> float:
    """A message's number field ``key``."""
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchError(f"a load generator's {msg.get('t')!r} message has {key} {value!r}, not a number")
    return float(value)


@dataclass
class Report:
    """What one load generator sent: its records (its own indices) and its run's figures."""

    rows: list[list[object]] = field(default_factory=list)
    t0: float = 0.0
    t_end: float = 0.0
    cap_hit: bool = False
    cpu: float = 0.0
    lags: list[float] = field(default_factory=list)
    interrupted: bool = False
    served: list[str] | None = None
    offset: float = 0.0
    rtt: float = 0.0


@dataclass
class Merged:
    records: list[RequestRecord]
    t0: float
    t_end: float
    cap_hit: bool
    cpu: float
    lags: list[float]
    interrupted: bool


def merge(reports: Sequence[Report], indices: Sequence[Sequence[int]]) -> Merged:
    """One run from the load generators' reports (``indices[w]``: the whole run's index of each
    of worker ``w``'s prompts): every record in the parent's clock, in send order (never sent:
    last, by index); the run from the earliest start to the latest end."""
    records: list[RequestRecord] = []
    for report, idx in zip(reports, indices, strict=True):
        for row in report.rows:
            local = number(row[0], "index")
            if not 0 <= local < len(idx):
                raise BenchError(f"a load generator sent a record of prompt {local}, it had {len(idx)}")
            records.append(record_of(row, report.offset, idx[local]))
    records.sort(key=lambda r: (0, r.start, r.index) if r.start else (1, 0.0, r.index))
    return Merged(
        records=records,
        t0=min(r.t0 - r.offset for r in reports),
        t_end=max(r.t_end - r.offset for r in reports),
        cap_hit=any(r.cap_hit for r in reports),
        cpu=sum(r.cpu for r in reports),
        lags=[lag for r in reports for lag in r.lags],
        interrupted=any(r.interrupted for r in reports),
    )


# ---- messages -----------------------------------------------------------------------
def message(kind: str, **fields: object) -> bytes:
    return json.dumps({"t": kind, **fields}, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def read_message(line: bytes, expect: Iterable[str], who: str) -> dict[str, object]:
    """One message line, checked: a JSON object whose ``t`` is one of ``expect``."""
    if not line:
        raise BenchError(f"{who} ended before it answered")
    try:
        msg = json.loads(line)
    except ValueError as exc:
        raise BenchError(f"{who} sent a line that is not JSON: {line[:80]!r}") from exc
    if not isinstance(msg, dict) or msg.get("t") not in set(expect):
        raise BenchError(f"{who} sent {str(msg)[:80]!r}, expected {' or '.join(expect)}")
    if msg["t"] == "error":
        hint = msg.get("hint")
        raise BenchError(str(msg.get("message")), hint=hint if isinstance(hint, str) else None)
    return {str(k): v for k, v in msg.items()}


def prompt_row(p: Prompt) -> list[object]:
    """A prompt on the wire: ``[text, estimated tokens, max_tokens, category, later turns]``."""
    return [p.text, p.est_tokens, p.max_tokens, p.category, list(p.turns)]


def plan_message(
    cfg: BenchConfig,
    worker: int,
    workers: int,
    concurrency: int,
    prompts: Sequence[Prompt],
    warmup: Sequence[Prompt],
    arrivals: Sequence[float] | None,
    stream_tokens: int,
) -> bytes:
    return message(
        "plan",
        version=PROTOCOL_VERSION,
        worker=worker,
        workers=workers,
        config={name: getattr(cfg, name) for name in CONFIG_FIELDS} | {"concurrency": concurrency},
        prompts=[prompt_row(p) for p in prompts],
        warmup=[prompt_row(p) for p in warmup],
        arrivals=list(arrivals) if arrivals is not None else None,
        stream_tokens=stream_tokens,
    )


# ---- the parent -------------------------------------------------------------------------
class _Generator:
    """One load generator process and its pipes."""

    def __init__(self, number: int, command: Sequence[str], host: str | None = None):
        self.number = number
        self.who = f"load generator {number}" + (f" on {host}" if host else "")
        # on another host, the likely reason it ends before answering
        self.hint = "autobench must be installed there: --worker-python names that Python" if host else None
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close(), after the process
        # the worker imports the same autobench as its parent (a checkout run from its folder, too)
        root = str(Path(autobench.__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
        try:
            self.proc = subprocess.Popen(
                list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, bufsize=0, env=env
            )
        except OSError as exc:
            self.errors.close()
            raise BenchError(
                f"{self.who} could not be started: {command[0]}: {exc.strerror or exc}",
                hint="--remote names the command that reaches a host (e.g. ssh)" if host else None,
            ) from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout

    def send(self, data: bytes) -> None:
        try:
            self.stdin.write(data)
            self.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise BenchError(f"{self.who} is gone ({exc}){self.stderr_tail()}") from exc

    def read(self, *expect: str) -> dict[str, object]:
        try:
            return read_message(self.stdout.readline(), (*expect, "error"), self.who)
        except BenchError as exc:
            if "ended before" in exc.message:
                exc.message += self.stderr_tail()
                exc.hint = exc.hint or self.hint
            raise

    def stderr_tail(self) -> str:
        self.proc.poll()
        self.errors.seek(0)
        lines = self.errors.read().decode("utf-8", "replace").strip().splitlines()
        return f": {lines[-1]}" if lines else ""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errors.close()


def worker_command() -> list[str]:
    """How a local load generator is started (another host: the same over ssh)."""
    return [sys.executable, "-m", "autobench.bench.worker"]


class Generator(Protocol):
    """A load generator as the parent sees it: messages in, messages out."""

    def send(self, data: bytes) -> None: ...

    def read(self, *expect: str) -> dict[str, object]: ...

    def close(self) -> None: ...


def run_fleet(config: BenchConfig, dataset: Dataset, spawn: Callable[[int], Generator] | None = None) -> BenchResult:
    """The bench over ``config.workers`` load generators, merged into one result; ``spawn(w)``
    starts load generator ``w`` (default: a local process, :func:`worker_command`)."""
    from autobench.bench.schedule import poisson_arrivals

    n = config.workers
    remote_hosts = bool(config.worker_hosts)
    check_workers(n, config.concurrency, len(dataset.prompts), multi_turn=config.multi_turn, on_hosts=remote_hosts)
    indices = shares(len(dataset.prompts), n)
    warm = shares(len(dataset.warmup), n)
    concs = concurrency_shares(config.concurrency, n)
    arrivals = (
        poisson_arrivals(config.request_rate, len(dataset.prompts), config.seed)
        if config.request_rate is not None
        else None
    )
    stream_tokens = max((p.max_tokens for p in [*dataset.prompts, *dataset.warmup]), default=config.max_tokens)
    hosts = config.worker_hosts
    if spawn is not None:
        start_one = spawn
    elif hosts:
        remote, python = config.remote or "", config.worker_python
        start_one = lambda w: _Generator(w, remote_worker_command(remote, hosts[w], python), hosts[w])  # noqa: E731
    else:
        start_one = lambda w: _Generator(w, worker_command())  # noqa: E731
    gens: list[Generator] = []
    interrupted = threading.Event()
    old = _catch_sigint(interrupted)
    try:
        for w in range(n):
            gens.append(start_one(w))
        for w, gen in enumerate(gens):
            gen.send(
                plan_message(
                    config,
                    w,
                    n,
                    concs[w],
                    [dataset.prompts[i] for i in indices[w]],
                    [dataset.warmup[i] for i in warm[w]],
                    [arrivals[i] for i in indices[w]] if arrivals is not None else None,
                    stream_tokens,
                )
            )
        reports = [Report(served=_served(gen.read("ready"))) for gen in gens]
        before = _scrape(config) if config.scrape_metrics else None
        for gen, report in zip(gens, reports, strict=True):
            pings = []
            for _ in range(PINGS):
                sent = time.perf_counter()
                gen.send(message("ping"))
                clock = seconds(gen.read("pong"), "clock")
                pings.append((sent, clock, time.perf_counter()))
            report.offset, report.rtt = clock_offset(pings)
        start = time.perf_counter() + START_LEAD_S
        for gen, report in zip(gens, reports, strict=True):
            gen.send(message("start", at=start + report.offset))
        for gen, report in zip(gens, reports, strict=True):
            while True:
                msg = gen.read("records", "done")
                if msg["t"] == "records":
                    rows = msg.get("rows")
                    report.rows.extend(r for r in (rows if isinstance(rows, list) else []) if isinstance(r, list))
                    continue
                report.t0, report.t_end = seconds(msg, "t0"), seconds(msg, "t_end")
                report.cap_hit, report.cpu = msg.get("cap_hit") is True, seconds(msg, "cpu")
                lags = msg.get("lags")
                report.lags = [float(x) for x in lags if isinstance(x, (int, float))] if isinstance(lags, list) else []
                report.interrupted = msg.get("interrupted") is True
                break
        after = _scrape(config) if config.scrape_metrics and not interrupted.is_set() else None
    except BenchError:
        if interrupted.is_set():  # Ctrl-C before the start: the workers stopped at once, so do we
            raise KeyboardInterrupt from None
        raise
    finally:
        _restore_sigint(old)
        for gen in gens:
            gen.close()
    return _result(config, dataset, reports, indices, concs, before, after, interrupted.is_set())


def _served(msg: dict[str, object]) -> list[str] | None:
    served = msg.get("served")
    return [str(m) for m in served] if isinstance(served, list) else None


def _result(
    config: BenchConfig,
    dataset: Dataset,
    reports: list[Report],
    indices: list[list[int]],
    concs: list[int],
    before: Any,
    after: Any,
    interrupted: bool,
) -> BenchResult:
    from autobench.bench.promscrape import prefix_delta, spec_delta
    from autobench.bench.result import ClientStats, build_result
    from autobench.bench.transport import normalize_base_url

    merged = merge(reports, indices)
    for r in merged.records:
        if r.status == INFLIGHT:
            r.status = "incomplete"
    both = before is not None and after is not None
    result = build_result(
        config,
        dataset,
        merged.records,
        t0=merged.t0,
        t_end=merged.t_end,
        time_cap_hit=merged.cap_hit,
        spec=spec_delta(before, after) if both else None,
        client=ClientStats(cpu_seconds=merged.cpu, loop_lag_s=merged.lags, served_models=reports[0].served),
        base_url=normalize_base_url(config.base_url),
        prefix=prefix_delta(before, after) if both else None,
    )
    result.data["interrupted"] = merged.interrupted or interrupted
    result.data["api_key_env"] = config.api_key_env if config.auth_headers() else None
    result.data["workers"] = {
        "count": len(reports),
        "protocol": PROTOCOL_VERSION,
        "generators": [
            {
                "concurrency": concs[w],
                "prompts": len(indices[w]),
                "requests": len(r.rows),
                "cpu_seconds": r.cpu,
                "clock_offset_ms": 1000.0 * r.offset,
                "clock_round_trip_ms": 1000.0 * r.rtt,
                "start_ms": 1000.0 * (r.t0 - r.offset - merged.t0),
                "host": config.worker_hosts[w] if config.worker_hosts else None,
            }
            for w, r in enumerate(reports)
        ],
    }
    return result


def _scrape(config: BenchConfig) -> Any:
    """The server's /metrics counters (the parent's own, once before and once after)."""
    from autobench.bench.promscrape import spec_counters
    from autobench.bench.transport import ConnectFailed, Pool, normalize_base_url

    async def one() -> Any:
        pool = Pool(normalize_base_url(config.base_url), config.connect_timeout, headers=config.auth_headers())
        try:
            got = await pool.fetch("GET", "/metrics", timeout=config.connect_timeout)
        except (ConnectFailed, TimeoutError):
            return None
        finally:
            pool.close()
        if got.error is not None or got.status != 200:
            return None
        return spec_counters(got.body.decode("utf-8", "replace"))

    return asyncio.run(one())


def _catch_sigint(flag: threading.Event) -> Any:
    """Ctrl-C reaches every load generator (one process group): each stops and reports; the
    parent only notes it and waits for their records."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, lambda *_: flag.set())


def _restore_sigint(old: Any) -> None:
    if old is not None:
        signal.signal(signal.SIGINT, old)


__all__ = [
    "MAX_WORKERS",
    "PROTOCOL_VERSION",
    "ROW_FIELDS",
    "Report",
    "check_fleet",
    "check_rules",
    "check_workers",
    "clock_offset",
    "concurrency_shares",
    "merge",
    "record_of",
    "remote_worker_command",
    "row_of",
    "run_fleet",
    "shares",
]

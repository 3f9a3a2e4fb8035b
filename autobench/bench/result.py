"""The result JSON: build it from request records, and read it back (ours or vLLM's).

Field names follow ``vllm bench serve`` wherever the meaning is the same
(``duration``, ``completed``, ``failed``, ``total_input_tokens``,
``output_throughput``, ``median_ttft_ms``, ``p99_tpot_ms``,
``spec_decode_acceptance_length`` ...); autobench-only fields have their own names
(``incomplete``, ``errors_by_kind``, ``input_throughput``, ``time_cap_hit``,
``client``, ``dataset`` ...).  ``result_format`` = ``autobench.bench/1`` marks ours.

This module imports nothing heavy: ``autobench record --metrics`` uses
``load_result_json`` without pulling in the HTTP client.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench import __version__
from autobench.bench import metrics as M
from autobench.bench.record import Completed, RequestRecord, completed
from autobench.bench.samples_of import dispatch_delay_ms, samples_of
from autobench.digits import load_json
from autobench.errors import BenchError
from autobench.files import read_regular
from autobench.metric_catalogue import BURST_TOKENS_PER_CHUNK, FEW_SAMPLES, Metric
from autobench.metric_catalogue import METRICS as CATALOGUE
from autobench.samples import Samples

if TYPE_CHECKING:
    from autobench.bench.client import BenchConfig
    from autobench.bench.datasets import Dataset

RESULT_FORMAT = "autobench.bench/1"

#: The normalized keys of a result: every metric of the catalogue read from a result
#: (``autobench.metric_catalogue``), and ``tokenizer`` (what measured the prompt lengths).
NORMALIZED_KEYS: tuple[str, ...] = (*(m.key for m in CATALOGUE if m.result is not None), "tokenizer")


@dataclass
class ClientStats:
    cpu_seconds: float
    loop_lag_s: list[float] = field(default_factory=list)
    served_models: list[str] | None = None


@dataclass
class BenchResult:
    """The result dict (what ``--result`` writes) and, for a run of our own client, the raw
    per-request samples it was computed from (``None`` for a result read back from a file)."""

    data: dict[str, object]
    samples: Samples | None = None

    def to_json_dict(self) -> dict[str, object]:
        return self.data

    @property
    def tokenizer_id(self) -> str | None:
        """What measured the prompt lengths: ``repo@sha``, ``path@sha256:...`` or ``estimated``."""
        value = self.data.get("tokenizer_id")
        return value if isinstance(value, str) else None

    @property
    def dataset_id(self) -> str | None:
        """The dataset file the prompts came from and its sha256: ``repo@sha:file sha256:<hex>``
        for a Hub dataset, ``<path> sha256:<hex>`` for a local file; None for random prompts or
        a result that does not say (vLLM's)."""
        ds = self.data.get("dataset")
        if not isinstance(ds, dict) or not isinstance(ds.get("file_sha256"), str):
            return None
        digest = f"sha256:{ds['file_sha256']}"
        if isinstance(ds.get("repo"), str):
            return f"{ds['repo']}@{ds.get('revision')}:{ds.get('file')} {digest}"
        return f"{ds.get('path')} {digest}"

    def normalized(self) -> dict[str, object]:
        return normalize(self.data, source="result")

    def write(self, path: str | Path) -> None:
        p = Path(path)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_text(json.dumps(self.data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
            tmp.replace(p)
        except OSError as exc:
            raise BenchError(f"cannot write result: {exc.strerror or exc}", location=str(p)) from exc


def _ms_stats(name: str, values: list[float]) -> dict[str, float | None]:
    s = M.summarize(values, scale=1000.0)
    return {f"{k}_{name}_ms": v for k, v in s.items()}


def build_result(
    cfg: BenchConfig,
    ds: Dataset,
    records: list[RequestRecord],
    *,
    t0: float,
    t_end: float,
    time_cap_hit: bool,
    spec: M.SpecDecodeDelta | None,
    client: ClientStats,
    base_url: str,
    prefix: M.PrefixCacheDelta | None = None,
) -> BenchResult:
    """Aggregate request records into the result dict (statistics over successful requests
    only), section by section: the run's settings, totals, latencies, speculative decoding,
    the dataset and the client's own costs."""
    ok = completed(records)
    duration = t_end - t0
    data: dict[str, Any] = {
        **_settings(cfg, ds, base_url),
        **_totals(cfg, records, ok, duration, time_cap_hit),
        **_latencies(records, ok),
        **_goodput(getattr(cfg, "slo", None), ok, duration),
    }
    sd = M.spec_decode_metrics(spec) if spec is not None else None
    data["spec_decode_available"] = sd is not None
    if sd is not None:
        data.update(sd)
    if prefix is not None:
        data.update(M.prefix_cache_metrics(prefix))
    data["dataset"] = _dataset(ds)
    if getattr(cfg, "category", None) is not None:  # the one category this bench sent
        data["dataset"]["category"] = cfg.category
    data["client"] = _client(client, records, ok, duration, data["total_output_tokens"], t0)
    lag_p99 = data["client"]["loop_lag_ms"]["p99"]
    cpu_frac = data["client"]["cpu_fraction_of_one_core"]
    delay_p99 = (data["client"]["dispatch_delay_after_start_ms"] or {}).get("p99")
    # A CPU fraction needs a window to mean anything: over a run of a few ms (every request
    # refused, say) start-up work alone reads as a busy core.
    cpu_judged = duration >= MIN_CPU_WINDOW_S
    # The same for the loop lag: over a few ms its p99 is one sample, and one scheduler hiccup
    # on a busy machine read as a busy client (a run whose requests were all refused at once).
    data["client_bound_warning"] = bool(
        cpu_judged
        and (
            (lag_p99 is not None and lag_p99 > CLIENT_LAG_P99_MS)
            or (cpu_frac is not None and cpu_frac > CLIENT_CPU_FRACTION)
            or (delay_p99 is not None and delay_p99 > CLIENT_DISPATCH_P99_MS)
        )
    )
    data["quality_flags"] = quality_flags(data)
    return BenchResult(_finite(data), samples=samples_of(records, t0))


def _settings(cfg: BenchConfig, ds: Dataset, base_url: str) -> dict[str, Any]:
    """What was asked for: the server, the model, the sampling, the limits (vLLM's names)."""
    rate = cfg.request_rate
    return {
        "result_format": RESULT_FORMAT,
        "autobench_version": __version__,
        "date": _dt.datetime.now().strftime("%Y%m%d-%H%M%S"),
        "backend": "openai-chat" if cfg.endpoint == "chat" else "openai",
        "endpoint_type": "openai-chat" if cfg.endpoint == "chat" else "openai",
        "label": cfg.label,
        "base_url": base_url,
        "endpoint": cfg.endpoint,
        "model_id": cfg.model,
        "tokenizer_id": getattr(ds, "tokenizer", "estimated"),
        "tokenizer_fallback": getattr(ds, "tokenizer_fallback", None),
        "num_prompts": cfg.num_prompts,
        "request_rate": "inf" if rate is None else rate,
        "burstiness": 1.0,
        "max_concurrency": cfg.concurrency,
        "max_tokens": cfg.max_tokens,
        "sampling": {k: getattr(cfg, k) for k in ("temperature", "top_p", "top_k", "presence_penalty")},
        "ignore_eos": cfg.ignore_eos,
        "seed": cfg.seed,
        "warmup": len(ds.warmup),
        "max_seconds": cfg.max_seconds,
        "grace_seconds": cfg.grace_seconds,
        "in_flight_policy": "drain within grace, then cancel (incomplete)",
    }


def _totals(
    cfg: BenchConfig, records: list[RequestRecord], ok: list[Completed], duration: float, time_cap_hit: bool
) -> dict[str, Any]:
    """Counts, errors, tokens and throughputs (vLLM's names)."""
    errs = [r for r in records if r.status == "error"]
    incomplete = [r for r in records if r.status == "incomplete"]
    total_in = sum(r.prompt_tokens for r in ok)
    total_out = sum(r.completion_tokens for r in ok)
    chunks = sum(r.n_chunks for r in ok)
    by_kind = Counter(r.error_kind for r in errs)
    samples: dict[str, str] = {}
    for r in errs:
        if r.error_kind is not None:  # (every failed request has one: RequestRecord.fail)
            samples.setdefault(r.error_kind, r.error_message or "")
    return {
        "duration": duration,
        "completed": len(ok),
        "failed": len(errs),
        "incomplete": len(incomplete),
        "dispatched": len(records),
        "not_dispatched": cfg.num_prompts - len(records),
        "time_cap_hit": time_cap_hit,
        "errors_by_kind": dict(sorted(by_kind.items())),
        "error_samples": samples,
        "usage_fallback_requests": sum(1 for r in ok if r.usage_fallback),
        "total_input_tokens": total_in,
        "min_input_tokens": min((r.prompt_tokens for r in ok), default=None),
        "max_input_tokens": max((r.prompt_tokens for r in ok), default=None),
        "total_output_tokens": total_out,
        "request_throughput": M.throughput(len(ok), duration),
        "input_throughput": M.throughput(total_in, duration),
        "output_throughput": M.throughput(total_out, duration),
        "total_token_throughput": M.throughput(total_in + total_out, duration),
        "mean_tokens_per_chunk": (total_out / chunks) if chunks else None,
        "token_chunks": chunks,
        "itl_samples": sum(len(r.gaps) for r in ok),
        # ITL samples that are a share of one read's gap, and token events with no gap measured
        # (in the first token's read): autobench.bench.stream
        "itl_shared_samples": sum(r.shared_gaps for r in ok),
        "itl_unseen_gaps": sum(r.unseen_gaps for r in ok),
        "finish_reasons": dict(Counter(r.finish_reason or "none" for r in ok)),
    }


def _goodput(slo: dict[str, float] | None, ok: list[Completed], duration: float) -> dict[str, Any]:
    """The SLOs, the requests meeting all of them and their rate (vLLM's ``request_goodput``)."""
    if not slo:
        return {"slo": None, "good_requests": None, "request_goodput": None}
    from autobench.bench.slo import is_good

    good = 0
    for r in ok:
        t = M.RequestTiming(r.start, r.first, r.last, r.completion_tokens)
        per_token = M.tpot(t)
        good += is_good(slo, 1000 * M.ttft(t), None if per_token is None else 1000 * per_token, 1000 * M.e2el(t))
    return {"slo": dict(slo), "good_requests": good, "request_goodput": M.throughput(good, duration)}


def _latencies(records: list[RequestRecord], ok: list[Completed]) -> dict[str, Any]:
    """TTFT, TPOT, ITL and end-to-end latency statistics (ms), and the client queue time."""
    timings = [M.RequestTiming(r.start, r.first, r.last, r.completion_tokens) for r in ok]
    out: dict[str, Any] = {}
    out.update(_ms_stats("ttft", [M.ttft(t) for t in timings]))
    out.update(_ms_stats("tpot", [v for v in (M.tpot(t) for t in timings) if v is not None]))
    out.update(_ms_stats("itl", [g for r in ok for g in r.gaps]))
    out.update(_ms_stats("e2el", [M.e2el(t) for t in timings]))
    queue = [r.start - r.arrival for r in records if r.arrival is not None and r.start]
    if queue:
        out.update(_ms_stats("client_queue_time", queue))
    return out


def _dataset(ds: Dataset) -> dict[str, Any]:
    return {
        "kind": ds.kind,
        "path": ds.path,
        "available": ds.available,
        "skipped": dict(ds.skipped),
        "reused": ds.reused,
        "prompts_sha256": ds.fingerprint(),
        **getattr(ds, "context", {}),
        **_origin(ds),
    }


def _origin(ds: Dataset) -> dict[str, Any]:
    """Where the dataset file came from (autobench.bench.source): a Hub dataset's ``repo``,
    ``revision`` (its commit) and ``file``, and the file's ``file_sha256``; a local file's sha256
    alone.  Nothing for random prompts."""
    origin = getattr(ds, "origin", None)
    if origin is None:
        return {}
    if origin.repo is None:
        return {"file_sha256": origin.sha256}
    return {"repo": origin.repo, "revision": origin.sha, "file": origin.file, "file_sha256": origin.sha256}


def _client(
    client: ClientStats,
    records: list[RequestRecord],
    ok: list[Completed],
    duration: float,
    total_out: int,
    t0: float = 0.0,
) -> dict[str, Any]:
    """What the client itself cost and how far its timing can be trusted."""
    srv_lag = [r.first - r.first_srv for r in ok if isinstance(r.first_srv, float)]
    send_path = [r.arr_srv - r.start for r in ok if isinstance(r.arr_srv, float)]
    # Against the synthetic server: the TTFT it observed itself (arrival -> first chunk sent), and
    # the client's own share of the measured TTFT (send path + receive path), free of server timing.
    timed = [
        (r.start, r.first, r.first_srv, r.arr_srv)
        for r in ok
        if isinstance(r.first_srv, float) and isinstance(r.arr_srv, float)
    ]
    srv_ttft = [first_srv - arr_srv for _, _, first_srv, arr_srv in timed]
    ttft_client = [(first - start) - (first_srv - arr_srv) for start, first, first_srv, arr_srv in timed]
    pre_write = [r.start - r.dispatch for r in records if r.dispatch and r.start >= r.dispatch]
    delays = [d for d in map(dispatch_delay_ms, records) if d is not None]
    # The budget judges the requests due after the start: a closed loop's first C are all due at
    # t0 and no client writes C requests in one instant (that ramp is in no latency: TTFT starts at
    # the write); they are in dispatch_delay_ms, not in the judged figure.
    steady = [d for r in records if r.scheduled > t0 + START_SLACK_S and (d := dispatch_delay_ms(r)) is not None]
    adherence = [r.start - r.arrival for r in records if r.arrival is not None and r.start]
    # Against the synthetic server: from when a request was due to when the server read it (the
    # dispatch delay plus the send path, from the server's own stamp: a check on the delay).
    due_to_arrival = [r.arr_srv - r.scheduled for r in records if isinstance(r.arr_srv, float) and r.scheduled]
    lags = client.loop_lag_s
    return {
        "cpu_seconds": client.cpu_seconds,
        "cpu_ms_per_1k_tokens": (1e6 * client.cpu_seconds / total_out) if total_out else None,
        "cpu_fraction_of_one_core": client.cpu_seconds / duration if duration > 0 else None,
        "loop_lag_ms": {k: v for k, v in M.summarize(lags, 1000.0).items()}
        | ({"max": 1000.0 * max(lags)} if lags else {"max": None}),
        "first_token_recv_minus_send_ms": M.summarize(srv_lag, 1000.0) if srv_lag else None,
        "send_to_server_arrival_ms": M.summarize(send_path, 1000.0) if send_path else None,
        "server_ttft_ms": M.summarize(srv_ttft, 1000.0) if srv_ttft else None,
        "ttft_client_error_ms": M.summarize(ttft_client, 1000.0) if ttft_client else None,
        "dispatch_to_write_ms": M.summarize(pre_write, 1000.0) if pre_write else None,
        "dispatch_delay_ms": M.summarize(delays) if delays else None,
        "dispatch_delay_after_start_ms": M.summarize(steady) if steady else None,
        "dispatch_delay_budget_ms": CLIENT_DISPATCH_P99_MS,
        "schedule_adherence_ms": M.summarize(adherence, 1000.0) if adherence else None,
        "due_to_server_arrival_ms": M.summarize(due_to_arrival, 1000.0) if due_to_arrival else None,
        "served_models": client.served_models,
    }


#: Shortest measured run whose client CPU fraction feeds ``client_bound_warning``.
MIN_CPU_WINDOW_S = 1.0
#: The client was the bottleneck (``client_bound_warning``, the ``client_bound`` metric) when,
#: over a measured run of at least MIN_CPU_WINDOW_S, its event loop lagged more than this at
#: p99 (ms) or it used more than this fraction of one core (docs/bench.md).
CLIENT_LAG_P99_MS = 5.0
CLIENT_CPU_FRACTION = 0.75
#: ... or its requests left more than this late at p99 (ms): the dispatch delay, from when a
#: request was due (its closed-loop worker free, its arrival in rate mode) to its write
#: (``client.dispatch_delay_after_start_ms``: the requests not due at t0; in rate mode the schedule
#: adherence less any wait for a slot).
CLIENT_DISPATCH_P99_MS = 2.0
#: A request due within this of t0 (s) is one of the start's burst (not judged; a load generator's
#: start moved to the parent's clock may differ from t0 by float rounding).
START_SLACK_S = 1e-6


def quality_flags(d: Mapping[str, object]) -> dict[str, str]:
    """The quality flags a result's own fields raise (``autobench.metric_catalogue.FLAGS``), each
    with why: ours states every field used; a ``vllm bench serve`` result only some of them (no
    tokenizer fallback, no chunk count), so it raises fewer.  ``no_drafts`` needs the recipe:
    ``autobench.runrow`` adds it."""
    flags: dict[str, str] = {}
    if d.get("tokenizer_id") == "estimated":
        flags["prompts_estimated"] = str(d.get("tokenizer_fallback") or "asked for: --tokenizer estimated")
    per_chunk = d.get("mean_tokens_per_chunk")
    per_step = _tokens_per_step(d)
    if isinstance(per_chunk, int | float) and per_chunk > BURST_TOKENS_PER_CHUNK * per_step:
        flags["burst_stream"] = f"{per_chunk:.2f} tokens per chunk" + (
            f" against {per_step:.2f} per speculative-decoding step" if per_step > 1 else ""
        )
    else:
        zeros = [name for name in ("tpot", "itl") if d.get(f"median_{name}_ms") == 0]
        if zeros and d.get("completed"):
            zero = " and ".join(f"{n.upper()} median 0 ms" for n in zeros)
            flags["burst_stream"] = f"{zero}: tokens arrived together"
    if d.get("client_bound_warning") is True:
        raw = d.get("client")
        client: dict[str, Any] = raw if isinstance(raw, dict) else {}
        lag = (client.get("loop_lag_ms") or {}).get("p99")
        cpu = client.get("cpu_fraction_of_one_core")
        delay = (client.get("dispatch_delay_after_start_ms") or {}).get("p99")
        bits = [f"event-loop lag p99 {lag:.1f} ms" if isinstance(lag, int | float) else None]
        bits.append(f"{cpu:.0%} of a core" if isinstance(cpu, int | float) else None)
        bits.append(f"dispatch delay p99 {delay:.1f} ms" if isinstance(delay, int | float) else None)
        flags["client_bound"] = ", ".join(b for b in bits if b) or "the client was busy"
    if d.get("time_cap_hit") is True:
        cap = d.get("max_seconds")
        done, asked = d.get("completed"), d.get("num_prompts")
        flags["time_capped"] = (f"max_seconds {cap:g}: " if isinstance(cap, int | float) else "") + (
            f"{done} of {asked} prompts completed"
        )
    done = d.get("completed")
    if isinstance(done, int) and not isinstance(done, bool) and 0 < done < FEW_SAMPLES:
        flags["few_samples"] = f"{done} requests completed"
    return flags


def _tokens_per_step(d: Mapping[str, object]) -> float:
    """Tokens one request gains per engine step: 1, or under speculative decoding the acceptance
    length the server's /metrics gave (``1 + accepted / drafts``, vllm/v1/spec_decode/metrics.py).
    vLLM streams what a request gained in a step as one chunk (vllm/v1/engine/output_processor.py,
    stream interval 1), so a spec-decode stream carries that many tokens per chunk by design: only
    chunks well beyond it are bursts."""
    length = d.get("spec_decode_acceptance_length")
    if isinstance(length, int | float) and math.isfinite(length):
        return max(1.0, float(length))
    return 1.0


def _finite(obj: Any) -> Any:
    """Replace NaN/inf floats by None so the JSON is strict."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    return obj


# ---- reading results back ----------------------------------------------------


def _num(d: dict[str, Any], key: str, where: str) -> float | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BenchError(f"field {key!r} must be a number, got {type(v).__name__}", location=where)
    f = float(v)
    return f if math.isfinite(f) else None


def _int(d: dict[str, Any], key: str, where: str) -> int | None:
    v = _num(d, key, where)
    return None if v is None else int(v)


def _read(d: dict[str, Any], m: Metric, where: str) -> Any:
    """Metric ``m`` from result dict ``d`` (its field ``m.result``), by the metric's kind."""
    assert m.result is not None
    if m.kind == "float":
        v = _num(d, m.result, where)
        return v if v is None or m.divide_by == 1.0 else v / m.divide_by
    if m.kind == "int":
        value = d.get(m.result)
        if m.key == "concurrency":  # vLLM writes null (or omits it) for unbounded concurrency
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        return _int(d, m.result, where)
    if m.kind == "bool":
        value = d.get(m.result)
        return value if isinstance(value, bool) else None
    if m.kind == "flags":  # stated by ours; else raised from the fields the result has
        value = d.get(m.result)
        if value is None:
            return quality_flags(d) or None
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise BenchError(f"field {m.result!r} must map flag names to text", location=where)
        return dict(value) or None
    values = d.get(m.result)
    if values is None:
        return None
    if not isinstance(values, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        raise BenchError(f"field {m.result!r} must be a list of numbers", location=where)
    return [float(x) if m.divide_by == 1.0 else float(x) / m.divide_by for x in values]


def normalize(d: object, source: str = "result") -> dict[str, object]:
    """Normalized metrics (see NORMALIZED_KEYS) from an autobench or ``vllm bench serve`` result
    dict: each catalogue metric read from its field (``Metric.result``), None when the field is
    missing or the metric is one only our result states."""
    if not isinstance(d, dict):
        raise BenchError(f"result must be a JSON object, got {type(d).__name__}", location=source)
    ours = d.get("result_format") == RESULT_FORMAT
    if not ours and not ("completed" in d and ("output_throughput" in d or "duration" in d)):
        raise BenchError(
            "not a benchmark result: expected autobench's result JSON or vllm bench serve's "
            "(fields 'completed', 'duration', 'output_throughput')",
            location=source,
        )
    out: dict[str, Any] = {}
    for m in CATALOGUE:
        if m.result is None:
            continue
        filled = "autobench" in m.sources if ours else "vllm" in m.sources
        out[m.key] = _read(d, m, source) if filled else None
    if out["prefill_tok_s"] is None:  # vLLM states no input throughput: total - output, or tokens / time
        total_tp, out_tp, duration = out["total_tok_s"], out["decode_tok_s"], out["duration_s"]
        if total_tp is not None and out_tp is not None:
            out["prefill_tok_s"] = total_tp - out_tp
        else:
            tin = _num(d, "total_input_tokens", source)
            out["prefill_tok_s"] = tin / duration if tin is not None and duration else None
    # ours: "repo@sha", "path@sha256:...", "estimated"; vllm bench serve: the tokenizer it loaded
    out["tokenizer"] = d["tokenizer_id"] if isinstance(d.get("tokenizer_id"), str) else None
    return out


#: A result file's size limit: ``vllm bench serve --save-detailed`` keeps every request's ITLs,
#: tens of MB for a long run; a file far beyond that is not a result (``/dev/zero``, a log).
MAX_RESULT_BYTES = 256 * 2**20


def load_result_json(path: str | Path) -> dict[str, object]:
    """Read an autobench or ``vllm bench serve`` result file; return normalized metrics.

    Missing metrics are None (never 0).  A file that is not JSON or has the wrong
    shape raises BenchError (one line, with the file).
    """
    p = str(path)
    raw = read_regular(path, what="result file", limit=MAX_RESULT_BYTES, error=BenchError)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BenchError(f"result file is not UTF-8 text (byte {exc.start})", location=p) from exc
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise BenchError(
            f"result file is not JSON: {exc.msg}",
            location=f"{p}:{exc.lineno}:{exc.colno}",
            hint="pass the JSON written by autobench bench --result or vllm bench serve --save-result",
        ) from exc
    return normalize(data, source=p)

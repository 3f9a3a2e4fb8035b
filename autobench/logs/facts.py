"""Boot facts, engine stats and spec-decode metrics: the patterns and their parsers.

Every pattern copies the wording of a vLLM log call (V0 and V1 generations; the
source string is quoted next to each).  A fact is set from the FIRST record that
states it (tensor-parallel workers repeat the same line) and remembers the
physical line it came from.  Nothing is derived that the log does not say,
except unit conversions documented in docs/logs.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import add, itemgetter
from typing import Any

_NUM = r"(\d{1,20}(?:\.\d{1,20})?)"  # every quantifier bounded: autobench.logs.linear


def _f(s: str) -> float:
    return float(s)


def _i(s: str) -> int:
    return int(s.replace(",", ""))


Setter = Callable[[re.Match[str]], dict[str, Any]]


@dataclass(frozen=True)
class FactPattern:
    """A regex over a record's message plus the facts one match states."""

    needle: str  # cheap substring that must be present before the regex runs
    regex: re.Pattern[str]
    facts: Setter
    keys: tuple[str, ...]  # every fact a match can set: once all are known the pattern is done


class _EveryGroup:
    """Stands in for a match in which every group matched "1": ``facts`` then returns
    every key it can ever set (optional groups only ever add keys)."""

    def __getitem__(self, group: int) -> str:
        return "1"


def _p(needle: str, regex: str, facts: Setter) -> FactPattern:
    return FactPattern(needle, re.compile(regex), facts, tuple(facts(_EveryGroup())))  # type: ignore[arg-type]


BOOT_PATTERNS: list[FactPattern] = [
    # api_server.py: "vLLM API server version %s"
    _p("server version", r"vLLM API server version (\S{1,128})", lambda m: {"vllm_version": m[1]}),
    # llm_engine.py / core.py: "Initializing a V1 LLM engine (v%s) with config"
    _p("LLM engine (v", r"Initializing an? (?:V\d )?LLM engine \(v([^)\s]{1,128})\)", lambda m: {"vllm_version": m[1]}),
    # the ASCII-art banner (>= 0.11): "█▄█▀ █     █     █     █  version 0.19.1rc1..."
    _p("version", r"[█▀▄]\s{1,64}version (\d\S{0,128})", lambda m: {"vllm_version": m[1]}),
    # config/model.py: "Resolved architecture: %s"
    _p("Resolved architecture", r"Resolved architecture: (\w{1,256})", lambda m: {"architecture": m[1]}),
    # config: "Using max model len %s"
    _p("max model len", r"Using max model len (\d{1,20})", lambda m: {"max_model_len": _i(m[1])}),
    # model runner: "Model loading took %.4f GiB and %.6f seconds" (V0 said "GB",
    # later "GiB memory and"); the value was always bytes / 2**30.
    _p(
        "Model loading took",
        r"Model loading took " + _NUM + r" Gi?B(?: memory)? and " + _NUM + r" s",
        lambda m: {"model_load_gib": _f(m[1]), "model_load_s": _f(m[2])},
    ),
    # V0 <= 0.6: "Loading model weights took %.4f GB"
    _p(
        "Loading model weights took",
        r"Loading model weights took " + _NUM + r" Gi?B",
        lambda m: {"model_load_gib": _f(m[1])},
    ),
    # default_loader.py: "Loading weights took %.2f seconds"
    _p("Loading weights took", r"Loading weights took " + _NUM + r" s", lambda m: {"weights_load_s": _f(m[1])}),
    # monitor.py: "torch.compile takes %.2f s in total" / "torch.compile took %.2f s in total"
    _p(
        "torch.compile t",
        r"torch\.compile (?:takes|took) " + _NUM + r" s in total",
        lambda m: {"torch_compile_s": _f(m[1])},
    ),
    # gpu_worker.py: "Available KV cache memory: %.2f GiB"
    _p(
        "Available KV cache memory",
        r"Available KV cache memory: " + _NUM + r" GiB",
        lambda m: {"kv_cache_gib": _f(m[1])},
    ),
    # CPU backend cpu_worker.py: "Auto set (%.2f/%.2f) GiB for KV cache on node %d, ..." /
    # "Explicitly set (%.2f/%.2f) GiB for KV cache on node %d." (KV space / node memory)
    _p(
        "GiB for KV cache",
        r"(?:Auto|Explicitly) set \(" + _NUM + r"/" + _NUM + r"\) GiB for KV cache",
        lambda m: {"kv_cache_gib": _f(m[1])},
    ),
    # CPU platform (0.9-0.11): "VLLM_CPU_KVCACHE_SPACE not set. Using %.2f GiB for KV cache."
    _p("GiB for KV cache", r"Using " + _NUM + r" GiB for KV cache", lambda m: {"kv_cache_gib": _f(m[1])}),
    # V0 worker.py: "... the rest of the memory reserved for KV Cache is %.2fGiB."
    _p("reserved for KV Cache", r"reserved for KV Cache is " + _NUM + r" ?GiB", lambda m: {"kv_cache_gib": _f(m[1])}),
    # V0 0.6 worker.py: "Memory profiling results: ... kv_cache_size=%.2fGiB"
    _p("kv_cache_size=", r"\bkv_cache_size=" + _NUM + r"GiB", lambda m: {"kv_cache_gib": _f(m[1])}),
    # kv_cache_utils.py: "GPU KV cache size: %s tokens" (CPU backend: "CPU KV cache size")
    _p(
        "KV cache size:",
        r"\b(GPU|CPU|XPU|TPU) KV cache size: ([\d,]{1,32}) tokens",
        lambda m: {"kv_cache_tokens": _i(m[2]), "kv_cache_device": m[1]},
    ),
    # "Maximum concurrency for %s tokens per request: %.2fx" (both generations)
    _p(
        "Maximum concurrency",
        r"Maximum concurrency for ([\d,]{1,32}) tokens per request: " + _NUM + r"x",
        lambda m: {"max_concurrency_tokens": _i(m[1]), "max_concurrency": _f(m[2])},
    ),
    # V0 executor_base.py: "# GPU blocks: %d, # CPU blocks: %d" ("# cuda blocks", "# rocm blocks")
    _p("blocks:", r"# (?:GPU|cuda|rocm|npu|xpu) blocks: (\d{1,20})", lambda m: {"num_gpu_blocks": _i(m[1])}),
    _p("CPU blocks:", r"# CPU blocks: (\d{1,20})", lambda m: {"num_cpu_blocks": _i(m[1])}),
    # platforms/interface.py (hybrid models):
    # "Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size."
    _p(
        "attention block size",
        r"Setting attention block size to (\d{1,20}) tokens",
        lambda m: {"attention_block_size": _i(m[1])},
    ),
    # "Padding mamba page size by %.2f%% to ensure that mamba page size and attention page size are exactly equal."
    _p(
        "Padding mamba page size",
        r"Padding mamba page size by " + _NUM + r"%",
        lambda m: {"mamba_padding_pct": _f(m[1])},
    ),
    # MoE oracles: "Using 'MARLIN' WNA16 MoE backend." / "Using MARLIN WNA16 MoE backend"
    _p(
        "MoE backend",
        r"Using '?([A-Z][A-Z0-9_]{0,64})'?(?: (\w{1,64}))? MoE backend",
        lambda m: {"moe_backend": f"{m[1]} {m[2]}" if m[2] else m[1]},
    ),
    # attention selectors: "Using FLASH_ATTN attention backend out of potential backends: [...]",
    # "Using AttentionBackendEnum.FLASH_ATTN backend.", "Using Flash Attention backend." (V0)
    _p(
        "backend",
        r"Using (?:AttentionBackendEnum\.|_Backend\.)?([A-Z][A-Z0-9_]{1,64}|Flash Attention|FlashInfer"
        r"|XFormers|Torch SDPA|ROCmFlashAttention|PallasAttention|Triton) (?:attention )?backend\b(?! for)",
        lambda m: {"attention_backend": m[1]},
    ),
    # mixed-precision kernels: "Selected %s for %s" (>= 0.11), "Using %s for %s" (0.6-0.10)
    _p("LinearKernel", r"(?:Selected|Using) (\w{1,128}LinearKernel)\b", lambda m: {"linear_kernel": m[1]}),
    # gpu_model_runner.py: "Graph capturing finished in %.0f secs, took %.2f GiB"
    _p(
        "Graph capturing finished",
        r"Graph capturing finished in " + _NUM + r" secs?(?:, took " + _NUM + r" GiB)?",
        lambda m: {"cuda_graph_s": _f(m[1]), **({"cuda_graph_gib": _f(m[2])} if m[2] else {})},
    ),
    # core.py: "init engine (profile, create kv cache, warmup model) took %.2f seconds"
    # (>= 0.2x: "took %.2f s (compilation: %.2f s)")
    _p(
        "init engine",
        r"init engine \(profile, create kv cache, warmup model\) took " + _NUM + r" s",
        lambda m: {"engine_init_s": _f(m[1])},
    ),
]

BOOT_KEYS: tuple[str, ...] = (
    "vllm_version",
    "architecture",
    "max_model_len",
    "model_load_gib",
    "model_load_s",
    "weights_load_s",
    "torch_compile_s",
    "kv_cache_tokens",
    "kv_cache_device",
    "kv_cache_gib",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "max_concurrency",
    "max_concurrency_tokens",
    "attention_block_size",
    "mamba_padding_pct",
    "attention_backend",
    "linear_kernel",
    "moe_backend",
    "cuda_graph_s",
    "cuda_graph_gib",
    "engine_init_s",
    "ready",
)

# --- engine stats -----------------------------------------------------------------
# V1 loggers.py: "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput:
#   %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%,
#   Prefix cache hit rate: %.1f%%"
# V0 metrics.py: "... Running: %d reqs, Swapped: %d reqs, Pending: %d reqs,
#   GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%."
STATS_NEEDLE = "Avg prompt throughput"
#
# Possessive quantifiers (``++``, ``?+``; Python >= 3.11) make it ~40% faster on the
# millions of stats lines of a long log and match exactly what the greedy form would:
# every number is followed by a non-digit literal, an optional "s" / "Swapped: ..."
# is followed by text that cannot start with what it would give back, and the
# trailing optional fields can always match empty, so the greedy path is the only
# one that can succeed.
_PNUM = r"(\d{1,20}+(?:\.\d{1,20}+)?+)"
STATS = re.compile(
    r"Avg prompt throughput: "
    + _PNUM
    + r" tokens/s, Avg generation throughput: "
    + _PNUM
    + r" tokens/s, Running: (\d{1,20}+) reqs?+, (?:Swapped: (\d{1,20}+) reqs?+, )?+"
    r"(?:Pending|Waiting): (\d{1,20}+) reqs?+"
    r"(?:, GPU KV cache usage: " + _PNUM + r"%)?+(?:, CPU KV cache usage: " + _PNUM + r"%)?+"
    r"(?:, Prefix cache hit rate: " + _PNUM + r"%)?+"
)
# The same over raw bytes; no part of it can match a newline, so findall over many
# joined lines finds exactly the matches of each line, in order.
STATS_BYTES = re.compile(STATS.pattern.encode())


def _floats(column: list[bytes]) -> list[float]:
    """float() of every value; stats columns repeat values a lot (idle 0.0, the same
    KV usage), so each distinct value is converted once when that saves work."""
    distinct = set(column)
    if 4 * len(distinct) > len(column):
        return list(map(float, column))
    value = {v: float(v) for v in distinct}
    return list(map(value.__getitem__, column))


@dataclass
class StatsSummary:
    """Summary of the periodic engine-stats lines (see docs/logs.md)."""

    samples: int = 0
    active_samples: int = 0  # samples with prompt or generation throughput > 0
    prompt_tps_sum: float = 0.0
    gen_tps_sum: float = 0.0
    prompt_tps_max: float = 0.0
    gen_tps_max: float = 0.0
    running_max: int = 0
    waiting_max: int = 0
    swapped_max: int | None = None
    kv_usage_pct_max: float | None = None
    prefix_cache_hit_rate_pct_last: float | None = None
    first_line: int | None = None
    last_line: int | None = None

    def add(self, m: re.Match[str] | re.Match[bytes], line: int) -> None:
        prompt, gen = float(m[1]), float(m[2])
        self.samples += 1
        if prompt > 0 or gen > 0:
            self.active_samples += 1
            self.prompt_tps_sum += prompt
            self.gen_tps_sum += gen
        self.prompt_tps_max = max(self.prompt_tps_max, prompt)
        self.gen_tps_max = max(self.gen_tps_max, gen)
        self.running_max = max(self.running_max, int(m[3]))
        if m[4] is not None:
            self.swapped_max = max(self.swapped_max or 0, int(m[4]))
        self.waiting_max = max(self.waiting_max, int(m[5]))
        # the CPU backend logs only "CPU KV cache usage" (V0 logged it after the GPU column)
        kv_text = m[6] if m[6] is not None else m[7]
        if kv_text is not None:
            kv = float(kv_text)
            self.kv_usage_pct_max = kv if self.kv_usage_pct_max is None else max(self.kv_usage_pct_max, kv)
        if m[8] is not None:
            self.prefix_cache_hit_rate_pct_last = float(m[8])
        if self.first_line is None:
            self.first_line = line
        self.last_line = line

    def add_rows(self, rows: Sequence[tuple[bytes, ...]], first_line: int, last_line: int) -> None:
        """The same as :meth:`add` for each row of ``STATS_BYTES.findall`` in order (the
        rows came from lines ``first_line`` .. ``last_line``), without a Python step per
        row: columns are converted with map() and folded with C-level max/reduce.  Sums
        are folded left to right exactly as :meth:`add` does, so the two agree bit for bit
        (an idle sample adds 0.0, which leaves a sum unchanged)."""
        if not rows:
            return
        prompt = _floats(list(map(itemgetter(0), rows)))
        gen = _floats(list(map(itemgetter(1), rows)))
        self.samples += len(rows)
        self.active_samples += len(rows) - list(map(add, prompt, gen)).count(0.0)  # values are >= 0
        self.prompt_tps_sum = reduce(add, prompt, self.prompt_tps_sum)
        self.gen_tps_sum = reduce(add, gen, self.gen_tps_sum)
        self.prompt_tps_max = max(self.prompt_tps_max, max(prompt))
        self.gen_tps_max = max(self.gen_tps_max, max(gen))
        self.running_max = max(self.running_max, max(map(int, set(map(itemgetter(2), rows)))))
        # findall gives b"" for a group that did not match
        swapped = [v for v in map(itemgetter(3), rows) if v]
        if swapped:
            self.swapped_max = max(self.swapped_max or 0, max(map(int, set(swapped))))
        self.waiting_max = max(self.waiting_max, max(map(int, set(map(itemgetter(4), rows)))))
        kv = [v for v in map(itemgetter(5), rows) if v]
        if len(kv) < len(rows):  # rows without a GPU column: the CPU backend's column counts
            kv += [r[6] for r in rows if not r[5] and r[6]]
        if kv:
            top = max(map(float, set(kv)))
            prev = self.kv_usage_pct_max
            self.kv_usage_pct_max = top if prev is None else max(prev, top)
        for row in reversed(rows):
            if row[7]:
                self.prefix_cache_hit_rate_pct_last = float(row[7])
                break
        if self.first_line is None:
            self.first_line = first_line
        self.last_line = last_line

    def to_dict(self) -> dict[str, Any] | None:
        if not self.samples:
            return None
        active = self.active_samples
        return {
            "samples": self.samples,
            "active_samples": active,
            "prompt_tps_mean_active": round(self.prompt_tps_sum / active, 3) if active else None,
            "gen_tps_mean_active": round(self.gen_tps_sum / active, 3) if active else None,
            "prompt_tps_max": self.prompt_tps_max,
            "gen_tps_max": self.gen_tps_max,
            "running_max": self.running_max,
            "waiting_max": self.waiting_max,
            "swapped_max": self.swapped_max,
            "kv_usage_pct_max": self.kv_usage_pct_max,
            "prefix_cache_hit_rate_pct_last": self.prefix_cache_hit_rate_pct_last,
            "first_line": self.first_line,
            "last_line": self.last_line,
        }


# --- speculative decoding ---------------------------------------------------------
# V1 >= 0.10: "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f
#   tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens,
#   Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"
# V1 0.8-0.10: "SpecDecoding metrics: Draft acceptance rate: %.1f%%, Mean acceptance length: ...,
#   Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s"
# V1 0.8.2: "Speculative metrics: Draft acceptance rate: %.3f, Number of accepted tokens: %d,
#   Number of draft tokens: %d,"; V0 adds "System efficiency" and "Number of emitted tokens".
SPEC_NEEDLES = ("SpecDecoding metrics", "Speculative metrics")
_SPEC_FIELDS = {
    "mean_acceptance_length": re.compile(r"Mean acceptance length: " + _NUM),
    "accepted_tps": re.compile(r"Accepted throughput: " + _NUM + r" tokens/s"),
    "drafted_tps": re.compile(r"Drafted throughput: " + _NUM + r" tokens/s"),
    "accepted": re.compile(r"(?:Accepted: (\d{1,20}) tokens|Number of accepted tokens: (\d{1,20}))"),
    "drafted": re.compile(r"(?:Drafted: (\d{1,20}) tokens|Number of draft tokens: (\d{1,20}))"),
    "per_position": re.compile(r"Per-position acceptance rate: ((?:\d{1,6}\.\d{1,20}(?:, )?){1,256})"),
    "avg_rate": re.compile(r"Avg Draft acceptance rate: " + _NUM + r"%"),
    "draft_rate": re.compile(r"(?<!Avg )Draft acceptance rate: " + _NUM + r"(%?)"),
}


@dataclass
class SpecSummary:
    samples: int = 0
    accepted: int = 0
    drafted: int = 0
    counted: bool = False  # some sample stated both accepted and drafted
    mal: list[float] = field(default_factory=list)
    per_position_sum: list[float] = field(default_factory=list)
    per_position_n: int = 0
    last: dict[str, Any] = field(default_factory=dict)
    first_line: int | None = None
    last_line: int | None = None

    def add(self, msg: str, line: int) -> None:
        sample: dict[str, Any] = {}
        for key, rx in _SPEC_FIELDS.items():
            m = rx.search(msg)
            if not m:
                continue
            if key in ("accepted", "drafted"):
                sample[key] = int(m[1] or m[2])
            elif key == "per_position":
                sample[key] = [float(x) for x in m[1].rstrip(", ").split(", ")]
            elif key == "draft_rate":
                value = float(m[1])
                sample["draft_acceptance_rate_pct"] = value if m[2] else round(value * 100, 3)
            elif key == "avg_rate":
                sample["avg_draft_acceptance_rate_pct"] = float(m[1])
            else:
                sample[key] = float(m[1])
        if not sample:
            return
        self.samples += 1
        if "accepted" in sample and "drafted" in sample:
            self.counted = True
            self.accepted += sample["accepted"]
            self.drafted += sample["drafted"]
        if "mean_acceptance_length" in sample:
            self.mal.append(sample["mean_acceptance_length"])
        pp = sample.get("per_position")
        if pp:
            # a longer sample adds positions (a shorter one: [0.0] * a negative count adds none)
            self.per_position_sum += [0.0] * (len(pp) - len(self.per_position_sum))
            for i, v in enumerate(pp):
                self.per_position_sum[i] += v
            self.per_position_n += 1
        self.last = sample
        if self.first_line is None:
            self.first_line = line
        self.last_line = line

    def to_dict(self) -> dict[str, Any] | None:
        if not self.samples:
            return None
        last = self.last
        n = self.per_position_n
        return {
            "samples": self.samples,
            "accepted_tokens": self.accepted if self.counted else None,
            "drafted_tokens": self.drafted if self.counted else None,
            "acceptance_rate_pct": (round(100.0 * self.accepted / self.drafted, 3) if self.drafted else None),
            "mean_acceptance_length_mean": (round(sum(self.mal) / len(self.mal), 4) if self.mal else None),
            "mean_acceptance_length_last": last.get("mean_acceptance_length"),
            "per_position_acceptance_mean": ([round(v / n, 4) for v in self.per_position_sum] if n else None),
            "per_position_acceptance_last": last.get("per_position"),
            "avg_draft_acceptance_rate_pct_last": last.get("avg_draft_acceptance_rate_pct"),
            "draft_acceptance_rate_pct_last": last.get("draft_acceptance_rate_pct"),
            "accepted_tps_last": last.get("accepted_tps"),
            "drafted_tps_last": last.get("drafted_tps"),
            "first_line": self.first_line,
            "last_line": self.last_line,
        }

"""Service-level objectives and goodput, as ``vllm bench serve --goodput`` defines them.

An SLO caps a request's TTFT, TPOT and/or end-to-end latency (milliseconds).  A request is
*good* when it completed and meets every SLO given (``value <= limit``; a request with one
output token has a TPOT of 0, as vLLM counts it).  Goodput is good requests per second of
the measured run: ``request_goodput = good_requests / duration``.  Without an SLO there is
no goodput (None, as vLLM writes it).

``--slo ttft=200,tpot=50,e2el=5000`` on the command line; ``bench.slo: {ttft: 200, ...}``
in a recipe (docs/bench.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from autobench.errors import BenchError

#: The SLO keys (milliseconds each), in the order they are shown.
SLO_KEYS = ("ttft", "tpot", "e2el")
HINT = "e.g. --slo ttft=200,tpot=50,e2el=5000 (milliseconds; any of ttft, tpot, e2el)"


def parse_slo(text: str) -> dict[str, float]:
    """``ttft=200,tpot=50`` -> ``{"ttft": 200.0, "tpot": 50.0}``; one clear error otherwise."""
    out: dict[str, float] = {}
    for part in text.split(","):
        key, sep, raw = part.strip().partition("=")
        key = key.strip().lower()
        if not sep or key not in SLO_KEYS:
            raise BenchError(
                f"--slo {text!r}: {part.strip()!r} is not KEY=MS with KEY one of ttft, tpot, e2el", hint=HINT
            )
        if key in out:
            raise BenchError(f"--slo {text!r}: {key} is given twice", hint=HINT)
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise BenchError(
                f"--slo {text!r}: {key}={raw.strip()!r} is not a positive number of milliseconds", hint=HINT
            )
        out[key] = value
    return out


def slo_text(slo: Mapping[str, float]) -> str:
    """The ``--slo`` value of ``slo`` (``ttft=200,tpot=50``), keys in :data:`SLO_KEYS` order."""
    return ",".join(f"{k}={slo[k]:g}" for k in SLO_KEYS if k in slo)


def is_good(slo: Mapping[str, float], ttft_ms: float, tpot_ms: float | None, e2el_ms: float) -> bool:
    """Whether one completed request meets every SLO (TPOT None, one output token: 0)."""
    values = {"ttft": ttft_ms, "tpot": 0.0 if tpot_ms is None else tpot_ms, "e2el": e2el_ms}
    return all(values[k] <= limit for k, limit in slo.items())


__all__ = ["SLO_KEYS", "is_good", "parse_slo", "slo_text"]

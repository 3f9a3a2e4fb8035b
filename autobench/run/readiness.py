"""Wait until a freshly started server answers: ``GET /health`` and ``GET /v1/models``.

A server is ready when ``/health`` returns 200 and ``/v1/models`` returns 200 with
the served model name among its ``data[].id``.  Polling stops early -- and says
why -- when the server process exits (``exited()`` returns its exit code) or when
the boot timeout passes.  Plain ``urllib`` with proxies disabled: these requests
only ever go to the server this run started.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from autobench.digits import load_json

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str  # "ready" | "exited" | "timeout"
    elapsed_s: float
    exit_code: int | None = None
    last_error: str | None = None
    models: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.ready:
            return f"ready after {self.elapsed_s:.1f} s"
        if self.reason == "exited":
            code, took = self.exit_code, self.elapsed_s
            return f"server exited with code {code} before it became ready ({took:.1f} s)"
        detail = f"; last answer: {self.last_error}" if self.last_error else ""
        return f"server not ready after {self.elapsed_s:.0f} s (boot timeout){detail}"


def http_get(url: str, timeout: float = 5.0, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """GET ``url``; (status, body).  Raises OSError (URLError included) on connection failure."""
    try:
        with _OPENER.open(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read() if exc.fp is not None else b""


def model_ids(body: bytes) -> list[str]:
    try:
        doc = load_json(body)
        return [str(m.get("id")) for m in doc.get("data", []) if isinstance(m, dict)]
    except (ValueError, AttributeError, TypeError):
        return []


def probe(
    health_url: str, models_url: str, served_model: str, headers: dict[str, str] | None = None
) -> tuple[bool, str | None, list[str]]:
    """One readiness probe: (ready, what was wrong, model ids seen).  ``headers`` go with the
    ``/v1/models`` request (a server started with an API key demands it there)."""
    try:
        status, _ = http_get(health_url)
        if status != 200:
            return False, f"GET /health -> {status}", []
        status, body = http_get(models_url, headers=headers)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"connection failed: {reason}", []
    if status != 200:
        return False, f"GET /v1/models -> {status}", []
    ids = model_ids(body)
    if served_model not in ids:
        return False, f"/v1/models lists {ids}, not {served_model!r}", ids
    return True, None, ids


def wait_ready(
    health_url: str,
    models_url: str,
    served_model: str,
    *,
    timeout_s: float,
    exited: Callable[[], int | None],
    interval_s: float = 0.25,
    max_interval_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    headers: dict[str, str] | None = None,
    progress: Callable[[float], None] | None = None,
) -> Readiness:
    """Poll until ready, the server exits, or ``timeout_s`` passes.  ``progress`` is called with
    the seconds elapsed after every probe that found the server not ready
    (:class:`autobench.run.progress.BootProgress` reports from it)."""
    start = clock()
    last_error: str | None = None
    models: list[str] = []
    delay = interval_s
    while True:
        code = exited()
        if code is not None:
            return Readiness(False, "exited", clock() - start, exit_code=code, last_error=last_error)
        ok, last_error, models = probe(health_url, models_url, served_model, headers)
        if ok:
            return Readiness(True, "ready", clock() - start, models=tuple(models))
        elapsed = clock() - start
        if progress is not None:
            progress(elapsed)
        if elapsed >= timeout_s:
            code = exited()
            if code is not None:
                return Readiness(False, "exited", elapsed, exit_code=code, last_error=last_error)
            return Readiness(False, "timeout", elapsed, last_error=last_error, models=tuple(models))
        sleep(min(delay, max(timeout_s - elapsed, 0.01)))
        delay = min(delay * 1.5, max_interval_s)

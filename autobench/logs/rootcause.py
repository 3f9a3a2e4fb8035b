"""Find and classify the FIRST real cause of a failure in a streamed log.

vLLM reports one failure several times: the worker's exception, then the
engine's ``EngineCore failed to start`` with a traceback, then the API server's
``RuntimeError: Engine core initialization failed. See root cause above.``.
Only the first is the cause; the rest are *wrappers*.  :class:`RootCauseTracker`
is fed records in order and keeps:

* the first exception line (``[pkg.]SomethingError: text``) that is not a wrapper,
  or the first ERROR/unlevelled message matching a known cause pattern
  (vLLM logs some causes without an exception name, e.g.
  ``Failed to find a kernel that can implement the WNA16 linear layer``);
* the traceback frame just above it in the same process (its location);
* otherwise, the first wrapper, reported as category ``other`` with
  ``generic=True`` so a reader knows the log never stated the real cause.

Source lines shown in tracebacks (``raise ValueError("No available ...")``,
``assert x == y``) are code, not messages, and never count as a cause.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from typing import Any

from autobench.logs.lines import Record

CATEGORIES: tuple[str, ...] = (
    "assertion",
    "cuda_oom",
    "no_kv_cache_memory",
    "max_model_len_too_large",
    "unsupported_architecture",
    "config_validation",
    "hub_auth",
    "hub_not_found",
    "missing_files",
    "unsupported_quantization_or_kernel",
    "other",
)

# Ordered: the first matching category wins (hub_not_found before hub_auth because the
# Hub answers 401 for a repository that does not exist when the caller is anonymous).
_CLASSES: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(rx))
    for name, rx in [
        ("cuda_oom", r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|HIP out of memory"),
        (
            "no_kv_cache_memory",
            r"No available memory for the cache blocks|[Nn]ot enough (?:GPU )?memory (?:available )?"
            r"for (?:the )?KV cache|Insufficient memory for (?:the )?KV cache",
        ),
        (
            "max_model_len_too_large",
            r"max seq len \(\d+\) is larger than the maximum number of tokens"
            r"|To serve at least one request with the models?'s max seq len",
        ),
        (
            "hub_not_found",
            r"RepositoryNotFoundError|RevisionNotFoundError|Repository Not Found for url"
            r"|404 Client Error|is not a valid model identifier",
        ),
        (
            "hub_auth",
            r"GatedRepoError|gated repo|401 Client Error|403 Client Error|Invalid user token"
            r"|is restricted\. You must|Unauthorized for url",
        ),
        (
            "missing_files",
            r"EntryNotFoundError|does not appear to have a file named|Cannot find any model weights"
            r"|No such file or directory|FileNotFoundError|Invalid repository ID or local directory"
            r"|Can't load (?:the )?(?:tokenizer|config)|outgoing traffic has been disabled",
        ),
        (
            "unsupported_quantization_or_kernel",
            r"quantization method \S+ is not supported|Quantization scheme is not supported"
            r"|Unknown quantization method|[Uu]nsupported quantization"
            r"|Failed to find a kernel that can implement|is not valid for this configuration"
            r"|not supported for the current GPU|No \S+ MoE backend supports"
            r"|no kernel image is available",
        ),
        (
            "unsupported_architecture",
            r"Model architectures? \[[^\]]*\] (?:are|is) not supported|Cannot find model module",
        ),
        (
            "config_validation",
            r"ValidationError|validation errors? for \w+|Value error, |argument --[\w-]+: "
            r"|unrecognized arguments|invalid choice: ",
        ),
    ]
]

# Messages that only say "something above failed".
_WRAPPER = re.compile(
    r"EngineCore failed to start|Engine core initialization failed|EngineDeadError"
    r"|EngineCore encountered (?:an issue|a fatal error)|EngineCore hit an exception"
    r"|WorkerProc failed to start|WorkerProc hit an exception|Worker proc \S+ died unexpectedly"
    r"|Error executing method|Exception in worker|MQLLMEngine terminated|failed to start the engine"
)
_WRAPPER_EXC = {"KeyboardInterrupt", "SystemExit", "EngineDeadError", "EngineGenerateError", "CancelledError"}

_EXC = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?P<exc>[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure))(?:: ?(?P<text>.*))?$"
)
_FRAME = re.compile(
    r'^\s*File (?:"(?P<path>[^"]+)", line (?P<line>\d+)|(?P<jpath>\S+\.py):(?P<jline>\d+))'
    r"(?:, in (?P<func>[\w.<>]+))?"
)
_CARETS = re.compile(r"^\s*[\^~]+\s*$")
# Cheap substrings: a record can only be a cause if one of these occurs in it.
NEEDLES: tuple[str, ...] = (
    "Error",
    "rror",
    "Exception",
    "Exit",
    "Interrupt",
    "Failure",
    "Traceback",
    'File "',
    "failed",
    "Failed",
    "not supported",
    "out of memory",
    "max seq len",
    "No available memory",
    "gated",
    "restricted",
    "Not Found",
    "does not appear",
    "Cannot",
    "Can't",
    "No such file",
    "Value error",
    "argument",
    "kernel",
    "memory for",
    "Quantization",
)
_MAX_MESSAGE = 600


@dataclass
class RootCause:
    category: str
    message: str
    line: int
    location: str | None = None  # "kv_cache_utils.py:1077" -- file:line of the raising frame
    function: str | None = None  # function of that frame
    exception: str | None = None  # "AssertionError", "ValueError", ... (None: a logged message)
    detail: str | None = None  # first detail line of a pydantic ValidationError
    generic: bool = False  # True: only a wrapper was found; the log never states the cause

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def classify(text: str) -> str:
    for name, rx in _CLASSES:
        if rx.search(text):
            return name
    return "other"


class RootCauseTracker:
    """Streaming state: feed every candidate record in order, then read :attr:`cause`."""

    def __init__(self) -> None:
        self.cause: RootCause | None = None
        self.wrapper: RootCause | None = None
        self.ready = False  # set by the parser once the server said it is up
        self._frame: dict[str | None, tuple[str, int, str | None]] = {}
        self._expect_code: dict[str | None, bool] = {}
        self._code: dict[str | None, str] = {}
        self._detail_for: str | None | bool = False  # proc awaiting a pydantic detail line

    @property
    def done(self) -> bool:
        """True once nothing fed from now on can change :meth:`result`: the cause is
        known and no pydantic detail line is awaited.  The parser stops feeding then."""
        return self.cause is not None and self._detail_for is False

    def feed(self, rec: Record, line: int) -> None:
        proc, msg = rec.proc, rec.msg
        if rec.level in ("INFO", "DEBUG", "WARNING"):
            self._expect_code.pop(proc, None)
            return
        stripped = msg.strip()
        if not stripped or _CARETS.match(msg):
            return
        if self._detail_for is not False and self._detail_for == proc and self.cause is not None:
            if msg[:1].isspace() and not stripped.startswith("For further information"):
                self.cause.detail = re.sub(r"\s*\[type=.*$", "", stripped)[:_MAX_MESSAGE]
            self._detail_for = False
        if stripped.startswith("Traceback (most recent call last)"):
            self._frame.pop(proc, None)
            self._code.pop(proc, None)
            return
        fm = _FRAME.match(msg)
        if self._expect_code.pop(proc, False) and fm is None and msg[:1].isspace():
            self._code[proc] = stripped  # the source line shown under a frame
            return
        if fm:
            path = fm.group("path") or fm.group("jpath")
            lineno = int(fm.group("line") or fm.group("jline"))
            self._frame[proc] = (path, lineno, fm.group("func"))
            if fm.group("path") is not None:  # jupyter-style frames show no source line
                self._expect_code[proc] = True
            return
        if stripped.startswith(("raise ", "assert ", "return ", "--> ")):
            return
        em = _EXC.match(stripped)
        if em:
            self._exception(rec, line, em.group("exc"), (em.group("text") or "").strip(), stripped)
            return
        if self.cause is None:
            category = classify(stripped)
            if category != "other":
                self._set(RootCause(category, stripped[:_MAX_MESSAGE], line))
            elif self.wrapper is None and _WRAPPER.search(stripped):
                self.wrapper = RootCause("other", stripped[:_MAX_MESSAGE], line, generic=True)

    def _exception(self, rec: Record, line: int, exc: str, text: str, full: str) -> None:
        proc = rec.proc
        frame = self._frame.pop(proc, None)
        code = self._code.pop(proc, None)
        if self.cause is not None:
            return
        wrapper = exc in _WRAPPER_EXC or bool(_WRAPPER.search(full))
        if wrapper:
            if self.wrapper is None:
                self.wrapper = RootCause("other", full[:_MAX_MESSAGE], line, exception=exc, generic=True)
            return
        category = "assertion" if exc == "AssertionError" else classify(full)
        if self.ready and category == "other" and not (proc and ("EngineCore" in proc or "Worker" in proc)):
            return  # a request-level error of a serving API server, not a failure of the server
        message = full
        if exc == "AssertionError" and not text and code and code.startswith("assert"):
            message = code
        cause = RootCause(category, message[:_MAX_MESSAGE], line, exception=exc)
        if frame is not None:
            path, lineno, func = frame
            cause.location = f"{os.path.basename(path)}:{lineno}"
            cause.function = func
        self._set(cause)
        if category == "config_validation":
            self._detail_for = proc

    def _set(self, cause: RootCause) -> None:
        if self.cause is None:
            self.cause = cause

    def result(self) -> RootCause | None:
        return self.cause if self.cause is not None else self.wrapper

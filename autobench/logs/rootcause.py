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

import re
from dataclasses import asdict, dataclass
from typing import Any

from autobench.logs.lines import Record

# name -> (one-line hint for the user, pattern or None).  Ordered: the first matching
# pattern wins (port and driver failures quote other words; NCCL errors mention CUDA;
# hub errors mention files; a page-size assertion may involve a draft model).
_TABLE: list[tuple[str, str, str | None]] = [
    (
        "port_in_use",
        "another process holds the server's port: stop it or give the recipe another port",
        r"[Aa]ddress already in use|\[Errno 98\]|\[Errno 48\]|EADDRINUSE",
    ),
    (
        "driver_mismatch",
        "the image's CUDA needs a newer host driver: upgrade the NVIDIA driver or use an image built for an older CUDA",
        r"driver version is insufficient|NVIDIA driver on your system is too old|Found no NVIDIA driver"
        r"|cudaErrorInsufficientDriver|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|forward compatibility was attempted"
        r"|unsupported display driver|[Dd]river/library version mismatch|cudaErrorCompatNotSupportedOnDevice"
        r"|CUDA driver (?:version )?is (?:too old|insufficient)|NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    ),
    (
        "gpu_fault",
        "the GPU faulted inside a kernel (illegal address, device-side assert): rerun with "
        "CUDA_LAUNCH_BLOCKING=1 to locate the kernel, try --enforce-eager, turn off the newest feature in "
        "use (speculative decoding, async scheduling), and report it to vLLM with that kernel named",
        r"illegal memory access|evice-side assert triggered|Assertion `[^`]{1,300}` failed|cudaErrorIllegalAddress"
        r"|unspecified launch failure|misaligned address|illegal instruction was encountered"
        r"|Memory access fault by GPU|GPU core dump|Xid \d{1,4}\b",
    ),
    (
        "collective_timeout",
        "a collective or an RPC between the engine and its workers timed out: one worker hung or died "
        "(read its own output; NCCL_DEBUG=INFO), a step was slower than the timeout (raise VLLM_RPC_TIMEOUT "
        "or VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS), or the interconnect stalled",
        r"Watchdog caught collective operation timeout|collective operation timeout"
        r"|RPC call to \S{1,64} timed out|shm_broadcast\.py|acquire_read"
        r"|imed out waiting for (?:the )?(?:workers?|engine|all.?reduce|barrier|peer)"
        r"|ProcessGroupNCCL.{0,200}[Tt]imeout|NCCL.{0,100}timed out",
    ),
    (
        "distributed",
        "the workers could not connect or be placed: check NCCL/Gloo networking (NCCL_DEBUG=INFO), shared "
        "memory (--ipc=host or a larger --shm-size) and that every node has the GPUs the parallel sizes need",
        r"\bNCCL error|nccl\w{0,40}Error|ncclInternalError|ncclUnhandledCudaError|ncclSystemError|ncclInvalidUsage"
        r"|ncclRemoteError|NCCL (?:WARN|failure|communicator was aborted)|ProcessGroupNCCL|DistBackendError"
        r"|DistNetworkError|DistStoreError|\[Gloo\].{0,300}(?:[Ee]rror|failed|[Tt]imed out)|gloo/transport"
        r"|[Pp]lacement group|No available node types can fulfill|Cannot provide a placement group"
        r"|[Nn]o CUDA GPUs are available|[Nn]o GPUs? (?:is |are )?(?:available|found)|has no GPU"
        r"|required GPUs exceeds|larger than the number of available GPUs|Ray does not allocate any GPUs"
        r"|not enough GPUs",
    ),
    (
        "hub_access",
        "the Hub refused the model: check the repo id and revision, accept a gated model's licence on the Hub, "
        "and pass HF_TOKEN by name",
        r"RepositoryNotFoundError|RevisionNotFoundError|GatedRepoError|Repository Not Found for url"
        r"|(?:401|403|404) Client Error|is not a valid model identifier|gated repo|is restricted\. You must"
        r"|Invalid user token|Unauthorized for url|Invalid credentials in Authorization header"
        r"|not a valid git identifier \(branch name, tag name or commit id\)",
    ),
    (
        "hub_unavailable",
        "the Hub was unreachable or busy (rate limit, server error, network timeout): retry later, pass "
        "HF_TOKEN by name (authenticated limits are higher), or download the model once and run with "
        "HF_HUB_OFFLINE=1",
        r"429 Client Error|Too Many Requests|ate[ -]?limit|50[0-4] Server Error"
        r"|Service (?:Temporarily )?Unavailable|Gateway Time-?out|Bad Gateway"
        r"|huggingface\.co.{0,200}(?:timed out|[Mm]ax retries exceeded|Temporary failure in name resolution"
        r"|Name or service not known|Connection (?:refused|reset))"
        r"|We couldn't connect to 'https://huggingface\.co'",
    ),
    (
        "kv_page_size",
        "hybrid (mamba + attention) KV page sizes do not line up: set --block-size explicitly, change the KV "
        "cache dtype, or use a vLLM release that supports this model",
        r"page_size_bytes|max_page_size|page_size_padded|[Mm]amba page size|attention page size"
        r"|page size (?:of|for) (?:the )?(?:mamba|attention)|same page size|unify_kv_cache_spec"
        r"|unify_hybrid_kv_cache_specs|KV cache groups? with different page sizes|page size of the layer"
        r"|maximum page size|unify by adjusting block_size",
    ),
    (
        "draft_model",
        "the draft model of speculative decoding failed to load or run: check that the draft checkpoint "
        "is in the format this vLLM expects for the method (weight names, hidden size and vocabulary "
        "matching the target), and that the method supports the parallel sizes in use",
        r"[Dd]rafter\b|[Dd]raft (?:model )?weights?|[Dd]raft model (?:does not|doesn't) support"
        r"|spec_decode/|eagle\w{0,20}\.py|medusa\w{0,20}\.py|mtp\w{0,20}\.py|config/speculative\.py",
    ),
    (
        "speculative_config",
        "check the speculative-decoding settings: method, draft model and num_speculative_tokens, and whether "
        "this vLLM supports that method with this target model",
        r"[Ss]peculative|SpeculativeConfig|num_speculative_tokens|[Dd]raft model|draft_model|\bEAGLE|[Ee]agle\d?\b",
    ),
    (
        "gpu_memory",
        "the model, KV cache and activations do not fit: raise --gpu-memory-utilization, lower --max-model-len "
        "or --max-num-seqs, free the GPU, or shard over more GPUs",
        r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|HIP out of memory|CUBLAS_STATUS_ALLOC_FAILED"
        r"|No available memory for the cache blocks|[Nn]ot enough (?:GPU )?memory (?:available )?"
        r"for (?:the )?KV cache|Insufficient memory for (?:the )?KV cache|less than desired [GC]PU memory utilization"
        r"|max seq len \(\d{1,20}\) is larger than the maximum number of tokens"
        r"|To serve at least one request with the models?'s max seq len|Error in memory profiling"
        r"|larger than the available KV cache memory|[Ii]nsufficient (?:GPU )?memory|out of memory",
    ),
    (
        "cuda_oom",
        "the GPU ran out of memory while serving: lower --max-num-seqs or --max-num-batched-tokens, or lower "
        "--gpu-memory-utilization to leave room for activations",
        None,  # a gpu_memory out-of-memory error after the server was ready
    ),
    (
        "toolchain_missing",
        "a compiler or header a just-in-time build needs is missing (FlashInfer/DeepGEMM/Triton build "
        "kernels at start): install the CUDA toolkit (nvcc) and set CUDA_HOME, install gcc and the Python "
        "headers (python3-dev), or use an image that ships them or prebuilt kernels",
        r"Could not find nvcc|nvcc: not found|nvcc: No such file|No such file or directory: '(?:nvcc|gcc|g\+\+|cc"
        r"|c\+\+|clang|ninja)'|Python\.h: No such file|fatal error: [\w/.+-]{1,120}\.h: No such file"
        r"|Failed to find C compiler|CUDA_HOME (?:environment variable )?is not set|cuda_home='[^']{0,200}' doesn't"
        r"|Cannot find CUDA at CUDA_HOME|o CUDA runtime is found|ninja: (?:command )?not found"
        r"|Ninja is required",
    ),
    (
        "missing_kernel",
        "no usable kernel for this GPU, dtype or quantization (or a kernel library built for another torch): "
        "choose another quantization, attention backend or dtype, a GPU with the compute capability it needs, "
        "or matching wheels",
        r"Failed to find a kernel that can implement|no kernel image is available|not supported for the current GPU"
        r"|device kernel image is invalid|[Mm]inimum capability|compute capability|CUDA [Cc]apability"
        r"|No \S{1,64} MoE backend supports"
        r"|is not valid for this configuration"
        r"|undefined symbol|not compiled with|is not supported on this (?:GPU|device)|requires (?:a )?GPU with"
        r"|FlashAttention only supports|does not support (?:the )?(?:current|this) (?:GPU|device)"
        r"|Bfloat16 is only supported on GPUs with|No available (?:attention )?backend|sm_\d{1,4} is not",
    ),
    (
        "compile_failed",
        "torch.compile or Triton failed: retry with --enforce-eager (or compilation level 0), clear "
        "~/.cache/vllm/torch_compile_cache, or use a matching torch/Triton build",
        r"torch\._dynamo|torch\._inductor|BackendCompilerFailed|InductorError|triton\.compiler"
        r"|CompilationError|TritonError|[Tt]riton (?:[Ee]rror|compil)|ptxas (?:fatal|error)|nvcc fatal"
        r"|failed to compile|Compilation failed|torch\.compile|triton\.runtime\.errors|OutOfResources",
    ),
    (
        "unsupported_model",
        "this vLLM (or its transformers) cannot run this model or quantization: use a release that supports "
        "it, another checkpoint, or --trust-remote-code where the model needs it",
        r"Model architectures? \[[^\]]{0,512}\] (?:are|is) not supported|Cannot find model module"
        r"|quantization method \S{1,64} is not supported|Unknown quantization method|[Uu]nsupported quantization"
        r"|Quantization scheme is not supported|does not recognize this architecture|is not supported for now"
        r"|model type `?\w{1,64}`? but Transformers does not recognize|[Uu]nsupported model (?:type|architecture)"
        r"|not supported by vLLM|Currently, only \S{1,64} quantization",
    ),
    (
        "missing_files",
        "a file the server needs is not there: check the model path or mount, that the download finished "
        "(safetensors shards, tokenizer files), and HF_HUB_OFFLINE",
        r"EntryNotFoundError|does not appear to have a file named|Cannot find any model weights"
        r"|No such file or directory|FileNotFoundError|Invalid repository ID or local directory"
        r"|Can't load (?:the )?(?:tokenizer|config)|outgoing traffic has been disabled"
        r"|HeaderTooLarge|SafetensorError|incomplete metadata|MetadataIncompleteBuffer|LocalEntryNotFoundError",
    ),
    (
        "tokenizer",
        "the tokenizer or chat template could not be used: pass --tokenizer, --tokenizer-mode or "
        "--chat-template, or install the package the tokenizer needs",
        r"chat template|chat_template|TemplateError|TemplateSyntaxError|UndefinedError"
        r"|[Tt]okenizer class \S{1,128} does not exist|tokenizer_mode|[Tt]okenizer\w{0,40}(?:Error| failed| is not)"
        r"|sentencepiece|tiktoken|mistral_common|Failed to load (?:the )?tokenizer",
    ),
    (
        "launcher_usage",
        "the command line was refused: check the flag names and values against `vllm serve --help` of "
        "this vLLM version",
        r"unrecognized arguments|No such option|invalid choice: |argument --[\w-]{1,64}: |the following arguments "
        r"are required|Got unexpected extra argument|ambiguous option|[Ee]xpected one argument|Missing argument",
    ),
    (
        "config_validation",
        "a setting was rejected: the detail line names the field and what it allows",
        r"ValidationError|validation errors? for \w{1,128}|Value error, ",
    ),
    (
        "assertion",
        "an internal assertion failed: look at its location and search vLLM's issues for it",
        None,  # the exception is AssertionError and nothing more specific matched
    ),
    (
        "boot_failed",
        "the engine failed to start but this log never says why: the cause is in output that did not reach "
        "it (a worker's log, or rerun with VLLM_LOGGING_LEVEL=DEBUG)",
        None,  # only a wrapper ("EngineCore failed to start", ...) before the server was ready
    ),
    (
        "engine_died",
        "the engine died after the server was up but this log never says why: look at the worker's output",
        None,  # only a wrapper (EngineDeadError, ...) after the server was ready
    ),
    ("other", "not a known failure: read the message and its location", None),
]

CATEGORIES: tuple[str, ...] = tuple(name for name, _, _ in _TABLE)
#: one line per category telling a user what to do
HINTS: dict[str, str] = {name: hint for name, hint, _ in _TABLE}
_CLASSES: list[tuple[str, re.Pattern[str]]] = [(name, re.compile(rx)) for name, _, rx in _TABLE if rx]
_OOM = re.compile(r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED")
# Categories an API server reports for one bad request once it serves: not a server failure.
_REQUEST_LEVEL = frozenset({"other", "tokenizer", "config_validation", "launcher_usage", "assertion"})

# Messages that only say "something above failed" (the wrappers), by when they can happen:
# at start-up only (vllm/v1/engine/core.py "EngineCore failed to start.", utils.py "Engine core
# initialization failed. See root cause above.", multiproc_executor.py "WorkerProc failed to
# start."), only once the engine ran (exceptions.py EngineDeadError "EngineCore encountered an
# issue. See stack trace (above) for the root cause.", core.py "EngineCore encountered a fatal
# error.", async_llm.py "AsyncLLM output_handler failed.", V0 launcher.py "MQLLMEngine is
# already dead, terminating server process"), or either ("EngineCore hit an exception",
# "Error executing method", "Exception in worker": by whether the server was ready).
_WRAPPER_STARTUP = re.compile(
    r"EngineCore failed to start|Engine core initialization failed|WorkerProc failed to start"
    r"|WorkerProc initialization failed|initialization failed due to an exception in a background process"
    r"|failed to start the engine|Engine process failed to start"
)
_WRAPPER_RUNTIME = re.compile(
    r"EngineDeadError|EngineGenerateError|EngineCore encountered (?:an issue|a fatal error)"
    r"|WorkerProc hit an exception|MQLLMEngine terminated|MQLLMEngine is already dead|output_handler failed"
)
_WRAPPER = re.compile(
    _WRAPPER_STARTUP.pattern + "|" + _WRAPPER_RUNTIME.pattern + r"|EngineCore hit an exception"
    r"|Error executing method|Exception in worker"
)
_WRAPPER_EXC = {"EngineDeadError", "EngineGenerateError"}
# A process's death, named by the one that watched it: core_client.py "Engine core proc %s died
# unexpectedly, shutting down client.", multiproc_executor.py "Worker proc %s died unexpectedly,
# shutting down executor.", ray_executor "RayWorkerProc rank=%s died unexpectedly", V0
# multiproc_worker_utils.py "Worker %s pid %s died, exit code: %s".  It says what died, not why:
# it ranks below a stated cause and above the wrappers (docs/logs.md "First real statement").
_DEATH = re.compile(r"(?:[Pp]roc|Worker)\b.{0,80}? died(?: unexpectedly|, exit code)")
# A failure stated in words with its reason after a colon (KServe's "Failed to start model
# server: integer division or modulo by zero"): a cause even when its reason fits no category.
_FAILED_TO = re.compile(r"\b[Ff]ailed to [a-z]{2,20}(?: [\w.-]{1,40}){0,4}: \S")
# A stop by signal: an interrupted boot says nothing more; after the server was ready it is no failure.
_SIGNAL_EXC = {"KeyboardInterrupt", "SystemExit", "CancelledError"}
# Lines that describe state, never a cause: vLLM's input dump after a crash
# (vllm/v1/engine/dump_input.py: "Dumping input data for V1 LLM engine (v%s) with config: %s",
# "Dumping scheduler output for model execution: %s", "Dumping scheduler stats: %s",
# "Dumping scheduler diagnostic snapshot: %s", and logger.exception("Error preparing object to
# dump") with the dumping code's own traceback), the config echo ("Initializing a V1 LLM engine
# (v%s) with config: %s", "non-default args: %s", V0 "args: Namespace(...)").
_STATE_PREFIXES = (
    "Dumping input data",
    "Dumping scheduler ",
    "Error preparing object to dump",
    "Initializing a V1 LLM engine",
    "Initializing an LLM engine",
    "Initializing a V0 LLM engine",
    "non-default args:",
    "args: Namespace(",
)
_STATE_SOURCES = ("dump_input.py",)
# Where an API server's request handlers log (entrypoints/openai/serving_*.py, .../serving.py):
# an error there after the server was ready is one bad request.  Engine-side sources never are.
_ENGINE_SOURCES = (
    "core.py",
    "engine.py",
    "llm_engine.py",
    "async_llm_engine.py",
    "multiproc_",
    "worker",
    "gpu_",
    "model_runner",
    "ray_",
    "executor",
)

# An exception line: "[pkg.]SomethingError: text" (or its repr, "ValueError('text')", as V0's
# engine logged it).
_EXC = re.compile(
    r"^(?:[A-Za-z_]\w{0,100}\.){0,16}(?P<exc>[A-Z]\w{0,100}?(?:Error|Exception|Exit|Interrupt|Failure)"
    r"|Unsupported|OutOfResources|BackendCompilerFailed)"
    r"(?:: ?(?P<text>.{0,4096})|\((?P<repr>.{0,4096})|$)"
)
_FRAME = re.compile(
    r'^\s{0,64}File (?:"(?P<path>[^"]{1,1024})", line (?P<line>\d{1,9})|(?P<jpath>\S{1,1024}?\.py):(?P<jline>\d{1,9}))'
    r"(?:, in (?P<func>[\w.<>]{1,200}))?"
)
# Frames of the drafter (speculative decoding): an exception raised below one is the draft's.
_DRAFT_FRAME = re.compile(r"spec_decode/|/eagle\w{0,20}\.py|/medusa\w{0,20}\.py|/mtp\w{0,20}\.py|drafter|_draft")

_PATH_SEP = re.compile(r"[\\/]")
_CARETS = re.compile(r"^\s{0,256}[\^~]{1,4096}\s{0,64}$")
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
    "No such",
    "Value error",
    "argument",
    "kernel",
    "memory for",
    "Quantization",
    # an exception name that does not end in Error (torch._dynamo.exc.Unsupported); the other
    # new wordings (NCCL error, [Errno 98], "vllm: error: unrecognized arguments", Triton's
    # errors.OutOfResources) all contain "rror" already: every needle with a new first
    # letter costs every line of a long log a little
    "Unsupported",
    # a process's death ("died unexpectedly", V0's "died, exit code"), torch's C++ watchdog, a
    # missing compiler ("nvcc: not found"); no needle starts with a frequent lower-case letter
    # the trie did not already branch on ("died", "timed out" would cost every line)
    "unexpectedly",
    ", exit code",
    "Watchdog caught",
    "not found",
    "Could not find",
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

    @property
    def hint(self) -> str:
        return HINTS.get(self.category, HINTS["other"])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# A category is read from the first 16 KiB of a record (a report keeps 600 characters): a
# 16 MiB line costs what 16 KiB cost, whatever it holds.
CLASSIFY_SCAN = 16 << 10


def classify(text: str, ready: bool = False) -> str:
    """The category of a cause message; an out-of-memory error is ``gpu_memory`` while
    the server boots and ``cuda_oom`` once it was ready."""
    text = text[:CLASSIFY_SCAN]
    for name, rx in _CLASSES:
        if rx.search(text):
            if name == "gpu_memory" and ready and _OOM.search(text):
                return "cuda_oom"
            return name
    return "other"


def boot_oom(cause: RootCause | None) -> bool:
    """True for an out-of-memory cause classified as a boot failure (``gpu_memory``): a
    request served later in the same log shows the server was serving when it ran out."""
    return cause is not None and cause.category == "gpu_memory" and _OOM.search(cause.message) is not None


def hint(category: str | None) -> str | None:
    """The one-line hint of a category (None for a category this version does not know)."""
    return HINTS.get(category or "")


def is_state(rec: Record, stripped: str) -> bool:
    """A record that describes state (an input dump, a config echo), never a cause."""
    if rec.src is not None and rec.src.startswith(_STATE_SOURCES):
        return True
    if stripped.startswith("[") and "] " in stripped[:64]:  # a paste that cut the header: "[dump_input.py:72] ..."
        head, _, rest = stripped.partition("] ")
        if head[1:].startswith(_STATE_SOURCES):
            return True
        stripped = rest
    return stripped.startswith(_STATE_PREFIXES)


def _engine_side(rec: Record) -> bool:
    proc = rec.proc or ""
    return "EngineCore" in proc or "Worker" in proc or (rec.src is not None and rec.src.startswith(_ENGINE_SOURCES))


# Categories that say nothing more specific than their words; the raising frames may.
_VAGUE = ("other", "config_validation", "launcher_usage", "assertion")


class RootCauseTracker:
    """Streaming state: feed every candidate record in order, then read :meth:`result`.

    Candidates rank by what they are (docs/logs.md "First real statement"): a stated cause
    (an exception that is not a wrapper, or a message of a known cause), then a process's
    death notice, then a wrapper, then a stop by signal; within a rank the first wins.  State
    descriptions (input dumps, config echoes) are never candidates."""

    def __init__(self) -> None:
        self.cause: RootCause | None = None
        self.failure: RootCause | None = None  # "Failed to start X: why" that names no known cause
        self.death: RootCause | None = None
        self.wrapper: RootCause | None = None
        self.signal: RootCause | None = None
        self.ready = False  # set by the parser once the server said it is up, or served
        self.stopped = False  # set by the parser where autobench's teardown began
        self._frame: dict[str | None, tuple[str, int, str | None]] = {}
        self._draft: dict[str | None, bool] = {}  # the traceback so far passed through the drafter
        self._expect_code: dict[str | None, bool] = {}
        self._code: dict[str | None, str] = {}
        self._detail_for: str | None | bool = False  # proc awaiting a pydantic detail line
        self._frame_after = False  # ... or the raising frame, shown after a bare AssertionError
        self._inner_for: str | None | bool = False  # proc whose "... raised:" awaits the inner exception

    @property
    def done(self) -> bool:
        """True once nothing fed from now on can change :meth:`result`: the cause is
        known and no pydantic detail line is awaited, or the teardown began.  The
        parser stops feeding then."""
        return self.stopped or (self.cause is not None and self._detail_for is False)

    def stop(self) -> None:
        """Autobench's own teardown began: nothing after it is a cause."""
        self.stopped = True
        self._detail_for = False
        self._frame_after = False
        self._inner_for = False
        self._expect_code.clear()

    def feed(self, rec: Record, line: int) -> None:
        if self.stopped:
            return
        proc, msg = rec.proc, rec.msg
        if rec.level in ("INFO", "DEBUG", "WARNING"):
            self._expect_code.pop(proc, None)
            return
        stripped = msg.strip()  # never empty: split_records yields no blank record
        if _CARETS.match(msg) or is_state(rec, stripped):
            return
        if not self.ready and rec.src is not None and rec.src.startswith("serving"):
            self.ready = True  # the API server's request handlers log it: the server was serving
        if self._after_exception(proc, msg, stripped, line):
            return
        if self._detail_for == proc and self.cause is not None:  # False is never a proc
            # indented by pydantic; a paste may have lost the indentation of "Value error, ..."
            if (msg[:1].isspace() or stripped.startswith("Value error,")) and not stripped.startswith(
                "For further information"
            ):
                cut = stripped.find("[type=")  # pydantic's "[type=value_error, input_value=...]"
                self.cause.detail = (stripped[:cut].rstrip() if cut != -1 else stripped)[:_MAX_MESSAGE]
                if self.cause.category == "config_validation":
                    # "1 validation error for SpeculativeConfig" says little; its detail says what
                    self.cause.category = classify(self.cause.detail, self.ready)
                    if self.cause.category in ("other", "launcher_usage"):
                        self.cause.category = "config_validation"
            self._detail_for = False
        if self._frame_line(proc, msg, stripped):
            return
        if stripped.startswith(("raise ", "assert ", "return ", "--> ")):
            return
        em = _EXC.match(stripped)
        if em:
            text = em.group("text") if em.group("text") is not None else (em.group("repr") or "").removesuffix(")")
            self._exception(rec, line, em.group("exc"), (text or "").strip(), stripped)
            return
        if self.cause is None:
            self._statement(rec, line, stripped)

    def _after_exception(self, proc: str | None, msg: str, stripped: str, line: int) -> bool:
        """The line after an exception: the inner exception torch's wrapper carries, or the frame
        after an assertion's message.  True when the line was one of them."""
        if self._inner_for == proc and self.cause is not None:
            self._inner_for = False
            inner = _EXC.match(stripped)
            if inner:  # torch's "BackendCompilerFailed: backend=... raised:" carries this one
                self.cause.message = stripped[:_MAX_MESSAGE]
                self.cause.line = line
                self.cause.exception = inner.group("exc")
                category = classify(stripped, self.ready)
                if category not in _VAGUE:
                    self.cause.category = category
                self._detail_for = False
                return True
            self._detail_for = False
        if self._frame_after and self._detail_for == proc and self.cause is not None:
            self._frame_after = False
            self._detail_for = False
            after = _FRAME.match(msg)
            if after:
                func = after.group("func")
                self.cause.location = f"{_PATH_SEP.split(after.group('path') or after.group('jpath'))[-1]}:" + (
                    after.group("line") or after.group("jline")
                )
                self.cause.function = func
                if self.cause.category == "assertion" and func:
                    category = classify(f"{self.cause.message} {func}", self.ready)
                    if category not in ("other", "config_validation", "launcher_usage"):
                        self.cause.category = category
            return True
        return False

    def _frame_line(self, proc: str | None, msg: str, stripped: str) -> bool:
        """A traceback's head, a frame, or the source line shown under a frame (per process)."""
        if stripped.startswith("Traceback (most recent call last)"):
            self._frame.pop(proc, None)
            self._code.pop(proc, None)
            self._draft.pop(proc, None)
            return True
        fm = _FRAME.match(msg)
        if self._expect_code.pop(proc, False) and fm is None and msg[:1].isspace():
            self._code[proc] = stripped  # the source line shown under a frame
            return True
        if fm:
            path = fm.group("path") or fm.group("jpath")
            lineno = int(fm.group("line") or fm.group("jline"))
            self._frame[proc] = (path, lineno, fm.group("func"))
            if _DRAFT_FRAME.search(f"{path} {fm.group('func') or ''}"):
                self._draft[proc] = True
            if fm.group("path") is not None:  # jupyter-style frames show no source line
                self._expect_code[proc] = True
            return True
        return False

    def _statement(self, rec: Record, line: int, stripped: str) -> None:
        """A line that is neither a traceback nor an exception, while no cause is known."""
        category = classify(stripped, self.ready)
        head = stripped[:CLASSIFY_SCAN]
        if _DEATH.search(head) and category in _VAGUE:
            if self.death is None:
                self.death = RootCause("engine_died", stripped[:_MAX_MESSAGE], line)
            return
        if _WRAPPER.search(head) and category in ("other", "config_validation", "launcher_usage"):
            # "Exception in worker ... while processing method init_device: NCCL error: ..."
            # states its cause; "EngineCore failed to start." does not
            self._wrapper(stripped, line, None)
            return
        if category != "other" and not self._request_level(category, rec):
            self._set(RootCause(category, stripped[:_MAX_MESSAGE], line))
        elif self.failure is None and rec.level in (None, "ERROR", "CRITICAL"):
            failed = _FAILED_TO.search(head)
            if failed and not self._request_level("other", rec):
                self.failure = RootCause("other", stripped[:_MAX_MESSAGE], line)

    def _request_level(self, category: str, rec: Record) -> bool:
        """An error a serving API server logs for one bad request, not a failure of the server."""
        return self.ready and category in _REQUEST_LEVEL and not _engine_side(rec)

    def _wrapper(self, full: str, line: int, exc: str | None) -> None:
        if self.wrapper is None:
            head = full[:CLASSIFY_SCAN]
            if _WRAPPER_STARTUP.search(head):
                category = "boot_failed"
            elif _WRAPPER_RUNTIME.search(head) or (exc in _WRAPPER_EXC):
                category = "engine_died"
            else:
                category = "engine_died" if self.ready else "boot_failed"
            self.wrapper = RootCause(category, full[:_MAX_MESSAGE], line, exception=exc, generic=True)

    def _exception(self, rec: Record, line: int, exc: str, text: str, full: str) -> None:
        proc = rec.proc
        frame = self._frame.pop(proc, None)
        code = self._code.pop(proc, None)
        in_draft = self._draft.pop(proc, False)
        if self.cause is not None:
            return
        if exc in _SIGNAL_EXC:
            if self.signal is None and not self.ready:
                self.signal = RootCause("other", full[:_MAX_MESSAGE], line, exception=exc, generic=True)
            return
        category = classify(full, self.ready)
        if exc in _WRAPPER_EXC or (
            _WRAPPER.search(full[:CLASSIFY_SCAN]) and category in ("other", "config_validation")
        ):
            self._wrapper(full, line, exc)
            return
        if exc == "AssertionError":
            # a bare assert: its source line (shown in the traceback) says what failed
            if not text and code and code.startswith("assert"):
                full = code
            category = classify(full, self.ready)
        if category in _VAGUE and frame is not None:
            # the raising frame says where it failed (shm_broadcast.acquire_read, a drafter's
            # load_weights): the message alone does not
            path, _, func = frame
            where = classify(f"{full} {path} {func or ''}", self.ready)
            if where not in _VAGUE:
                category = where
        if category in _VAGUE and in_draft:
            category = "draft_model"  # raised below a frame of the drafter
        if exc == "AssertionError" and category in ("other", "config_validation", "launcher_usage"):
            category = "assertion"
        if self._request_level(category, rec):
            return  # a request-level error of a serving API server, not a failure of the server
        cause = RootCause(category, full[:_MAX_MESSAGE], line, exception=exc)
        if frame is not None:
            path, lineno, func = frame
            cause.location = f"{_PATH_SEP.split(path)[-1]}:{lineno}"  # POSIX or Windows path
            cause.function = func
        self._set(cause)
        if exc.endswith("ValidationError"):
            self._detail_for = proc
        elif text.endswith("raised:"):
            self._detail_for = proc  # keeps the tracker open for the next record of this process
            self._inner_for = proc
        elif exc == "AssertionError" and frame is None:
            self._detail_for = proc  # a paste may show the raising frame after the exception
            self._frame_after = True

    def _set(self, cause: RootCause) -> None:
        if self.cause is None:
            self.cause = cause

    def result(self) -> RootCause | None:
        for found in (self.cause, self.failure, self.death, self.wrapper, self.signal):
            if found is not None:
                return found
        return None

"""Second round of log intelligence (issue 16): unwrapping, ready-means-ready, newer
wrappers, the category set, teardown awareness and CPU-build wordings.  Each test
names the defect it pins; the wordings are vLLM's and uvicorn's own."""

from __future__ import annotations

import pytest

from autobench.logs import parse_log
from autobench.logs.lines import split_records
from autobench.logs.rootcause import HINTS
from autobench.logs.unwrap import unwrap

STARTUP = "(APIServer pid=1) INFO:     Application startup complete."
ENGINE = "(EngineCore_DP0 pid=9) ERROR 11-02 10:00:01 [core.py:710] "


# --- unwrapping ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "wrapped",
    [
        "vllm-1  | ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "vllm-openai-1 | ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "[vllm] | ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "**ERROR 03-10 08:07:20 [core.py:1] ValueError: boom**",
        "`ERROR 03-10 08:07:20 [core.py:1] ValueError: boom`",
        "> ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        ">> > ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "[pod/vllm-7d9f-x2/vllm] ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "0: ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        " 12: ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "Aug 18 14:15:04 gpu-host python3[28059]: ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "2025-10-15T00:06:46.700988901Z ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
        "\x1b[31mERROR 03-10 08:07:20 [core.py:1] ValueError: boom\x1b[0m",
        # layers composed: a quoted, emphasised compose line with a docker timestamp
        "> **vllm-1  | 2025-10-15T00:06:46Z ERROR 03-10 08:07:20 [core.py:1] ValueError: boom**",
        "[pod/vllm-0/vllm] 2025-10-15T00:06:46.7Z 3: ERROR 03-10 08:07:20 [core.py:1] ValueError: boom",
    ],
)
def test_wrapped_lines_unwrap_to_the_record_vllm_wrote(wrapped: str) -> None:
    [rec] = split_records(wrapped)
    assert (rec.level, rec.src, rec.msg) == ("ERROR", "core.py:1", "ValueError: boom")


def test_unwrap_leaves_plain_text_and_process_prefixes_alone() -> None:
    for text in (
        "(EngineCore pid=1) ERROR x",
        "ValueError: a | b",
        "assert x == y",
        "__init__.py: 3 things",
        "*args are not allowed",
        "",
    ):
        assert unwrap(text) == text


def test_a_cause_in_a_compose_paste_is_found_without_its_prefix_and_keeps_its_line() -> None:
    r = parse_log(
        [
            "vllm-1  | INFO 03-10 08:07:19 [api_server.py:1] vLLM API server version 0.8.5",
            "vllm-1  | ERROR 03-10 08:07:20 [engine.py:1] Traceback (most recent call last):",
            'vllm-1  | ERROR 03-10 08:07:20 [engine.py:1]   File "/v/worker.py", line 12, in load',
            "vllm-1  | ERROR 03-10 08:07:20 [engine.py:1]     raise ValueError(msg)",
            "vllm-1  | ERROR 03-10 08:07:20 [engine.py:1] ValueError: No available memory for the cache blocks.",
        ]
    )
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line, rc.location) == ("gpu_memory", 5, "worker.py:12")
    assert rc.message.startswith("ValueError: No available memory") and rc.exception == "ValueError"
    assert r.vllm_version == "0.8.5" and r.lines["vllm_version"] == 1


def test_a_markdown_quoted_traceback_is_read() -> None:
    r = parse_log(
        [
            "> Traceback (most recent call last):",
            '>   File "/v/registry.py", line 40, in resolve',
            ">     raise ValueError(msg)",
            "> **ValueError: Model architectures ['FooForCausalLM'] are not supported for now.**",
        ]
    )
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line, rc.location) == ("unsupported_model", 4, "registry.py:40")


# --- ready means ready ---------------------------------------------------------------
def test_bind_failure_after_startup_clears_readiness_and_is_the_cause() -> None:
    r = parse_log(
        [
            "(APIServer pid=1) INFO 11-02 10:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000",
            STARTUP,
            "(APIServer pid=1) ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
            "address already in use",
            "(APIServer pid=1) INFO:     Waiting for application shutdown.",
            "(APIServer pid=1) INFO:     Application shutdown complete.",
        ]
    )
    assert not r.ready and "ready" not in r.lines
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line) == ("port_in_use", 3)
    assert rc.message.startswith("[Errno 98]") and "port" in rc.hint


def test_engine_death_before_the_first_request_clears_readiness() -> None:
    r = parse_log(
        [
            STARTUP,
            ENGINE + "EngineCore encountered a fatal error.",
            ENGINE + "Traceback (most recent call last):",
            ENGINE + '  File "/v/core.py", line 700, in run_engine_core',
            ENGINE + "    engine_core.run_busy_loop()",
            ENGINE + "RuntimeError: CUDA error: an illegal memory access was encountered",
            "(APIServer pid=1) ERROR 11-02 10:00:02 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.",
        ]
    )
    assert not r.ready
    rc = r.root_cause
    assert rc is not None and (rc.line, rc.location, rc.generic) == (6, "core.py:700", False)


def test_engine_death_after_a_served_request_keeps_readiness_and_reports_the_cause() -> None:
    r = parse_log(
        [
            STARTUP,
            '(APIServer pid=1) INFO:     127.0.0.1:50000 - "POST /v1/completions HTTP/1.1" 200 OK',
            ENGINE + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        ]
    )
    assert r.ready
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line) == ("cuda_oom", 3)  # at runtime, not at boot


OOM_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/site-packages/vllm/worker/model_runner.py", line 1, in execute_model',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
]


def test_an_oom_whose_request_is_answered_after_its_traceback_is_a_runtime_oom() -> None:
    # V0 logs the traceback first and the access line of the request that ran out after it
    r = parse_log(
        [*OOM_TRACEBACK, 'INFO:     127.0.0.1:50000 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error']
    )
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line) == ("cuda_oom", 3)


def test_an_oom_with_no_request_served_stays_a_boot_memory_failure() -> None:
    r = parse_log([*OOM_TRACEBACK, 'INFO:     127.0.0.1:50000 - "GET /health HTTP/1.1" 500 Internal Server Error'])
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line) == ("gpu_memory", 3)


def test_a_request_after_an_oom_past_autobench_teardown_changes_nothing() -> None:
    lines = [*OOM_TRACEBACK, "[autobench] teardown: stopping the server", '"POST /v1/completions HTTP/1.1" 500']
    rc = parse_log(lines).root_cause
    assert rc is not None and rc.category == "gpu_memory"


def test_health_probes_are_not_requests() -> None:
    r = parse_log(
        [
            STARTUP,
            '(APIServer pid=1) INFO:     127.0.0.1:50000 - "GET /health HTTP/1.1" 200 OK',
            ENGINE + "EngineCore encountered a fatal error.",
        ]
    )
    assert not r.ready
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.generic) == ("engine_died", True)


def test_a_request_error_after_startup_does_not_clear_readiness() -> None:
    r = parse_log(
        [
            STARTUP,
            "(APIServer pid=1) ERROR 11-02 10:00:02 [serving_chat.py:1] ValueError: Cannot use chat template "
            "functions because tokenizer.chat_template is not set",
        ]
    )
    assert r.ready and r.root_cause is None


# --- newer wrappers ------------------------------------------------------------------
def test_vllm_02x_workerproc_wrapper_is_a_failed_boot_not_a_cause() -> None:
    r = parse_log(
        [
            "(EngineCore pid=5) ERROR 06-23 06:27:21 [core.py:1] EngineCore failed to start.",
            "(EngineCore pid=5) ERROR 06-23 06:27:21 [core.py:1] Exception: WorkerProc initialization failed due "
            "to an exception in a background process. See stack trace for root cause.",
        ]
    )
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.generic, rc.line) == ("boot_failed", True, 1)

    r = parse_log(
        [
            "(EngineCore pid=5) ERROR 06-23 06:27:21 [core.py:1] Exception: WorkerProc initialization failed due "
            "to an exception in a background process. See stack trace for root cause.",
            "(Worker pid=7) ERROR 06-23 06:27:22 [multiproc_executor.py:1] torch.distributed.DistBackendError: "
            "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled system error",
        ]
    )
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.generic, rc.line) == ("distributed", False, 2)


# --- categories ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "category"),
    [
        (
            "ValueError: Free memory on device (14.5/15.7 GiB) on startup is less than desired GPU memory "
            "utilization (0.95, 14.9 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
            "gpu_memory",
        ),
        ("RuntimeError: NCCL error: unhandled system error, NCCL version 2.21.5", "distributed"),
        (
            "ValueError: Current node has no GPU available. current_node_resource={'CPU': 8.0}. vLLM engine "
            "cannot start without GPU. Make sure you have at least 1 GPU available in a node",
            "distributed",
        ),
        (
            "ValueError: The number of required GPUs exceeds the total number of available GPUs in the "
            "placement group.",
            "distributed",
        ),
        ("vllm: error: unrecognized arguments: --max-model-length 4096", "launcher_usage"),
        ("Error: No such option: --tp", "launcher_usage"),
    ],
)
def test_issue_categories(line: str, category: str) -> None:
    r = parse_log(["ERROR 01-01 00:00:00 [x.py:1] " + line if line[:1].isupper() else line])
    assert r.root_cause is not None and r.root_cause.category == category
    assert HINTS[category]


def test_a_speculative_validation_error_is_a_speculative_config_error_with_its_detail() -> None:
    r = parse_log(
        [
            "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig",
            "(APIServer pid=1)   Value error, num_speculative_tokens must be positive for the eagle method "
            "[type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]",
        ]
    )
    rc = r.root_cause
    assert rc is not None and rc.category == "speculative_config"
    assert rc.detail == "Value error, num_speculative_tokens must be positive for the eagle method"


def test_max_model_len_validation_error_keeps_its_detail_line() -> None:
    r = parse_log(
        [
            "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            "(APIServer pid=1)   Value error, User-specified max_model_len (1000000) is greater than the derived "
            "max_model_len (max_position_embeddings=40960 or model_max_length=None in model's config.json). "
            "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
        ]
    )
    rc = r.root_cause
    assert rc is not None and rc.category == "config_validation"
    assert rc.detail is not None and rc.detail.startswith("Value error, User-specified max_model_len (1000000)")


# --- teardown ------------------------------------------------------------------------
SERVED_THEN_STOPPED = [
    STARTUP,
    '(APIServer pid=1) INFO:     127.0.0.1:50000 - "POST /v1/completions HTTP/1.1" 200 OK',
    "(APIServer pid=1) INFO 11-02 10:05:00 [launcher.py:1] Shutting down FastAPI HTTP server.",
    ENGINE + "EngineCore encountered a fatal error.",
    "(APIServer pid=1) ERROR 11-02 10:05:01 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    ENGINE + "RuntimeError: cancelled during shutdown",
]


def test_lines_after_autobench_teardown_are_not_causes() -> None:
    assert parse_log(SERVED_THEN_STOPPED).root_cause is not None  # without the teardown line: a cause
    r = parse_log(SERVED_THEN_STOPPED, teardown_line=2)
    assert r.ready and r.root_cause is None
    # autobench's own note marks the same place in a stored run log
    r = parse_log(SERVED_THEN_STOPPED[:2] + ["[autobench] teardown: stopping the server"] + SERVED_THEN_STOPPED[2:])
    assert r.ready and r.root_cause is None


def test_a_cause_before_the_teardown_stays() -> None:
    lines = [*SERVED_THEN_STOPPED[:2], ENGINE + "torch.OutOfMemoryError: CUDA out of memory.", *SERVED_THEN_STOPPED[2:]]
    r = parse_log(lines, teardown_line=3)
    assert r.root_cause is not None and (r.root_cause.category, r.root_cause.line) == ("cuda_oom", 3)


def test_teardown_line_splits_blocks_exactly(tmp_path) -> None:
    path = tmp_path / "server.log"
    path.write_text("\n".join(SERVED_THEN_STOPPED) + "\n", encoding="utf-8")
    for teardown in (0, 1, 2, 3, 6, 99):
        from_file = parse_log(path, teardown_line=teardown).to_json_dict()
        from_lines = parse_log(SERVED_THEN_STOPPED, teardown_line=teardown).to_json_dict()
        assert (from_file.pop("encoding"), from_lines.pop("encoding")) == ("utf-8", None)  # text was given
        assert from_file == from_lines, teardown
        assert (from_file["root_cause"] is None) == (teardown < 4)


# --- CPU build wordings --------------------------------------------------------------
def test_cpu_kv_usage_is_the_kv_usage_of_a_cpu_build() -> None:
    r = parse_log(
        [
            "(APIServer pid=1) INFO 08-28 16:50:01 [loggers.py:1] Engine 000: Avg prompt throughput: 3.5 tokens/s, "
            "Avg generation throughput: 1.2 tokens/s, Running: 1 reqs, Waiting: 0 reqs, CPU KV cache usage: 0.6%, "
            "Prefix cache hit rate: 0.0%"
        ]
    )
    assert r.stats is not None and r.stats["kv_usage_pct_max"] == 0.6


@pytest.mark.parametrize(
    "line",
    [
        "(Worker pid=1) INFO 08-28 16:49:33 [cpu_worker.py:255] Explicitly set (1.0/17.09) GiB for KV cache on node 0.",
        "(Worker pid=1) INFO 06-13 20:03:57 [cpu_worker.py:235] Auto set (1.0/18.0) GiB for KV cache on node 0, "
        "with 5.4 GiB requested memory for the worker. 3.92 GiB memory was consumed by non-kv usages.",
        "WARNING 05-01 10:00:00 [cpu.py:1] VLLM_CPU_KVCACHE_SPACE not set. Using 1.00 GiB for KV cache.",
    ],
)
def test_cpu_kv_cache_size_lines(line: str) -> None:
    assert parse_log([line]).kv_cache_gib == 1.0

"""RootCause's small rules by themselves: classification before and after the server was ready,
which memory failures are out-of-memory errors, hints, and the tracker's stop and done states."""

from __future__ import annotations

import pytest

from autobench.logs import parse_log
from autobench.logs.lines import split_records
from autobench.logs.rootcause import CATEGORIES, HINTS, RootCause, RootCauseTracker, boot_oom, classify, hint


@pytest.mark.parametrize(
    ("text", "booting", "serving"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "gpu_memory", "cuda_oom"),
        ("RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate", "gpu_memory", "cuda_oom"),
        # memory failures that are not an out-of-memory error stay what they are once serving
        ("ValueError: No available memory for the cache blocks", "gpu_memory", "gpu_memory"),
        ("Insufficient memory for KV cache", "gpu_memory", "gpu_memory"),
        ("OSError: [Errno 98] Address already in use", "port_in_use", "port_in_use"),
        # an earlier category that mentions running out of memory stays that category
        (
            "NCCL error: unhandled cuda error, NCCL version 2.21.5: CUDA error: out of memory",
            "distributed",
            "distributed",
        ),
        ("nothing known here", "other", "other"),
    ],
)
def test_an_oom_is_a_boot_failure_until_the_server_is_ready(text, booting, serving):
    assert classify(text) == booting
    assert classify(text, ready=False) == booting
    assert classify(text, ready=True) == serving


def test_only_an_out_of_memory_gpu_memory_cause_is_a_boot_oom():
    assert boot_oom(RootCause("gpu_memory", "torch.OutOfMemoryError: CUDA out of memory.", 3))
    assert not boot_oom(RootCause("gpu_memory", "No available memory for the cache blocks", 3))
    assert not boot_oom(RootCause("cuda_oom", "CUDA out of memory", 3))
    assert not boot_oom(None)


def test_every_category_has_a_one_line_hint():
    assert set(HINTS) == set(CATEGORIES) and CATEGORIES[-1] == "other"
    assert all(h and "\n" not in h for h in HINTS.values())
    assert hint("port_in_use") == HINTS["port_in_use"] and hint("no_such_category") is None and hint(None) is None
    assert RootCause("no_such_category", "m", 1).hint == HINTS["other"]
    assert RootCause("gpu_memory", "m", 1).hint == HINTS["gpu_memory"]
    assert RootCause("other", "m", 2, location="a.py:1").to_dict() == {
        "category": "other",
        "message": "m",
        "line": 2,
        "location": "a.py:1",
        "function": None,
        "exception": None,
        "detail": None,
        "generic": False,
    }


def test_a_long_cause_is_cut_at_600_characters_wherever_it_comes_from():
    long = "No available memory for the cache blocks " + "x" * 700
    r = parse_log([f"ERROR 11-18 18:07:28 worker.py:1] ValueError: {long}", "ERROR 11-18 18:07:28 x.py:1] later"])
    assert r.root_cause is not None and r.root_cause.message == ("ValueError: " + long)[:600]
    r = parse_log([f"ERROR 11-18 18:07:28 worker.py:1] {long}"])  # a logged message, no exception name
    assert r.root_cause is not None and r.root_cause.message == long[:600]
    r = parse_log([f"(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] EngineCore failed to start. {'y' * 700}"])
    assert r.root_cause is not None and r.root_cause.generic and len(r.root_cause.message) == 600


@pytest.mark.parametrize("level", ["INFO", "DEBUG", "WARNING"])
def test_a_non_error_line_inside_a_traceback_is_not_the_cause(level):
    # the line under a frame is read as the frame's source code, whatever its level, but an
    # INFO/DEBUG/WARNING record there is another process talking, never the cause
    r = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "/v/a.py", line 5, in f',
            f"{level} 01-01 00:00:00 [x.py:1] retrying after CUDA out of memory",
            "ERROR 01-01 00:00:00 [engine.py:1] ValueError: the real cause",
        ]
    )
    assert r.root_cause is not None
    assert (r.root_cause.line, r.root_cause.message, r.root_cause.location) == (
        4,
        "ValueError: the real cause",
        "a.py:5",
    )


def test_a_frames_source_line_is_only_the_line_right_under_it():
    # once another record came between, an indented error line is a message again, not code
    r = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "/v/a.py", line 5, in f',
            "INFO 01-01 00:00:00 [engine.py:1] still loading",
            "ERROR 01-01 00:00:00 [engine.py:1]     CUDA out of memory while loading the weights",
        ]
    )
    assert r.root_cause is not None and (r.root_cause.category, r.root_cause.line) == ("gpu_memory", 4)


def test_a_blank_line_between_a_validation_error_and_its_detail_keeps_the_detail():
    r = parse_log(
        [
            "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            "(APIServer pid=1) ",
            "(APIServer pid=1)   Value error, max_model_len (1000000) is too large [type=value_error]",
        ]
    )
    rc = r.root_cause
    assert rc is not None and rc.detail == "Value error, max_model_len (1000000) is too large"


def test_the_frame_after_a_bare_assertion_must_come_from_the_same_process():
    lines = [
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] AssertionError",
        '(Worker pid=2) ERROR 01-01 00:00:00 [w.py:1]   File "/v/other.py", line 9, in g',
        '(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File "/v/kv_cache_utils.py", line 77, in check',
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.category, rc.location, rc.function) == ("assertion", "kv_cache_utils.py:77", "check")
    rc = parse_log(lines[:2]).root_cause
    assert rc is not None and rc.location is None


def test_a_bare_assertion_takes_a_jupyter_style_frame_after_it():
    # (only a frame line that holds a cause needle reaches the tracker: "failed" here)
    lines = [
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] AssertionError",
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File /v/kv_cache_utils.py:77, in raise_if_failed",
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.location, rc.function) == ("kv_cache_utils.py:77", "raise_if_failed")


def test_a_categorised_assertion_keeps_its_category_whatever_its_function():
    lines = [
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] AssertionError: attention page size mismatch",
        '(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File "/v/comm.py", line 9, in raise_ncclSystemError',
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.category, rc.location) == ("kv_page_size", "comm.py:9")
    # a bare assertion is named by its function instead
    rc = parse_log(["(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] AssertionError", lines[1]]).root_cause
    assert rc is not None and (rc.category, rc.function) == ("distributed", "raise_ncclSystemError")


def test_a_blank_line_between_a_frame_and_its_source_line_changes_nothing():
    r = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "/v/a.py", line 5, in f',
            "ERROR 01-01 00:00:00 [engine.py:1] ",
            'ERROR 01-01 00:00:00 [engine.py:1]     check("CUDA out of memory")',
            "ERROR 01-01 00:00:00 [engine.py:1] ValueError: the real cause",
        ]
    )
    rc = r.root_cause
    assert rc is not None and (rc.line, rc.message, rc.location) == (5, "ValueError: the real cause", "a.py:5")


VE = "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"


@pytest.mark.parametrize(
    ("after", "detail"),
    [
        ("(APIServer pid=1)   Assertion failed, must be > 0 [type=assertion_error]", "Assertion failed, must be > 0"),
        ("(APIServer pid=1)  Assertion failed, must be > 0", "Assertion failed, must be > 0"),  # one space left
        ("(APIServer pid=1) Value error, too large [type=value_error]", "Value error, too large"),  # indentation lost
        ("(APIServer pid=1) another message that failed", None),  # not indented, not a pydantic detail
        ("(APIServer pid=1)     For further information visit https://errors.pydantic.dev/2/v/value_error", None),
        ("(APIServer pid=1)   Value error, " + "x" * 700, ("Value error, " + "x" * 700)[:600]),
    ],
)
def test_the_detail_of_a_validation_error_is_its_next_indented_line(after, detail):
    rc = parse_log([VE, after]).root_cause
    assert rc is not None and rc.detail == detail


def test_only_the_first_detail_line_counts():
    rc = parse_log([VE, "(APIServer pid=1)   Value error, first", "(APIServer pid=1)   Value error, second"]).root_cause
    assert rc is not None and rc.detail == "Value error, first"


@pytest.mark.parametrize(
    ("detail", "category"),
    [
        ("Value error, num_speculative_tokens must be at most 8", "speculative_config"),  # the detail says what
        ("Assertion failed, must be greater than 0", "config_validation"),  # says nothing more: stays
        ("Value error, unrecognized arguments: --x", "config_validation"),
    ],
)
def test_a_validation_error_is_classified_by_its_detail(detail, category):
    rc = parse_log([VE, f"(APIServer pid=1)   {detail}"]).root_cause
    assert rc is not None and rc.category == category


def test_a_new_traceback_forgets_the_frames_and_source_of_a_cut_off_one():
    rc = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "/v/old.py", line 3, in g',
            "ERROR 01-01 00:00:00 [engine.py:1]     assert x == y",
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            "ERROR 01-01 00:00:00 [engine.py:1] AssertionError",
        ]
    ).root_cause
    assert rc is not None and (rc.message, rc.location) == ("AssertionError", None)


def test_a_jupyter_style_frame_inside_a_traceback_locates_the_cause():
    rc = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            "ERROR 01-01 00:00:00 [engine.py:1]   File /v/site/worker.py:412, in load_failed_model",
            "ERROR 01-01 00:00:00 [engine.py:1] ValueError: the real cause",
        ]
    ).root_cause
    assert rc is not None and (rc.location, rc.function, rc.line) == ("worker.py:412", "load_failed_model", 3)


def test_a_caret_line_never_ends_the_wait_for_the_frame_after_a_bare_assertion():
    # Python 3.11+ marks the failing expression with a line of carets; one that reaches the tracker
    # (here because a worker's frame awaits its source line) is neither a frame nor a message
    lines = [
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] AssertionError",
        '(Worker pid=2) ERROR 01-01 00:00:00 [w.py:1]   File "/v/other.py", line 9, in g',
        "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]            ^^^^^^^^^^^^^^^^^^",
        '(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File "/v/kv_cache_utils.py", line 77, in check',
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.message, rc.location, rc.function) == (
        "AssertionError",
        "kv_cache_utils.py:77",
        "check",
    )


def test_a_frame_without_a_source_line_is_followed_by_the_raising_frame():
    # frozen and compiled modules show no source line: the next line is the next frame, whose
    # location is where the cause was raised
    rc = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "<frozen runpy>", line 198, in _run_module_as_main',
            'ERROR 01-01 00:00:00 [engine.py:1]   File "/v/site/worker.py", line 412, in load_model',
            "ERROR 01-01 00:00:00 [engine.py:1]     raise ValueError(msg)",
            "ERROR 01-01 00:00:00 [engine.py:1] ValueError: the real cause",
        ]
    ).root_cause
    assert rc is not None and (rc.location, rc.function, rc.line) == ("worker.py:412", "load_model", 5)


def test_a_source_line_that_lost_its_indentation_but_one_space_is_still_code():
    # a paste that collapsed the indentation: the line under the frame is its source, not a cause,
    # and a bare assertion's source line is its message
    lines = [
        "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
        'ERROR 01-01 00:00:00 [engine.py:1]  File "/v/kv_cache_utils.py", line 77, in check',
        "ERROR 01-01 00:00:00 [engine.py:1]  assert new_spec.page_size_bytes == max_page_size",
        "ERROR 01-01 00:00:00 [engine.py:1] AssertionError",
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None
    assert (rc.category, rc.message, rc.location) == (
        "kv_page_size",
        "assert new_spec.page_size_bytes == max_page_size",
        "kv_cache_utils.py:77",
    )
    lines[2] = 'ERROR 01-01 00:00:00 [engine.py:1]  _check("CUDA out of memory")'
    lines[3] = "ERROR 01-01 00:00:00 [engine.py:1] ValueError: the real cause"
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.category, rc.line, rc.location) == ("other", 4, "kv_cache_utils.py:77")


def test_an_indented_line_of_another_process_is_not_the_validation_detail():
    rc = parse_log(
        [
            VE,
            "(EngineCore pid=2)   RuntimeError: CUDA error: out of memory",
            "(APIServer pid=1)   Value error, max_model_len (1000000) is too large [type=value_error]",
        ]
    ).root_cause
    assert rc is not None and (rc.category, rc.line) == ("config_validation", 1)
    assert rc.detail == "Value error, max_model_len (1000000) is too large"


def _tracker(*lines: str) -> RootCauseTracker:
    t = RootCauseTracker()
    for n, line in enumerate(lines, 1):
        for rec in split_records(line):
            t.feed(rec, n)
    return t


def test_the_tracker_is_done_once_nothing_fed_can_change_its_result():
    # done is what lets the parser stop handing records over on a long log
    t = _tracker(VE)
    assert t.cause is not None and not t.done  # a validation error's detail line may follow
    t = _tracker(VE, "(APIServer pid=1)   Value error, too large [type=value_error]")
    assert t.done and t.result() is not None and t.result().detail == "Value error, too large"  # type: ignore[union-attr]
    t = _tracker(VE, "(APIServer pid=1) another message that failed")  # not a detail: the wait is over
    assert t.done and t.result().detail is None  # type: ignore[union-attr]
    t = _tracker("(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] ValueError: the real cause")
    assert t.done
    # the teardown began: done, cause or not, and nothing fed after it counts
    t = _tracker()
    assert not t.done
    t.stop()
    assert t.done
    for n, line in enumerate(["(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] ValueError: too late"], 1):
        for rec in split_records(line):
            t.feed(rec, n)
    assert t.result() is None and t.done


def test_an_exception_right_under_a_frame_without_a_source_line_is_the_cause():
    # an import error's last frame is importlib's, which shows no source line
    rc = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "<frozen importlib._bootstrap>", line 1324, in _find_and_load_unlocked',
            "ERROR 01-01 00:00:00 [engine.py:1] ModuleNotFoundError: No module named 'vllm._C'",
        ]
    ).root_cause
    assert rc is not None
    assert (rc.message, rc.exception, rc.location, rc.line) == (
        "ModuleNotFoundError: No module named 'vllm._C'",
        "ModuleNotFoundError",
        "<frozen importlib._bootstrap>:1324",
        3,
    )


@pytest.mark.parametrize(
    "text",
    [
        "AssertionError: 1 validation error for CacheConfig",  # reads like a validation error
        "AssertionError: unrecognized arguments: --x",  # reads like a command-line refusal
    ],
)
def test_an_assertion_that_reads_like_a_setting_or_flag_refusal_stays_an_assertion(text):
    lines = [
        f"(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] {text}",
        '(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File "/v/config.py", line 9, in check',
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.category, rc.message, rc.location) == ("assertion", text, "config.py:9")
    t = _tracker(*lines)
    assert t.done  # the frame after a bare assertion was the last thing awaited


def test_an_assertion_with_a_message_keeps_it_over_its_source_line():
    rc = parse_log(
        [
            "ERROR 01-01 00:00:00 [engine.py:1] Traceback (most recent call last):",
            'ERROR 01-01 00:00:00 [engine.py:1]   File "/v/kv_cache_utils.py", line 77, in check',
            "ERROR 01-01 00:00:00 [engine.py:1]     assert a == b, msg",
            "ERROR 01-01 00:00:00 [engine.py:1] AssertionError: attention page size mismatch",
        ]
    ).root_cause
    assert rc is not None
    assert (rc.category, rc.message) == ("kv_page_size", "AssertionError: attention page size mismatch")


@pytest.mark.parametrize(
    "text",
    [
        "EngineCore failed to start. Value error, see the validation error above",
        "EngineCore failed to start: the launcher said unrecognized arguments",
    ],
)
def test_a_wrapper_that_mentions_a_setting_or_flag_refusal_is_still_only_a_wrapper(text):
    rc = parse_log([f"(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] {text}"]).root_cause
    assert rc is not None and (rc.category, rc.generic, rc.message) == ("boot_failed", True, text)


READY = "(APIServer pid=1) INFO:     Application startup complete."


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        # the API server logs one bad request's error, with or without an exception name: no failure
        # (a message without an exception name reaches the tracker by a needle: "failed")
        ("(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1] chat template failed to render", None),
        ("(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1] jinja2.exceptions.TemplateError: bad", None),
        # an unprefixed log: the same
        ("ERROR 01-01 00:00:00 [serving_chat.py:1] TemplateError: chat template failed to render", None),
        ("ERROR 01-01 00:00:00 [serving_chat.py:1] chat template failed to render", None),
        # a failure that is no request's fault is the server's, whichever process logs it
        ("(APIServer pid=1) ERROR 01-01 00:00:00 [api_server.py:1] RuntimeError: CUDA out of memory", "cuda_oom"),
        # a logged message that names no known failure is no cause
        ("(EngineCore pid=2) ERROR 01-01 00:00:00 [core.py:1] the health check failed once", None),
        # an engine or worker process failing so is the server failing
        ("(EngineCore pid=2) ERROR 01-01 00:00:00 [core.py:1] chat template failed to render", "tokenizer"),
        ("(VllmWorker rank=0 pid=3) ERROR 01-01 00:00:00 [w.py:1] TemplateError: bad template", "tokenizer"),
        ("(Worker_TP0 pid=3) ERROR 01-01 00:00:00 [w.py:1] chat template failed to render", "tokenizer"),
    ],
)
def test_a_request_level_error_once_serving_is_a_cause_only_from_an_engine_or_worker(line, cause):
    rc = parse_log([READY, line]).root_cause
    assert (rc.category if rc else None) == cause
    if rc is not None:
        assert rc.line == 2


def test_an_interrupted_boot_is_reported_as_only_the_interrupt():
    rc = parse_log(
        ["ERROR 01-01 00:00:00 [api_server.py:1] Traceback (most recent call last):", "KeyboardInterrupt"]
    ).root_cause
    assert rc is not None and rc.to_dict() == {
        "category": "other",
        "message": "KeyboardInterrupt",
        "line": 2,
        "location": None,
        "function": None,
        "exception": "KeyboardInterrupt",
        "detail": None,
        "generic": True,
    }
    rc = parse_log(["SystemExit: " + "x" * 700]).root_cause
    assert rc is not None and rc.message == ("SystemExit: " + "x" * 700)[:600] and rc.generic
    assert parse_log([READY, "KeyboardInterrupt"]).root_cause is None  # a stop after ready is no failure


def test_an_engine_dead_error_is_a_wrapper_whatever_its_text_mentions():
    text = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue: CUDA out of memory"
    rc = parse_log([READY, f"(APIServer pid=1) ERROR 01-01 00:00:00 [async_llm.py:1] {text}"]).root_cause
    assert rc is not None
    assert (rc.category, rc.generic, rc.exception, rc.message) == ("engine_died", True, "EngineDeadError", text)


@pytest.mark.parametrize(
    ("text", "category", "generic"),
    [
        (
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
            "boot_failed",
            True,
        ),
        ("RuntimeError: Engine core initialization failed: 1 validation error for ModelConfig", "boot_failed", True),
        # a wrapper that states its cause is that cause
        (
            "RuntimeError: Exception in worker VllmWorkerProcess while processing method init_device: "
            "NCCL error: unhandled system error",
            "distributed",
            False,
        ),
    ],
)
def test_a_wrapper_exception_is_the_cause_only_when_it_states_one(text, category, generic):
    rc = parse_log([f"(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] {text}"]).root_cause
    assert rc is not None and (rc.category, rc.generic, rc.exception, rc.message) == (
        category,
        generic,
        "RuntimeError",
        text,
    )


def test_an_interrupt_after_a_wrapper_leaves_the_wrapper():
    rc = parse_log(
        [
            "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] EngineCore failed to start.",
            "(APIServer pid=1) KeyboardInterrupt",
        ]
    ).root_cause
    assert rc is not None and (rc.category, rc.line, rc.exception) == ("boot_failed", 1, None)


TB = "ERROR 01-01 00:00:00 [engine.py:1] "


@pytest.mark.parametrize(
    ("code", "exc", "message", "category"),
    [
        # a bare assertion under a source line that is no assert statement keeps its own name
        ("_check(page_size)", "AssertionError", "AssertionError", "assertion"),
        ("raise AssertionError", "AssertionError", "AssertionError", "assertion"),
        ("assert x == y", "AssertionError", "assert x == y", "assertion"),
        # with its frame above it, an assertion that reads like a setting or flag refusal stays one
        ("check(x)", "AssertionError: 1 validation error for CacheConfig", None, "assertion"),
        ("check(x)", "AssertionError: unrecognized arguments: --x", None, "assertion"),
    ],
)
def test_a_bare_assertion_under_its_frame(code, exc, message, category):
    lines = [
        f"{TB}Traceback (most recent call last):",
        f'{TB}  File "/v/config.py", line 9, in check',
        f"{TB}    {code}",
        f"{TB}{exc}",
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None
    assert (rc.category, rc.message, rc.location, rc.function) == (category, message or exc, "config.py:9", "check")
    assert _tracker(*lines).done  # its frame came first: nothing after it can add to it

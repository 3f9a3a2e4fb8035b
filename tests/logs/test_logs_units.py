"""Normalisation, root-cause rules, streaming and error handling of the log reader."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from autobench.errors import LogError
from autobench.logs import parse_log
from autobench.logs.lines import split_records
from autobench.logs.rootcause import HINTS, classify

# --- normalisation -----------------------------------------------------------------


def test_prefixes_timestamps_and_colour_are_stripped() -> None:
    line = (
        "2025-10-15T00:06:46.700988901Z \x1b[1;36m(EngineCore_DP0 pid=123)\x1b[0;0m "
        "INFO 10-21 09:11:57 [kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens\n"
    )
    [rec] = split_records(line)
    assert (rec.proc, rec.level, rec.src) == ("EngineCore_DP0 pid=123", "INFO", "kv_cache_utils.py:1087")
    assert rec.msg == "GPU KV cache size: 425,424 tokens"


def test_vllm_worker_rank_prefix_and_v0_header() -> None:
    [rec] = split_records("(VllmWorker rank=0 pid=9) WARNING 04-27 10:11:03 llm_engine.py:70] hi")
    assert (rec.proc, rec.level, rec.src, rec.msg) == ("VllmWorker rank=0 pid=9", "WARNING", "llm_engine.py:70", "hi")


def test_tqdm_carriage_returns_keep_the_record_that_follows() -> None:
    line = (
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.0it/s]\r"
        "Capturing CUDA graphs: 100%|██████████| 35/35 [00:01<00:00, 33.86it/s]\r"
        "(EngineCore pid=1) INFO 11-24 11:44:21 [gpu_model_runner.py:4000] "
        "Graph capturing finished in 3 secs, took 0.30 GiB\n"
    )
    recs = split_records(line)
    assert [r.msg for r in recs][-1] == "Graph capturing finished in 3 secs, took 0.30 GiB"
    assert not any("%|" in r.msg for r in recs)
    report = parse_log([line])
    assert (report.cuda_graph_s, report.cuda_graph_gib) == (3.0, 0.3)


def test_interleaved_processes_on_one_physical_line_are_split() -> None:
    line = (
        "(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.9.1"
        "(EngineCore pid=2) INFO 01-01 00:00:01 [core.py:1] Resolved architecture: LlamaForCausalLM"
    )
    recs = split_records(line)
    assert [r.proc for r in recs] == ["APIServer pid=1", "EngineCore pid=2"]
    report = parse_log([line])
    assert (report.vllm_version, report.architecture) == ("0.9.1", "LlamaForCausalLM")


# --- facts ------------------------------------------------------------------------


def test_combined_kv_line_of_newest_vllm() -> None:
    # kv_cache_utils.update_kv_cache_capacity (>= 0.2x) logs both facts on one line
    r = parse_log(
        [
            "(EngineCore pid=7) INFO 06-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: "
            "800,129 tokens, Maximum concurrency for 262,144 tokens per request: 3.05x"
        ]
    )
    assert (r.kv_cache_tokens, r.max_concurrency_tokens, r.max_concurrency) == (800_129, 262_144, 3.05)
    assert r.lines == {"kv_cache_tokens": 1, "kv_cache_device": 1, "max_concurrency_tokens": 1, "max_concurrency": 1}


def test_first_statement_wins_and_absent_facts_stay_none() -> None:
    r = parse_log(
        [
            "INFO 01-01 00:00:00 [x.py:1] Resolved architecture: A",
            "INFO 01-01 00:00:00 [x.py:1] Resolved architecture: B",
        ]
    )
    assert r.architecture == "A" and r.lines["architecture"] == 1
    data = r.to_json_dict()
    assert all(data[k] is None for k in ("vllm_version", "kv_cache_tokens", "model_load_s", "moe_backend"))
    assert data["ready"] is False and data["root_cause"] is None and data["stats"] is None


def test_moe_line_is_not_an_attention_backend() -> None:
    r = parse_log(["Using 'MARLIN' WNA16 MoE backend.", "Using FLASHINFER_CUTLASS backend for FP8 MoE"])
    assert r.moe_backend == "MARLIN WNA16" and r.attention_backend is None


# --- root cause -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "gpu_memory"),
        ("ValueError: No available memory for the cache blocks. Try increasing", "gpu_memory"),
        (
            "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can "
            "be stored in KV cache (2400).",
            "gpu_memory",
        ),
        (
            "ValueError: Free memory on device (14.5/15.7 GiB) on startup is less than desired GPU memory "
            "utilization (0.95, 14.9 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.",
            "gpu_memory",
        ),
        ("ValueError: Model architectures ['FooForCausalLM'] are not supported for now.", "unsupported_model"),
        (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig",
            "speculative_config",
        ),
        ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig", "config_validation"),
        ("huggingface_hub.errors.GatedRepoError: 401 Client Error.", "hub_access"),
        ("huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error.", "hub_access"),
        ("OSError: /m does not appear to have a file named config.json.", "missing_files"),
        ("ValueError: Unknown quantization method: foo.", "unsupported_model"),
        (
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275",
            "distributed",
        ),
        ("RuntimeError: No CUDA GPUs are available", "distributed"),
        (
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
            "port_in_use",
        ),
        ("vllm serve: error: unrecognized arguments: --foo", "launcher_usage"),
        ("Error: No such option: --max-model-length", "launcher_usage"),
        ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040).", "driver_mismatch"),
        ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:", "compile_failed"),
        ("ValueError: Cannot use chat template functions because tokenizer.chat_template is not set", "tokenizer"),
        ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "missing_kernel"),
        ("RuntimeError: something else broke", "other"),
    ],
)
def test_classification(text: str, category: str) -> None:
    assert category in HINTS
    assert classify(text) == category


def test_code_lines_in_tracebacks_are_not_causes() -> None:
    r = parse_log(
        [
            "ERROR 11-18 18:07:28 engine.py:366] Traceback (most recent call last):",
            'ERROR 11-18 18:07:28 engine.py:366]   File "/v/worker.py", line 493, in raise_if_cache_size_invalid',
            'ERROR 11-18 18:07:28 engine.py:366]     raise ValueError("No available memory for the cache blocks. "',
            "ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache blocks.",
        ]
    )
    assert r.root_cause is not None
    assert (r.root_cause.line, r.root_cause.location) == (4, "worker.py:493")


def test_first_real_cause_beats_later_wrappers_and_earlier_wrapper() -> None:
    r = parse_log(
        [
            "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] EngineCore failed to start.",
            "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):",
            '(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]   File "/v/a.py", line 5, in f',
            "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1]     g()",
            "(EngineCore pid=1) ERROR 01-01 00:00:00 [core.py:1] torch.OutOfMemoryError: CUDA out of memory.",
            "(APIServer pid=2) RuntimeError: Engine core initialization failed. See root cause above.",
        ]
    )
    rc = r.root_cause
    assert rc is not None and (rc.category, rc.line, rc.location, rc.generic) == ("gpu_memory", 5, "a.py:5", False)


def test_request_errors_after_startup_are_not_server_failures() -> None:
    r = parse_log(
        [
            "(APIServer pid=1) INFO:     Application startup complete.",
            "(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1] ValueError: This model's maximum "
            "context length is 4096 tokens.",
        ]
    )
    assert r.ready and r.root_cause is None


def test_info_lines_never_become_causes() -> None:
    r = parse_log(["INFO 01-01 00:00:00 [x.py:1] retrying after CUDA out of memory? no: ValueError: x"])
    assert r.root_cause is None


# --- streaming and errors -----------------------------------------------------------


def test_parse_accepts_binary_file_objects_and_generators() -> None:
    data = b"INFO 01-01 00:00:00 [x.py:1] Resolved architecture: A\n"
    assert parse_log(io.BytesIO(data)).architecture == "A"

    def lines():  # a generator: the parser must not need len() or a list
        yield from (
            f"INFO 01-01 00:00:00 [l.py:1] Engine 000: Avg prompt throughput: {i}.0 tokens/s, "
            f"Avg generation throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
            f"GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
            for i in range(50_000)
        )

    r = parse_log(lines())
    assert r.stats is not None and r.stats["samples"] == 50_000 and r.lines_read == 50_000
    assert r.stats["prompt_tps_max"] == 49_999.0 and r.stats["last_line"] == 50_000


def test_missing_directory_and_binary_files_are_log_errors(tmp_path) -> None:
    with pytest.raises(LogError, match="no such file"):
        parse_log(tmp_path / "nope.log")
    with pytest.raises(LogError, match="directory"):
        parse_log(tmp_path)
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    with pytest.raises(LogError, match="binary"):
        parse_log(binary)


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a mode-000 file")
def test_unreadable_file_is_a_log_error(tmp_path) -> None:
    p = tmp_path / "secret.log"
    p.write_text("x\n")
    p.chmod(0)
    with pytest.raises(LogError, match="permission denied"):
        parse_log(p)


@pytest.mark.integration
def test_cli_json_and_one_line_errors(tmp_path, repo_root) -> None:
    log = repo_root / "tests/logs/corpus/901_seed-blocked-page-size-assert.log"
    run = subprocess.run(
        [sys.executable, "-m", "autobench", "logs", "parse", "--json", str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(run.stdout)
    assert data["root_cause"]["category"] == "kv_page_size" and data["vllm_version"] == "0.23.1"
    text = subprocess.run(
        [sys.executable, "-m", "autobench", "logs", "parse", str(log)], capture_output=True, text=True, check=True
    ).stdout
    assert "root cause: [kv_page_size] assert page_size_bytes == max_page_size at kv_cache_utils.py:1077" in text
    for bad in (tmp_path / "missing.log", tmp_path):
        err = subprocess.run(
            [sys.executable, "-m", "autobench", "logs", "parse", str(bad)], capture_output=True, text=True
        )
        assert err.returncode == 7
        assert err.stderr.count("\n") == 1 and "Traceback" not in err.stderr

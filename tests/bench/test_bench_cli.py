"""The commands: synthetic server (a vllm serve stand-in) and autobench bench, as real subprocesses
in the integration tests, in-process (tests/inprocess.py, the synth fixture) where only the
command's answer is tested."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import inprocess
import pytest

from autobench.bench.result import load_result_json


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(*args: str, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autobench",
            "synthetic-server",
            "--port",
            str(port),
            "--log-stats-interval",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_started(proc: subprocess.Popen[str]) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "Application startup complete." in line:
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
    raise AssertionError("server did not start")


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    proc = start_server(
        "--model",
        "qwen",
        "--ttft-ms",
        "2",
        "--itl-ms",
        "0.2",
        "--boot-delay",
        "0.2",
        "--tokens-per-chunk",
        "3",
        port=port,
    )
    wait_started(proc)
    yield proc, port
    proc.terminate()
    proc.wait(10)


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``autobench bench`` in a child process (the integration tests)."""
    return subprocess.run(
        [sys.executable, "-m", "autobench", "bench", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def bench_here(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``autobench bench`` through the CLI's entry point in this process (tests/inprocess.py)."""
    return inprocess.autobench("bench", *args, cwd=cwd)


def sharegpt(cwd: Path, n: int = 40) -> str:
    (cwd / "benchmark_data").mkdir()
    entries = [
        {
            "id": str(i),
            "conversations": [
                {"from": "human", "value": f"Tell me something interesting about the number {i}, please."},
                {"from": "gpt", "value": "Sure."},
            ],
        }
        for i in range(n)
    ]
    rel = "benchmark_data/ShareGPT_V3_unfiltered_cleaned_split.json"
    (cwd / rel).write_text(json.dumps(entries))
    return rel


@pytest.mark.integration
def test_seed_invocation_against_subprocess_server(server: tuple[subprocess.Popen[str], int], tmp_path: Path) -> None:
    proc, port = server
    rel = sharegpt(tmp_path)
    # The seed's bench call, with only the port and the prompt count changed (a test must be quick).
    r = bench(
        "--base-url",
        f"http://localhost:{port}",
        "--model",
        "qwen",
        "--dataset",
        rel,
        "--num-prompts",
        "24",
        "--max-seconds",
        "900",
        "--concurrency",
        "8",
        "--max-tokens",
        "256",
        "--result",
        "out/result.json",
        "--json",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["completed"] == 24 and d["failed"] == 0 and d["dataset"]["kind"] == "sharegpt"
    assert d["total_output_tokens"] == 24 * 256
    assert d["spec_decode_acceptance_length"] == pytest.approx(256 / 86)  # 85 chunks of 3 + one of 1
    n = load_result_json(tmp_path / "out/result.json")
    assert n["completed"] == 24 and n["decode_tok_s"] == pytest.approx(d["output_throughput"])
    # plain summary when stdout is not a terminal
    r = bench(
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--model",
        "qwen",
        "--num-prompts",
        "4",
        "--max-tokens",
        "8",
        "--endpoint",
        "chat",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "decode (output) tok/s" in r.stdout and "TPOT median / p90 / p99 (ms)" in r.stdout


def test_bad_input_is_one_line_with_exit_code(synth: Any, tmp_path: Path) -> None:
    url = synth(model="qwen", ttft_ms=2, itl_ms=0.2).base_url
    (tmp_path / "bad.jsonl").write_text('{"prompt": "fine"}\nnot json\n')
    r = bench_here("--base-url", url, "--model", "qwen", "--dataset", "bad.jsonl", cwd=tmp_path)
    assert r.returncode == 5 and r.stdout == ""
    assert r.stderr.startswith("error: bad.jsonl:2: line is not valid JSON") and r.stderr.count("\n") == 1
    r = bench_here("--base-url", url, "--model", "llama", "--num-prompts", "2", cwd=tmp_path)
    assert r.returncode == 5 and "The model `llama` does not exist." in r.stderr


def test_nothing_completed_writes_the_result_and_exits_5(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    r = bench_here(
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--model",
        "m",
        "--num-prompts",
        "3",
        "--result",
        "r.json",
        cwd=tmp_path,
    )
    assert r.returncode == 5
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith("error: no request completed: 3 failed (connect: 3); the result is in r.json")
    )
    assert json.loads((tmp_path / "r.json").read_text())["errors_by_kind"] == {"connect": 3}
    assert "connect" in r.stdout  # the summary still shows the errors


@pytest.mark.integration
def test_server_dies_mid_bench_and_the_run_still_finishes(tmp_path: Path) -> None:
    port = free_port()
    proc = start_server("--model", "m", "--ttft-ms", "5", "--itl-ms", "5", "--die-after-requests", "4", port=port)
    wait_started(proc)
    r = bench(
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--model",
        "m",
        "--num-prompts",
        "12",
        "--concurrency",
        "2",
        "--max-tokens",
        "20",
        "--json",
        cwd=tmp_path,
    )
    assert proc.wait(10) == 1
    out, _ = proc.communicate()
    assert "EngineCore_DP0 died unexpectedly" in out
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["completed"] == 4 - 1 or d["completed"] == 4  # the 4th may be cut before its usage chunk
    assert d["failed"] == 12 - d["completed"]
    assert set(d["errors_by_kind"]) <= {"connect", "stream_dropped", "connection_lost"}
    k = d["errors_by_kind"]
    assert k.get("connect", 0) + k.get("connection_lost", 0) >= 6  # requests sent after the crash


@pytest.mark.integration
def test_fail_boot_prints_a_vllm_like_traceback_and_never_listens() -> None:
    port = free_port()
    proc = start_server("--fail-boot-with", "page size mismatch", port=port)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert "EngineCore failed to start." in out and "AssertionError: page size mismatch" in out
    assert "Traceback (most recent call last):" in out and "Application startup complete." not in err


def test_help_lists_both_commands() -> None:
    r = inprocess.autobench("--help")
    assert "bench" in r.stdout and "synthetic-server" in r.stdout


def test_the_summary_shows_the_dispatch_delay_and_in_rate_mode_the_adherence(synth: Any) -> None:
    from autobench.bench.client import BenchConfig, run_bench
    from autobench.cli.bench_cmds import _summary_rows

    srv = synth(ttft_ms=1, itl_ms=1)
    base = {"base_url": srv.base_url, "model": "m", "num_prompts": 4, "concurrency": 2, "max_tokens": 3}
    closed = dict(_summary_rows(run_bench(BenchConfig(**base)).to_json_dict()))  # type: ignore[arg-type]
    d = run_bench(BenchConfig(**base, request_rate=500.0)).to_json_dict()  # type: ignore[arg-type]
    rate = dict(_summary_rows(d))
    delay = d["client"]["dispatch_delay_ms"]  # type: ignore[index]
    assert rate["dispatch delay p50 / p99 (ms)"] == f"{delay['median']:.2f} / {delay['p99']:.2f}"
    adh = d["client"]["schedule_adherence_ms"]  # type: ignore[index]
    assert rate["schedule adherence p50 / p99 (ms)"] == f"{adh['median']:.2f} / {adh['p99']:.2f}"
    assert "schedule adherence p50 / p99 (ms)" not in closed and "dispatch delay p50 / p99 (ms)" in closed
    assert "load generators" not in closed
    assert dict(_summary_rows({**d, "workers": {"count": 3}}))["load generators"] == "3"

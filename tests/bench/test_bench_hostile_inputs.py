"""Hostile input to ``bench`` (issue 12, items 9-12): non-finite options, hostile datasets,
hostile SSE streams, and a run in which nothing completed.  Each case was a crash, a hang,
unbounded memory or a wrong exit code before; each must now be one line or a counted error."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import inprocess
import pytest

from autobench.bench import datasets, records
from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.datasets import load_dataset
from autobench.bench.sse import MAX_EVENT_BYTES, EventTooLarge, SSEParser
from autobench.bench.synthetic_http import HttpConn
from autobench.errors import BenchError


def _cap_memory() -> None:
    # A regression (reading /dev/zero whole) must fail this process, not the machine.
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def cli_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``autobench bench`` through the CLI's entry point in this process (tests/inprocess.py)."""
    return inprocess.autobench("bench", *args, cwd=cwd)


def cli(*args: str, cwd: Path | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``autobench bench`` in a child whose memory is capped (the integration tests that feed it
    endless files: a regression must fail the child, not the machine)."""
    return subprocess.run(
        [sys.executable, "-m", "autobench", "bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        preexec_fn=_cap_memory,
    )


# ---- item 9: NaN and infinity ------------------------------------------------------------


@pytest.mark.parametrize(
    "opts",
    [
        ["--max-seconds", "nan"],
        ["--request-rate", "nan"],
        ["--temperature", "nan"],
        ["--top-p", "inf"],
        ["--presence-penalty", "-inf"],
        ["--read-timeout", "nan"],
        ["--grace-seconds", "inf"],
        ["--random-range-ratio", "nan"],
    ],
)
def test_non_finite_options_are_one_usage_line(opts: list[str]) -> None:
    r = cli_here("--base-url", "http://127.0.0.1:9", "--model", "m", "--num-prompts", "1", *opts)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    assert "is not a finite number" in r.stderr and opts[0] in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", float("nan")),
        ("top_p", float("inf")),
        ("request_rate", float("nan")),
        ("max_seconds", float("nan")),
        ("read_timeout", float("inf")),
    ],
)
def test_library_refuses_non_finite_floats_before_any_request(field: str, value: float) -> None:
    with pytest.raises(BenchError, match="must be a finite number"):
        run_bench(BenchConfig(base_url="http://127.0.0.1:9", model="m", num_prompts=1, **{field: value}))


def test_non_finite_extra_body_is_refused() -> None:
    with pytest.raises(BenchError, match="not strict JSON"):
        run_bench(BenchConfig(base_url="http://127.0.0.1:9", model="m", num_prompts=1, extra_body={"x": float("nan")}))


# ---- item 10: datasets ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("deep.json", "[" * 200_000 + "]" * 200_000, "deep.json: dataset is nested too deeply"),
        ("deep.jsonl", '"ok"\n' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "\n", "deep.jsonl:2: line is nested"),
        ("bigint.jsonl", '{"prompt": "hello there", "max_tokens": ' + "9" * 5000 + "}\n", "bigint.jsonl:1: line has"),
        ("bigint.json", "[" + "1" * 5000 + "]", "bigint.json: dataset has a value that cannot be read"),
    ],
)
def test_hostile_json_is_one_line(tmp_path: Path, name: str, content: str, needle: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(BenchError) as e:
        load_dataset(kind=None, path=str(tmp_path / name), num_prompts=1)
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.integration
def test_dev_zero_is_refused_before_reading() -> None:
    r = cli("--base-url", "http://127.0.0.1:9", "--model", "m", "--dataset", "/dev/zero", timeout=20)
    assert r.returncode == 5 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: /dev/zero: dataset file is a character device, not a regular file")


@pytest.mark.integration
@pytest.mark.parametrize("name", ["fifo.jsonl", "fifo.json"])
def test_fifo_is_refused_without_blocking(tmp_path: Path, name: str) -> None:
    os.mkfifo(tmp_path / name)  # nobody ever writes to it: opening it for reading would block forever
    r = cli("--base-url", "http://127.0.0.1:9", "--model", "m", "--dataset", name, cwd=tmp_path, timeout=20)
    assert r.returncode == 5 and r.stderr.count("\n") == 1
    assert f"{name}: dataset file is a FIFO (named pipe), not a regular file" in r.stderr


@pytest.mark.integration
def test_a_symlink_to_a_device_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").symlink_to("/dev/zero")
    r = cli("--base-url", "http://127.0.0.1:9", "--model", "m", "--dataset", "data.jsonl", cwd=tmp_path, timeout=20)
    assert r.returncode == 5 and "data.jsonl: dataset file is a character device" in r.stderr


def test_a_line_over_the_record_limit_is_skipped_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    huge = json.dumps({"prompt": "word " * (datasets.MAX_RECORD_BYTES // 5 + 10)})
    p.write_text(f'"a short prompt here"\n{huge}\n"another short prompt"\n')
    ds = load_dataset(kind=None, path=str(p), num_prompts=2, min_prompt_tokens=1)
    assert ds.available == 2 and ds.skipped["record_too_large"] == 1


def test_a_prompt_over_the_record_limit_in_sharegpt_is_skipped(tmp_path: Path) -> None:
    conv = [{"from": "human", "value": "x" * (datasets.MAX_RECORD_BYTES + 1)}, {"from": "gpt", "value": "y"}]
    ok = [{"from": "human", "value": "a fine prompt of words"}, {"from": "gpt", "value": "y"}]
    p = tmp_path / "sg.json"
    p.write_text(json.dumps([{"conversations": conv}, {"conversations": ok}]))
    ds = load_dataset(kind=None, path=str(p), num_prompts=1, max_prompt_tokens=10**9)
    assert ds.available == 1 and ds.skipped["record_too_large"] == 1


def test_a_file_over_the_size_limit_is_refused_from_its_size(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(records, "MAX_DATASET_BYTES", 1000)
    for name in ("big.jsonl", "big.json"):
        (tmp_path / name).write_text('"a prompt of some words"\n' * 100)
        with pytest.raises(BenchError, match=r"dataset file is 2.\d+ KiB, over the 1000 bytes limit"):
            load_dataset(kind=None, path=str(tmp_path / name), num_prompts=1)


# ---- item 11: SSE ----------------------------------------------------------------------------


def test_an_event_split_into_many_reads_is_parsed_whole() -> None:
    """4 MiB in 512-byte reads: one event.  (The parser used to rebuild its buffer on every read:
    quadratic; a 100 MB event took 35 s.  benchmarks/sse_parse_speed.py prints the figures.)"""
    payload = b'{"text":"' + b"x" * (4 * 2**20) + b'"}'
    raw = b"data: " + payload + b"\n\ndata: [DONE]\n\n"
    p = SSEParser()
    out: list[bytes] = []
    for i in range(0, len(raw), 512):
        out += p.feed(raw[i : i + 512])
    assert out == [payload, b"[DONE]"]


def test_an_unterminated_line_is_bounded() -> None:
    p = SSEParser()
    p.feed(b"data: ")
    piece = b"a" * 65536
    with pytest.raises(EventTooLarge, match="grew past"):
        for _ in range(MAX_EVENT_BYTES // len(piece) + 2):
            p.feed(piece)
    assert len(p._buf) == 0  # nothing held after the refusal


def test_the_limit_applies_to_a_multi_line_event_and_crlf() -> None:
    p = SSEParser(limit=100)
    assert p.feed(b"data: a\r\ndata: b\r\n\r\n") == [b"a\nb"]
    with pytest.raises(EventTooLarge):
        for _ in range(20):
            p.feed(b"data: 0123456789\r\n")


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[HttpConn, asyncio.AbstractEventLoop], None]], str]]:
    """start(handler) -> base URL; handler(conn, loop) answers each POST (GET /v1/models: 404)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    servers: list[asyncio.AbstractServer] = []

    def start(handler: Callable[[HttpConn, asyncio.AbstractEventLoop], None]) -> str:
        def dispatch(conn: HttpConn, method: str, path: str, req: bytes, t: float) -> None:
            if method == "POST":
                handler(conn, loop)
            else:
                conn.respond(404, b'{"detail":"Not Found"}')

        async def make() -> int:
            srv = await loop.create_server(lambda: HttpConn(dispatch), "127.0.0.1", 0)
            servers.append(srv)
            return int(srv.sockets[0].getsockname()[1])

        return f"http://127.0.0.1:{asyncio.run_coroutine_threadsafe(make(), loop).result(5)}"

    yield start
    for srv in servers:
        loop.call_soon_threadsafe(srv.close)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def _run(url: str, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "base_url": url,
        "model": "m",
        "num_prompts": 1,
        "max_tokens": 4,
        "random_input_len": 8,
        "scrape_metrics": False,
    }
    base.update(kw)
    return run_bench(BenchConfig(**base)).to_json_dict()


def test_comment_lines_do_not_keep_the_read_timeout_from_firing(raw_server: Any) -> None:
    def keepalive(conn: HttpConn, loop: asyncio.AbstractEventLoop) -> None:
        conn.start_stream()

        def tick(n: int) -> None:
            if conn.closed:
                return
            if n == 0:  # a client the comments kept waiting sees the stream end: not a timeout
                conn.end_stream(b"data: [DONE]\n\n")
                return
            conn.write_chunk(b":\n")  # an SSE comment, no event: not progress
            loop.call_later(0.1, tick, n - 1)

        tick(60)  # 6 s of comments; the read timeout is 0.8 s

    d = _run(raw_server(keepalive), read_timeout=0.8)
    assert d["errors_by_kind"] == {"timeout": 1}, d["error_samples"]
    assert "no response head or SSE data event for 0.8 s" in d["error_samples"]["timeout"]


def test_an_oversized_event_fails_the_request(raw_server: Any) -> None:
    def flood(conn: HttpConn, loop: asyncio.AbstractEventLoop) -> None:
        conn.start_stream()
        conn.write_chunk(b'data: {"choices":[{"text":"' + b"x" * (MAX_EVENT_BYTES + 2**20))

    # max_tokens 2048: the stream cap (16 KiB per token asked for) is then above the event limit
    d = _run(raw_server(flood), read_timeout=10.0, max_tokens=2048)
    assert d["errors_by_kind"] == {"oversized_event": 1}
    assert "grew past 16,777,216 bytes" in d["error_samples"]["oversized_event"]


# ---- item 12: exit 5 when nothing completed ----------------------------------------------------


def test_all_cancelled_at_the_time_cap_exits_5(synth: Any, tmp_path: Path) -> None:
    srv = synth(ttft_ms=5000, itl_ms=10)
    r = cli_here(
        "--base-url",
        srv.base_url,
        "--model",
        "m",
        "--num-prompts",
        "6",
        "--concurrency",
        "2",
        "--max-tokens",
        "4",
        "--max-seconds",
        "0.3",
        "--grace-seconds",
        "0",
        "--result",
        "r.json",
        cwd=tmp_path,
    )
    assert r.returncode == 5, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: no request completed: 0 failed, 2 cancelled in flight at the time cap, 4 not sent; "
        "the result is in r.json"
    ), last
    assert json.loads((tmp_path / "r.json").read_text())["incomplete"] == 2

"""Boot progress (issue #31: "nothing prints during a 190 s real boot"): while the server boots,
``run`` prints the time elapsed and the server's last meaningful log line every 10 s of the boot,
the same on a terminal and in a plain log.  A fake clock and a fed log: no sleep, no server."""

from __future__ import annotations

import io
from pathlib import Path

from run_helpers import free_port

from autobench.run.progress import BootProgress
from autobench.run.readiness import wait_ready
from autobench.run.runtimes import LogFile

#: What vLLM 0.32 (CPU build) printed during a real boot, trimmed (vllm serve of a tiny Llama):
#: the banner art, a progress bar, blank lines, then the line a user wants to see.
VLLM_BOOT = (
    "(APIServer pid=21366) INFO 12-07 16:13:29 [api_utils.py:347]    \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\n"
    "(APIServer pid=21366) INFO 12-07 16:13:29 [api_utils.py:347] \n"
    "(EngineCore pid=13974) INFO 12-07 17:34:57 [ompmultiprocessing.py:185] CPU binding of the workers:\n"
    "(EngineCore pid=13974) INFO 12-07 17:34:57 [ompmultiprocessing.py:185] \treserved_cpus=[1]\n"
    "/v/lib/python3.11/site-packages/vllm/triton_utils/dispatcher.py:139: FutureWarning: reduce_op is deprecated\n"
    '  wrapper = lookup(vars(value).get("kernel"))\n'
    "(EngineCore pid=23002) INFO 12-07 16:14:46 [cpu_model_runner.py:87] Warming up model for the compilation...\n"
    "Loading safetensors checkpoint shards: 100%|##########| 1/1 [00:00<00:00, 98.95it/s]\n"
    "\n"
)


def test_a_line_every_ten_seconds_of_the_boot_whatever_the_poll() -> None:
    lines: list[str] = []
    progress = BootProgress(lines.append, lambda: "Warming up model for the compilation...")
    for elapsed in (0.25, 2.0, 9.99):
        progress(elapsed)
    assert lines == []
    progress(10.2)
    progress(11.0)
    assert lines == ["boot: 0:10 elapsed, not ready yet; server: Warming up model for the compilation..."]
    progress(41.5)  # a slow poll crossed 20, 30 and 40: one line, not three
    progress(49.0)
    assert len(lines) == 2 and lines[1].startswith("boot: 0:41 elapsed")
    progress(50.0)
    assert len(lines) == 3


def test_before_the_server_says_anything_and_with_a_long_line() -> None:
    lines: list[str] = []
    BootProgress(lines.append, lambda: None)(12.0)
    BootProgress(lines.append, lambda: "x" * 500)(200.0)
    assert lines[0] == "boot: 0:12 elapsed, not ready yet; the server has logged nothing yet"
    assert lines[1].startswith("boot: 3:20 elapsed, not ready yet; server: xxx") and lines[1].endswith("x...")
    assert len(lines[1]) < 200


def test_wait_ready_reports_through_the_boot_on_a_fake_clock() -> None:
    port = free_port()  # nothing listens: every probe fails at once
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    lines: list[str] = []
    r = wait_ready(
        f"http://127.0.0.1:{port}/health",
        f"http://127.0.0.1:{port}/v1/models",
        "tiny",
        timeout_s=35,
        exited=lambda: None,
        clock=lambda: now[0],
        sleep=sleep,
        progress=BootProgress(lines.append, lambda: "Loading weights took 3.2 s"),
    )
    assert r.reason == "timeout"
    # polls every 2 s at most: the first poll past each 10 s mark reports, once
    assert [line.split(" elapsed")[0][:-1] for line in lines] == ["boot: 0:1", "boot: 0:2", "boot: 0:3"]
    assert all(line.endswith("server: Loading weights took 3.2 s") for line in lines)


def test_the_last_meaningful_server_line_from_the_log(tmp_path: Path) -> None:
    log = LogFile(tmp_path / "server.log", {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx"})
    assert log.last_meaningful_line() is None
    log.pump(io.BytesIO(VLLM_BOOT.encode())).join(5)
    # banner art, the progress bar and blank lines are skipped; vLLM's prefix and header dropped
    assert log.last_meaningful_line() == "Warming up model for the compilation..."
    log.close()
    # indented continuations (a multi-line record's parts, a warning's source line) are skipped
    log = LogFile(tmp_path / "server2.log", {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx"})
    log.pump(io.BytesIO(VLLM_BOOT.split("(EngineCore pid=23002)")[0].encode())).join(5)
    assert log.last_meaningful_line() == (
        "/v/lib/python3.11/site-packages/vllm/triton_utils/dispatcher.py:139: FutureWarning: reduce_op is deprecated"
    )
    log.pump(io.BytesIO(VLLM_BOOT.encode())).join(5)
    log.note("readiness: waiting")  # autobench's own notes are not the server's
    assert log.last_meaningful_line() == "Warming up model for the compilation..."
    line = "(EngineCore pid=1) WARNING 12-07 16:15:47 [shm_broadcast.py:871] No   shared memory block in 60 s\n"
    log.pump(io.BytesIO(line.encode())).join(5)
    assert log.last_meaningful_line() == "WARNING No shared memory block in 60 s"  # a level other than INFO kept
    log.pump(io.BytesIO(b"token=hf_abcdefghijklmnopqrstuvwx rejected\n")).join(5)
    said = log.last_meaningful_line()
    assert said is not None and "hf_abcdefghijklmnopqrstuvwx" not in said and said.endswith("rejected")
    log.close()

"""Boot progress beyond the local runtimes (issue #31: "nothing prints during a 190 s real boot"):
the multi-node driver's `up` and a Slurm job's boot print, every 10 s of the boot, the time
elapsed, where the boot is, and the server's last meaningful log line, redacted.  In-process: a
fake clock, a fake `up` process, a fed driver.log / server.log, and the head's log fetch replaced
(the real driver and Slurm are the integration tier's: test_run_cluster.py, test_run_slurm.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from autobench.run import cluster, slurm
from autobench.run.progress import BootProgress, last_meaningful_line, log_tail, wait_booting
from autobench.run.signals import SignalGuard
from autobench.run.slurm import BootWatch, JobInfo

SECRET = "hf_abcdefghijklmnopqrstuvwx"

#: The driver's own lines in driver.log during `up` (templates/cluster_driver.sh.j2), and what the
#: node scripts print around them.
DRIVER_LOG = "autobench: start node 0 (head, 10.0.0.1)\n0123456789abcdef\nautobench: start node 1 (10.0.0.2)\n"
#: `driver.sh serverlog` before the head's container exists, and once vLLM logs (docker logs).
NO_CONTAINER = "Error response from daemon: No such container: autobench-c2-node0\n"
RAY_NO_LOG = "cat: /tmp/autobench-serve.log: No such file or directory\n"
HEAD_LOG = (
    "(APIServer pid=1) INFO 12-07 16:13:29 [api_server.py:1] vLLM API server version 0.11.0\n"
    f"(EngineCore pid=2) INFO 12-07 16:14:46 [loader.py:3] Loading weights with token={SECRET}\n"
    "Loading safetensors checkpoint shards: 100%|##########| 1/1 [00:00<00:00, 98.95it/s]\n"
)


class FakeUp:
    """A driver `up` that runs for ``polls`` waits of ``step`` seconds on the fake clock."""

    def __init__(self, polls: int, now: list[float], code: int = 0):
        self.polls, self.now, self.code, self.waits = polls, now, code, 0

    def wait(self, timeout: float | None = None) -> int:
        self.waits += 1
        if self.waits > self.polls:
            return self.code
        assert timeout is not None
        self.now[0] += timeout
        raise subprocess.TimeoutExpired("driver.sh up", timeout)


def test_wait_booting_reports_while_the_step_runs_and_returns_its_code() -> None:
    now = [100.0]
    seen: list[float] = []
    assert wait_booting(FakeUp(25, now, code=3), seen.append, step_s=1.0, clock=lambda: now[0]) == 3
    assert seen == [float(i) for i in range(1, 26)]
    assert wait_booting(FakeUp(0, now), seen.append, clock=lambda: now[0]) == 0  # done at once: no report


def test_a_boot_line_with_the_state_and_without_a_server_log() -> None:
    lines: list[str] = []
    BootProgress(lines.append, lambda: "Loading weights", state=lambda: "driver: start node 1 (h2)")(10.0)
    BootProgress(lines.append, None, state=lambda: None)(65.0)  # cannot see the log: elapsed and state alone
    BootProgress(lines.append, None, state=lambda: "job 7 on n1")(20.0)
    assert lines == [
        "boot: 0:10 elapsed, driver: start node 1 (h2); server: Loading weights",
        "boot: 1:05 elapsed, not ready yet",
        "boot: 0:20 elapsed, job 7 on n1",
    ]


def test_last_meaningful_line_skips_blanks_notes_and_bars() -> None:
    assert last_meaningful_line([]) is None
    assert last_meaningful_line(["", "[autobench] readiness: waiting", "   "]) is None
    assert last_meaningful_line(HEAD_LOG.splitlines()) == f"Loading weights with token={SECRET}"


def test_what_says_something(tmp_path: Path) -> None:
    said = "real line here"
    for noise in ("ab 12", "12:34 56.7 %", "\u00e9\u00e9\u00e9 \u00e9\u00e9", "\treserved_cpus=[1]", ""):
        assert last_meaningful_line([said, noise]) == said, noise  # < 3 ASCII letters, or a continuation
    assert last_meaningful_line([said, "OOM"]) == "OOM"  # three letters are enough


def test_log_tail_reads_the_end_of_a_long_log(tmp_path: Path) -> None:
    assert log_tail(tmp_path / "not-yet.log") == []
    path = tmp_path / "server.log"
    path.write_text("".join(f"line {i}\n" for i in range(10_000)), encoding="utf-8")  # 10 bytes a line at the end
    assert log_tail(path, max_bytes=1005) == [f"line {i}" for i in range(9900, 10_000)]  # the cut line dropped
    path.write_text("a\nb\n", encoding="utf-8")
    assert log_tail(path, max_bytes=1000) == ["a", "b"]
    path.write_bytes(b"x" * 996 + b"\nab\n")  # exactly max_bytes: nothing is cut, the first line stays
    assert log_tail(path, max_bytes=1000) == ["x" * 996, "ab"]
    path.write_bytes(b"bad \xff byte\n")
    assert log_tail(path) == ["bad \ufffd byte"]


def test_log_tail_reads_64_kib_by_default(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"x" * (64 * 1024 - 3) + b"\nab\n")  # one byte more than 64 KiB: the first line is cut
    assert log_tail(path) == ["ab"]


def test_a_long_server_line_is_cut_at_120_characters() -> None:
    lines: list[str] = []
    BootProgress(lines.append, lambda: "y" * 120)(10.0)
    BootProgress(lines.append, lambda: "z" * 121)(10.0)
    assert lines[0].endswith("server: " + "y" * 120)
    assert lines[1].endswith("server: " + "z" * 119 + "...")


def test_the_drivers_step_is_its_last_own_line(tmp_path: Path) -> None:
    log = tmp_path / "driver.log"
    assert cluster.driver_step(log) is None
    log.write_text("0123456789abcdef\n", encoding="utf-8")
    assert cluster.driver_step(log) is None
    log.write_text(DRIVER_LOG, encoding="utf-8")
    assert cluster.driver_step(log) == "start node 1 (10.0.0.2)"


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """`driver.sh serverlog` answered with ``.answer``; the calls recorded in ``.calls``."""
    got = SimpleNamespace(calls=[], answer=HEAD_LOG)

    def fetch(argv: list[str], env: object, timeout_s: float, guard: object = None) -> str:
        got.calls.append(argv)
        assert timeout_s == cluster.FETCH_TIMEOUT_S
        return str(got.answer)

    monkeypatch.setattr(cluster, "_fetch", fetch)
    return got


def test_the_heads_log_is_asked_for_only_once_the_head_is_started(tmp_path: Path, fetched) -> None:
    driver, log = tmp_path / "driver.sh", tmp_path / "driver.log"
    log.write_text("autobench: claim\n", encoding="utf-8")
    assert cluster.head_log_line(driver, log, {}) is None and fetched.calls == []  # not asked: no head yet
    log.write_text(DRIVER_LOG, encoding="utf-8")
    assert cluster.head_log_line(driver, log, {}) == f"Loading weights with token={SECRET}"
    assert fetched.calls == [["bash", str(driver), "serverlog"]]
    # what the serverlog action says of its own when there is no log yet is not the server's
    for said in (NO_CONTAINER, RAY_NO_LOG, ""):
        fetched.answer = said
        assert cluster.head_log_line(driver, log, {}) is None
    fetched.answer = HEAD_LOG + NO_CONTAINER
    assert cluster.head_log_line(driver, log, {}) == f"Loading weights with token={SECRET}"


def _run(tmp_path: Path, lines: list[str]) -> SimpleNamespace:
    from autobench.redaction import redact

    return SimpleNamespace(
        plan=SimpleNamespace(path=lambda name: tmp_path / name),
        echo=lines.append,
        redact=lambda text: redact(text, {"HF_TOKEN": SECRET}),
        guard=SignalGuard(),
    )


def test_the_cluster_boot_line_names_the_step_and_the_heads_line_redacted(tmp_path: Path, fetched) -> None:
    (tmp_path / "driver.log").write_text(DRIVER_LOG, encoding="utf-8")
    lines: list[str] = []
    now = [0.0]
    progress = cluster.boot_progress(_run(tmp_path, lines), {"AUTOBENCH_OUT": str(tmp_path)})  # type: ignore[arg-type]
    assert wait_booting(FakeUp(21, now), progress, clock=lambda: now[0]) == 0
    assert len(lines) == 2 and len(fetched.calls) == 2  # the head's log fetched once per line, not per poll
    assert fetched.calls[0] == ["bash", str(tmp_path / "driver.sh"), "serverlog"]
    assert lines[0].startswith("boot: 0:10 elapsed, driver: start node 1 (10.0.0.2); server: Loading weights")
    assert SECRET not in "\n".join(lines)


def test_the_cluster_boot_before_the_head_starts(tmp_path: Path, fetched) -> None:
    lines: list[str] = []
    progress = cluster.boot_progress(_run(tmp_path, lines), {})  # type: ignore[arg-type]
    progress(10.0)  # no driver.log yet
    assert lines == ["boot: 0:10 elapsed, not ready yet; the server has logged nothing yet"]
    assert fetched.calls == []


def _job(state: str) -> JobInfo:
    return JobInfo("42", state, None, None, "abnode1", None, "debug", "10:00")


def test_a_slurm_boot_reports_from_the_shared_server_log(tmp_path: Path) -> None:
    from autobench.redaction import redact

    lines: list[str] = []
    now = [0.0]
    watch = BootWatch(tmp_path, lines.append, lambda t: redact(t, {"HF_TOKEN": SECRET}), clock=lambda: now[0])
    for _ in range(30):  # queued: no phase file yet, no line however long
        now[0] += 1
        watch(_job("PENDING"))
    (tmp_path / "phase").write_text("boot\n", encoding="utf-8")
    for _ in range(30):  # requeued: the phase file of its last start says boot, but nothing runs
        now[0] += 1
        watch(_job("PENDING"))
    assert lines == []
    watch(_job("RUNNING"))  # the boot starts here
    for _ in range(10):
        now[0] += 1
        watch(_job("RUNNING"))
    assert lines == ["boot: 0:10 elapsed, not ready yet; the server has logged nothing yet"]
    (tmp_path / "server.log").write_text(HEAD_LOG + "[autobench] readiness: waiting\n", encoding="utf-8")
    now[0] += 10
    watch(_job("RUNNING"))
    assert lines[1].startswith("boot: 0:20 elapsed, not ready yet; server: Loading weights with token=")
    assert SECRET not in lines[1]
    (tmp_path / "phase").write_text("bench\n", encoding="utf-8")
    now[0] += 30
    watch(_job("RUNNING"))  # the bench: the boot is over
    assert len(lines) == 2


def test_follow_ticks_while_the_job_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    states = iter(["PENDING", "RUNNING", "RUNNING", "COMPLETED"])
    monkeypatch.setattr(slurm, "job_info", lambda job_id, env: _job(next(states)))
    monkeypatch.setattr(slurm.time, "sleep", lambda s: None)
    ticked: list[str] = []
    said: list[str] = []
    info = slurm.follow("42", {}, said.append, tick=lambda i: ticked.append(i.state))
    assert info.state == "COMPLETED" and ticked == ["PENDING", "RUNNING", "RUNNING"]
    assert said == [
        "slurm job 42: PENDING on abnode1",
        "slurm job 42: RUNNING on abnode1",
        "slurm job 42: COMPLETED on abnode1",
    ]

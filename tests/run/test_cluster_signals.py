"""A signal at the seams of a multi-node run: between spawning a driver phase and recording it,
and between ``driver.sh up`` handing the nodes over (READY) and the bench starting.

Both windows are a few bytecodes wide, so the real suite met them only by chance (CI once left
``driver.sh watch`` running after the run had recorded its row).  Here the signal is delivered
exactly there, in-process: the driver phases are stand-ins (no process is started).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from autobench.run import cluster
from autobench.run.cluster import STATUS_FILE, ClusterRuntime, _Driver
from autobench.run.signals import RunInterrupted, SignalGuard


def _run(tmp_path: Path, guard: SignalGuard) -> SimpleNamespace:
    plan = SimpleNamespace(recipe_name="c2", run_dir=tmp_path, path=lambda name: tmp_path / name)
    outcome = SimpleNamespace(status=None, signal=None, root_cause_category=None, root_cause_message=None)
    echoed: list[str] = []
    return SimpleNamespace(plan=plan, env={}, guard=guard, outcome=outcome, echo=echoed.append, echoed=echoed)


class _Phase:
    """A driver phase that has ended (``poll`` says so) with exit status 0."""

    pid = 2**22 + 1  # no such process group: signalling it is a no-op

    def poll(self) -> int:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0


def test_a_signal_while_a_phase_is_spawned_is_raised_once_the_phase_is_recorded(tmp_path, monkeypatch):
    spawned = _Phase()

    def popen(*args: object, **kwargs: object) -> _Phase:
        os.kill(os.getpid(), signal.SIGTERM)  # arrives the moment the child exists
        return spawned

    monkeypatch.setattr(cluster.subprocess, "Popen", popen)
    with SignalGuard() as guard:
        driver = _Driver(_run(tmp_path, guard), "remote")  # type: ignore[arg-type]
        with pytest.raises(RunInterrupted) as caught:
            driver.start("watch")
    assert caught.value.signame == "SIGTERM"
    assert driver.groups == [spawned]  # so the run's end stops and kills its group


class _FakeDriver:
    """``up`` ends with the status it is given, then the signal comes before the bench starts."""

    def __init__(self, tmp_path: Path, status: str):
        self.tmp_path, self.status = tmp_path, status
        self.calls: list[str] = []
        self.env: dict[str, str] = {}  # what `driver.sh serverlog` would run with (boot progress)

    def start(self, mode: str) -> _Phase:
        self.calls.append(mode)
        (self.tmp_path / STATUS_FILE).write_text(f"status={self.status}\ncause=\n")
        phase = _Phase()
        phase.wait = self._interrupted  # type: ignore[method-assign]
        return phase

    @staticmethod
    def _interrupted(timeout: float | None = None) -> int:
        raise RunInterrupted(signal.SIGHUP)

    def stop_running(self) -> None:
        self.calls.append("stop_running")

    def down(self) -> None:
        self.calls.append("down")


@pytest.mark.parametrize(("status", "torn_down_by_the_run"), [("READY", True), ("ABORTED", False)])
def test_a_signal_after_up_handed_the_nodes_over_still_tears_them_down(tmp_path, status, torn_down_by_the_run):
    # READY: up exited leaving the nodes up for the bench, so only the run can tear them down.
    # ABORTED: up's own trap tore down what it had started; `down` again would empty server.log.
    runtime = ClusterRuntime.__new__(ClusterRuntime)
    run = _run(tmp_path, SignalGuard())
    driver = _FakeDriver(tmp_path, status)
    runtime._run(run, driver)  # type: ignore[arg-type]
    assert driver.calls == ["up", "stop_running", *(["down"] if torn_down_by_the_run else [])]
    assert run.outcome.status == "ABORTED" and run.outcome.root_cause_message == "interrupted by SIGHUP during boot"


def test_a_signal_while_the_heads_log_is_fetched_kills_the_fetch(tmp_path, monkeypatch):
    # The boot progress asks `driver.sh serverlog` every 10 s; a signal while that child is
    # spawned must not leave it running: it is killed (its group) and waited for, then raised.
    killed: list[int] = []

    class _Fetch(_Phase):
        def communicate(self, timeout: float | None = None) -> tuple[bytes, bytes]:
            raise AssertionError("the signal is raised before the fetch is waited for")

    def popen(*args: object, **kwargs: object) -> _Fetch:
        os.kill(os.getpid(), signal.SIGHUP)
        return _Fetch()

    monkeypatch.setattr(cluster.subprocess, "Popen", popen)
    monkeypatch.setattr(cluster, "_signal_group", lambda proc, sig: killed.append(sig))
    with SignalGuard() as guard, pytest.raises(RunInterrupted):
        cluster._fetch(["bash", "driver.sh", "serverlog"], {}, 5.0, guard)
    assert killed == [signal.SIGKILL]

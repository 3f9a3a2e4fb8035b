"""A hung `docker run -d` cannot make `run` unstoppable (issue 12, item 6).

The fake docker CLI (tests/run/fake_docker.py, no Docker engine here) creates the container
(a real synthetic server) and then never returns, ignoring SIGTERM.  `autobench run` must stop
on SIGINT / SIGTERM, or give up at the recipe's ready timeout, and in both cases remove the
container, kill the hung CLI and record the run.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_helpers import ledger_rows, pid_alive
from test_run_docker import _calls, _docker_env

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration


def _start(recipe: Path, tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "autobench", "run", str(recipe), "--runtime", "docker"]
        + ["--ledger", str(tmp_path / "ledger.db"), "--runs-dir", str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )


def _wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_run_whose_docker_run_hangs(make_recipe, tmp_path, sig):
    recipe = make_recipe(ready_timeout=600)
    env = _docker_env(tmp_path, FAKE_DOCKER_RUN_HANG="1")
    proc = _start(recipe, tmp_path, env)
    state = tmp_path / "docker-state"
    try:
        _wait_for(state / "hung-cli.pid")
        hung = int((state / "hung-cli.pid").read_text())
        container = int((state / "ab-synth-run.pid").read_text())
        time.sleep(0.3)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "internal error" not in err
    assert ["rm", "-f", "ab-synth-run"] in _calls(tmp_path)
    assert not pid_alive(hung) and not pid_alive(container)
    [row] = ledger_rows(tmp_path)
    assert row.status == "ABORTED"


def test_a_docker_run_that_never_returns_fails_at_the_ready_timeout(make_recipe, tmp_path):
    recipe = make_recipe(ready_timeout=3)
    env = _docker_env(tmp_path, FAKE_DOCKER_RUN_HANG="1")
    proc = _start(recipe, tmp_path, env)
    try:
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 6, out + err
    assert "did not return within 3 s" in out + err
    state = tmp_path / "docker-state"
    assert not pid_alive(int((state / "hung-cli.pid").read_text()))
    assert ["rm", "-f", "ab-synth-run"] in _calls(tmp_path)
    [row] = ledger_rows(tmp_path)
    assert row.status == "FAILED" and row.root_cause_category == "start_timeout"


def test_a_signal_during_a_hung_docker_rm_stops_the_teardown_and_the_run_is_not_done(make_recipe, tmp_path):
    """issue #27: SIGTERM while `docker rm -f` hung was ignored for 120 s, then the run was DONE
    with the container still running.  Now the signal stops the wait, the row says ABORTED and
    names what may still run."""
    recipe = make_recipe(ready_timeout=60)
    env = _docker_env(tmp_path, FAKE_DOCKER_RM_HANG="1")
    proc = _start(recipe, tmp_path, env)
    state = tmp_path / "docker-state"
    try:
        _wait_for(state / "rm-hang.pid", timeout=90)  # the bench is done; teardown hangs in docker rm -f
        rm_pid = int((state / "rm-hang.pid").read_text())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)  # not RM_TIMEOUT_S (120 s): the signal ends the wait
    finally:
        if proc.poll() is None:
            proc.kill()
        # The run rightly left the container running (its removal was stopped): remove it here,
        # with a docker rm that does not hang, so no server outlives the test.
        calm = {k: v for k, v in env.items() if k != "FAKE_DOCKER_RM_HANG"}
        subprocess.run(["docker", "rm", "-f", "ab-synth-run"], env=calm, capture_output=True, timeout=30)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert not pid_alive(rm_pid)  # the hung docker CLI is not left behind either
    [row] = ledger_rows(tmp_path)
    assert row.status == "ABORTED" and row.root_cause_category == "interrupted"
    assert "docker rm -f ab-synth-run stopped by SIGTERM: the container may still run" in row.root_cause_message
    assert "the container may still run" in out + err

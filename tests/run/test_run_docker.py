"""The docker runtime through the docker CLI.  There is no Docker engine here, so a fake
`docker` executable (tests/run/fake_docker.py) is first on PATH: it records its argv and
runs the REAL synthetic server for `docker run`.  Everything else is real."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from run_helpers import HERE, ledger_rows, only_run_dir, pid_alive, run_env

from autobench.compile import docker_argv
from autobench.recipe import load_recipe

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration


def _docker_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "docker"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} {HERE / "fake_docker.py"} "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "docker-state"
    state.mkdir()
    env = run_env(tmp_path, FAKE_DOCKER_STATE=str(state), **extra)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def _run(recipe: Path, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "autobench",
            "run",
            str(recipe),
            "--runtime",
            "docker",
            "--ledger",
            str(tmp_path / "ledger.db"),
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )


def _calls(tmp_path: Path) -> list[list[str]]:
    lines = (tmp_path / "docker-state" / "calls.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_docker_runtime_runs_the_compiled_command_and_removes_the_container(make_recipe, tmp_path: Path):
    recipe = make_recipe()
    env = _docker_env(tmp_path, FAKE_VLLM_ARGS="--ttft-ms 5 --itl-ms 2", HF_TOKEN="hf_" + "a1" * 20)
    res = _run(recipe, tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    calls = _calls(tmp_path)
    # the image is asked for its digest first (a tag: not refused, recorded when docker knows it),
    assert calls[0] == ["image", "inspect", "vllm/vllm-openai:v0.23.1"]
    assert calls[1] == docker_argv(load_recipe(recipe).recipe)[1:]  # then exactly the compiled argv
    assert ["logs", "-f", "ab-synth-run"] in calls
    # and once more after the run, since `docker run` pulls an image docker did not have
    assert calls[-2:] == [["rm", "-f", "ab-synth-run"], ["image", "inspect", "vllm/vllm-openai:v0.23.1"]]
    [row] = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.metrics["completed"] == 8
    assert row.image == "vllm/vllm-openai:v0.23.1"
    log = (only_run_dir(tmp_path) / "server.log").read_text()
    assert "docker rm -f ab-synth-run -> exit 0" in log
    assert not (tmp_path / "docker-state" / "ab-synth-run.pid").exists()


def test_a_refused_docker_run_records_nothing_and_never_removes_someone_elses_container(make_recipe, tmp_path: Path):
    recipe = make_recipe()
    env = _docker_env(tmp_path)
    other = tmp_path / "docker-state" / "ab-synth-run.pid"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        other.write_text(str(sleeper.pid))  # a container of that name already exists
        res = _run(recipe, tmp_path, env)
        # Docker refused the run itself (exit 125): no container ran, so there is no
        # run to record -- a BLOCKED row would falsely say this recipe cannot boot.
        assert res.returncode == 6, res.stdout + res.stderr
        [line] = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert "docker refused to start the container (exit 125)" in line and "is already in use" in line
        assert "Traceback" not in res.stderr
        assert all(c[0] != "rm" for c in _calls(tmp_path))
        assert pid_alive(sleeper.pid)
        assert ledger_rows(tmp_path) == []
        log = (only_run_dir(tmp_path) / "server.log").read_text()
        assert "is already in use" in log
    finally:
        sleeper.kill()
        sleeper.wait()


def test_without_docker_the_hint_is_about_docker_not_the_process_runtimes_vllm_exec(make_recipe, tmp_path: Path):
    # PATH holds only the Python that runs autobench: no docker CLI at all.
    env = run_env(tmp_path, PATH=str(Path(sys.executable).parent))
    r = _run(make_recipe(), tmp_path, env)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "'docker' not found" in last and "--runtime process" in last
    assert "--vllm-exec" not in r.stderr

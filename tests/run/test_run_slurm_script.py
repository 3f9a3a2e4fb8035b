"""tools/slurm-single-machine.sh, the documented way to a Slurm cluster on one machine
(docs/slurm.md), really brings one up: two idle nodes with their GPUs, a job that asks for a
GPU runs, one that asks for more than a node has is refused, and ``stop`` ends the daemons."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from run_helpers import REPO, free_port
from slurm_cluster import available

pytestmark = pytest.mark.integration

SCRIPT = REPO / "tools" / "slurm-single-machine.sh"


def test_the_single_machine_cluster_script(tmp_path: Path) -> None:
    why = available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Slurm is needed in CI: {why}")
        pytest.skip(why)
    ports = {"SLURMCTLD_PORT": str(free_port()), "SLURMD_PORT1": str(free_port()), "SLURMD_PORT2": str(free_port())}
    env = {**os.environ, **ports}
    try:
        up = subprocess.run([str(SCRIPT), str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"ready: export SLURM_CONF={tmp_path}/slurm.conf" in up.stdout
        assert "abnode1 gpu:2 idle\nabnode2 gpu:2 idle" in up.stdout
        env["SLURM_CONF"] = str(tmp_path / "slurm.conf")
        job = subprocess.run(
            [
                "sbatch",
                "--parsable",
                "--wait",
                "--gpus-per-node=1",
                f"--output={tmp_path}/job.out",
                "--wrap",
                "hostname",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert job.returncode == 0, job.stderr
        assert (tmp_path / "job.out").read_text().strip()
        refused = subprocess.run(
            ["sbatch", "--test-only", "--gpus-per-node=3", "--wrap", "hostname"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert refused.returncode != 0 and "Requested node configuration is not available" in refused.stderr
    finally:
        pids = [int(p.read_text()) for p in tmp_path.glob("*.pid") if p.read_text().strip()]
        subprocess.run([str(SCRIPT), str(tmp_path), "stop"], capture_output=True, text=True, timeout=60)
    deadline = time.monotonic() + 30  # only so a daemon that ignores SIGTERM cannot hang the suite
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        assert time.monotonic() < deadline, "a daemon outlived stop"
        time.sleep(0.2)

"""A real single-node Slurm cluster on this machine for the Slurm runtime tests.

Debian's slurm-wlm (slurmctld + slurmd + the client commands) and munge, installed by
.ci/run.  ``SlurmCluster`` writes its own slurm.conf into a temporary folder (free
loopback ports, its own state and spool dirs, no accounting database, no cgroups),
starts munged if none is running (a system service like PostgreSQL: left running), then
slurmctld and two slurmd daemons (nodes abnode1 and abnode2, both on this machine) in the
foreground as child processes, and waits until both nodes are idle.  Client commands find the cluster through
``SLURM_CONF`` (``cluster.env``).  ``stop()`` ends the daemons it started.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

NODES = ("abnode1", "abnode2")  # two slurmd daemons on this machine: multi-node jobs run for real
#: GPUs each node declares (gres.conf): no GPU exists here, so each "GPU" is a character device
#: made like /dev/null (Slurm 22.05 drops a GPU without a device file); Slurm schedules, refuses
#: and grants ``--gpus-per-node`` / ``--gres=gpu:N`` requests as on a GPU cluster.
GPUS = 2
PARTITION = "debug"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available() -> str | None:
    """None when Slurm and munge are installed, else what is missing."""
    missing = [
        b for b in ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "munged") if not shutil.which(b)
    ]
    if missing:
        return "not installed: " + ", ".join(missing) + " (apt-get install slurm-wlm munge; .ci/run does)"
    if os.geteuid() != 0:
        return "slurmd must run as root"
    return None


class SlurmCluster:
    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_conf(self) -> None:
        for sub in ("state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        cpus = max(1, (os.cpu_count() or 2) // len(NODES))
        nodes = "\n".join(
            f"NodeName={name} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 Port={_free_port()} "
            f"CPUs={cpus} RealMemory=1000 Gres=gpu:{GPUS} State=UNKNOWN"
            for name in NODES
        )
        self.conf.write_text(
            f"""ClusterName=autobench-test
SlurmctldHost=localhost(127.0.0.1)
GresTypes=gpu
SlurmctldPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation={self.root}/state
SlurmdSpoolDir={self.root}/spool-%n
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd-%n.pid
SlurmctldLogFile={self.root}/log/slurmctld.log
SlurmdLogFile={self.root}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
{nodes}
PartitionName={PARTITION} Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP
""",
            encoding="utf-8",
        )
        # slurmd reads gres.conf beside slurm.conf.
        for k in range(GPUS):
            device = self.root / f"fakegpu{k}"
            if not device.exists():
                os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
        files = f"{self.root}/fakegpu[0-{GPUS - 1}]"
        (self.root / "gres.conf").write_text(f"Name=gpu File={files}\n", encoding="utf-8")

    def _munge(self) -> None:
        if subprocess.run(["munge", "-n"], capture_output=True, timeout=10).returncode == 0:
            return  # a munged is already answering
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=True, timeout=30)
        deadline = time.monotonic() + 15
        while subprocess.run(["munge", "-n"], capture_output=True, timeout=10).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("munged did not start")
            time.sleep(0.2)

    def start(self, timeout: float = 60) -> None:
        self._write_conf()
        self._munge()
        daemons = [["slurmctld", "-D", "-i", "-f", str(self.conf)]]
        daemons += [["slurmd", "-D", "-N", name, "-f", str(self.conf)] for name in NODES]
        for argv in daemons:
            log = (self.root / "log" / f"{argv[0]}-{argv[3] if argv[0] == 'slurmd' else 'ctld'}.out").open("wb")
            self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env))
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}: {self.logs()}")
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env)
            state = " ".join(sorted(set(out.stdout.split())))
            if state == "idle":
                return
            time.sleep(0.3)
        raise RuntimeError(f"the Slurm node did not become idle (state {state!r}): {self.logs()}")

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            parts.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-2000:])
        return "\n".join(parts)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def running_cluster(tmp_path_factory: Any) -> Iterator[SlurmCluster]:
    """The body of a module-scoped ``cluster`` fixture: a started cluster, stopped afterwards;
    skipped where Slurm is missing (failed in CI, which must have it)."""
    import pytest

    why = available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Slurm is needed in CI: {why}")
        pytest.skip(why)
    c = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        c.start()
    except Exception:
        c.stop()
        raise
    try:
        yield c
    finally:
        c.stop()

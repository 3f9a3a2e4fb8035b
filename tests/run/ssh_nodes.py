"""Real nodes for the multi-node tests: network namespaces, each with its own address and a real
OpenSSH server (key auth only), reached from this machine over a veth pair.

``SshNodes(root, count)`` (root only: ``ip netns``, ``ip link``, ``/usr/sbin/sshd``) creates
namespaces ``abnPID-K`` with the address 10.(200+K).X.2 -- the other end, in this namespace, is
.1 -- starts ``sshd -D`` in each with a host key, an authorized key and ``SetEnv`` lines that
give every session the node's own environment (the fake ``docker`` of tests/run/fake_cluster.py
first on PATH, its state folder, the node-guard lock folder): what a real node has installed.
``remote`` is the ssh command line to pass as ``--remote``, ``hosts`` the ``root@ADDRESS`` list,
``link(k, up)`` takes node K's link down or up, ``route_here()`` lets every node reach this
machine's address on any link (``here(k)``: load generators on the nodes, a server here) and
``forward_between()`` the other nodes' addresses (load generators on every node, the server on
the head), ``pids(k)`` the processes living in node K's
namespace besides its sshd.  ``stop()`` ends the daemons and deletes the namespaces.
``running_nodes(...)`` is the test modules' fixture body: two nodes, started and stopped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """None when the machine can host the nodes, else why not."""
    if os.geteuid() != 0:
        return "network namespaces and sshd need root"
    missing = [tool for tool in ("ip", "ssh", "ssh-keygen") if not shutil.which(tool)]
    if not Path(SSHD).is_file():
        missing.append(SSHD)
    if missing:
        return "not installed: " + ", ".join(missing) + " (apt-get install openssh-server iproute2; .ci/run does)"
    return None


@contextlib.contextmanager
def running_nodes(
    root: Path, bindir: Path, server_args: str, *, route_here: bool = False, forward: bool = False
) -> Iterator[SshNodes]:
    """Two nodes under ``root`` (fails in CI, skips elsewhere, when this machine cannot host
    them), started, with this machine's addresses routed (``route_here``) and the other nodes'
    forwarded (``forward``) when asked; stopped however the block ends."""
    why = available()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"sshd and network namespaces are needed in CI: {why}")
        pytest.skip(why)
    nodes = SshNodes(root, 2, bindir, root / "hosts", server_args=server_args)
    try:
        nodes.start()
        if route_here:
            nodes.route_here()
        if forward:
            nodes.forward_between()
        yield nodes
    finally:
        nodes.stop()


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


class SshNodes:
    def __init__(self, root: Path, count: int, bindir: Path, fake_root: Path, server_args: str):
        self.root = root
        self.count = count
        self.bindir = bindir
        self.fake_root = fake_root
        self.server_args = server_args  # the head's synthetic server (fake_cluster: FAKE_SERVER_ARGS)
        tag = os.getpid() % 100000
        self.names = [f"abn{tag}-{k}" for k in range(count)]
        self.veths = [f"abv{tag}x{k}" for k in range(count)]
        self.addresses = [f"10.{200 + k}.{tag % 250}.2" for k in range(count)]
        self.key = root / "id_ed25519"
        self.daemons: list[subprocess.Popen[bytes]] = []

    @property
    def hosts(self) -> list[str]:
        return [f"root@{a}" for a in self.addresses]

    @property
    def remote(self) -> str:
        known = self.root / "known_hosts"
        return (
            f"ssh -i {self.key} -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5 "
            f"-o ServerAliveCountMax=3 -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile={known} "
            "-o LogLevel=ERROR"
        )

    def start(self) -> None:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation folder
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        for k in range(self.count):
            self._node(k)
        for k in range(self.count):
            self._wait_ssh(k)

    def _node(self, k: int) -> None:
        ns, veth, address = self.names[k], self.veths[k], self.addresses[k]
        here = address.rsplit(".", 1)[0] + ".1"
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", f"{veth}n")
        _run("ip", "link", "set", f"{veth}n", "netns", ns)
        _run("ip", "addr", "add", f"{here}/24", "dev", veth)
        _run("ip", "link", "set", veth, "up")
        _run("ip", "netns", "exec", ns, "ip", "addr", "add", f"{address}/24", "dev", f"{veth}n")
        _run("ip", "netns", "exec", ns, "ip", "link", "set", f"{veth}n", "up")
        _run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        folder = self.root / f"node{k}"
        folder.mkdir()
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / "host_key"))
        shutil.copy(f"{self.key}.pub", folder / "authorized_keys")
        host = self.hosts[k]
        state = self.fake_root / host
        env = {
            "PATH": f"{self.bindir}:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "FAKE_HOST": host,
            "FAKE_DOCKER_STATE": str(state),
            "AUTOBENCH_LOCK_DIR": str(state / "locks"),
            "FAKE_HEAD_HOST": self.hosts[0],
            "FAKE_SERVER_ARGS": self.server_args,
        }
        set_env = " ".join(f'"{name}={value}"' for name, value in env.items() if value)
        (folder / "sshd_config").write_text(
            f"""ListenAddress {address}
Port 22
HostKey {folder / "host_key"}
AuthorizedKeysFile {folder / "authorized_keys"}
PidFile {folder / "sshd.pid"}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv {set_env}
""",
            encoding="utf-8",
        )
        state.mkdir(parents=True, exist_ok=True)
        log = (folder / "sshd.log").open("wb")
        self.daemons.append(
            subprocess.Popen(
                ["ip", "netns", "exec", ns, SSHD, "-D", "-e", "-f", str(folder / "sshd_config")],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )

    def _wait_ssh(self, k: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            probe = subprocess.run(
                [*self.remote.split(), self.hosts[k], "true"], capture_output=True, text=True, timeout=30
            )
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd in {self.names[k]} does not answer: {probe.stderr} {self.logs()}")
            time.sleep(0.2)

    def here(self, k: int) -> str:
        """This machine's address on node K's link (the .1 of its /24)."""
        return self.addresses[k].rsplit(".", 1)[0] + ".1"

    def route_here(self) -> None:
        """A default route in every node through its link, so each reaches this machine's
        addresses on every link (a server listening on ``here(0)`` is reached from every node,
        locally delivered here: no forwarding between the nodes)."""
        for k in range(self.count):
            _run("ip", "netns", "exec", self.names[k], "ip", "route", "add", "default", "via", self.here(k))

    def forward_between(self) -> None:
        """Let the nodes reach each other's addresses through this machine: IPv4 forwarding on
        the nodes' links only (their veths, deleted by :meth:`stop`; the machine's own
        ``net.ipv4.ip_forward`` is left as it is).  Needs :meth:`route_here`."""
        for veth in self.veths:
            Path(f"/proc/sys/net/ipv4/conf/{veth}/forwarding").write_text("1\n")

    def link(self, k: int, up: bool) -> None:
        _run("ip", "link", "set", self.veths[k], "up" if up else "down")

    def pids(self, k: int) -> list[int]:
        """Processes in node K's namespace other than its sshd listener."""
        out = subprocess.run(["ip", "netns", "pids", self.names[k]], capture_output=True, text=True, timeout=30)
        listener = {self.daemons[k].pid, *self._children(self.daemons[k].pid)}
        return sorted(int(p) for p in out.stdout.split() if int(p) not in listener and _alive(int(p)))

    @staticmethod
    def _children(pid: int) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        return []

    def logs(self) -> str:
        return "\n".join(
            f"--- {p}\n" + p.read_text(errors="replace")[-2000:] for p in sorted(self.root.glob("node*/sshd.log"))
        )

    def stop(self) -> None:
        for k, daemon in enumerate(self.daemons):
            for pid in self.pids(k):  # whatever a test left behind in the node
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            daemon.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.wait(timeout=10)
        for ns in self.names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        for veth in self.veths:
            subprocess.run(["ip", "link", "del", veth], capture_output=True, timeout=30)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


__all__ = ["SshNodes", "available"]

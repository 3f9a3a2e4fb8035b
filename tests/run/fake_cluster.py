"""Fakes for the multi-node driver tests: no second machine, Docker engine or GPU exists here.

``remote``  stands in for ssh: ``remote HOST bash -s -- ACTION`` runs the command locally in a
            fresh environment (as an ssh session: secrets arrive only on stdin) with
            FAKE_HOST=HOST, a per-host docker state folder and a per-host node-guard lock folder,
            so every "host" is this machine; with a file ``$FAKE_ROOT/HOST.unreachable`` it
            exits 255 as ssh does when the host cannot be reached.
``docker``  (this file, run as a script) emulates what node-K.sh uses: ``run -d --name N ...``
            starts the REAL synthetic server on the head host (FAKE_HEAD_HOST; with FAKE_HEAD_LOG
            set, a process that prints that file, as a failing vLLM, and exits 1) at the engine's
            --port serving --served-model-name, and a stub process (sleep) on a worker host;
            ``inspect -f '{{.State.Running}}' N`` prints true/false; ``logs``; ``rm -f N`` kills
            the container's process group.  Every call is logged to <state>/calls.jsonl.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

REMOTE = """#!/usr/bin/env bash
host=$1
shift
if [ -e "$FAKE_ROOT/$host.unreachable" ]; then
  echo "ssh: connect to host $host port 22: Connection timed out" >&2
  exit 255
fi
mkdir -p "$FAKE_ROOT/$host"
# A fresh environment, as an ssh session has: the driver's secrets arrive only on stdin.
exec env -i PATH="$PATH" HOME="$HOME" PYTHONPATH="${PYTHONPATH:-}" FAKE_ROOT="$FAKE_ROOT" \
  FAKE_HEAD_HOST="${FAKE_HEAD_HOST:-}" FAKE_BOOT_DELAY="${FAKE_BOOT_DELAY:-0}" \
  FAKE_SERVER_ARGS="${FAKE_SERVER_ARGS:-}" FAKE_HEAD_LOG="${FAKE_HEAD_LOG:-}" FAKE_HOST="$host" FAKE_DOCKER_STATE="$FAKE_ROOT/$host" \
  AUTOBENCH_LOCK_DIR="$FAKE_ROOT/$host/locks" "$@"
"""


def install(root: Path) -> Path:
    """A bin folder with `docker` (this file) and `remote`; returns it."""
    bindir = root / "fakebin"
    bindir.mkdir(exist_ok=True)
    (bindir / "docker").write_text(f'#!/usr/bin/env bash\nexec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    (bindir / "remote").write_text(REMOTE)
    for tool in ("docker", "remote"):
        (bindir / tool).chmod(0o755)
    return bindir


def _opt(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, OSError):
        return False


def main() -> int:
    state = Path(os.environ["FAKE_DOCKER_STATE"])
    argv = sys.argv[1:]
    with (state / "calls.jsonl").open("a") as fh:
        fh.write(json.dumps(argv) + "\n")
    verb = argv[0] if argv else ""
    name = argv[-1] if argv else ""
    if verb == "run":
        name = _opt(argv, "--name") or "anon"
        if os.environ.get("FAKE_HOST") == os.environ.get("FAKE_HEAD_HOST") and os.environ.get("FAKE_HEAD_LOG"):
            # a head whose vLLM fails: it prints these lines and exits 1
            lines = Path(os.environ["FAKE_HEAD_LOG"]).read_text()
            cmd = [
                sys.executable,
                "-c",
                f"import sys, time; sys.stdout.write({lines!r}); sys.stdout.flush(); time.sleep(1); sys.exit(1)",
            ]
        elif os.environ.get("FAKE_HOST") == os.environ.get("FAKE_HEAD_HOST"):
            cmd = [
                sys.executable,
                "-m",
                "autobench",
                "synthetic-server",
                "--port",
                _opt(argv, "--port") or "8000",
                "--model",
                _opt(argv, "--served-model-name") or "x",
                "--boot-delay",
                os.environ.get("FAKE_BOOT_DELAY", "0"),
                *os.environ.get("FAKE_SERVER_ARGS", "").split(),
            ]
        else:  # a worker: a stub that just runs (killed by rm -f, or by the test)
            cmd = [sys.executable, "-c", "import time; time.sleep(120)"]
        # which secrets (--env NAME) reached the node, by name: a value is never written
        names = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--env", "-e") and "=" not in argv[i + 1]]
        (state / f"{name}.env").write_text(json.dumps({n: bool(os.environ.get(n)) for n in names}))
        log = (state / f"{name}.log").open("wb")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        (state / f"{name}.pid").write_text(str(proc.pid))
        print("0123456789abcdef")
        return 0
    pid_file = state / f"{name}.pid"
    if verb == "inspect":
        print("true" if pid_file.exists() and _alive(int(pid_file.read_text())) else "false")
        return 0
    if verb == "logs":
        path = state / f"{name}.log"
        sys.stdout.write(path.read_text(errors="replace")[-4000:] if path.exists() else "")
        return 0
    if verb == "rm":
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            pid_file.unlink()
            return 0
        print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
        return 1
    print(f"fake docker: unsupported command {argv}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

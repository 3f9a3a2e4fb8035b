"""A fake `docker` CLI for the docker-runtime tests: no Docker engine exists here.

Installed as `docker` on PATH by the tests.  It records every argv (one JSON line
in $FAKE_DOCKER_STATE/calls.jsonl) and emulates just what `autobench run` uses:

  docker run [-d] ... --name NAME ... IMAGE MODEL ... --served-model-name N --port P ...
      starts the REAL synthetic server (python -m autobench synthetic-server) on
      127.0.0.1:P serving N (plus $FAKE_VLLM_ARGS); exit 125 if NAME is taken
  docker logs -f NAME     follows the container's output until it stops
  docker inspect -f ... NAME   prints the container's exit code
  docker rm -f NAME       kills the container's process group, forgets NAME
  docker image inspect REF   the local images in $FAKE_DOCKER_STATE/images.json (reference ->
      docker's inspect object); a `name@digest` REF also finds an image whose RepoDigests hold it
  (FAKE_DOCKER_RUN_HANG=1: `docker run -d` creates the container, then hangs, ignoring SIGTERM)
  (FAKE_DOCKER_RM_HANG=1: `docker rm -f` writes rm-hang.pid and hangs, ignoring SIGTERM, the container left)
  docker pull REF         copies $FAKE_DOCKER_STATE/registry.json[REF] into images.json (exit 1
      "manifest unknown" when absent)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

STATE = Path(os.environ["FAKE_DOCKER_STATE"])


def _opt(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def run(argv: list[str]) -> int:
    name = _opt(argv, "--name") or "anon"
    if (STATE / f"{name}.pid").exists():
        print(
            "docker: Error response from daemon: Conflict. The container name "
            f'"/{name}" is already in use by container "0123abcd".',
            file=sys.stderr,
        )
        return 125
    cmd = [
        sys.executable,
        "-m",
        "autobench",
        "synthetic-server",
        "--host",
        "127.0.0.1",
        "--port",
        _opt(argv, "--port") or "8000",
        "--model",
        _opt(argv, "--served-model-name") or "x",
        *shlex.split(os.environ.get("FAKE_VLLM_ARGS", "")),
    ]
    if "-d" not in argv and "--detach" not in argv:
        (STATE / f"{name}.pid").write_text(str(os.getpid()))
        os.execv(sys.executable, cmd)
    log = (STATE / f"{name}.log").open("wb")
    sup = subprocess.Popen(
        [sys.executable, __file__, "_supervise", name, *cmd],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    (STATE / f"{name}.pid").write_text(str(sup.pid))
    if os.environ.get("FAKE_DOCKER_RUN_HANG"):
        # the engine created the container, but the CLI never returns (a wedged daemon); it
        # ignores SIGTERM as a CLI blocked in a syscall effectively does
        (STATE / "hung-cli.pid").write_text(str(os.getpid()))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(3600)
    print(hashlib.sha256(name.encode()).hexdigest())
    return 0


def supervise(name: str, cmd: list[str]) -> int:
    rc = subprocess.call(cmd)
    (STATE / f"{name}.rc").write_text(str(rc))
    return rc


def logs(name: str) -> int:
    path = STATE / f"{name}.log"
    pid_file = STATE / f"{name}.pid"
    pos = 0
    while True:
        data = path.read_bytes()[pos:] if path.exists() else b""
        if data:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            pos += len(data)
            continue
        if not pid_file.exists() or not _alive(int(pid_file.read_text())):
            return 0
        time.sleep(0.05)


def _load(name: str) -> dict:
    path = STATE / name
    return json.loads(path.read_text()) if path.exists() else {}


def image_inspect(ref: str) -> int:
    images = _load("images.json")
    found = images.get(ref)
    if found is None and "@" in ref:
        found = next((i for i in images.values() if ref in (i.get("RepoDigests") or [])), None)
    if found is None:
        print("[]")
        print(f"Error response from daemon: No such image: {ref}", file=sys.stderr)
        return 1
    print(json.dumps([found], indent=4))
    return 0


def pull(ref: str) -> int:
    remote = _load("registry.json").get(ref)
    if remote is None:
        print(f"Error response from daemon: manifest for {ref} not found: manifest unknown", file=sys.stderr)
        return 1
    images = _load("images.json")
    images[ref] = remote
    (STATE / "images.json").write_text(json.dumps(images))
    print(f"Status: Downloaded newer image for {ref}")
    return 0


def main() -> int:
    argv = sys.argv[1:]
    if argv and argv[0] == "_supervise":
        return supervise(argv[1], argv[2:])
    with (STATE / "calls.jsonl").open("a") as fh:
        fh.write(json.dumps(argv) + "\n")
    verb = argv[0] if argv else ""
    if verb == "run":
        return run(argv)
    if verb == "image" and argv[1:2] == ["inspect"]:
        return image_inspect(argv[-1])
    if verb == "pull":
        return pull(argv[-1])
    if verb == "logs":
        return logs(argv[-1])
    if verb == "inspect":
        rc = STATE / f"{argv[-1]}.rc"
        print(rc.read_text() if rc.exists() else "137")
        return 0
    if verb == "rm":
        name = argv[-1]
        if os.environ.get("FAKE_DOCKER_RM_HANG") == "1":  # a daemon that never answers
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            (STATE / "rm-hang.pid").write_text(str(os.getpid()))
            while True:
                time.sleep(1)
        pid_file = STATE / f"{name}.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            pid_file.unlink()
            print(name)
            return 0
        print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
        return 1
    print(f"fake docker: unsupported command {argv}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

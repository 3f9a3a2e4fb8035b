"""Runtimes: how a run's server is started, watched and torn down.

``process``  the ``vllm serve ...`` argv run directly as a child process in its own
             process group (``start_new_session``), stdout+stderr streamed line by
             line into the run's ``server.log``.  Teardown: SIGTERM to the whole
             group, SIGKILL after a grace period (vLLM spawns EngineCore workers).
``docker``   exactly the compiled ``docker run`` argv through the docker CLI.  A
             detached run (``-d``) is followed with ``docker logs -f NAME``; a
             foreground run streams its own output.  Teardown: ``docker rm -f NAME``
             -- unless ``docker run`` itself was refused (exit 125: no engine, the
             name is taken, a bad flag): then no container ran, the run is not
             recorded (a RunError says why), and nothing is removed.

Every line passes through a :class:`autobench.redaction.Redactor` before it is written.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from autobench.digits import is_digits
from autobench.errors import RunError
from autobench.redaction import Redactor, redact

DOCKER_REFUSED = 125  # docker run's own exit code: the daemon/CLI refused the run
RECENT_LINES = 32  # server log lines kept for LogFile.last_meaningful_line
# How long a server that ended on its own may take to get its last output into the log before
# the teardown mark (the pump is a thread: on a loaded machine it can lag the process's exit).
LOG_SETTLE_S = 5.0


class LogPump:
    """Copy a pipe into the log line by line, through its own streaming redactor."""

    def __init__(self, stream: IO[bytes], log: LogFile):
        self._stream = stream
        self._log = log
        self._redactor = log.redactor()
        self._thread = threading.Thread(target=self._run, name="autobench-log-pump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for raw in iter(self._stream.readline, b""):
                self._log.write(self._redactor.feed(raw.decode("utf-8", errors="replace")))
        except (OSError, ValueError):  # pipe closed under us at teardown
            pass
        finally:
            self._log.write(self._redactor.flush())
            with contextlib.suppress(OSError):
                self._stream.close()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class LogFile:
    """The run's server.log: every byte written to it has passed through redaction."""

    def __init__(self, path: Path, secrets: Mapping[str, str]):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.secrets = dict(secrets)
        self._fh = path.open("a", encoding="utf-8", errors="replace")
        self._lock = threading.Lock()
        self.lines = 0  # newlines written so far: the line number of the last complete line
        # The last few non-blank lines the server wrote (redacted), for the boot progress.
        self._recent: deque[str] = deque(maxlen=RECENT_LINES)

    def redactor(self) -> Redactor:
        return Redactor(self.secrets)

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)

    def pump(self, stream: IO[bytes]) -> LogPump:
        return LogPump(stream, self)

    def write(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            if not self._fh.closed:
                self._fh.write(text)
                self._fh.flush()
                self.lines += text.count("\n")
                self._recent.extend(line for line in text.split("\n") if line.strip())

    def last_meaningful_line(self) -> str | None:
        """The server's last log record that says something
        (:func:`autobench.run.progress.last_meaningful_line`), or None."""
        from autobench.run.progress import last_meaningful_line

        with self._lock:
            recent = list(self._recent)
        return last_meaningful_line(recent)

    def note(self, text: str) -> None:
        """A line from autobench itself (prefixed, so a reader can tell it apart)."""
        self.write(self.redact(f"[autobench] {text}\n"))

    def teardown_mark(self) -> int:
        """Note where autobench begins to stop the server; returns the number of lines
        before that note (``parse_log(..., teardown_line=...)``: what the server logs
        after it is its shutdown, not a cause)."""
        with self._lock:
            before = self.lines
        self.note("teardown: stopping the server (what it logs from here on is its shutdown)")
        return before

    def close(self) -> None:
        with self._lock:
            self._fh.close()


_MISSING_HINT = "install it or point --vllm-exec at it"
_MISSING_DOCKER_HINT = "install the docker CLI and start its engine, or run with --runtime process"


def _spawn(
    argv: Sequence[str], env: dict[str, str] | None, missing_hint: str = _MISSING_HINT
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except FileNotFoundError as exc:
        raise RunError(
            f"cannot start the server: {argv[0]!r} not found",
            hint=missing_hint,
        ) from exc
    except PermissionError as exc:
        raise RunError(f"cannot start the server: {argv[0]!r} is not executable") from exc


def _group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process remains in process group ``pgid``."""
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not is_digits(entry.name):
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
                return True
        return False
    try:  # no /proc: a group of zombies still counts as alive here
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_group(proc: subprocess.Popen[bytes], pgid: int, timeout: float) -> bool:
    """Wait until the leader is reaped and the group is empty; True if it is."""
    deadline = time.monotonic() + timeout
    while True:
        proc.poll()
        if proc.returncode is not None and not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def terminate_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the process group of ``proc``, SIGKILL whatever is left after ``grace_s``."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    if _wait_group(proc, pgid, grace_s):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    _wait_group(proc, pgid, 10.0)


class ServerStartTimeout(RunError):
    """The command that starts the server did not return in time (a hung ``docker run -d``)."""


class ProcessServer:
    def __init__(self, argv: Sequence[str], env: dict[str, str], log: LogFile, grace_s: float):
        self.argv = list(argv)
        self.grace_s = grace_s
        self._log = log
        self._proc = _spawn(self.argv, env)
        assert self._proc.stdout is not None
        self._pump = log.pump(self._proc.stdout)
        self._stopped = False
        self.teardown_error: str | None = None  # the process group is always killed: never set

    def wait_started(self, timeout_s: float) -> None:
        """The process runs as soon as it is spawned: nothing to wait for."""

    @property
    def pids(self) -> list[int]:
        return [self._proc.pid]

    def exit_code(self) -> int | None:
        return self._proc.poll()

    def settle_log(self, timeout_s: float = LOG_SETTLE_S) -> None:
        """The server ended on its own: wait (bounded) until all it wrote is in the log."""
        if self._proc.poll() is not None:
            self._pump.join(timeout_s)

    def stop(self, interrupted: Callable[[], str | None] = lambda: None) -> None:
        if self._stopped:
            return
        self._stopped = True
        terminate_group(self._proc, self.grace_s)
        self._pump.join(timeout=5)


def _docker_name(argv: Sequence[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--name" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--name="):
            return arg.split("=", 1)[1]
    raise RunError("the docker command has no --name", hint="set container.name in the recipe")


_DETACH_FLAGS = {"-d", "--detach", "--detach=true", "-dit", "-itd", "-idt", "-dti", "-td", "-dt"}


def _is_detached(argv: Sequence[str]) -> bool:
    """Whether ``docker run`` detaches (``-d`` never appears among vllm's own flags)."""
    return any(a in _DETACH_FLAGS for a in argv)


class DockerServer:
    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        log: LogFile,
        grace_s: float,
        docker: str = "docker",
    ):
        self.argv = list(argv)
        self.name = _docker_name(self.argv)
        self.docker = self.argv[0] if self.argv else docker
        self.grace_s = grace_s
        self._log = log
        self._env = env
        self._stopped = False
        self.teardown_error: str | None = None
        self._created = True
        self._follower: subprocess.Popen[bytes] | None = None
        self._run_proc: subprocess.Popen[bytes] | None = None
        self._pumps: list[LogPump] = []
        self._starter: subprocess.Popen[bytes] | None = None
        self._early_exit: int | None = None
        if _is_detached(self.argv):
            # `docker run -d` returns once the container is created; wait_started() waits for it,
            # bounded and interruptible (a hung CLI must not make the run unstoppable).
            self._starter = _spawn(self.argv, env, _MISSING_DOCKER_HINT)
        else:
            self._run_proc = _spawn(self.argv, env, _MISSING_DOCKER_HINT)
            assert self._run_proc.stdout is not None
            self._pumps.append(log.pump(self._run_proc.stdout))

    def wait_started(self, timeout_s: float) -> None:
        """Wait for ``docker run -d`` to return: up to ``timeout_s``, polling, so SIGINT/SIGTERM
        interrupt the wait.  Exit 125 (docker refused) raises RunError; another failure leaves the
        exit code for readiness to see; a CLI still hung at ``timeout_s`` raises
        :class:`ServerStartTimeout` (``stop()`` then kills it and removes the container)."""
        proc = self._starter
        if proc is None or self._follower is not None or self._early_exit is not None:
            return
        deadline = time.monotonic() + timeout_s
        chunks: list[bytes] = []
        while True:
            try:
                out, _ = proc.communicate(timeout=min(0.2, max(deadline - time.monotonic(), 0.01)))
                chunks.append(out or b"")
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    self._log.note(f"docker run -d did not return within {timeout_s:g} s")
                    raise ServerStartTimeout(
                        f"`docker run -d` did not return within {timeout_s:g} s",
                        hint="check the Docker engine (`docker ps`, `docker info`); the container "
                        "was removed and the docker CLI stopped",
                    ) from None
        text = b"".join(chunks).decode("utf-8", errors="replace")
        log = self._log
        if proc.returncode != 0:
            for line in text.splitlines():
                log.note(f"docker run: {line}")
            if proc.returncode == DOCKER_REFUSED:
                # Docker itself refused (no engine, name taken, bad flag): no container
                # ran, so there is no run to record -- and nothing of ours to remove.
                self._created = False
                self._stopped = True
                said = [
                    ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("Run '")
                ]  # "Run 'docker run --help'..."
                reason = log.redact(said[0].removeprefix("docker: ")) if said else "no message"
                raise RunError(
                    f"docker refused to start the container (exit 125): {reason}",
                    hint="start the Docker engine, or remove/rename the container it names; "
                    "nothing ran and nothing was recorded",
                )
            self._early_exit = proc.returncode
            return
        log.note(f"container {self.name} started: {text.strip()[:64]}")
        self._follower = _spawn([self.docker, "logs", "-f", self.name], self._env, _MISSING_DOCKER_HINT)
        assert self._follower.stdout is not None
        self._pumps.append(log.pump(self._follower.stdout))

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in (self._starter, self._follower, self._run_proc) if p is not None]

    def _remove(self, interrupted: Callable[[], str | None]) -> str | None:
        return remove_container(self.docker, self.name, self._env, self._log, interrupted)

    def _container_exit_code(self) -> int:
        try:
            out = subprocess.run(
                [self.docker, "inspect", "-f", "{{.State.ExitCode}}", self.name],
                capture_output=True,
                text=True,
                timeout=30,
                env=self._env,
            )
            return int(out.stdout.strip())
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return -1

    def settle_log(self, timeout_s: float = LOG_SETTLE_S) -> None:
        """The server ended on its own: wait (bounded) until all it wrote is in the log (the
        foreground ``docker run``'s output, or ``docker logs -f``, which ends with the
        container)."""
        if self.exit_code() is not None:
            deadline = time.monotonic() + timeout_s
            for pump in self._pumps:
                pump.join(max(0.0, deadline - time.monotonic()))

    def exit_code(self) -> int | None:
        if self._early_exit is not None:
            return self._early_exit
        if self._run_proc is not None:
            code = self._run_proc.poll()
            if code == DOCKER_REFUSED:
                self._created = False
            return code
        if self._follower is None:  # `docker run -d` has not returned yet
            return None
        if self._follower.poll() is None:
            return None
        self._early_exit = self._container_exit_code()
        return self._early_exit

    def stop(self, interrupted: Callable[[], str | None] = lambda: None) -> None:
        """Remove the container (``docker rm -f``), then end every docker CLI process.  The
        removal is watched, not waited on blindly: ``interrupted`` (the name of a signal that
        arrived during teardown, or None) stops the wait at once, and so does RM_TIMEOUT_S.
        Whatever keeps the container from certainly being gone is ``teardown_error``."""
        if self._stopped:
            return
        self._stopped = True
        if self._run_proc is not None and self._run_proc.poll() == DOCKER_REFUSED:
            self._created = False
        if self._created:
            self.teardown_error = self._remove(interrupted)
            if self.teardown_error:
                self._log.note(self.teardown_error)
        for proc in (self._starter, self._run_proc, self._follower):
            if proc is not None:
                terminate_group(proc, self.grace_s if proc.poll() is None else 0.0)
        for pump in self._pumps:
            pump.join(timeout=5)


RM_TIMEOUT_S = 120.0


def remove_container(
    docker: str, name: str, env: dict[str, str], log: LogFile, interrupted: Callable[[], str | None]
) -> str | None:
    """``docker rm -f NAME`` in its own process group, polled; None when it removed the
    container (or there was none), else why the container may still run."""
    try:
        rm = subprocess.Popen(
            [docker, "rm", "-f", name],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return f"docker rm -f {name} could not start ({exc.strerror or exc}): the container may still run"
    deadline = time.monotonic() + RM_TIMEOUT_S
    while rm.poll() is None:
        stopped_by = interrupted()
        if stopped_by or time.monotonic() > deadline:
            terminate_group(rm, 1.0)
            why = f"stopped by {stopped_by}" if stopped_by else f"did not finish in {RM_TIMEOUT_S:.0f} s"
            return f"docker rm -f {name} {why}: the container may still run (remove it with docker rm -f {name})"
        time.sleep(0.05)
    out = (rm.stdout.read() if rm.stdout else b"").decode("utf-8", "replace")
    log.note(f"docker rm -f {name} -> exit {rm.returncode}")
    if rm.returncode != 0 and "No such container" not in out:
        first = out.strip().splitlines()[0][:200] if out.strip() else "no output"
        return f"docker rm -f {name} exited {rm.returncode} ({first}): the container may still run"
    return None


def start_server(
    runtime: str, argv: Sequence[str], env: dict[str, str], log: LogFile, grace_s: float
) -> ProcessServer | DockerServer:
    if runtime == "process":
        return ProcessServer(argv, env, log, grace_s)
    if runtime == "docker":
        return DockerServer(argv, env, log, grace_s)
    raise RunError(f"unknown runtime {runtime!r}")

"""``autobench run`` of a multi-node recipe: its compiled driver brings the nodes up, autobench
benches the head in-process (every cell of the grid, raw samples, the tokenizer, as a
single-node run), the driver watches the nodes during the bench and tears them down.

    driver.sh up        claim every node (the node guard), start them, wait for the server;
                        every 10 s the driver's last step and the head's last log line
                        (driver.sh serverlog, once the head is started) are printed
    driver.sh watch     (during the bench) every node still runs and answers, else FAILED
    bench cells         autobench.run.local's bench loop against http://HEAD:PORT
    driver.sh down      the head's log fetched back into server.log, every node torn down
                        (retried; what may still run where is recorded)

The driver (autobench/compile/cluster.py) reaches every host through the remote command
(``--remote``, env ``AUTOBENCH_REMOTE``, default ssh with connect and keep-alive timeouts).
Each driver phase runs in its own process group; every group is killed before anything in the
run folder is read, so nothing writes there after the row.  A signal (SIGINT, SIGTERM, SIGHUP)
during ``up`` reaches the driver's trap, which tears the started nodes down; during the bench
the run tears them down itself.  A node another run holds refuses the run (one line naming the
holder, nothing recorded).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shlex
import signal
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.errors import RunError
from autobench.recipe import LoadedRecipe
from autobench.recipe.facts import container_image
from autobench.run import plan as P
from autobench.run.collect import log_cause, log_facts, redact_files
from autobench.run.outcome import Echo, RowFacts, RunOptions, RunOutcome, now
from autobench.run.plan import RunPlan, run_dir_for, unpinned_refs
from autobench.run.progress import wait_booting
from autobench.run.protocol import Compiled, Run, RuntimeBase
from autobench.run.signals import RunInterrupted, SignalGuard

if TYPE_CHECKING:
    from autobench.run.local import BenchThread
    from autobench.run.progress import BootProgress

DRIVER_LOG = "driver.log"
STATUS_FILE = "status"
LEFT_FILE = "left"
#: Root causes the head's log may state better (a bad flag makes the head "stop").
VAGUE = ("node_lost", "not_ready", "bench_failed")


class NodesLost(Exception):
    """The node watch ended during the bench: a node stopped or became unreachable."""


def read_status(path: Path) -> tuple[str, str]:
    """(status, cause) from the driver's status file; FAILED when it is missing or garbled."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return "FAILED", "the driver left no status"
    fields = dict(line.split("=", 1) for line in lines if "=" in line)
    status = fields.get("status", "")
    if status not in ("DONE", "READY", "BLOCKED", "FAILED", "REFUSED", "ABORTED"):
        return "FAILED", "the driver left no status"
    return status, fields.get("cause", "")


def cause_category(status: str, cause: str) -> str | None:
    if status == "DONE":
        return None
    if status == "ABORTED":
        return "interrupted"
    if " unreachable " in f" {cause} ":
        return "node_unreachable"
    if " stopped " in f" {cause} ":
        return "node_lost"
    if status == "BLOCKED":
        return "not_ready"
    return "bench_failed"


def cluster_plan(loaded: LoadedRecipe, options: RunOptions, hosts: list[str], remote: str | None = None) -> RunPlan:
    """The plan of a multi-node run on ``hosts`` (head first); ``remote`` reaches them (and the
    load generators of bench.worker_hosts, or of ``nodes``: one on each of ``hosts``)."""
    recipe = loaded.recipe
    run_dir = run_dir_for(Path(options.runs_dir), recipe.name, now())
    base_url = f"http://{hosts[0].rsplit('@', 1)[-1]}:{recipe.engine.port}"
    return RunPlan(
        recipe_name=recipe.name,
        recipe_path=str(loaded.path),
        digest=loaded.digest,
        runtime="docker",
        server_argv=("bash", str(run_dir / "driver.sh")),
        teardown="driver.sh down: node-K.sh stop on every node, last first",
        container_name=None,
        env={},
        secret_names=tuple(recipe.secrets),
        base_url=base_url,
        served_model=recipe.served_name,
        bench_model=recipe.bench_model,
        ready_timeout_s=float(options.ready_timeout_s or recipe.bench.ready_timeout_s),
        grace_s=options.grace_s,
        bench=recipe.bench.model_dump(mode="json", exclude={"client", "model", "ready_timeout_s"}),
        run_dir=run_dir,
        unpinned=tuple(unpinned_refs(loaded)),
        **P.worker_hosts(recipe, hosts, remote, base_url),
    )


class _Watched:
    """The "server" the bench loop asks after each cell: the nodes, through the watch."""

    def __init__(self, watch: subprocess.Popen[bytes]):
        self.watch = watch

    def exit_code(self) -> int | None:
        return None  # the head's /health answers for the server; the watch for the nodes

    def check(self) -> None:
        if self.watch.poll() is not None:
            raise NodesLost


class ClusterRuntime(RuntimeBase):
    """A multi-node recipe (topology.nodes > 1): its compiled driver, run from this machine."""

    rules = "cluster"  # the docker rules apply (every node runs the image); a grid runs on one boot
    preflight = False

    def __init__(self, name: str, options: RunOptions, echo: Echo, env: Mapping[str, str]):
        super().__init__(name, options, echo, env)
        self.hosts: list[str] = []

    def compile(self, loaded: LoadedRecipe) -> Compiled:
        from autobench.compile.cluster import cluster_hosts, compile_cluster

        self.hosts = cluster_hosts(loaded, list(self.options.hosts) or None)
        files = compile_cluster(loaded, self.hosts, self.remote, runtime="cluster")
        script = "\n".join(f"# ===== {name}\n{text}" for name, text in sorted(files.items(), key=_driver_first))
        return Compiled(cluster_plan(loaded, self.options, self.hosts, self.remote), script, files)

    def place(self, plan: RunPlan) -> RunPlan:
        return replace(plan, server_argv=("bash", str(plan.run_dir / "driver.sh")))

    def execute(self, run: Run) -> RowFacts:
        plan, outcome, echo = run.plan, run.outcome, run.echo
        t = run.loaded.recipe.topology
        echo(f"run {plan.recipe_name}: {t.nodes} nodes ({t.executor}) {' '.join(self.hosts)}, folder {plan.run_dir}")
        driver = _Driver(run, self.remote)
        try:
            self._run(run, driver)
        finally:
            driver.end()  # every driver process group gone before the folder is read
        redact_files([plan.path(DRIVER_LOG), plan.path(P.SERVER_LOG)], run.secrets)
        left = _left(plan.path(LEFT_FILE))
        if left:
            outcome.notes.append("may still run: " + "; ".join(left))
            if outcome.status != "DONE" and outcome.root_cause_message:
                outcome.root_cause_message += " (may still run: " + "; ".join(left) + ")"
        log_cause(outcome, log_facts(plan.run_dir, outcome), VAGUE)
        return self._row(run.loaded)

    def _run(self, run: Run, driver: _Driver) -> None:
        from autobench.recipe.grid import cells
        from autobench.run.local import _bench, _on_terminal, bench_config

        plan, outcome, guard = run.plan, run.outcome, run.guard
        phase = "boot"
        try:
            wait_booting(driver.start("up"), boot_progress(run, driver.env))
            status, cause = read_status(plan.path(STATUS_FILE))
            if status == "REFUSED":
                raise RunError(
                    f"refused: {cause}",
                    hint="wait until that run ends, or stop it: autobench nodes stop RECIPE; nothing was recorded",
                )
            if status != "READY":
                self._driver_outcome(outcome, status, cause)
                return
            phase = "bench"
            watch = driver.start("watch")
            configs = [(cell, bench_config(run.loaded, plan, cell)) for cell in cells(run.loaded.recipe)]
            live = run.options.live if run.options.live is not None else _on_terminal()
            watched = _Watched(watch)
            outcome.status, error = _bench(
                configs, plan, watched, outcome, run.echo, driver.bench_threads, live, watch=watched.check
            )
            if error:
                outcome.root_cause_category, outcome.root_cause_message = "bench_failed", error
        except NodesLost:
            guard.disarm()
            status, cause = read_status(plan.path(STATUS_FILE))
            self._driver_outcome(outcome, "FAILED", cause if status == "FAILED" else "a node was lost during the bench")
        except RunInterrupted as exc:
            guard.disarm()
            outcome.status, outcome.signal = "ABORTED", exc.signame
            outcome.root_cause_category = "interrupted"
            outcome.root_cause_message = f"interrupted by {exc.signame} during {phase}"
            run.echo(f"interrupted by {exc.signame} during {phase}; tearing every node down")
            driver.stop_running()  # then the status file says whether up handed the nodes over
        finally:
            guard.disarm()
            # The nodes are the run's to tear down once `up` handed them over (READY), whenever
            # a signal came; before that, up's own trap tore down what it had started.
            if phase == "bench" or read_status(plan.path(STATUS_FILE))[0] == "READY":
                driver.down()

    @staticmethod
    def _driver_outcome(outcome: RunOutcome, status: str, cause: str) -> None:
        outcome.status = status
        outcome.root_cause_category = cause_category(status, cause)
        outcome.root_cause_message = cause or None

    def _row(self, loaded: LoadedRecipe) -> RowFacts:
        from autobench.recipe.imageref import parse_image_ref

        r = loaded.recipe
        image = container_image(r)
        try:
            digest = parse_image_ref(image).digest
        except ValueError:
            digest = None
        remote = self.remote
        host_facts = {
            "runtime": "cluster",
            "executor": r.topology.executor,
            "nodes": r.topology.nodes,
            "gpus_per_node": r.topology.gpus_per_node,
            "hosts": self.hosts,
            "remote": shlex.split(remote)[0] if remote.strip() else remote,
            "driver_platform": platform.platform(),
        }
        return RowFacts(host_facts=host_facts, image=image, image_digest=digest)


class _Driver:
    """The driver's phases as child processes, each in its own process group, all appending to
    driver.log; :meth:`end` kills whatever is left of every group."""

    def __init__(self, run: Run, remote: str):
        self.run = run
        holder = f"{run.plan.recipe_name}:{run.plan.run_dir.name}@{socket.gethostname()}:pid{os.getpid()}"
        self.env = {
            **run.env,
            "AUTOBENCH_OUT": str(run.plan.run_dir),
            "AUTOBENCH_REMOTE": remote,
            "AUTOBENCH_HOLDER": holder,
        }
        self.groups: list[subprocess.Popen[bytes]] = []
        self.bench_threads: list[BenchThread] = []

    def start(self, mode: str) -> subprocess.Popen[bytes]:
        """Start a phase; a signal meanwhile is raised only once the phase is in :attr:`groups`
        (a phase spawned but not recorded would outlive the run)."""
        with self.run.guard.deferred(), self.run.plan.path(DRIVER_LOG).open("ab") as log:
            proc = subprocess.Popen(
                ["bash", str(self.run.plan.path("driver.sh")), mode],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=self.env,
                start_new_session=True,
            )
            self.groups.append(proc)
        return proc

    def stop_running(self, grace_s: float = 120) -> None:
        """Stop every phase still running (``up``'s trap tears down what it started)."""
        for proc in self.groups:
            if proc.poll() is None:
                self.stop(proc, grace_s)

    def stop(self, proc: subprocess.Popen[bytes], grace_s: float = 120) -> None:
        """SIGTERM to the phase's group (the driver's trap tears down), SIGKILL after ``grace_s``."""
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()

    def down(self) -> None:
        """End the watch; ``driver.sh down`` fetches the head's log and tears every node down."""
        self.stop_running(grace_s=30)
        self.start("down").wait()
        while self.bench_threads:  # an abandoned bench ends once the head is gone
            self.bench_threads.pop().join(10)

    def end(self) -> None:
        self.stop_running()
        for proc in self.groups:
            _signal_group(proc, signal.SIGKILL)  # anything the phase left behind (an ssh child)


#: What ``driver.sh serverlog`` prints of its own when the head has no log yet (docker: no such
#: container; Ray: no serve log before ``serve``): not the server's words.
_NO_LOG_YET = re.compile(r"^(Error response from daemon: |cat: \S*autobench-serve\.log: )")
#: How long one fetch of the head's log may take (it runs between two progress lines).
FETCH_TIMEOUT_S = 10.0


def boot_progress(run: Run, env: Mapping[str, str]) -> BootProgress:
    """The boot's progress while ``driver.sh up`` runs: the driver's last step (driver.log) and
    the head's last meaningful log line (:func:`head_log_line`), redacted."""
    from autobench.run.progress import BootProgress

    plan = run.plan

    def head_line() -> str | None:
        line = head_log_line(plan.path("driver.sh"), plan.path(DRIVER_LOG), env, run.guard)
        return run.redact(line) if line else None

    def step() -> str | None:
        line = driver_step(plan.path(DRIVER_LOG))
        return run.redact(f"driver: {line}") if line else None

    return BootProgress(run.echo, head_line, state=step)


def driver_step(driver_log: Path) -> str | None:
    """The driver's last step: its last ``autobench: ...`` line in driver.log, or None."""
    from autobench.run.progress import log_tail

    said = [line[len("autobench: ") :] for line in log_tail(driver_log) if line.startswith("autobench: ")]
    return said[-1].strip() if said else None


def head_log_line(
    driver: Path, driver_log: Path, env: Mapping[str, str], guard: SignalGuard | None = None
) -> str | None:
    """The head's last meaningful server log line (``driver.sh serverlog``), once the driver has
    started the head; None before, or when the head could not be asked within FETCH_TIMEOUT_S."""
    from autobench.run.progress import last_meaningful_line, log_tail

    if not any(line.startswith("autobench: start node 0 ") for line in log_tail(driver_log)):
        return None
    text = _fetch(["bash", str(driver), "serverlog"], env, FETCH_TIMEOUT_S, guard)
    return last_meaningful_line(line for line in text.splitlines() if not _NO_LOG_YET.match(line))


def _fetch(argv: list[str], env: Mapping[str, str], timeout_s: float, guard: SignalGuard | None = None) -> str:
    """A short command's stdout ("" when it fails or takes longer than ``timeout_s``); run in its
    own process group, killed whole whatever happens (a signal meanwhile included: with the
    run's ``guard``, one that comes while the child is spawned is raised once it is known)."""
    proc = None
    try:
        with guard.deferred() if guard is not None else contextlib.nullcontext():
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=dict(env),
                start_new_session=True,
            )
        out, _ = proc.communicate(timeout=timeout_s)
        return out.decode("utf-8", errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""
    finally:
        if proc is not None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _left(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return []


def _driver_first(item: tuple[str, str]) -> tuple[int, str]:
    return (0 if item[0] == "driver.sh" else 1, item[0])


__all__ = ["DRIVER_LOG", "ClusterRuntime", "cause_category", "read_status"]

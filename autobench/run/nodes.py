"""``autobench nodes status|stop RECIPE``: what a multi-node recipe's nodes run, and who holds them.

Each node is asked through the same remote command and node script a run uses
(autobench/compile/cluster.py): ``node-K.sh status`` prints the node guard's holder (the run
that claimed the node's port, ``RECIPE:RUN-FOLDER@HOST:pidPID``), the container's name and
whether it runs; ``stop`` removes the container and releases the lock on behalf of that holder
(a run that died without its teardown leaves both behind).  A node that cannot be reached says
so (ssh's exit 255) instead of a state.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from autobench.errors import RunError
from autobench.recipe import LoadedRecipe

UNREACHABLE = 255
TIMEOUT_S = 60


@dataclass(frozen=True)
class NodeState:
    rank: int
    host: str
    container: str
    holder: str | None  # None: no run holds the node
    running: bool | None  # None: unreachable
    error: str | None = None

    def to_json_dict(self) -> dict[str, object]:
        return {
            "rank": self.rank,
            "host": self.host,
            "container": self.container,
            "holder": self.holder,
            "running": self.running,
            "error": self.error,
        }


def _on_node(remote: list[str], host: str, script: str, *args: str, env: Mapping[str, str]) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            [*remote, host, "bash", "-s", "--", *args],
            input=script,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=dict(env),
        )
    except FileNotFoundError as exc:
        raise RunError(f"the remote command {remote[0]!r} is not installed", hint="pass --remote CMD") from exc
    except subprocess.TimeoutExpired:
        return UNREACHABLE, "", f"no answer within {TIMEOUT_S} s"
    return done.returncode, done.stdout, done.stderr


def _scripts(loaded: LoadedRecipe, hosts: list[str] | None, remote: str) -> tuple[list[str], dict[str, str]]:
    from autobench.compile.cluster import cluster_hosts, compile_cluster

    chosen = cluster_hosts(loaded, hosts)
    return chosen, compile_cluster(loaded, chosen, remote, check=False, runtime="cluster")


def node_states(loaded: LoadedRecipe, hosts: list[str] | None, remote: str, env: Mapping[str, str]) -> list[NodeState]:
    from autobench.compile.cluster import remote_words

    chosen, files = _scripts(loaded, hosts, remote)
    words = remote_words(remote)
    states = []
    for k, host in enumerate(chosen):
        rc, out, err = _on_node(words, host, files[f"node-{k}.sh"], "status", env=env)
        fields = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        container = fields.get("container", "")
        if rc != 0:
            why = "unreachable" if rc == UNREACHABLE else f"exit {rc}"
            last = err.strip().splitlines()[-1] if err.strip() else ""
            states.append(NodeState(k, host, container, None, None, f"{why}: {last}" if last else why))
        else:
            states.append(NodeState(k, host, container, fields.get("holder") or None, fields.get("running") == "yes"))
    return states


def stop_nodes(loaded: LoadedRecipe, hosts: list[str] | None, remote: str, env: Mapping[str, str]) -> list[NodeState]:
    """Stop every node's container and release its lock, as its holder would; the states after."""
    from autobench.compile.cluster import remote_words

    chosen, files = _scripts(loaded, hosts, remote)
    words = remote_words(remote)
    for state in node_states(loaded, hosts, remote, env):
        if state.running is None:
            continue  # unreachable: reported by the states after
        _on_node(words, chosen[state.rank], files[f"node-{state.rank}.sh"], "stop", state.holder or "", env=env)
    return node_states(loaded, hosts, remote, env)


__all__ = ["NodeState", "node_states", "stop_nodes"]

"""Load generators on other hosts: the one rule for their host names and their number, shared by
``autobench bench --worker-host`` (autobench.cli.bench_options, autobench.bench.fleet) and a
recipe's ``bench.worker_hosts`` (autobench.recipe.schema).

    host_problem("-oProxyCommand=x")   -> "starts with '-'"   (None: a host name)
    follow_hosts(1, 3)                 -> 3                   (one load generator per host)
    follow_hosts(3, 3)                 -> 3
    follow_hosts(2, 3)                 -> WorkerHostsError    (one runs on each host)

Each caller words the error with its own names (``--workers`` / ``bench.workers``) and shows it
after that name (``bench.workers: 3 load generators for 2 hosts in bench.worker_hosts: ...``):
the rule is written once, here.  The rules between the load generators and the bench's other
settings (prompts, concurrency, multi-turn) are autobench.recipe.benchrules.
"""

from __future__ import annotations

#: ``bench.worker_hosts: nodes``: one load generator on each node of a multi-node run.
NODES = "nodes"


class WorkerHostsError(ValueError):
    """A host list or a load-generator count that cannot be used; ``message`` and ``hint`` are
    in the caller's words."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message = message
        self.hint = hint


def host_problem(host: str) -> str | None:
    """Why ``host`` cannot be a load generator's host (it becomes a word after the remote command,
    so ssh must read it as the destination), or None when it can."""
    if not host.strip():
        return "is empty"
    if host.startswith("-"):
        return "starts with '-' (the remote command would read it as an option)"
    if any(c.isspace() for c in host):
        return "has a space in it"
    return None


def python_problem(python: str) -> str | None:
    """Why ``python`` cannot name the interpreter on the hosts (its shell words start the load
    generator there), or None when it can."""
    import shlex

    try:
        words = shlex.split(python)
    except ValueError as exc:  # an unbalanced quote
        return f"is not shell words ({exc})"
    if not words:
        return "is empty"
    if words[0].startswith("-"):
        return "starts with '-'"
    return None


def follow_hosts(
    workers: int,
    hosts: int,
    *,
    workers_name: str = "--workers",
    hosts_name: str = "--worker-host hosts",
    resolved: bool = False,
) -> int:
    """The number of load generators with ``hosts`` hosts: one on each host.  ``workers`` left at
    1 follows the hosts' number (unless ``resolved``: a count already followed must equal it);
    any other must equal it.  Without hosts: ``workers``."""
    if hosts == 0 or workers == hosts:
        return workers
    if workers == 1 and not resolved:
        return hosts
    raise WorkerHostsError(  # shown after ``workers_name``: the message does not name it again
        f"{workers} load generator{'s' if workers != 1 else ''} for {hosts} {hosts_name}: one runs on each host",
        f"drop {workers_name} (it follows the hosts), or give it as {hosts}",
    )


__all__ = ["NODES", "WorkerHostsError", "follow_hosts", "host_problem", "python_problem"]

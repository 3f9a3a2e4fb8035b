"""One exception root for everything autobench reports to a user.

    AutobenchError                exit 1   anything expected that went wrong
    ├── UsageError                exit 2   bad command-line input
    ├── RecipeError               exit 2   a recipe file is malformed or breaks a rule
    ├── HubError                  exit 3   resolving or reading from the Hugging Face Hub / cache
    │   └── RegistryError         exit 3   resolving an image from a container registry / docker
    ├── LedgerError               exit 4   the run ledger (open, append, verify, query)
    ├── BenchError                exit 5   the benchmark client or its dataset
    ├── RunError                  exit 6   orchestrating a run (server, readiness, teardown)
    ├── LogError                  exit 7   reading a server log
    ├── ReportError               exit 8   rendering pages and plots
    └── PreflightError            exit 9   preflight cannot predict a boot (config, version, model)

Every error renders as ONE line: ``[location: ]message[ (hint: fix)]``, with secret values
redacted and control characters shown escaped (:func:`autobench.escape.human`).  The CLI
catches ``AutobenchError`` once, prints that line to stderr and exits with the
class's exit code.  Third-party exceptions are translated where they enter our
code (``raise XError(...) from exc``); a traceback reaching a user is a bug.
"""

from __future__ import annotations


class AutobenchError(Exception):
    """Root of every error autobench reports to a user."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.location = location

    def __str__(self) -> str:
        text = " ".join(self.message.split())  # always one line
        if self.location:
            text = f"{self.location}: {text}"
        if self.hint:
            text = f"{text} (hint: {' '.join(self.hint.split())})"
        # A message may quote a value from a recipe, a server or a log: never a secret, never a
        # raw control character (autobench.escape.human: redacted, then escaped).
        from autobench.escape import human

        return human(text)


class UsageError(AutobenchError):
    exit_code = 2


class RecipeError(AutobenchError):
    exit_code = 2


class HubError(AutobenchError):
    exit_code = 3


class RegistryError(HubError):
    """Pinning a container image: the registry, the docker config, the local docker images."""


class LedgerError(AutobenchError):
    exit_code = 4


class BenchError(AutobenchError):
    exit_code = 5


class RunError(AutobenchError):
    exit_code = 6


class LogError(AutobenchError):
    exit_code = 7


class ReportError(AutobenchError):
    exit_code = 8


class PreflightError(AutobenchError):
    """Preflight cannot predict (missing config field, unknown vLLM version, uncovered model)."""

    exit_code = 9

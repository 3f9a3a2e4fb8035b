"""SIGINT / SIGTERM / SIGHUP during a run: interrupt the work, never the teardown.

While *armed*, the first SIGINT, SIGTERM or SIGHUP raises :class:`RunInterrupted` in the
main thread (wherever it is: polling, inside the bench's event loop, ...).  While
*deferred* -- starting the server, tearing it down, recording the run -- signals
are only remembered; ``deferred()`` re-raises one on exit if it arrived meanwhile.
After the first interruption every later signal is remembered, not raised, so a
second Ctrl-C cannot cut the teardown or the ledger write short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # a closed terminal or ssh session is a stop too


class RunInterrupted(KeyboardInterrupt):
    """A run was interrupted by a signal (a KeyboardInterrupt, so nothing swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def signame(self) -> str:
        return signal.Signals(self.signum).name


class SignalGuard:
    def __init__(self) -> None:
        self.received: list[int] = []
        self._armed = False
        self._interrupted = False
        self._saved: dict[int, Any] = {}

    @property
    def first_signal(self) -> str | None:
        return signal.Signals(self.received[0]).name if self.received else None

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if self._armed and not self._interrupted:
            self._interrupted = True
            self._armed = False
            raise RunInterrupted(signum)

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handler)
        self._armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._armed = False
        for sig, old in self._saved.items():
            signal.signal(sig, old)
        self._saved.clear()

    def disarm(self) -> None:
        """From now on only remember signals (teardown and recording)."""
        self._armed = False

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        was_armed = self._armed
        self._armed = False
        try:
            yield
        finally:
            if was_armed and not self._interrupted:
                if self.received:
                    self._interrupted = True
                    raise RunInterrupted(self.received[0])
                self._armed = True

"""Progress of a run's benches: a live display on a terminal, plain lines otherwise.

The bench client calls :meth:`SweepProgress.update` from its event loop every half second with
four numbers (requests done of total, elapsed seconds, errors); update only stores them, so the
client does no extra work.  The main thread, which waits for the bench, calls :meth:`tick`
every fraction of a second: the live display (rich) redraws from the stored numbers; plain
mode writes one line when a cell starts, one when it ends, and one every ``every_s`` (30 s)
in between.

A boot's progress (:class:`BootProgress`): every 10 s of the boot, the time elapsed, where the
boot is and the server's last meaningful log line (:func:`last_meaningful_line`), from the
readiness poll of the local runtimes, around a multi-node driver's ``up``
(:func:`wait_booting`) and while a Slurm job's phase is boot (:func:`log_tail` of its log).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.live import Live
    from rich.table import Table

Echo = Callable[[str], None]


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class SweepProgress:
    """Cell ``i`` of ``n``, requests done, errors, elapsed, ETA.  ``live``: draw with rich on
    ``console`` (a terminal); else plain lines through ``echo``."""

    def __init__(
        self,
        n_cells: int,
        requests_per_cell: int,
        echo: Echo,
        *,
        live: bool = False,
        every_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.n_cells = n_cells
        self.per_cell = max(1, requests_per_cell)
        self.echo = echo
        self.every_s = every_s
        self.clock = clock
        self.t0 = clock()
        self.cell_index = 0
        self.cell_label = ""
        self.done = 0
        self.total = self.per_cell
        self.errors = 0
        self.done_before = 0  # requests of the cells already finished
        self.errors_before = 0
        self._ended = False  # the current cell has ended (its numbers are in the *_before sums)
        self._last_line = self.t0
        self._live: Live | None = None
        if live:
            self._start_live()

    # ---- called from the bench's event loop: store only ------------------------
    def update(self, finished: int, total: int, elapsed_s: float, errors: int) -> None:
        self.done, self.total, self.errors = finished, total, errors  # the clock here is the run's

    # ---- called from the main thread ----------------------------------------------
    def start_cell(self, index: int, label: str) -> None:
        self.cell_index, self.cell_label = index, label
        self.done = self.errors = 0
        self._ended = False
        self._last_line = self.clock()
        if self._live is None:
            self.echo(f"cell {index + 1}/{self.n_cells}: {label}")

    def end_cell(self, summary: str) -> None:
        if not self._ended:
            self.done_before += self.done
            self.errors_before += self.errors
            self._ended = True
        if self._live is None:
            self.echo(f"cell {self.cell_index + 1}/{self.n_cells} done: {summary}")
        else:
            self._live.console.print(f"cell {self.cell_index + 1}/{self.n_cells} {self.cell_label}: {summary}")

    def tick(self) -> None:
        if self._live is not None:
            self._live.update(self._render(), refresh=True)
            return
        now = self.clock()
        if now - self._last_line >= self.every_s:
            self._last_line = now
            self.echo(self.line())

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self._render(), refresh=True)
            self._live.stop()
            self._live = None

    # ---- the numbers --------------------------------------------------------------
    def eta_s(self) -> float | None:
        """Seconds left for every cell, from the requests finished so far (None before any)."""
        finished = self.all_done()
        if finished <= 0:
            return None
        elapsed = self.clock() - self.t0
        left = self.n_cells * self.per_cell - finished
        return max(0.0, elapsed / finished * left)

    def all_done(self) -> int:
        """Requests finished over every cell so far."""
        return self.done_before + (0 if self._ended else self.done)

    def all_errors(self) -> int:
        return self.errors_before + (0 if self._ended else self.errors)

    def line(self) -> str:
        eta = self.eta_s()
        return (
            f"cell {self.cell_index + 1}/{self.n_cells}: {self.done}/{self.total} requests, "
            f"{self.errors} errors, elapsed {_clock(self.clock() - self.t0)}, "
            f"ETA {_clock(eta) if eta is not None else '?'}"
        )

    def _render(self) -> Table:
        from rich.table import Table

        grid = Table.grid(padding=(0, 2))
        grid.add_row(f"[bold]cell {self.cell_index + 1}/{self.n_cells}[/bold]", self.cell_label)
        grid.add_row("requests", f"{self.done}/{self.total}  (all cells: {self.all_done()})")
        grid.add_row("errors", str(self.all_errors()))
        eta = self.eta_s()
        grid.add_row("elapsed", _clock(self.clock() - self.t0))
        grid.add_row("ETA", _clock(eta) if eta is not None else "?")
        return grid

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._live = Live(self._render(), console=Console(stderr=True), auto_refresh=False, transient=False)
        self._live.start()


#: How often a boot in progress is reported (seconds): a real boot takes minutes.
BOOT_EVERY_S = 10.0
#: A server log line is shown up to this many characters.
BOOT_LINE_CHARS = 120


class BootProgress:
    """While the server boots: one line every ``every_s`` seconds of the boot, with the time
    elapsed and the last meaningful line the server logged (``last_line``), so a boot of minutes
    is not minutes of silence.  The same line on a terminal and in a plain log (a terminal gains
    no redraw here: the lines are the record of where the boot spent its time).

    ``state`` (optional) says where the boot is when the runtime knows more than "not ready yet"
    (a multi-node driver's step, a Slurm job's phase); a runtime that cannot see the server's log
    passes ``last_line=None`` and its lines carry the elapsed time and the state alone.

    ``__call__(elapsed)`` is the readiness poll's progress hook (:func:`autobench.run.readiness.
    wait_ready`); it prints only when ``elapsed`` has crossed the next multiple of ``every_s``, so
    the cadence is steady whatever the poll interval, and a line is not repeated for one crossing."""

    def __init__(
        self,
        echo: Echo,
        last_line: Callable[[], str | None] | None,
        *,
        every_s: float = BOOT_EVERY_S,
        state: Callable[[], str | None] | None = None,
    ):
        self.echo = echo
        self.last_line = last_line
        self.state = state
        self.every_s = every_s
        self._next = every_s

    def __call__(self, elapsed: float) -> None:
        if elapsed < self._next:
            return
        while self._next <= elapsed:
            self._next += self.every_s
        where = (self.state() if self.state is not None else None) or "not ready yet"
        said = ""
        if self.last_line is not None:
            line = self.last_line()
            said = f"; server: {_shorten(line)}" if line else "; the server has logged nothing yet"
        self.echo(f"boot: {_clock(elapsed)} elapsed, {_shorten(where)}{said}")


def _shorten(line: str) -> str:
    return line if len(line) <= BOOT_LINE_CHARS else line[: BOOT_LINE_CHARS - 1] + "..."


def last_meaningful_line(lines: Iterable[str]) -> str | None:
    """The last server log record of ``lines`` that says something (``autobench.logs.lines``: the
    process prefix and vLLM's header dropped; progress-bar frames, banner art, indented
    continuation lines and autobench's own notes skipped; the level kept when it is not INFO),
    or None."""
    from autobench.logs.lines import split_records

    for line in reversed(list(lines)):
        if line.startswith("[autobench]"):
            continue
        for rec in reversed(split_records(line)):
            if rec.msg[:1].isspace():  # a continuation: a warning's source line, an indented part
                continue
            msg = " ".join(rec.msg.split())
            if sum(c.isascii() and c.isalpha() for c in msg) >= 3:
                return msg if rec.level in (None, "INFO") else f"{rec.level} {msg}"
    return None


#: How much of the end of a server log :func:`log_tail` reads (a boot's last lines are in it).
TAIL_BYTES = 64 * 1024


def log_tail(path: Path, max_bytes: int = TAIL_BYTES) -> list[str]:
    """The last lines of the log file at ``path`` (its last ``max_bytes``; the first line, maybe
    cut, dropped when the file is longer); [] when it cannot be read (not written yet)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - max_bytes))
            data = fh.read(max_bytes)
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > max_bytes else lines


def wait_booting(
    proc: Waitable,
    progress: Callable[[float], None],
    *,
    step_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Wait for ``proc`` (a boot step run as a child: a multi-node driver's ``up``), calling
    ``progress`` with the seconds elapsed every ``step_s`` it is still running; its exit code."""
    start = clock()
    while True:
        try:
            return proc.wait(timeout=step_s)
        except subprocess.TimeoutExpired:
            progress(clock() - start)


class Waitable(Protocol):
    def wait(self, timeout: float | None = None) -> int: ...


__all__ = [
    "BOOT_EVERY_S",
    "BootProgress",
    "SweepProgress",
    "last_meaningful_line",
    "log_tail",
    "wait_booting",
]

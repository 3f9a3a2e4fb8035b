"""Sweep progress: plain lines (cell start and end, one every 30 s) and the live display's
numbers (cell i of N, requests done, errors, elapsed, ETA), with a fake clock."""

from __future__ import annotations

from autobench.run.progress import SweepProgress


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_per_cell_and_every_30_seconds():
    lines: list[str] = []
    clock = Clock()
    p = SweepProgress(3, 10, lines.append, clock=clock)
    p.start_cell(0, "concurrency=1")
    p.update(4, 10, 12.0, 1)  # from the bench's loop: stored only
    clock.t += 29
    p.tick()
    assert lines == ["cell 1/3: concurrency=1"]
    clock.t += 2
    p.tick()
    assert lines[-1] == "cell 1/3: 4/10 requests, 1 errors, elapsed 0:31, ETA 3:21"  # 4 of 30 in 31 s
    p.update(10, 10, 40.0, 1)
    p.end_cell("10 completed, 1 errors")
    assert lines[-1] == "cell 1/3 done: 10 completed, 1 errors"
    p.start_cell(1, "concurrency=4")
    clock.t += 10
    p.tick()  # 10 s into cell 2: no line yet (the clock restarts per cell)
    assert lines[-1] == "cell 2/3: concurrency=4"
    p.close()


def test_eta_is_unknown_before_any_request_and_zero_at_the_end():
    clock = Clock()
    p = SweepProgress(2, 5, lambda s: None, clock=clock)
    p.start_cell(0, "a")
    assert p.eta_s() is None
    p.update(5, 5, 3.0, 0)
    p.end_cell("")
    p.start_cell(1, "b")
    clock.t += 10
    p.update(5, 5, 3.0, 0)
    assert p.eta_s() == 0.0


def test_the_live_display_draws_the_numbers():
    from rich.console import Console

    clock = Clock()
    p = SweepProgress(6, 8, lambda s: None, clock=clock)
    p.start_cell(2, "concurrency=16 repeat 1/2")
    p.update(3, 8, 2.0, 1)
    clock.t += 65
    console = Console(record=True, width=80)
    console.print(p._render())
    text = console.export_text()
    assert "cell 3/6" in text and "concurrency=16 repeat 1/2" in text
    assert "3/8" in text and "errors" in text and "1:05" in text and "ETA" in text


def test_a_finished_cell_is_counted_once():
    p = SweepProgress(2, 20, lambda s: None, clock=Clock())
    p.start_cell(0, "a")
    p.update(20, 20, 1.0, 2)
    p.end_cell("")
    assert (p.all_done(), p.all_errors()) == (20, 2)
    p.tick()  # a late update of the ended cell changes nothing
    p.update(20, 20, 1.1, 2)
    assert (p.all_done(), p.all_errors()) == (20, 2)
    p.start_cell(1, "b")
    p.update(5, 20, 0.5, 0)
    assert p.all_done() == 25


def test_the_clock_reads_minutes_and_hours():
    from autobench.run.progress import _clock

    assert [_clock(s) for s in (-3, 0.9, 59.9, 61, 3599, 3600, 3725)] == [
        "0:00",
        "0:00",
        "0:59",
        "1:01",
        "59:59",
        "1:00:00",
        "1:02:05",
    ]


def test_the_first_line_and_the_default_cadence():
    lines: list[str] = []
    clock = Clock()
    p = SweepProgress(2, 0, lines.append, clock=clock)  # no request count known: one per cell
    assert p.line() == "cell 1/2: 0/1 requests, 0 errors, elapsed 0:00, ETA ?"
    p.start_cell(0, "a")
    p.update(1, 1, 0.1, 0)
    assert p.all_done() == 1 and p.eta_s() == 0.0  # 1 of 2 requests in 0 s
    clock.t += 29.9
    p.tick()
    clock.t += 0.1
    p.tick()  # 30 s since the cell started: a line
    assert lines == ["cell 1/2: a", "cell 1/2: 1/1 requests, 0 errors, elapsed 0:30, ETA 0:30"]


def test_the_live_display_on_stderr_from_start_to_close(capsys):
    clock = Clock()
    lines: list[str] = []
    p = SweepProgress(2, 10, lines.append, live=True, clock=clock)
    p.start_cell(0, "concurrency=1")
    p.update(4, 10, 3.0, 1)
    clock.t += 65
    p.tick()
    p.end_cell("10 completed")
    p.start_cell(1, "concurrency=2")
    p.update(3, 10, 3.0, 2)
    p.close()
    p.close()  # twice: nothing more
    out, err = capsys.readouterr()
    assert lines == [] and out == ""  # the display, not plain lines; on stderr
    shown = [line.rstrip() for line in err.splitlines()]
    assert shown == [
        "cell 1/2 concurrency=1: 10 completed",
        "cell 2/2  concurrency=2",
        "requests  3/10  (all cells: 7)",
        "errors    3",
        "elapsed   1:05",
        "ETA       2:00",
    ]


def test_the_live_display_before_the_first_cell_and_request():
    from rich.console import Console

    p = SweepProgress(3, 4, lambda s: None, clock=Clock())
    console = Console(record=True, width=60)
    console.print(p._render())
    shown = [line.rstrip() for line in console.export_text().splitlines()]
    assert shown == ["cell 1/3", "requests  0/4  (all cells: 0)", "errors    0", "elapsed   0:00", "ETA       ?"]
    p.update(2, 4, 0.5, 0)  # counted even before a cell is named
    assert p.all_done() == 2

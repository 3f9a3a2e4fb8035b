"""Time per MB of every log pattern, and of the whole parser, on adversarial lines of 1-16 MB.

Issue #27: an 8 KB line took 93 s (cubic) and a 64 KB line 45 s (quadratic) through two old
patterns.  Every pattern the parser runs on log text is listed by
``autobench.logs.linear.patterns()``; for each one this script builds hostile lines from a
generic alphabet (runs of spaces, ``1%|``, ``pid=1``, ``(``, digits, escape sequences, ...)
and from the pattern itself (its literal prefix repeated, or followed by a long run), finds
the slowest family at 1 MB, then times ``search`` on that family at 1, 4 and 16 MB.  Linear
time shows as a flat time per MB (the ``x16/x1`` column near 1; quadratic would be ~16).

The end-to-end part feeds ``parse_log`` one line of each #27 shape (and a few more) at 1, 2,
4, 8 and 16 MB -- the reader accepts lines up to 16 MiB -- and prints the time per MB.

Prints the load average: the machine is shared.

    .venv/bin/python benchmarks/logs_adversarial.py [--sizes 1,4,16] [--pattern SUBSTRING]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser as _sre_parse  # type: ignore[attr-defined]
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autobench.logs import parse_log  # noqa: E402
from autobench.logs.linear import ANCHORED, patterns  # noqa: E402

MB = 1 << 20
GENERIC = (" ", "1%|", "pid=1 ", "(", "1", "a.", "\x1b[", "\x1b]", "**", "[", "> ", "ab ", "Error: ", 'File "')


def _prefix(rx: re.Pattern[Any]) -> str:
    """The literal text a match of ``rx`` must start with (may be empty)."""
    out = []
    for op, av in _sre_parse.parse(rx.pattern, rx.flags):
        if op != _sre.LITERAL:
            break
        out.append(chr(av))
    return "".join(out)


def _families(rx: re.Pattern[Any]) -> dict[str, Any]:
    """name -> a function of size that builds one hostile line."""
    fams: dict[str, Any] = {f"run {g!r}": (lambda n, g=g: (g * (n // len(g) + 1))[:n]) for g in GENERIC}
    head = _prefix(rx)
    if head:
        fams[f"prefix {head[:24]!r} repeated"] = lambda n, h=head: (h * (n // len(h) + 1))[:n]
        for tail in ("1", " ", "a", "."):
            fams[f"prefix then {tail!r}"] = lambda n, h=head, t=tail: (h + t * n)[:n]
    return fams


def _time(rx: re.Pattern[Any], text: str, repeat: int = 3, anchored: bool = False) -> float:
    """The fastest of ``repeat`` runs (the machine is shared: the minimum is the cost): a
    ``search`` of the whole line, or one ``match`` at its start for a pattern the parser only
    runs that way (``linear.ANCHORED``)."""
    data: Any = text.encode("utf-8", "replace") if isinstance(rx.pattern, bytes) else text
    run = rx.match if anchored else rx.search
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        run(data)
        best = min(best, time.perf_counter() - t)
    return best


def _ratio(per_mb: list[float]) -> str:
    """Time per MB at the largest size over the smallest; "-" when the smallest is under a
    millisecond per MB (timer and cache noise, not the pattern, decide such a ratio)."""
    return f"{per_mb[-1] / per_mb[0]:6.2f}" if per_mb[0] >= 1e-3 else "     -"


def per_pattern(sizes: list[int], only: str | None) -> None:
    print(
        f"{'pattern':46s} {'run':6s} {'worst family at 1 MB':34s} "
        + " ".join(f"{s:>4d}MB s/MB" for s in sizes)
        + "  x16/x1"
    )
    worst_ratio = 0.0
    worst_per_mb = 0.0
    for name, rx in patterns().items():
        if only and only not in name:
            continue
        fams = _families(rx)
        anchored = name in ANCHORED
        timed = {fam: _time(rx, build(MB), repeat=1, anchored=anchored) for fam, build in fams.items()}
        fam = max(timed, key=lambda k: timed[k])
        per_mb = [_time(rx, fams[fam](size * MB), anchored=anchored) / size for size in sizes]
        if per_mb[0] >= 1e-3:
            worst_ratio = max(worst_ratio, per_mb[-1] / per_mb[0])
        worst_per_mb = max(worst_per_mb, max(per_mb))
        cells = " ".join(f"{v:11.5f}" for v in per_mb)
        how = "match" if anchored else "search"
        print(f"{name[:46]:46s} {how:6s} {fam[:34]:34s} {cells}  {_ratio(per_mb)}", flush=True)
    print(
        f"largest ratio (patterns over 1 ms/MB): {worst_ratio:.2f} (linear ~1, quadratic ~{sizes[-1] // sizes[0]});"
        f" slowest: {worst_per_mb:.4f} s/MB"
    )


# End-to-end: one line through the whole parser (reader, prefilter, records, facts, causes).
LINES = {
    "#27 ValueError + '1%|'*n": lambda n: ("ERROR 01-01 00:00:00 [x.py:1] ValueError: " + "1%|" * n)[:n],
    "#27 pid=1 + spaces": lambda n: ("(EngineCore pid=1)" + " " * n)[:n],
    "spaces + pid=1": lambda n: " " * (n - 5) + "pid=1",
    "'(A pid=1) ' * n": lambda n: ("(A pid=1) " * (n // 10 + 1))[:n],
    "Traceback frames": lambda n: ('  File "/x.py", line 1, in f' * (n // 28 + 1))[:n],
    "ESC[ * n": lambda n: ("\x1b[" * (n // 2 + 1))[:n],
    "stats prefix * n": lambda n: ("Avg prompt throughput: 1" * (n // 24 + 1))[:n],
}


def end_to_end(sizes: list[int]) -> None:
    print(f"\n{'whole parser, one line of':28s} " + " ".join(f"{s:>4d}MB s/MB" for s in sizes) + "  x16/x1")
    for label, build in LINES.items():
        per_mb = []
        for size in sizes:
            data = build(size * MB).encode()
            best = float("inf")
            for _ in range(2):
                t = time.perf_counter()
                parse_log([data])
                best = min(best, time.perf_counter() - t)
            per_mb.append(best / size)
        print(f"{label:28s} " + " ".join(f"{v:11.5f}" for v in per_mb) + f"  {_ratio(per_mb)}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,4,16", help="MB sizes for the per-pattern table")
    ap.add_argument("--e2e-sizes", default="1,2,4,8,16", help="MB sizes for the whole-parser table")
    ap.add_argument("--pattern", help="only patterns whose name contains this")
    args = ap.parse_args()
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per_pattern([int(s) for s in args.sizes.split(",")], args.pattern)
    end_to_end([int(s) for s in args.e2e_sizes.split(",")])
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""SSE parser cost on hostile and ordinary streams (prints figures; issue 12 item 11).

Each case runs in a fresh subprocess so its peak RSS is its own:

* a 100 MB event in 64 KiB reads (refused at ``MAX_EVENT_BYTES``: time and memory to refuse);
* a 15 MiB event (just under the limit) in 64 KiB and in 1 KiB reads (accepted);
* 200,000 ordinary token events, three per read (the general path; one event per read takes
  the fast path and never touches the buffer).

Before the fix the buffer was rebuilt on every read: a 100 MB event took 35 s and 434 MB.

    .venv/bin/python benchmarks/sse_parse_speed.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

CASES = {
    "100 MB event, 64 KiB reads": (100 * 10**6, 65536),
    "15 MiB event, 64 KiB reads": (15 * 2**20, 65536),
    "15 MiB event, 1 KiB reads": (15 * 2**20, 1024),
    "200k token events, 3 per read": (0, 0),
}


def child(name: str) -> None:
    from autobench.bench.sse import EventTooLarge, SSEParser

    size, read = CASES[name]
    p = SSEParser()
    events = 0
    outcome = "parsed"
    t = time.perf_counter()
    if size:
        piece = b"x" * read
        try:
            p.feed(b'data: {"text":"')
            sent = 0
            while sent < size:
                events += len(p.feed(piece))
                sent += read
            events += len(p.feed(b'"}\n\n'))
        except EventTooLarge:
            outcome = "refused"
    else:
        ev = b'data: {"id":"cmpl-1","choices":[{"index":0,"text":" tok","finish_reason":null}]}\n\n'
        three = ev * 3
        for _ in range(200_000 // 3):
            events += len(p.feed(three))
    dt = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"case": name, "outcome": outcome, "events": events, "seconds": dt, "peak_rss_mib": rss}))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    print(f"{'case':<32} {'outcome':>8} {'events':>7} {'seconds':>8} {'peak RSS MiB':>13}")
    for name in CASES:
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        print(f"{name:<32} {r['outcome']:>8} {r['events']:>7} {r['seconds']:>8.3f} {r['peak_rss_mib']:>13.0f}")


if __name__ == "__main__":
    main()

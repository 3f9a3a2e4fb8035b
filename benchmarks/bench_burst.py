"""Where a burst's time goes: the client's dispatch delay (due -> write) at C streams (prints one line).

A lockstep closed loop of C streams against the synthetic server (its own process; with
``--server-cpus`` / ``--client-cpus`` pinned as ``taskset -c``), and per request the time from
when it was due (its worker free, or the start) to its write.  It also measures a client older
than the dispatch delay (main before issue #34: one task per worker): there the due time is
tracked per worker task from outside, so the two can be run interleaved on the same machine
(``PYTHONPATH`` chooses the client)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_burst.py --conc 1024 --rounds 2 \\
        --server-cpus 0 --client-cpus 1 --nice -19

Output: ``C=1024 client=new load=... dd_p50=... dd_p99=... first_burst_last_write=...`` (ms),
with the TTFT error, the server's own lateness, throughput over ideal, loop lag and CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_accuracy as BA  # noqa: E402

from autobench.bench import client as CL  # noqa: E402
from autobench.bench.client import BenchConfig, run_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conc", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--server-cpus", default=None)
    ap.add_argument("--client-cpus", default=None)
    ap.add_argument("--nice", type=int, default=0, help="priority of both, when permitted")
    a = ap.parse_args()
    client_cpus = BA.cpu_list(a.client_cpus)
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
    with contextlib.suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, 0, a.nice)
    proc, url, _ = BA.start_server(1, a.nice, 0.0, BA.cpu_list(a.server_cpus))
    dues: dict[int, float] = {}
    last: dict[object, float] = {}
    seen: dict[str, Any] = {}
    send = getattr(CL._Runner, "_send", None)
    old = not hasattr(CL.RequestRecord(0, 0), "scheduled")
    if old and send is not None:  # the client before issue #34: a task per worker

        async def tracked(self: Any, rec: Any, data: bytes) -> None:
            task = asyncio.current_task()
            due = last.get(task, getattr(self, "t0", 0.0))
            await send(self, rec, data)
            last[task] = rec.end
            dues[id(rec)] = due

        CL._Runner._send = tracked  # type: ignore[method-assign]
    measure = CL._Runner._measure

    async def spy(self: Any, bodies: list[bytes], *rest: Any) -> Any:
        last.clear()
        out = await measure(self, bodies, *rest)
        seen["t0"], seen["recs"] = self.t0, list(self.records)
        return out

    CL._Runner._measure = spy  # type: ignore[method-assign]
    try:
        cfg = BenchConfig(
            base_url=url, model="m", num_prompts=a.conc * a.rounds, concurrency=a.conc, max_tokens=BA.N_TOKENS,
            ignore_eos=True, random_input_len=32, warmup=min(a.conc, 8), seed=1,
        )  # fmt: skip
        d = run_bench(cfg).to_json_dict()
    finally:
        proc.terminate()
        proc.wait(10)
    recs = seen["recs"]
    dd = sorted(1000 * (r.start - due) for r in recs if r.start and (due := (dues.get(id(r)) if old else r.scheduled)))
    first = max(1000 * (r.start - seen["t0"]) for r in recs[: a.conc])
    c = d["client"]
    ideal = a.conc * BA.N_TOKENS / BA.service_s(BA.N_TOKENS, 1)
    print(
        f"C={a.conc} client={'base' if old else 'new'} load={os.getloadavg()[0]:.2f} "
        f"dd_p50={BA.median(dd):.2f} dd_p99={dd[min(len(dd) - 1, int(0.99 * len(dd)))]:.2f} dd_max={dd[-1]:.2f} "
        f"first_burst_last_write={first:.2f} ttft_err={d['median_ttft_ms'] - BA.TTFT_MS:.2f} "
        f"srv_err={c['server_ttft_ms']['median'] - BA.TTFT_MS:.2f} tput/ideal={d['output_throughput'] / ideal:.3f} "
        f"lag99={c['loop_lag_ms']['p99']:.2f} cpu={c['cpu_fraction_of_one_core']:.2f}",
        flush=True,
    )


if __name__ == "__main__":
    main()

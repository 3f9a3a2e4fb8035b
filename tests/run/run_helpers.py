"""Helpers for the run tests: recipes on free loopback ports, the fake `vllm`, CLI runs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FAKE_VLLM = HERE / "fake_vllm.py"
SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
DRAFT_SHA = "bce6f76cef2027552bed4a8a1bc9c449def48f05"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def recipe_text(
    port: int,
    *,
    name: str = "synth-run",
    revision: str = SHA,
    secrets: str = "[HF_TOKEN]",
    num_prompts: int = 8,
    concurrency: int = 2,
    max_tokens: int = 8,
    ready_timeout: float = 20,
    extra: str = "",
    image: str = "vllm/vllm-openai:v0.23.1",
) -> str:
    return f"""\
name: {name}
model:
  repo: acme/tiny-model
  revision: {revision}
  served_name: tiny
container:
  image: {image}
  name: ab-{name}
  ports: ["{port}:{port}"]
secrets: {secrets}
engine:
  host: 127.0.0.1
  port: {port}
  max_model_len: 4096
bench:
  dataset: {{kind: random, input_len: 16, output_len: {max_tokens}}}
  num_prompts: {num_prompts}
  concurrency: {concurrency}
  max_tokens: {max_tokens}
  ready_timeout_s: {ready_timeout}
{extra}"""


def two_node_recipe(
    port: int,
    *,
    name: str = "synth-2node",
    num_prompts: int = 8,
    ready_timeout: float = 20,
    python: str | None = None,
    fake: str | None = None,
) -> str:
    """The two-node recipe of the Slurm tests (tests/run/test_run_slurm.py and
    tests/experiment/test_experiment_slurm.py): pipeline_parallel_size 2 over two nodes of one GPU,
    served on 127.0.0.1:``port`` by the fake `vllm` (``python`` ``fake`` serve, JSON-quoted; default
    this interpreter and tests/run/fake_vllm.py)."""
    python = python if python is not None else json.dumps(sys.executable)
    fake = fake if fake is not None else json.dumps(str(FAKE_VLLM))
    return f"""\
name: {name}
model:
  repo: acme/tiny-model
  revision: {SHA}
  served_name: tiny
container:
  image: vllm/vllm-openai:v0.23.1
secrets: []
launch:
  command: [{python}, {fake}, serve]
topology:
  nodes: 2
  gpus_per_node: 1
engine:
  host: 127.0.0.1
  port: {port}
  max_model_len: 4096
  pipeline_parallel_size: 2
bench:
  dataset: {{kind: random, input_len: 16, output_len: 8}}
  num_prompts: {num_prompts}
  concurrency: 2
  max_tokens: 8
  ready_timeout_s: {ready_timeout}
"""


def run_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("HF_TOKEN", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_args(recipe: Path, tmp_path: Path, *more: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "autobench",
        "run",
        str(recipe),
        "--runtime",
        "process",
        "--vllm-exec",
        f"{sys.executable} {FAKE_VLLM}",
        "--ledger",
        str(tmp_path / "ledger.db"),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--grace",
        "3",
        *more,
    ]


def run_cli(
    recipe: Path, tmp_path: Path, *more: str, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        run_args(recipe, tmp_path, *more),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=run_env(tmp_path, **env),
        cwd=tmp_path,
    )


def only_run_dir(tmp_path: Path) -> Path:
    dirs = sorted((tmp_path / "runs").iterdir())
    assert len(dirs) == 1, dirs
    return dirs[0]


def run_here(recipe: Path, tmp_path: Path, *more: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``run_cli``'s command through the CLI's entry point in this process (tests/inprocess.py):
    for runs refused before anything starts, and dry runs."""
    import inprocess

    return inprocess.autobench(*run_args(recipe, tmp_path, *more)[3:], cwd=tmp_path, env=run_env(tmp_path, **env))


def ledger_rows(tmp_path: Path) -> list:
    from autobench.ledger import open_ledger

    with open_ledger(tmp_path / "ledger.db", create=False) as ledger:
        return list(ledger.runs())


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False

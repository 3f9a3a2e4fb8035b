"""The run plan (pure) and `autobench run --dry-run` (runs nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import inprocess
import pytest
from run_helpers import FAKE_VLLM, SHA, recipe_text, run_env

from autobench.compile import docker_argv, serve_argv
from autobench.errors import RunError, UsageError
from autobench.recipe import load_recipe
from autobench.recipe.facts import client_host, parse_port_spec
from autobench.run.plan import build_plan, unpinned_refs

NOW = datetime(2026, 6, 24, 9, 30, 5, tzinfo=UTC)


def _loaded(tmp_path: Path, text: str):
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    return load_recipe(path)


def test_process_plan_uses_serve_argv_with_the_executable_replaced(tmp_path: Path):
    loaded = _loaded(tmp_path, recipe_text(18123))
    plan = build_plan(
        loaded,
        runtime="process",
        runs_dir=tmp_path / "runs",
        vllm_exec="/opt/venv/bin/python -m vllm.entrypoints.cli.main",
        now=NOW,
    )
    argv = serve_argv(loaded.recipe)
    assert argv[:3] == ["vllm", "serve", "acme/tiny-model"]
    assert list(plan.server_argv) == [
        "/opt/venv/bin/python",
        "-m",
        "vllm.entrypoints.cli.main",
        *argv[1:],
    ]
    assert plan.base_url == "http://127.0.0.1:18123"
    assert plan.health_url == "http://127.0.0.1:18123/health"
    assert plan.models_url == "http://127.0.0.1:18123/v1/models"
    assert plan.served_model == plan.bench_model == "tiny"
    assert plan.run_dir == tmp_path / "runs" / "20260624T093005Z-synth-run"
    assert plan.ready_timeout_s == 20 and plan.secret_names == ("HF_TOKEN",)
    assert plan.container_name is None and "SIGTERM" in plan.teardown
    assert plan.bench["num_prompts"] == 8 and plan.bench["dataset"]["kind"] == "random"


def test_docker_plan_is_exactly_the_compiled_docker_argv(tmp_path: Path):
    text = recipe_text(18123).replace('ports: ["18123:18123"]', 'ports: ["127.0.0.1:9001:18123"]')
    loaded = _loaded(tmp_path, text)
    plan = build_plan(loaded, runtime="docker", now=NOW)
    assert list(plan.server_argv) == docker_argv(loaded.recipe)
    assert plan.container_name == "ab-synth-run"
    assert plan.teardown == "docker rm -f ab-synth-run"
    assert plan.base_url == "http://127.0.0.1:9001"
    assert plan.env == {}  # docker gets env through the compiled --env flags


def test_docker_plan_refuses_an_unpublished_port(tmp_path: Path):
    text = recipe_text(18123).replace('ports: ["18123:18123"]', "ports: []")
    loaded = _loaded(tmp_path, text)
    with pytest.raises(RunError, match="engine.port 18123 is not published"):
        build_plan(loaded, runtime="docker")
    assert build_plan(loaded, runtime="process").base_url == "http://127.0.0.1:18123"


def test_vllm_exec_is_for_the_process_runtime_only(tmp_path: Path):
    loaded = _loaded(tmp_path, recipe_text(18123))
    with pytest.raises(UsageError):
        build_plan(loaded, runtime="docker", vllm_exec="vllm")
    with pytest.raises(UsageError):
        build_plan(loaded, runtime="podman")


@pytest.mark.parametrize(
    ("spec", "port", "expected"),
    [
        (["8000:8000"], 8000, ("0.0.0.0", 8000)),
        (["9000:8000/tcp"], 8000, ("0.0.0.0", 9000)),
        (["127.0.0.1:9000:8000"], 8000, ("127.0.0.1", 9000)),
        (["[::1]:9000:8000"], 8000, ("::1", 9000)),
        (["9000:8000/udp"], 8000, None),
        (["9000:8001"], 8000, None),
    ],
)
def test_published_port(spec, port, expected):
    parsed = [parse_port_spec(s) for s in spec]
    found = [(p.ip or "0.0.0.0", p.host_port) for p in parsed if p and p.proto == "tcp" and p.container_port == port]
    assert (found[0] if found else None) == expected


def test_client_host():
    assert client_host("0.0.0.0") == "127.0.0.1"
    assert client_host("::") == "127.0.0.1"
    assert client_host("::1") == "[::1]"
    assert client_host("10.0.0.5") == "10.0.0.5"


def test_unpinned_refs_cover_model_tokenizer_and_draft(tmp_path: Path):
    text = recipe_text(18123, revision="main") + (
        "speculative:\n  method: dflash\n  model: z-lab/Draft\n  revision: bce6f76\n  num_speculative_tokens: 5\n"
    )
    text = text.replace("  served_name: tiny\n", "  served_name: tiny\n  tokenizer: acme/tok\n")
    refs = unpinned_refs(_loaded(tmp_path, text))
    assert refs == [
        "model.revision (acme/tiny-model@main)",
        "model.tokenizer_revision (acme/tok@main)",
        "speculative.revision (z-lab/Draft@bce6f76)",
    ]
    assert unpinned_refs(_loaded(tmp_path, recipe_text(18123, revision=SHA))) == []


def _dry_run(tmp_path: Path, *more: str) -> subprocess.CompletedProcess[str]:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(recipe_text(18123), encoding="utf-8")
    return inprocess.autobench(
        "run",
        str(recipe),
        "--dry-run",
        "--ledger",
        str(tmp_path / "ledger.db"),
        "--runs-dir",
        str(tmp_path / "runs"),
        *more,
        cwd=tmp_path,
        env=run_env(tmp_path),
    )


def test_dry_run_shows_the_plan_and_runs_nothing(tmp_path: Path):
    res = _dry_run(tmp_path, "--runtime", "process", "--vllm-exec", f"{sys.executable} {FAKE_VLLM}")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"start      {sys.executable} {FAKE_VLLM} serve acme/tiny-model --revision {SHA}" in out
    assert "ready      GET http://127.0.0.1:18123/health and http://127.0.0.1:18123/v1/models" in out
    assert "teardown   SIGTERM to the server's process group" in out
    assert "secrets    HF_TOKEN (by name, redacted from logs)" in out
    # issue 13: a process run's stored script is the command that runs, not the docker script
    assert "# compiled script" in out and "docker run" not in out
    assert f"exec {sys.executable} {FAKE_VLLM} serve acme/tiny-model --revision {SHA}" in out
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ledger.db").exists()


def test_dry_run_json_for_docker(tmp_path: Path):
    res = _dry_run(tmp_path, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["runtime"] == "docker" and doc["server_argv"][:3] == ["docker", "run", "-d"]
    assert doc["teardown"] == "docker rm -f ab-synth-run"
    assert doc["readiness"]["served_model"] == "tiny" and doc["bench"]["model"] == "tiny"
    assert doc["script"].startswith("#!")
    assert not (tmp_path / "runs").exists()


def test_dry_run_of_the_seed_recipe_shows_the_seed_command_and_its_unpinned_base(tmp_path: Path, repo_root):
    recipe = repo_root / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
    res = inprocess.autobench("run", str(recipe), "--dry-run", "--json", cwd=tmp_path, env=run_env(tmp_path))
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    argv = doc["server_argv"]
    assert argv[:5] == ["docker", "run", "-d", "--name", "vllm-qwen35-122b"]
    assert "--env" in argv and "HF_TOKEN" in argv  # by name, never a value
    i = argv.index("--speculative-config")
    assert json.loads(argv[i + 1])["revision"] == "6c7242c934a9870d7c59c05240bdbb2467cc1394"
    assert doc["teardown"] == "docker rm -f vllm-qwen35-122b"
    assert doc["readiness"]["health_url"] == "http://127.0.0.1:8000/health"
    assert doc["readiness"]["served_model"] == "qwen"
    assert doc["bench"]["max_seconds"] == 900 and doc["bench"]["concurrency"] == 8
    assert doc["unpinned"] == ["model.revision (shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC@main)"]
    assert not (tmp_path / "runs").exists()

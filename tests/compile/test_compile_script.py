"""The compiled seed recipes: golden files, the seed's exact docker command, script behaviour."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from compile_helpers import run_script, shellcheck_path

from autobench.compile import bench_argv, compile_recipe, docker_argv, serve_argv
from autobench.errors import RecipeError
from autobench.recipe import load_recipe

REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "recipes"
GOLDEN = Path(__file__).resolve().parent / "golden"
DFLASH = RECIPES / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
BASE = RECIPES / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"

# The seed page's command, verbatim except the hand-masked token (`HF_TOKEN=***`).
SEED_DOCKER = r"""docker run -d --name vllm-qwen35-122b --gpus all --ipc=host -p 8000:8000 \
  -v ~/.cache/huggingface:/root/.cache/huggingface \
  --env HF_TOKEN=*** --env HF_HUB_OFFLINE=1 \
  --env VLLM_ENABLE_CUDAGRAPH_GC=1 --env FLASHINFER_DISABLE_VERSION_CHECK=1 \
  --env VLLM_USE_FLASHINFER_SAMPLER=1 --env VLLM_MARLIN_USE_ATOMIC_ADD=1 \
  vllm/vllm-openai:nightly-aarch64 shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC \
  --served-model-name qwen --host 0.0.0.0 --port 8000 \
  --max-model-len 262144 --gpu-memory-utilization 0.85 \
  --max-num-batched-tokens 32768 --max-num-seqs 8 \
  --dtype bfloat16 --trust-remote-code \
  --speculative-config '{"method":"dflash","model":"z-lab/Qwen3.5-122B-A10B-DFlash","revision":"6c7242c934a9870d7c59c05240bdbb2467cc1394","num_speculative_tokens":5}' \
  --enable-prefix-caching --enable-chunked-prefill"""
SEED_BENCH = r"""python3 scripts/bench-serving.py --base-url http://localhost:8000 --model qwen \
  --dataset benchmark_data/ShareGPT_V3_unfiltered_cleaned_split.json \
  --num-prompts 500 --max-seconds 900 --concurrency 8 --max-tokens 256"""

CASES = [(DFLASH, target) for target in ("full", "serve", "bench")] + [(BASE, "full")]


def golden_path(recipe: Path, target: str) -> Path:
    return GOLDEN / f"{recipe.stem}.{target}.sh"


def seed_docker_argv(home: str, *, speculative: bool = True) -> list[str]:
    words = shlex.split(SEED_DOCKER.replace("HF_TOKEN=***", "HF_TOKEN").replace("\\\n", " "))
    words = [w.replace("~/", home + "/", 1) if w.startswith("~/") else w for w in words]
    model_at = words.index("shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC")
    # autobench always passes the model revision right after the model (the seed relied on main)
    words[model_at + 1 : model_at + 1] = ["--revision", "main"]
    if not speculative:
        at = words.index("--speculative-config")
        del words[at : at + 2]
    return words


@pytest.mark.parametrize(("recipe", "target"), CASES, ids=[f"{r.stem}-{t}" for r, t in CASES])
def test_golden(recipe, target):
    script = compile_recipe(load_recipe(recipe), target)
    path = golden_path(recipe, target)
    if os.environ.get("AUTOBENCH_UPDATE_GOLDEN"):
        path.write_text(script, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with AUTOBENCH_UPDATE_GOLDEN=1"
    assert script == path.read_text(encoding="utf-8"), "compiled script changed; AUTOBENCH_UPDATE_GOLDEN=1 to accept"


def test_compile_is_deterministic(monkeypatch):
    first = compile_recipe(load_recipe(DFLASH))
    monkeypatch.setenv("HOME", "/somewhere/else")
    monkeypatch.setenv("HF_TOKEN", "hf_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")
    monkeypatch.chdir("/")
    assert compile_recipe(load_recipe(DFLASH)) == first


def test_dflash_docker_command_is_the_seeds(tmp_path):
    recipe = load_recipe(DFLASH).recipe
    assert docker_argv(recipe, home="/h") == seed_docker_argv("/h")
    assert serve_argv(recipe)[:5] == [
        "vllm",
        "serve",
        "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC",
        "--revision",
        "main",
    ]
    assert serve_argv(recipe)[3:] == seed_docker_argv("/h")[seed_docker_argv("/h").index("--revision") :]
    spec = docker_argv(recipe)[docker_argv(recipe).index("--speculative-config") + 1]
    assert spec == (
        f'{{"method":"dflash","model":"z-lab/Qwen3.5-122B-A10B-DFlash","revision":"{SHA}","num_speculative_tokens":5}}'
    )


def test_base_docker_command_is_the_seeds_without_speculation():
    recipe = load_recipe(BASE).recipe
    assert docker_argv(recipe, home="/h") == seed_docker_argv("/h", speculative=False)


def test_bench_invocation_has_the_seeds_parameters():
    recipe = load_recipe(DFLASH).recipe
    seed = shlex.split(SEED_BENCH.replace("\\\n", " "))[2:]  # drop python3 scripts/bench-serving.py
    # the one endpoint (autobench.recipe.facts.server_endpoint) dials loopback by address, as `run` does
    seed = [w.replace("http://localhost:8000", "http://127.0.0.1:8000") for w in seed]
    argv = bench_argv(recipe)
    # Beyond the seed: prompt lengths measured with the served model's tokenizer at its revision.
    i = argv.index("--tokenizer")
    assert argv[i : i + 4] == ["--tokenizer", recipe.model.repo, "--tokenizer-revision", recipe.model.revision]
    assert argv[:i] + argv[i + 4 :] == ["autobench", "bench", *seed]


def test_compiled_script_runs_the_seed_command_with_hf_token_by_reference(tmp_path, monkeypatch):
    secret = "hf_secretSECRETsecretSECRETsecret1234"
    monkeypatch.setenv("HF_TOKEN", secret)
    script = compile_recipe(load_recipe(DFLASH))
    assert secret not in script
    assert "HF_TOKEN=" not in script
    assert "--env HF_TOKEN \\\n" in script
    proc, calls = run_script(script, tmp_path, {"HF_TOKEN": secret})
    assert proc.returncode == 0, proc.stderr
    tools = [(tool, argv[0] if argv else "") for tool, argv in calls]
    assert tools[0] == ("docker", "run")
    assert ("curl", "-fsS") in tools
    assert ("autobench", "bench") in tools
    assert tools[-1] == ("docker", "rm")  # teardown on exit
    run = calls[0][1]
    assert ["docker", *run] == seed_docker_argv(str(tmp_path / "home"))
    assert secret not in run  # by reference only...
    hf = (tmp_path / "log" / "000-docker.hf_token").read_text()
    assert hf == secret  # ...and docker finds it in its environment
    bench = next(argv for tool, argv in calls if tool == "autobench")
    result = ["--result", "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.bench.json"]  # for `record --metrics`
    assert ["autobench", *bench] == bench_argv(load_recipe(DFLASH).recipe) + result
    assert calls[-1][1] == ["rm", "-f", "vllm-qwen35-122b"]


def test_script_refuses_to_start_without_the_secret(tmp_path):
    proc, calls = run_script(compile_recipe(load_recipe(DFLASH)), tmp_path)
    assert proc.returncode == 2
    assert "secret HF_TOKEN is not set" in proc.stderr
    assert calls == []


def test_script_fails_fast_when_the_container_exits(tmp_path):
    script = compile_recipe(load_recipe(DFLASH))
    proc, calls = run_script(script, tmp_path, {"HF_TOKEN": "x", "FAKE_CURL_RC": "7", "FAKE_RUNNING": "false"})
    assert proc.returncode == 1
    assert "stopped before the server was ready" in proc.stderr
    kinds = [argv[0] for tool, argv in calls if tool == "docker"]
    assert kinds == ["run", "inspect", "logs", "rm"]
    assert not any(tool == "autobench" for tool, _ in calls)


def test_script_times_out(tmp_path):
    text = compile_recipe(load_recipe(DFLASH)).replace("READY_TIMEOUT_S=1800", "READY_TIMEOUT_S=0")
    proc, calls = run_script(text, tmp_path, {"HF_TOKEN": "x", "FAKE_CURL_RC": "7"})
    assert proc.returncode == 1 and "not ready after 0s" in proc.stderr
    assert [argv[0] for tool, argv in calls if tool == "docker"][-1] == "rm"


def test_serve_target_leaves_the_server_up_and_bench_target_only_benches(tmp_path):
    loaded = load_recipe(DFLASH)
    proc, calls = run_script(compile_recipe(loaded, "serve"), tmp_path, {"HF_TOKEN": "x"})
    assert proc.returncode == 0, proc.stderr
    assert [t for t, _ in calls if t != "curl"] == ["docker"]
    assert "server ready at http://127.0.0.1:8000" in proc.stderr
    proc, calls = run_script(compile_recipe(loaded, "bench"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [t for t, _ in calls] == ["autobench"]


@pytest.mark.parametrize(("recipe", "target"), CASES, ids=[f"{r.stem}-{t}" for r, t in CASES])
def test_bash_n_and_shellcheck(tmp_path, recipe, target):
    path = tmp_path / "s.sh"
    path.write_text(compile_recipe(load_recipe(recipe), target))
    subprocess.run(["bash", "-n", str(path)], check=True)
    proc = subprocess.run([shellcheck_path(), "--severity=style", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_frozen_refuses_unpinned_revisions(tmp_path):
    with pytest.raises(RecipeError) as info:
        compile_recipe(load_recipe(DFLASH), frozen=True)
    text = str(info.value)
    assert text.startswith(f"{BASE}:12:13: model.revision: model revision 'main'")
    assert f"(hint: autobench lock {DFLASH})" in text
    by_tag = tmp_path / "by-tag.yaml"
    by_tag.write_text(f"extends: {DFLASH}\nmodel:\n  revision: {'a' * 40}\n")
    with pytest.raises(RecipeError) as info:  # every revision pinned, the image by tag only
        compile_recipe(load_recipe(by_tag), frozen=True)
    assert str(info.value) == (
        f"{BASE}:25:10: container.image is not pinned by digest (name@sha256:...); --frozen refuses it "
        f"(hint: autobench lock {by_tag})"
    )
    pinned = tmp_path / "pinned.yaml"
    digest = "sha256:" + "d" * 64
    pinned.write_text(
        f"extends: {DFLASH}\nmodel:\n  revision: {'a' * 40}\ncontainer:\n  image: vllm/vllm-openai@{digest}\n"
    )
    script = compile_recipe(load_recipe(pinned), frozen=True)
    assert f"vllm/vllm-openai@{digest}" in script
    assert "--revision aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" in script
    assert "UNPINNED" not in script
    draft = tmp_path / "draft.yaml"
    draft.write_text("extends: pinned.yaml\nspeculative:\n  revision: main\n")
    with pytest.raises(RecipeError, match=r"draft.yaml:3:13: speculative.revision: draft revision 'main'"):
        compile_recipe(load_recipe(draft), frozen=True)


def test_compile_refuses_rule_errors_and_secret_values(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: {DFLASH}\nspeculative:\n  num_speculative_tokens: null\n")
    with pytest.raises(RecipeError, match=r"AB001: speculative.method: dflash needs num_speculative_tokens"):
        compile_recipe(load_recipe(bad))
    leak = tmp_path / "leak.yaml"
    leak.write_text(f"extends: {DFLASH}\nenv:\n  HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz123456\n")
    for check in (True, False):
        with pytest.raises(RecipeError, match="AB030|AB031") as info:
            compile_recipe(load_recipe(leak), check=check)
        assert "hf_abcdefghijklmnop" not in str(info.value)


def test_a_server_api_key_secret_makes_the_bench_send_it_by_name(tmp_path):
    child = tmp_path / "keyed.yaml"
    child.write_text(f"extends: {DFLASH}\nsecrets: [HF_TOKEN, VLLM_API_KEY]\n", encoding="utf-8")
    recipe = load_recipe(child).recipe
    argv = bench_argv(recipe)
    at = argv.index("--api-key-env")
    assert argv[at + 1] == "VLLM_API_KEY"
    assert "VLLM_API_KEY" in docker_argv(recipe)  # the server gets it by name too
    assert "--api-key-env" not in bench_argv(load_recipe(DFLASH).recipe)


def test_readiness_of_a_keyed_server_sends_the_key_by_header_never_in_argv(tmp_path):
    """The compiled `models_ok` function, run by real bash and real curl against the synthetic
    server started with an API key (as vllm serve with VLLM_API_KEY)."""
    import re
    import shutil

    from autobench.bench.synthetic import SyntheticConfig, ThreadedServer

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    child = tmp_path / "keyed.yaml"
    child.write_text(f"extends: {DFLASH}\nsecrets: [HF_TOKEN, VLLM_API_KEY]\n", encoding="utf-8")
    script = compile_recipe(load_recipe(child), "full")
    fn = re.search(r"^models_ok\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert fn, script
    key = "zz-key-0f1e2d3c4b5a"
    assert key not in script and "Bearer $" not in script
    (tmp_path / "keyed.sh").write_text(script, encoding="utf-8")
    lint = subprocess.run([shellcheck_path(), "-s", "bash", str(tmp_path / "keyed.sh")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    with ThreadedServer(SyntheticConfig(port=0, model="m", log_stats_interval=0, api_key=key)) as srv:

        def models_ok(value: str) -> int:
            env = {**os.environ, "BASE_URL": srv.base_url, "VLLM_API_KEY": value}
            return subprocess.run(
                ["bash", "-c", fn.group(0) + "models_ok"], env=env, capture_output=True, text=True
            ).returncode

        assert models_ok(key) == 0
        assert models_ok("wrong") != 0  # curl -f: the server's 401 is not ready
    # Unkeyed recipes keep the plain probe.
    assert "-H @-" not in compile_recipe(load_recipe(DFLASH), "full")


def test_vllm_bench_client_gets_the_server_key_through_the_environment_only(tmp_path):
    child = tmp_path / "keyed-vllm.yaml"
    child.write_text(
        f"extends: {DFLASH}\nsecrets: [HF_TOKEN, VLLM_API_KEY]\nbench:\n  client: vllm\n  max_seconds: null\n",
        encoding="utf-8",
    )
    script = compile_recipe(load_recipe(child), "bench")
    (tmp_path / "keyed-vllm.sh").write_text(script, encoding="utf-8")
    lint = subprocess.run(
        [shellcheck_path(), "-s", "bash", str(tmp_path / "keyed-vllm.sh")], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout
    key = "zz-key-9a8b7c6d5e4f"
    proc, calls = run_script(script, tmp_path, {"VLLM_API_KEY": key})
    assert proc.returncode == 0, proc.stderr
    [(tool, argv)] = calls
    assert tool == "docker" and argv[:4] == ["exec", "-e", "OPENAI_API_KEY", "vllm-qwen35-122b"]
    assert key not in " ".join(argv)
    [seen] = (tmp_path / "log").glob("*-docker.openai_key")
    assert seen.read_text() == key  # vllm bench serve reads OPENAI_API_KEY
    proc, calls = run_script(script, tmp_path, {})
    assert proc.returncode != 0 and not calls
    assert "secret VLLM_API_KEY is not set" in proc.stderr

"""The argv lists a recipe compiles to (docker run, vllm serve, both bench clients), every
field set, and the launch variants (prefix, command, model flag, entrypoint, setup steps and
mods).  The script renders the same lines (test_compile_quoting_property checks that under bash)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from autobench.compile.argv import (
    bench_argv,
    docker_argv,
    group_args,
    num,
    serve_argv,
    setup_script,
    speculative_json,
)
from autobench.errors import RecipeError
from autobench.recipe.schema import Recipe

SHA, TOK, DRAFT = "a" * 40, "b" * 40, "c" * 40


def full(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "full",
        "model": {
            "repo": "org/m",
            "revision": SHA,
            "tokenizer": "org/tok",
            "tokenizer_revision": TOK,
            "served_name": "served",
            "trust_remote_code": True,
        },
        "container": {
            "image": "vllm/vllm-openai:v1",
            "name": "box",
            "gpus": "device=0",
            "ipc": "host",
            "shm_size": "16g",
            "ports": ["8000:8000"],
            "volumes": ["~/.cache/hf:/root/.cache/huggingface", "/data:/data"],
            "extra_args": ["--network", "host", "--privileged"],
        },
        "env": {"VLLM_LOGGING_LEVEL": "DEBUG"},
        "secrets": ["HF_TOKEN", "VLLM_API_KEY"],
        "engine": {
            "port": 9000,
            "max_model_len": 4096,
            "gpu_memory_utilization": 0.9,
            "max_num_batched_tokens": 8192,
            "max_num_seqs": 64,
            "dtype": "bfloat16",
            "kv_cache_dtype": "fp8",
            "tensor_parallel_size": 2,
            "pipeline_parallel_size": 1,
            "data_parallel_size": 1,
            "quantization": "awq",
            "runner": "generate",
            "load_format": "safetensors",
            "attention_backend": "FLASH_ATTN",
            "enable_expert_parallel": True,
            "enable_prefix_caching": False,
            "enable_chunked_prefill": True,
            "enforce_eager": False,
            "extra_args": ["--seed", "1", "--disable-log-stats"],
        },
        "speculative": {
            "method": "eagle3",
            "model": "org/draft",
            "revision": DRAFT,
            "num_speculative_tokens": 3,
            "options": {"method": "not this one", "draft_tensor_parallel_size": 1},
        },
        "bench": {
            "client": "vllm",
            "endpoint": "chat",
            "model": "served",
            "dataset": {"kind": "random", "input_len": 512, "output_len": 128},
            "num_prompts": 100,
            "concurrency": 4,
            "max_tokens": 200,
            "request_rate": 2.0,
            "ignore_eos": True,
            "seed": 7,
            "warmup": 2,
            "sampler": {"temperature": 0.0, "top_p": 0.9, "min_p": 0.1},
        },
    }
    for section, values in changes.items():
        if isinstance(values, dict) and isinstance(data.get(section), dict):
            data[section] = {**data[section], **values}
        else:
            data[section] = values
    return data


def recipe(data: dict[str, Any]) -> Any:
    return Recipe.model_validate(data)


ENGINE_FLAGS = [
    "--revision", SHA,
    "--tokenizer", "org/tok",
    "--tokenizer-revision", TOK,
    "--served-model-name", "served",
    "--host", "0.0.0.0",
    "--port", "9000",
    "--max-model-len", "4096",
    "--gpu-memory-utilization", "0.9",
    "--max-num-batched-tokens", "8192",
    "--max-num-seqs", "64",
    "--dtype", "bfloat16",
    "--kv-cache-dtype", "fp8",
    "--tensor-parallel-size", "2",
    "--pipeline-parallel-size", "1",
    "--data-parallel-size", "1",
    "--quantization", "awq",
    "--runner", "generate",
    "--load-format", "safetensors",
    "--attention-backend", "FLASH_ATTN",
    "--trust-remote-code",
    "--speculative-config",
    f'{{"method":"eagle3","model":"org/draft","revision":"{DRAFT}","num_speculative_tokens":3,"draft_tensor_parallel_size":1}}',
    "--enable-expert-parallel",
    "--no-enable-prefix-caching",
    "--enable-chunked-prefill",
    "--no-enforce-eager",
    "--seed", "1", "--disable-log-stats",
]  # fmt: skip


def test_docker_run_of_a_recipe_with_every_field_set():
    assert docker_argv(recipe(full()), home="/h") == [
        "docker", "run", "-d",
        "--name", "box",
        "--gpus", "device=0",
        "--ipc=host",
        "--shm-size", "16g",
        "-p", "8000:8000",
        "-v", "/h/.cache/hf:/root/.cache/huggingface",
        "-v", "/data:/data",
        "--env", "HF_TOKEN", "--env", "VLLM_API_KEY",  # secrets by name: docker copies the value
        "--env", "VLLM_LOGGING_LEVEL=DEBUG",
        "--network", "host", "--privileged",
        "vllm/vllm-openai:v1",
        "org/m",
        *ENGINE_FLAGS,
    ]  # fmt: skip


def test_vllm_serve_of_the_same_recipe():
    assert serve_argv(recipe(full()), home="/h") == ["vllm", "serve", "org/m", *ENGINE_FLAGS]


def test_vllm_bench_serve_inside_the_container():
    assert bench_argv(recipe(full()), home="/h") == [
        "docker", "exec", "-e", "OPENAI_API_KEY", "box", "vllm", "bench", "serve",
        "--backend", "openai-chat",
        "--base-url", "http://localhost:9000",
        "--endpoint", "/v1/chat/completions",
        "--model", "org/m",
        "--served-model-name", "served",
        "--dataset-name", "random",
        "--num-prompts", "100",
        "--max-concurrency", "4",
        "--random-input-len", "512",
        "--random-output-len", "128",
        "--request-rate", "2",
        "--ignore-eos",
        "--seed", "7",
        "--num-warmups", "2",
        "--temperature", "0", "--top-p", "0.9", "--min-p", "0.1",
    ]  # fmt: skip


def test_autobench_bench_of_the_same_recipe():
    data = full(bench={"client": "autobench", "max_seconds": 30.0})
    assert bench_argv(recipe(data), home="/h") == [
        "autobench", "bench",
        "--base-url", "http://127.0.0.1:9000",
        "--model", "served",
        "--api-key-env", "VLLM_API_KEY",
        "--endpoint", "chat",
        "--dataset-kind", "random",
        "--random-input-len", "512",
        "--tokenizer", "org/tok",
        "--tokenizer-revision", TOK,
        "--num-prompts", "100",
        "--max-seconds", "30",
        "--concurrency", "4",
        "--max-tokens", "128",
        "--request-rate", "2",
        "--ignore-eos",
        "--seed", "7",
        "--warmup", "2",
        "--temperature", "0", "--top-p", "0.9",  # min_p: vllm bench only
    ]  # fmt: skip


def test_the_defaults_add_nothing_optional():
    data = {"name": "d", "model": {"repo": "org/m", "revision": SHA}, "container": {"image": "img:1"}}
    r = recipe(data)
    assert docker_argv(r, home="/h") == [
        "docker", "run", "-d", "--name", "autobench-d", "--gpus", "all", "img:1",
        "org/m", "--revision", SHA, "--host", "0.0.0.0", "--port", "8000",
    ]  # fmt: skip
    assert bench_argv(r, home="/h") == [
        "autobench", "bench", "--base-url", "http://127.0.0.1:8000", "--model", "org/m",
        "--tokenizer", "org/m", "--tokenizer-revision", SHA,  # the served model's own tokenizer
        "--num-prompts", "500", "--concurrency", "8", "--max-tokens", "256",
    ]  # fmt: skip
    data["bench"] = {"client": "vllm", "dataset": {"kind": "jsonl", "path": "~/p.jsonl"}, "max_tokens": 64}
    assert bench_argv(recipe(data), home="/h") == [
        "docker", "exec", "autobench-d", "vllm", "bench", "serve",
        "--backend", "openai", "--base-url", "http://localhost:8000", "--endpoint", "/v1/completions",
        "--model", "org/m", "--served-model-name", "org/m",
        "--dataset-name", "custom", "--dataset-path", "/h/p.jsonl",
        "--num-prompts", "500", "--max-concurrency", "8",
        "--custom-output-len", "64",
        "--seed", "0",
    ]  # fmt: skip


def test_a_random_dataset_without_lengths_uses_vllms_defaults():
    data = full(bench={"dataset": {"kind": "random"}, "sampler": None, "request_rate": None, "warmup": 0})
    argv = bench_argv(recipe(data), home="/h")
    assert argv[argv.index("--random-input-len") + 1] == "1024"
    assert argv[argv.index("--random-output-len") + 1] == "200"  # max_tokens
    assert "--request-rate" not in argv and "--num-warmups" not in argv and "--temperature" not in argv


def test_a_local_model_has_no_revision_and_its_tokenizer_is_the_folder():
    data = {
        "name": "loc",
        "model": {"repo": "/models/m"},
        "container": {"image": "img:1"},
        "bench": {"dataset": {"kind": "sharegpt", "path": "~/sg.json"}},
    }
    r = recipe(data)
    assert serve_argv(r, home="/h")[:5] == ["vllm", "serve", "/models/m", "--host", "0.0.0.0"]
    argv = bench_argv(r, home="/h")
    assert argv[argv.index("--tokenizer") + 1] == "/models/m" and "--tokenizer-revision" not in argv
    assert argv[argv.index("--dataset") + 1] == "/h/sg.json" and "--dataset-kind" not in argv
    assert "--seed" not in argv  # seed 0: the client's default


def test_launch_prefix_command_model_flag_and_setup_steps(tmp_path: Path):
    (tmp_path / "patch.sh").write_text('echo patched >> "$LOG"\n')
    (tmp_path / "moddir").mkdir()
    (tmp_path / "moddir" / "run.sh").write_text('echo "dir $(basename "$PWD")" >> "$LOG"\n')
    data = {
        "name": "l",
        "model": {"repo": "org/m", "revision": SHA},
        "container": {"image": "img:1"},
        "launch": {
            "prefix": ["env", "A=1"],
            "command": ["printf", "%s|"],
            "model_flag": "--model",
            "setup": [
                {"run": 'echo "run step" >> "$LOG"'},
                {"mod": "patch.sh", "name": "the patch"},
                {"mod": "moddir"},
            ],
        },
    }
    r = recipe(data)
    mods = {1: tmp_path / "patch.sh", 2: tmp_path / "moddir"}
    head = ["env", "A=1", "printf", "%s|", "--model", "org/m", "--revision", SHA]
    inside = setup_script(r, mods, in_container=True)
    assert inside.splitlines() == [
        "set -euo pipefail",
        "echo 'autobench: setup step 1' >&2",
        'echo "run step" >> "$LOG"',
        "echo 'autobench: setup the patch' >&2",
        "bash /autobench/mods/1-patch.sh",
        "echo 'autobench: setup moddir' >&2",
        "(cd /autobench/mods/2-moddir && bash ./run.sh)",
        'exec "$@"',
    ]
    assert docker_argv(r, home="/h", mods=mods)[:15] == [
        "docker", "run", "-d", "--name", "autobench-l", "--gpus", "all",
        "-v", f"{tmp_path}/patch.sh:/autobench/mods/1-patch.sh:ro",
        "-v", f"{tmp_path}/moddir:/autobench/mods/2-moddir:ro",
        "--entrypoint", "bash", "img:1", "-c",
    ]  # fmt: skip
    assert docker_argv(r, home="/h", mods=mods)[15:18] == [inside, "autobench-setup", *head[:1]]
    # outside a container the same steps run in order from the mods' own paths, then the server
    argv = serve_argv(r, home="/h", mods=mods)
    assert argv[:2] == ["bash", "-c"] and argv[3:] == ["autobench-setup", *head, "--host", "0.0.0.0", "--port", "8000"]
    log = tmp_path / "log"
    done = subprocess.run(
        argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LOG": str(log)}, timeout=30, check=True
    )
    assert done.stdout == "--model|org/m|--revision|" + SHA + "|--host|0.0.0.0|--port|8000|"
    assert log.read_text() == "run step\npatched\ndir moddir\n"
    assert "autobench: setup the patch" in done.stderr


def test_an_entrypoint_without_setup_replaces_the_images():
    data = {
        "name": "e",
        "model": {"repo": "org/m", "revision": SHA},
        "container": {"image": "img:1"},
        "launch": {"entrypoint": ""},
    }
    assert docker_argv(recipe(data), home="/h")[7:13] == ["--entrypoint", "", "img:1", "vllm", "serve", "org/m"]


def test_speculative_config_json():
    assert speculative_json(recipe(full(speculative=None))) is None
    minimal = full()
    minimal["speculative"] = {"method": "ngram", "options": {"prompt_lookup_max": 4}}
    assert speculative_json(recipe(minimal)) == '{"method":"ngram","prompt_lookup_max":4}'


@pytest.mark.parametrize(
    ("value", "text"), [(900.0, "900"), (0.85, "0.85"), (8, "8"), (True, "true"), (False, "false"), (1e-05, "1e-05")]
)
def test_numbers_are_written_as_a_person_would_type_them(value, text):
    assert num(value) == text


def test_extra_args_are_grouped_a_flag_with_its_values():
    groups = group_args(["--a", "1", "2", "--b", "--c=3", "x", "-d", "4"])
    assert [[w.value for w in g] for g in groups] == [["--a", "1"], ["2"], ["--b"], ["--c=3", "x"], ["-d", "4"]]
    assert group_args([]) == []


def test_a_value_starting_with_a_dash_is_glued_to_its_flag_and_a_bare_dashdash_refused():
    argv = docker_argv(recipe(full(container={"shm_size": "-1", "gpus": None})), home="/h")
    assert "--shm-size=-1" in argv and "--gpus" not in argv
    with pytest.raises(RecipeError) as info:
        docker_argv(recipe(full(container={"shm_size": "--"})), home="/h")
    assert str(info.value) == (
        "the value of --shm-size is '--', which no command can receive as a value "
        "(hint: fix the recipe field that sets --shm-size)"
    )


def test_only_path_values_expand_a_leading_tilde():
    data = full(model={"served_name": "~/not-a-path"}, env={"CACHE": "~/x"})
    argv = docker_argv(recipe(data), home="/h")
    assert argv[argv.index("--served-model-name") + 1] == "~/not-a-path"
    assert "CACHE=~/x" in argv and "/h/.cache/hf:/root/.cache/huggingface" in argv  # a volume is a path


def test_extra_args_group_only_after_a_lone_flag():
    def groups(args: list[str]) -> list[list[str]]:
        return [[w.value for w in g] for g in group_args(args)]

    assert groups(["x", "y", "--a"]) == [["x"], ["y"], ["--a"]]  # a plain word never takes the next one
    assert groups(["--a", "1", "x", "y"]) == [["--a", "1"], ["x"], ["y"]]


def _minimal(**sections: Any) -> Any:
    return recipe(
        {"name": "m", "model": {"repo": "org/m", "revision": SHA}, "container": {"image": "img:1"}, **sections}
    )


@pytest.mark.parametrize("value", ["", "-x"])
def test_every_positional_slot_refuses_an_empty_or_dashed_value_naming_its_key(value):
    base = _minimal(launch={"command": ["serve"]}, bench={"client": "vllm"})
    cases = [
        ("model.repo", lambda r: serve_argv(r), base.model_copy(update={"model": base.model.model_copy(update={"repo": value})})),
        ("container.image", lambda r: docker_argv(r), base.model_copy(update={"container": base.container.model_copy(update={"image": value})})),
        ("container.name", lambda r: bench_argv(r), base.model_copy(update={"container": base.container.model_copy(update={"name": value or "-"})})),
    ]  # fmt: skip
    for key, build, bad in cases:
        with pytest.raises(RecipeError) as info:
            build(bad)
        assert str(info.value) == (
            f"{key}: a value that is empty or starts with '-' cannot stand where a command reads its arguments "
            f"(it would be read as an option) (hint: fix {key} in the recipe)"
        )


def test_the_speculative_config_keeps_non_ascii_text_as_written():
    data = full()
    data["speculative"] = {"method": "ngram", "options": {"note": "café"}}
    assert speculative_json(recipe(data)) == '{"method":"ngram","note":"café"}'


def test_setup_steps_without_hashed_mods_take_a_suffixless_mod_for_a_folder(tmp_path: Path):
    r = _minimal(launch={"setup": [{"run": "true", "name": "warm up"}, {"mod": "patch.sh"}, {"mod": "no-such-moddir"}]})
    steps = [
        "set -euo pipefail",
        "echo 'autobench: setup warm up' >&2",
        "true",
        "echo 'autobench: setup patch.sh' >&2",
        "bash {}patch.sh",
        "echo 'autobench: setup no-such-moddir' >&2",
        "(cd {}no-such-moddir && bash ./run.sh)",
        'exec "$@"',
    ]
    outside = "\n".join(steps).format("", "")
    assert setup_script(r, {}, in_container=False) == outside
    assert serve_argv(r, home="/h")[:4] == ["bash", "-c", outside, "autobench-setup"]  # no mods given
    inside = "\n".join(steps).format("/autobench/mods/1-", "/autobench/mods/2-")
    argv = docker_argv(r, home="/h")
    assert argv[argv.index("-c") + 1] == inside
    # a hashed mod that is a file is run with bash, suffix or not
    (tmp_path / "patch").write_text("true\n")
    r = _minimal(launch={"setup": [{"mod": "patch"}]})
    assert setup_script(r, {0: tmp_path / "patch"}, in_container=True).splitlines()[2] == "bash /autobench/mods/0-patch"


def test_the_entrypoint_is_the_recipes_or_cleared_for_a_custom_command():
    argv = docker_argv(_minimal(launch={"entrypoint": "/opt/start"}), home="/h")
    assert argv[argv.index("--entrypoint") : argv.index("--entrypoint") + 5] == [
        "--entrypoint", "/opt/start", "img:1", "vllm", "serve",
    ]  # fmt: skip
    argv = docker_argv(_minimal(launch={"command": ["python3", "-m", "vllm.entrypoints.openai.api_server"]}), home="/h")
    assert argv[argv.index("--entrypoint") : argv.index("--entrypoint") + 4] == ["--entrypoint", "", "img:1", "python3"]


def test_callers_name_the_container_and_add_flags_after_the_engine_flags():
    from autobench.compile.argv import docker_lines, serve_lines
    from autobench.compile.quoting import Word

    r = _minimal()
    extra = [[Word("--nnodes"), Word("2")]]
    served = [w.value for line in serve_lines(r, extra=extra) for w in line]
    assert served == [
        "vllm",
        "serve",
        "org/m",
        "--revision",
        SHA,
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--nnodes",
        "2",
    ]
    docker = [w.value for line in docker_lines(r, name="node-1", extra=extra, detach=False) for w in line]
    assert docker == [
        "docker", "run", "--name", "node-1", "--gpus", "all", "img:1", "org/m",
        "--revision", SHA, "--host", "0.0.0.0", "--port", "8000", "--nnodes", "2",
    ]  # fmt: skip


def test_slo_limits_reach_both_clients_in_their_own_syntax():
    slo = {"ttft": 500, "tpot": 50.5}
    vllm = bench_argv(_minimal(bench={"client": "vllm", "slo": slo}), home="/h")
    assert vllm[-3:] == ["--goodput", "ttft:500", "tpot:50.5"]
    own = bench_argv(_minimal(bench={"slo": slo}), home="/h")
    assert own[-2:] == ["--slo", "ttft=500,tpot=50.5"]


def test_autobench_bench_gets_a_prompt_length_only_for_a_random_dataset_that_sets_one():
    random = bench_argv(_minimal(bench={"dataset": {"kind": "random"}}), home="/h")
    assert "--random-input-len" not in random and random[random.index("--dataset-kind") + 1] == "random"
    shared = bench_argv(
        _minimal(bench={"dataset": {"kind": "sharegpt", "path": "sg.json", "input_len": 64}}), home="/h"
    )
    assert "--random-input-len" not in shared
    sized = bench_argv(_minimal(bench={"dataset": {"kind": "random", "input_len": 64}}), home="/h")
    assert sized[sized.index("--random-input-len") + 1] == "64"


def test_tilde_paths_expand_against_the_users_home_by_default(monkeypatch):
    monkeypatch.setenv("HOME", "/home/someone")
    argv = docker_argv(_minimal(container={"image": "img:1", "volumes": ["~/.cache/hf:/root/.cache/huggingface"]}))
    assert argv[argv.index("-v") + 1] == "/home/someone/.cache/hf:/root/.cache/huggingface"


def test_an_embedding_bench_with_the_vllm_client_is_benched_on_embeddings() -> None:
    """Issue #31: a pooling model was benched on /v1/completions (the backend was always openai)."""
    data = full(bench={"client": "vllm", "endpoint": "embeddings", "dataset": {"kind": "random"}})
    argv = bench_argv(recipe(data))
    assert argv[argv.index("--backend") + 1] == "openai-embeddings"
    assert argv[argv.index("--endpoint") + 1] == "/v1/embeddings"
    chat = bench_argv(recipe(full(bench={"client": "vllm", "endpoint": "chat", "dataset": {"kind": "random"}})))
    assert (chat[chat.index("--backend") + 1], chat[chat.index("--endpoint") + 1]) == (
        "openai-chat",
        "/v1/chat/completions",
    )


def test_bench_workers_reach_the_autobench_client_and_are_refused_where_they_cannot_run():
    """Issue #34: bench.workers is --workers of autobench bench; one is the default, not written."""
    argv = bench_argv(_minimal(bench={"workers": 2, "concurrency": 8}), home="/h")
    assert argv[argv.index("--workers") + 1] == "2" and argv.index("--workers") == argv.index("--concurrency") + 2
    assert "--workers" not in bench_argv(_minimal(bench={"concurrency": 8}), home="/h")
    for bench, words in [
        ({"workers": 2, "client": "vllm"}, "2 load generators need client autobench"),
        ({"workers": 4, "concurrency": [2, 8]}, "4 load generators for concurrency 2"),
        ({"workers": 65, "concurrency": 100}, "less than or equal to 64"),
        ({"workers": 2, "dataset": {"multi_turn": True}}, "a conversation's turns run in one load generator"),
    ]:
        with pytest.raises(Exception, match=words):
            _minimal(bench=bench)


def test_bench_workers_left_at_one_keep_a_recipes_digest():
    from autobench.recipe.schema import trim_later_defaults

    data = _minimal(bench={"concurrency": 8}).model_dump(mode="json")
    assert "workers" not in trim_later_defaults(data)["bench"]
    two = _minimal(bench={"concurrency": 8, "workers": 2}).model_dump(mode="json")
    assert trim_later_defaults(two)["bench"]["workers"] == 2

"""`autobench import`: each source started as its own launcher starts it (issue 28, classes 1-6).

The files are the corpus's (tests/recipe/import_corpus, INDEX.md names the public source each is
modelled on) or small texts written here in the shape of a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.cli import main
from autobench.cli.import_cmds import check_imported
from autobench.compile.argv import docker_argv
from autobench.errors import RecipeError
from autobench.recipe.importer import convert
from autobench.recipe.loader import load_recipe

CORPUS = Path(__file__).resolve().parent / "import_corpus"


def _one(name: str, **options):
    (imported,) = convert(CORPUS / name, **options)
    return imported


def _recipe(imported, tmp_path):
    written, _ = check_imported(imported, tmp_path)
    return load_recipe(written).recipe


def _write(tmp_path, text, name="peer.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- class 1: the launch


def test_eugr_runs_its_command_with_the_entrypoint_cleared_and_the_hf_cache_mounted(tmp_path):
    recipe = _recipe(_one("eugr-qwen3-8b-solo.yaml"), tmp_path)
    argv = docker_argv(recipe, home="/h")
    after = argv[argv.index(recipe.container.image) + 1 :]
    assert argv[argv.index("--entrypoint") + 1] == "" and after[:3] == ["vllm", "serve", recipe.model.repo]
    assert "/h/.cache/huggingface:/root/.cache/huggingface" in argv  # launch-cluster.sh's mount


def test_an_env_assignment_before_the_command_is_env_not_a_launch_prefix(tmp_path):
    imported = _one("eugr-cluster-4x-dotted.yaml")
    assert imported.data["env"]["VLLM_USE_FLASHINFER_MOE_FP4"] == "1"
    assert "prefix" not in imported.data["launch"]
    _recipe(imported, tmp_path)  # validates and compiles every node


@pytest.mark.parametrize(
    ("command", "engine"),
    [
        ("sglang serve --model-path a/b --tp 2", "SGLang"),
        ("python3 -m sglang.launch_server --model-path a/b", "SGLang"),
        ("uvicorn server:app --port 8000", "uvicorn"),
        ("llama-server -hf a/b:Q4_K_M", "llama.cpp"),
        ("atlas serve a/b", "Atlas"),
    ],
)
def test_a_command_that_is_not_vllm_is_refused_with_the_engine_named(tmp_path, command, engine):
    path = _write(tmp_path, f"recipe_version: '2'\nmodel: a/b\ncontainer: c:1\ncommand: {command}\n")
    with pytest.raises(RecipeError, match=f"the command runs .*{engine}.*, not vLLM") as info:
        convert(path)
    assert str(info.value).startswith(f"{path}:4:")


def test_a_sparkrun_runtime_of_another_engine_is_refused_by_name(tmp_path):
    path = _write(tmp_path, "recipe_version: '2'\nmodel: a/b\nruntime: sglang\ncommand: sglang serve a/b\n")
    with pytest.raises(RecipeError, match="runtime sglang is not vLLM"):
        convert(path)


def test_shell_steps_before_the_serve_command_become_setup_steps(tmp_path):
    imported = _one("k8s-deployment-shell.yaml")
    launch = imported.data["launch"]
    assert launch["setup"] == [{"run": "pip install --no-cache-dir mistral-common==1.8.5", "name": "command step 1"}]
    assert imported.data["model"]["repo"] == "mistralai/Mistral-Small-3.2-24B-Instruct-2506"  # $(MODEL_ID)
    assert imported.data["secrets"] == ["HF_TOKEN"]
    assert _recipe(imported, tmp_path).topology.gpus_per_node == 1


# --------------------------------------------------------------------------- class 2: topology


def test_topology_follows_each_sources_rule(tmp_path):
    eugr = _one("eugr-cluster-4x-dotted.yaml").data["topology"]
    assert (eugr["nodes"], eugr["gpus_per_node"], eugr["executor"]) == (4, 1, "native")
    solo = _one("eugr-solo-only.yaml").data
    assert solo["engine"]["tensor_parallel_size"] == 1 and solo.get("topology", {}).get("nodes", 1) == 1
    spark = _one("sparkrun-executor-config.yaml").data["topology"]
    assert (spark["nodes"], spark["gpus_per_node"], spark["executor"]) == (2, 1, "ray")
    lws = _one("k8s-lws-ray.yaml").data["topology"]
    assert (lws["nodes"], lws["gpus_per_node"], lws["executor"]) == (2, 8, "ray")
    moe = _one("vllmr-modes.yaml", hardware="h100").data["engine"]
    assert moe["tensor_parallel_size"] == 8 and moe["enable_expert_parallel"] is True  # single_node_tep


def test_eugr_without_cluster_only_runs_on_tp_sparks_or_solo_with_tp_1_when_told(tmp_path):
    path = _write(
        tmp_path,
        "recipe_version: '1'\nname: x\ncontainer: c\ndefaults: {tensor_parallel: 2}\ncommand: vllm serve a/b -tp {tensor_parallel}\n",
    )
    (cluster,) = convert(path)
    assert cluster.data["topology"]["nodes"] == 2 and "eugr runs it solo" in "\n".join(cluster.notes)
    (solo,) = convert(path, nodes=1)  # run-recipe.py --solo: tensor_parallel 1
    assert solo.data["engine"]["tensor_parallel_size"] == 1 and "nodes" not in solo.data["topology"]


def test_an_unknown_count_is_a_refusal_naming_the_option(tmp_path, capsys):
    path = _write(
        tmp_path, "recipe_version: '2'\nmodel: a/b\nruntime: vllm\ncontainer: c:1\ncommand: vllm serve {model}\n"
    )
    with pytest.raises(RecipeError, match="node count is not in the file") as info:
        convert(path)
    assert "--nodes" in str(info.value)
    assert convert(path, nodes=1)[0].data["model"]["repo"] == "a/b"
    with pytest.raises(RecipeError, match="sizes the engine by your hardware") as info:
        convert(CORPUS / "vllmr-modes.yaml")
    assert "--gpus-per-node" in str(info.value)
    out = tmp_path / "o"
    assert main(["import", str(path), "--nodes", "1", "-o", str(out)]) == 0


VLLMR = """model:
  model_id: a/b
  min_vllm_version: "0.21.0"
  base_args: ["--tensor-parallel-size", "2"]
{extra}variants:
  default:
    precision: bf16
    vram_minimum_gb: {vram}
{variant}"""


def _vllmr(tmp_path, vram=40, extra="", variant="", name="peer.yaml"):
    """A vllm-project/recipes file (models/<org>/<repo>.yaml shape) under the corpus's taxonomy.yaml."""
    folder = tmp_path / "models" / "org"
    folder.mkdir(parents=True, exist_ok=True)
    (tmp_path / "taxonomy.yaml").write_text((CORPUS / "taxonomy.yaml").read_text())
    return _write(folder, VLLMR.format(vram=vram, extra=extra, variant=variant), name)


def test_vllm_recipes_tp_is_the_sites_auto_fit_to_the_hardwares_memory(tmp_path):
    engine = convert(_vllmr(tmp_path, vram=80), hardware="h100")[0].data["engine"]
    assert engine["tensor_parallel_size"] == 1  # 80 GB fit one H100 (640/8): the strategy's -tp wins base_args'
    assert convert(_vllmr(tmp_path, vram=81), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 8
    assert convert(_vllmr(tmp_path, vram=150), hardware="b200")[0].data["engine"]["tensor_parallel_size"] == 1
    data = convert(_vllmr(tmp_path, vram=81), hardware="h100", gpus_per_node=4)[0].data
    assert data["topology"] == {"gpus_per_node": 4} and data["engine"]["tensor_parallel_size"] == 4
    with pytest.raises(RecipeError, match="fits TP to the GPU's memory") as info:
        convert(_vllmr(tmp_path, vram=81), gpus_per_node=8)
    assert "--hardware" in str(info.value)
    with pytest.raises(RecipeError, match="not a profile of") as info:
        convert(_vllmr(tmp_path), hardware="mi999")
    assert "h100, b200, rtx4090, cpu" in str(info.value)


def test_vllm_recipes_tp_declared_by_variant_map_or_strategy_override(tmp_path):
    tp_map = "    tp: {hopper: 2, blackwell: 4}\n"
    assert convert(_vllmr(tmp_path, variant=tp_map), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 2
    assert convert(_vllmr(tmp_path, variant=tp_map), hardware="b200")[0].data["engine"]["tensor_parallel_size"] == 4
    # no key for this GPU: the site goes on to the strategy override, then the memory fit
    fit = convert(_vllmr(tmp_path, variant=tp_map, vram=90), hardware="rtx4090")[0].data["engine"]
    assert fit["tensor_parallel_size"] == 1  # a one-GPU node: its GPUs
    assert convert(_vllmr(tmp_path, vram="true"), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 8
    assert convert(_vllmr(tmp_path, vram="'40'"), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 8
    capped = convert(_vllmr(tmp_path, variant="    tp: 4\n"), gpus_per_node=2)[0].data["engine"]
    assert capped["tensor_parallel_size"] == 2  # the declared tp capped at the GPUs, no profile needed
    with pytest.raises(RecipeError, match="depends on the GPU") as info:
        convert(_vllmr(tmp_path, variant="    tp: {h100: 2}\n"), gpus_per_node=8)
    assert "--hardware" in str(info.value)
    declared = "    tp: 4\n"
    assert convert(_vllmr(tmp_path, variant=declared))[0].data["engine"]["tensor_parallel_size"] == 4  # no GPUs said
    cpu = convert(_vllmr(tmp_path, variant=declared), hardware="cpu")[0].data["engine"]
    assert cpu["tensor_parallel_size"] == 4  # a CPU profile's gpu_count is no limit (resolveSingleNodeTp)
    over = "strategy_overrides:\n  single_node_tp: {tp: 16}\n"
    assert convert(_vllmr(tmp_path, extra=over), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 8


def test_vllm_recipes_strategy_is_the_sites_recommendation(tmp_path):
    dep = "default_strategy: single_node_dep\ncompatible_strategies: [single_node_tp, single_node_dep]\n"
    engine = convert(_vllmr(tmp_path, extra=dep), hardware="h100")[0].data["engine"]
    assert engine["data_parallel_size"] == 8 and engine["enable_expert_parallel"] is True
    granted = (
        "default_strategy: single_node_dep\ncompatible_strategies: [single_node_tp]\n"
        "strategy_hardware:\n  single_node_dep: {h100: supported}\n  single_node_tep: {h100: unsupported}\n"
        "  other: unsupported\n"
    )
    engine = convert(_vllmr(tmp_path, extra=granted), hardware="h100")[0].data["engine"]
    assert engine["data_parallel_size"] == 8  # a strategy_hardware grant offers it (effectiveCompatibleStrategies)
    opted_out = granted.replace("single_node_dep: {h100: supported}", "single_node_dep: {h100: unsupported}")
    engine = convert(_vllmr(tmp_path, extra=opted_out), hardware="h100")[0].data["engine"]
    assert engine == {"tensor_parallel_size": 1}  # not offered: single_node_tp, 40 GB fit one H100
    tp_later = "compatible_strategies: [single_node_tep, single_node_tp]\n"  # TP first when offered at all
    assert convert(_vllmr(tmp_path, extra=tp_later), hardware="h100")[0].data["engine"] == {"tensor_parallel_size": 1}
    unlisted = "default_strategy: single_node_dep\ncompatible_strategies: [single_node_tep]\n"
    engine = convert(_vllmr(tmp_path, extra=unlisted), hardware="h100")[0].data["engine"]
    assert engine["tensor_parallel_size"] == 8 and engine["enable_expert_parallel"] is True  # the first offered


def test_vllm_recipes_variant_sized_by_its_own_memory(tmp_path):
    variant = "  fp8:\n    precision: fp8\n    model_id: a/b-fp8\n    vram_minimum_gb: 50\n"
    (imported,) = convert(_vllmr(tmp_path, vram=120, variant=variant), hardware="h100")
    assert imported.data["engine"]["tensor_parallel_size"] == 8
    assert imported.data["variants"]["fp8"]["engine"]["tensor_parallel_size"] == 1


def test_vllm_recipes_omni_runs_vllm_serve_omni_without_strategy(tmp_path):
    omni = (
        "omni:\n  port: 8091\n  tasks:\n    - id: t2i\n      model_id: a/b-t2i\n      extra_args: [--cfg-parallel-size, '2']\n"
        "    - id: i2v\n"
    )
    (imported,) = convert(_vllmr(tmp_path, vram=200, extra=omni), hardware="h100")
    data = imported.data
    assert data["model"]["repo"] == "a/b-t2i" and data["engine"]["tensor_parallel_size"] == 2  # base_args'
    assert data["engine"]["extra_args"] == ["--cfg-parallel-size", "2", "--omni"] and data["engine"]["port"] == 8091
    assert any("not carried: omni task i2v" in n for n in imported.notes)


# --------------------------------------------------------------------------- class 3: dotted flags


def test_dotted_flags_are_carried_and_round_trip(tmp_path):
    imported = _one("eugr-cluster-4x-dotted.yaml")
    _, texts = check_imported(imported, tmp_path)
    assert imported.data["engine"]["extra_args"] == [
        *("-cc.cudagraph_mode", "FULL_DECODE_ONLY", "-cc.mode", "3"),
        *("--default-chat-template-kwargs.enable_thinking", "false"),
    ]
    assert any("-cc.cudagraph_mode FULL_DECODE_ONLY" in t for t in texts)  # the nodes' serve lines
    assert "--compilation-config.cudagraph_mode" in imported.flags  # the name vLLM reads, for the round trip


# --------------------------------------------------------------------------- class 4: structure


def test_modes_default_modes_and_strategy_are_read_and_the_rest_noted_with_lines():
    imported = _one("vllmr-modes.yaml", hardware="h100")
    data = imported.data
    assert data["speculative"] == {"method": "mtp", "num_speculative_tokens": 2}  # spec_decoding's default_mode
    assert data["variants"]["fp8"]["engine"]["quantization"] == "fp8"
    assert "model" not in data["variants"]["fp8"]  # a variant without model_id keeps the base's
    notes = "\n".join(imported.notes)
    for line, key in (
        (33, "compatible_strategies"),
        (34, "hardware_overrides"),
        (37, "guide"),
        (27, "vram_minimum_gb"),
    ):
        assert f"{line}: not carried: {key}" in notes


def test_sparkrun_executor_config_becomes_docker_flags(tmp_path):
    c = _recipe(_one("sparkrun-executor-config.yaml"), tmp_path).container
    assert c.shm_size == "32gb"
    assert {"--user=1000:1000", "--cap-add=SYS_NICE", "--ulimit=memlock=-1"} <= set(c.extra_args)


# --------------------------------------------------------------------------- class 5: where files live


def test_eugr_mods_live_at_the_repository_root_and_are_copied_beside_the_recipe(tmp_path):
    repo = tmp_path / "spark-vllm-docker"
    (repo / "mods" / "fix-chat").mkdir(parents=True)
    (repo / "mods" / "fix-chat" / "run.sh").write_text("echo patched\n")
    (repo / "run-recipe.py").write_text("# marks eugr's repository root (mods are relative to it)\n")
    nested = repo / "recipes" / "4x-spark-cluster"
    nested.mkdir(parents=True)
    recipe = nested / "r.yaml"
    recipe.write_text(
        "recipe_version: '1'\nname: r\ncontainer: vllm-node\nmods: [mods/fix-chat]\ncommand: vllm serve a/b\n"
    )
    out = tmp_path / "out"
    assert main(["import", str(recipe), "-o", str(out)]) == 0
    assert (out / "mods" / "fix-chat" / "run.sh").read_text() == "echo patched\n"
    step = load_recipe(out / "r.yaml").recipe.launch.setup[0]
    assert step.mod == "mods/fix-chat" and step.sha256.startswith("sha256:")


# --------------------------------------------------------------------------- class 6: whole files


def test_inferencex_is_imported_entry_by_entry():
    results = convert(CORPUS / "inferencex-mixed-disagg.yaml")
    assert [r.name for r in results] == ["gptoss-fp4-b200-vllm", "kimi-fp4-b200-dynamo-vllm"]
    assert "skipped: dsr1-fp8-h200-sglang runs sglang, not vLLM" in "\n".join(results[0].notes)
    gptoss = results[0].data
    assert gptoss["bench"]["concurrency"] == [4, 16, 64]  # conc-list: a grid
    roles = results[1].data["roles"]
    assert (
        roles["prefill"]["engine"]["data_parallel_size"] == 1 and roles["decode"]["engine"]["tensor_parallel_size"] == 4
    )
    assert '"kv_role":"kv_consumer"' in " ".join(roles["decode"]["engine"]["extra_args+"])


def test_a_flat_vllm_config_without_a_model_takes_model(tmp_path):
    path = _write(tmp_path, "tensor_parallel_size: 2\nmax_model_len: 4096\n")
    with pytest.raises(RecipeError, match="no model"):
        convert(path, "vllm-config")
    (imported,) = convert(path, "vllm-config", model="org/m", image="vllm/vllm-openai:v0.24.0")
    assert imported.data["model"]["repo"] == "org/m" and imported.data["engine"]["tensor_parallel_size"] == 2


# --------------------------------------------------------------------------- deployment sources


def test_compose_uses_the_images_entrypoint_and_fills_defaults(tmp_path):
    (imported,) = convert(CORPUS / "compose-vllm-openai.yaml")
    data = imported.data
    assert data["model"]["repo"] == "Qwen/Qwen3-8B" and data["engine"]["max_model_len"] == 32768
    assert "launch" not in data  # vllm/vllm-openai's own entrypoint is vllm serve
    assert data["container"]["gpus"] == "2" and data["secrets"] == ["HF_TOKEN"]
    assert data["env"] == {"VLLM_LOGGING_LEVEL": "INFO"}
    assert "skipped: service webui does not run vLLM" in "\n".join(imported.notes)
    _recipe(imported, tmp_path)


def test_kubernetes_host_directory_volumes_are_mounted_where_the_pod_reads_them(tmp_path):
    (imported,) = convert(CORPUS / "k8s-hostpath-model.yaml")
    recipe = _recipe(imported, tmp_path)  # the model directory is mounted: no AB075
    assert recipe.model.repo == "/models/coder-7b" and recipe.container.volumes == ["/root/models:/models:ro"]
    assert recipe.launch.setup[0].run == "ulimit -n 65536"  # `bash -lc -- SCRIPT`: the script, not `--`
    assert "--distributed-executor-backend" not in recipe.engine.extra_args
    notes = "\n".join(imported.notes)
    assert "not carried: --distributed-executor-backend ray on one node" in notes
    assert "29: not carried: volume dshm at /dev/shm (emptyDir: not a host directory)" in notes
    assert "13: not carried: init container init-model" in notes


def test_kubernetes_volume_shapes_are_read_or_refused_at_their_line(tmp_path):
    base = (CORPUS / "k8s-hostpath-model.yaml").read_text()
    odd = base.replace("      volumes:\n", "      volumes:\n        - just-a-string\n        - hostPath: {path: /x}\n")
    odd = odd.replace(
        "            - mountPath: /dev/shm\n", "            - mountPath: /data\n            - mountPath: /dev/shm\n"
    )
    (imported,) = convert(_write(tmp_path, odd))  # a volume that is not a named mapping names nothing
    assert imported.data["container"]["volumes"] == ["/root/models:/models:ro"]
    assert any("volume null at /data (unknown volume" in n for n in imported.notes)  # no name: no volume
    rw = base.replace("              readOnly: true\n", "")
    assert convert(_write(tmp_path, rw))[0].data["container"]["volumes"] == ["/root/models:/models"]
    for host, target in (("/root/m:odels", "/models"), ("/root/models", "/mo:dels")):
        colon = base.replace("path: /root/models", f"path: {host}").replace(
            "- mountPath: /models\n              name: model-hostpath\n              readOnly",
            f"- mountPath: {target}\n              name: model-hostpath\n              readOnly",
        )
        assert "volumes" not in convert(_write(tmp_path, colon))[0].data["container"]  # docker splits at ':'
    sub = base.replace("              readOnly: true\n", "              subPath: coder\n")
    (imported,) = convert(_write(tmp_path, sub))
    assert "volumes" not in imported.data["container"]
    assert any("not carried: volume mount /models (subPath or ':')" in n for n in imported.notes)
    relative = base.replace("path: /root/models", "path: root/models")
    (imported,) = convert(_write(tmp_path, relative))
    assert any("volume model-hostpath at /models (hostPath: not a host directory)" in n for n in imported.notes)
    (imported,) = convert(
        _write(
            tmp_path,
            base.replace(
                "- mountPath: /models\n              name: model-hostpath\n              readOnly",
                "- mountPath: models\n              name: model-hostpath\n              readOnly",
            ),
        )
    )
    assert "volumes" not in imported.data["container"]  # a relative mountPath is no container path
    missing = base.replace(
        "              name: model-hostpath\n              readOnly",
        "              name: nowhere\n              readOnly",
    )
    (imported,) = convert(_write(tmp_path, missing))
    assert any("volume nowhere at /models (unknown volume: not a host directory)" in n for n in imported.notes)
    bad = base.replace("            - mountPath: /dev/shm\n              name: dshm\n", "            - /dev/shm\n")
    with pytest.raises(RecipeError, match="volumeMounts: each must be a mapping") as info:
        convert(_write(tmp_path, bad))
    assert "write name: and mountPath:" in str(info.value)
    text = base.replace(
        "          volumeMounts:\n            - mountPath: /models\n              name: model-hostpath\n"
        "              readOnly: true\n            - mountPath: /dev/shm\n              name: dshm\n",
        "          volumeMounts: /models\n",
    )
    with pytest.raises(RecipeError, match=r"volumeMounts: must be a list"):
        convert(_write(tmp_path, text))


def test_production_stack_values_go_through_the_charts_flags(tmp_path):
    recipe = _recipe(_one("helm-production-stack.yaml"), tmp_path)
    assert recipe.model.repo == "meta-llama/Llama-3.1-8B-Instruct" and recipe.engine.max_model_len == 16384
    assert recipe.engine.enable_prefix_caching is True and recipe.engine.dtype == "bfloat16"
    assert "--disable-log-requests" in recipe.engine.extra_args and recipe.secrets == ["HF_TOKEN"]


def test_srt_slurm_roles_each_with_its_own_environment(tmp_path):
    data = _one("srt-slurm-disagg.yaml").data
    assert data["roles"]["prefill"]["engine"]["tensor_parallel_size"] == 2
    assert data["roles"]["decode"]["engine"]["tensor_parallel_size"] == 4
    assert data["roles"]["prefill"]["env"] == {"PYTHONUNBUFFERED": "1"} and "env" not in data["roles"]["decode"]
    assert "env" not in data  # a role's environment is not every role's
    recipe = load_recipe(check_imported(_one("srt-slurm-alias.yaml"), tmp_path)[0], "decode").recipe
    assert recipe.env == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"}


@pytest.fixture
def _no_srtslurm_config(monkeypatch):
    monkeypatch.delenv("SRTSLURM_CONFIG", raising=False)


def _srt(tmp_path, path_line, served="", name="recipe.yaml"):
    text = (CORPUS / "srt-slurm-disagg.yaml").read_text().replace("path: Qwen/Qwen3-32B", path_line)
    if served:
        text = text.replace(
            "      tensor-parallel-size:", f"      served-model-name: {served}\n      tensor-parallel-size:"
        )
    return _write(tmp_path, text, name)


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_alias_is_the_hub_repo_its_served_model_name_names():
    (imported,) = convert(CORPUS / "srt-slurm-alias.yaml")
    assert imported.data["model"]["repo"] == "nvidia/Kimi-K2-NVFP4"
    assert any("6: model.path kimi-k2-nvfp4 is an alias" in n and "served-model-name" in n for n in imported.notes)


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_alias_without_a_name_for_the_model_is_refused_naming_model(tmp_path):
    with pytest.raises(RecipeError, match="alias of the cluster's srtslurm.yaml model_paths") as info:
        convert(_srt(tmp_path, "path: qwen3-32b-fp8"))
    assert "neither identity.model.repo nor a served-model-name names the model" in str(info.value)
    assert "--model" in str(info.value)
    path = _srt(tmp_path, "path: qwen3-32b-fp8", served="Qwen/Qwen3-32B-FP8")
    text = path.read_text().replace("served-model-name: Qwen/Qwen3-32B-FP8", "served-model-name: other/x", 1)
    with pytest.raises(RecipeError, match="its roles serve different names"):
        convert(_write(tmp_path, text))
    assert convert(path, model="a/b")[0].data["model"]["repo"] == "a/b"
    with pytest.raises(RecipeError, match="its served-model-name qwen3-fp8 is not a Hub repo id"):
        convert(_srt(tmp_path, "path: qwen3-32b-fp8", served="qwen3-fp8"))


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_alias_is_the_hub_repo_identity_declares(tmp_path):
    (imported,) = convert(CORPUS / "srt-slurm-identity.yaml")
    data = imported.data
    assert data["model"] == {"repo": "Qwen/Qwen3-30B-A3B-FP8", "revision": "0123456789abcdef0123456789abcdef01234567"}
    assert any(
        n.startswith("7: model.path qwen3-moe-fp8 is an alias") and "identity.model.repo declares" in n
        for n in imported.notes
    )
    assert "16: not carried: identity.frameworks (versions srtctl checks in the running image)" in imported.notes
    assert not any("not carried: identity.container" in n or "not carried: identity.model" in n for n in imported.notes)
    assert data["meta"]["tags"] == ["srt-slurm"]
    # every worker: its role's environment, then the recipe's top-level environment over it
    roles = data["roles"]
    assert roles["prefill"]["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "7200", "PYTHONHASHSEED": "0"}
    assert roles["decode"]["env"] == {
        "VLLM_ENGINE_READY_TIMEOUT_S": "7200",
        "NCCL_CUMEM_ENABLE": "1",
        "PYTHONHASHSEED": "0",
    }
    decode = load_recipe(check_imported(imported, tmp_path)[0], "decode").recipe
    assert decode.model.revision == "0123456789abcdef0123456789abcdef01234567" and decode.env["PYTHONHASHSEED"] == "0"


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_identity_carried_only_where_it_is_the_served_checkpoint(tmp_path):
    base = (CORPUS / "srt-slurm-identity.yaml").read_text()
    # a served-model-name is second to identity (srtctl verifies the checkpoint against identity)
    text = base.replace(
        "      tensor-parallel-size: 2\n", "      tensor-parallel-size: 2\n      served-model-name: other/x\n"
    )
    assert convert(_write(tmp_path, text))[0].data["model"]["repo"] == "Qwen/Qwen3-30B-A3B-FP8"
    # hf: ids are downloaded by vLLM at the default branch: the declared revision is noted
    (imported,) = convert(_write(tmp_path, base.replace('path: "qwen3-moe-fp8"', 'path: "hf:Qwen/Qwen3-30B-A3B-FP8"')))
    assert imported.data["model"] == {"repo": "Qwen/Qwen3-30B-A3B-FP8"}
    assert "13: not carried: identity.model.revision (vLLM downloads the hf: id's default branch)" in imported.notes
    text = base.replace('path: "qwen3-moe-fp8"', 'path: " hf:Qwen/Qwen3-30B-A3B-FP8"')
    assert "revision" not in convert(_write(tmp_path, text))[0].data["model"]
    # an empty revision declares nothing
    text = base.replace('revision: "0123456789abcdef0123456789abcdef01234567"', 'revision: " "')
    (imported,) = convert(_write(tmp_path, text))
    assert "revision" not in imported.data["model"] and not any("revision" in n for n in imported.notes)
    with pytest.raises(RecipeError, match=r":10:11: identity: must be a mapping, not a string"):
        convert(_write(tmp_path, base.replace("identity:\n  model:", "identity: x\nidentity2:\n  model:")))
    # identity without a repo or a revision declares neither
    text = base.replace('    repo: "Qwen/Qwen3-30B-A3B-FP8"\n', "").replace('path: "qwen3-moe-fp8"', 'path: "a/b"')
    (imported,) = convert(_write(tmp_path, text))
    assert imported.data["model"] == {"repo": "a/b"}
    assert "12: not carried: identity.model.revision (of another model)" in imported.notes
    assert not any("identity.model.repo" in n for n in imported.notes)
    text = base.replace('    revision: "0123456789abcdef0123456789abcdef01234567"\n', "")
    (imported,) = convert(_write(tmp_path, text))
    assert imported.data["model"] == {"repo": "Qwen/Qwen3-30B-A3B-FP8"} and not any(
        "revision" in n for n in imported.notes
    )
    # an hf: id of another model than the declared one
    text = base.replace('path: "qwen3-moe-fp8"', 'path: "hf:Qwen/Qwen3-8B"')
    assert "13: not carried: identity.model.revision (of another model)" in convert(_write(tmp_path, text))[0].notes
    # the launched image recorded again, with a digest: the digest is named
    text = base.replace(
        '    image: "vllm/vllm-openai:v0.21.0"\n  frameworks',
        '    image: "vllm/vllm-openai:v0.21.0"\n    digest: x\n  frameworks',
    )
    (imported,) = convert(_write(tmp_path, text))
    assert any(n.startswith("16: not carried: identity.container.digest") for n in imported.notes)
    assert not any("identity.container.image" in n for n in imported.notes)
    # a directory named like the repo holds the declared revision: carried
    (imported,) = convert(_write(tmp_path, base.replace('path: "qwen3-moe-fp8"', 'path: "Qwen/Qwen3-30B-A3B-FP8"')))
    assert imported.data["model"]["revision"] == "0123456789abcdef0123456789abcdef01234567"
    # --model names another model: identity's repo and revision are noted, not carried
    (imported,) = convert(CORPUS / "srt-slurm-identity.yaml", model="a/b")
    assert imported.data["model"] == {"repo": "a/b"}
    assert "12: not carried: identity.model.repo Qwen/Qwen3-30B-A3B-FP8 (the recipe serves a/b)" in imported.notes
    assert "13: not carried: identity.model.revision (of another model)" in imported.notes
    # a short sha is not pinned as written; another image and unknown keys are named
    text = base.replace('revision: "0123456789abcdef0123456789abcdef01234567"', 'revision: "0123456"')
    text = text.replace('    image: "vllm/vllm-openai:v0.21.0"', '    image: "vllm/vllm-openai:v0.22.0"\n    digest: x')
    text = text.replace("  frameworks:", "  notes: x\n  frameworks:").replace(
        '    revision: "0123456"', '    revision: "0123456"\n    size: 3'
    )
    (imported,) = convert(_write(tmp_path, text))
    assert "revision" not in imported.data["model"]
    assert "13: not carried: identity.model.revision (not a full 40-hex commit sha)" in imported.notes
    assert "14: not carried: identity.model.size (not a key of the srt-slurm format)" in imported.notes
    assert any(n.startswith("16: not carried: identity.container.image (recorded for") for n in imported.notes)
    assert any(n.startswith("17: not carried: identity.container.digest (recorded for") for n in imported.notes)
    assert "18: not carried: identity.notes (not a key of the srt-slurm format)" in imported.notes
    with pytest.raises(
        RecipeError, match=r"12:\d+.*identity.model.repo qwen3 is not a Hub repo id \(hint: write it as owner/name\)"
    ):
        convert(_write(tmp_path, base.replace('repo: "Qwen/Qwen3-30B-A3B-FP8"', 'repo: "qwen3"')))
    with pytest.raises(RecipeError, match=r"identity.model: must be a mapping"):
        convert(_write(tmp_path, base.replace("  model:\n    repo:", "  model: x\n  m:\n    repo:")))
    # an empty repo declares nothing: the alias is refused naming --model
    with pytest.raises(RecipeError, match="neither identity.model.repo nor a served-model-name"):
        convert(_write(tmp_path, base.replace('repo: "Qwen/Qwen3-30B-A3B-FP8"', 'repo: " "')))


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_top_level_environment_in_an_aggregated_recipe(tmp_path):
    text = (CORPUS / "srt-slurm-alias.yaml").read_text()
    text = text.replace("    prefill:\n", "    aggregated:\n").split("    decode:\n      served")[0]
    text = text.replace("decode_environment:", "aggregated_environment:")
    text = text.replace(
        "model:\n  path:",
        'environment:\n  VLLM_ENGINE_READY_TIMEOUT_S: "60"\n  ETCD_LEASE_TTL: "7200"\nmodel:\n  path:',
    )
    (imported,) = convert(_write(tmp_path, text))
    assert imported.data["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "60", "ETCD_LEASE_TTL": "7200"}


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_yaml_that_does_not_read_is_passed_over(tmp_path):
    (tmp_path / "srtslurm.yaml").write_text("model_paths: [\n")
    (tmp_path / "r").mkdir()
    big = "model_paths:\n  kimi-k2-nvfp4: hf:x/y\n" + "# x\n" * 300_000  # over 1 MiB: not read
    (tmp_path / "r" / "srtslurm.yaml").write_text(big)
    path = _write(tmp_path / "r", (CORPUS / "srt-slurm-alias.yaml").read_text())
    (imported,) = convert(path)  # neither is read: the roles' served-model-name names the model
    assert imported.data["model"]["repo"] == "nvidia/Kimi-K2-NVFP4"
    assert not any("resolved by" in n for n in imported.notes)


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_served_model_name_written_with_underscores(tmp_path):
    text = (CORPUS / "srt-slurm-alias.yaml").read_text().replace("served-model-name:", "served_model_name:")
    assert convert(_write(tmp_path, text))[0].data["model"]["repo"] == "nvidia/Kimi-K2-NVFP4"


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_hf_prefix_is_the_hub_id(tmp_path):
    (imported,) = convert(_srt(tmp_path, "path: hf:Qwen/Qwen3-0.6B"))
    assert imported.data["model"]["repo"] == "Qwen/Qwen3-0.6B"


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_alias_resolved_by_the_srtslurm_yaml_above_the_recipe(tmp_path):
    (tmp_path / "srtslurm.yaml").write_text(
        "model_paths:\n  qwen3-32b-fp8: /shared/models/Qwen3-32B-FP8\n  small: hf:Qwen/Qwen3-0.6B\n"
    )
    (tmp_path / "recipes").mkdir()
    (imported,) = convert(_srt(tmp_path / "recipes", "path: qwen3-32b-fp8"))
    data = imported.data
    assert f"6: model.path qwen3-32b-fp8 resolved by {tmp_path / 'srtslurm.yaml'}: /shared/models/Qwen3-32B-FP8" in (
        imported.notes
    )
    assert data["model"] == {"repo": "/shared/models/Qwen3-32B-FP8", "served_name": "Qwen3-32B-FP8"}
    assert data["container"]["volumes"] == ["/shared/models/Qwen3-32B-FP8:/shared/models/Qwen3-32B-FP8:ro"]
    (tmp_path / "out").mkdir()
    written, _ = check_imported(imported, tmp_path / "out")  # the directory is mounted: validates
    assert load_recipe(written, "decode").recipe.model.repo == "/shared/models/Qwen3-32B-FP8"
    assert convert(_srt(tmp_path / "recipes", "path: small"))[0].data["model"]["repo"] == "Qwen/Qwen3-0.6B"
    for target in ("models/x", "/shared/$USER/x", "/shared/../x"):  # srtctl expands $VARS: not here
        (tmp_path / "srtslurm.yaml").write_text(f"model_paths:\n  qwen3-32b-fp8: {target}\n")
        with pytest.raises(RecipeError, match="not an absolute directory"):
            convert(_srt(tmp_path / "recipes", "path: qwen3-32b-fp8"))


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_alias_directory_keeps_the_served_name_the_recipe_gives(tmp_path):
    (tmp_path / "srtslurm.yaml").write_text("model_paths:\n  qwen3-32b-fp8: /shared/models/Qwen3-32B-FP8\n")
    (tmp_path / "recipes").mkdir()
    (imported,) = convert(_srt(tmp_path / "recipes", "path: qwen3-32b-fp8", served="qwen3-fast"))
    assert imported.data["model"] == {"repo": "/shared/models/Qwen3-32B-FP8", "served_name": "qwen3-fast"}


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_a_worker_wider_than_a_node_spans_nodes_in_its_role(tmp_path):
    text = _srt(tmp_path, "path: Qwen/Qwen3-32B").read_text()
    text = text.replace(
        "      tensor-parallel-size: 4\n", "      tensor-parallel-size: 1\n      data-parallel-size: 16\n"
    )
    (imported,) = convert(_write(tmp_path, text, "wide.yaml"))
    assert imported.data["roles"]["decode"]["topology"] == {
        "nodes": 2,
        "gpus_per_node": 8,
        "executor": "native",
        "hosts": ["node0", "node1"],
    }
    assert "topology" not in imported.data["roles"]["prefill"]  # TP 2 fits a node
    written, _ = check_imported(imported, tmp_path)
    assert load_recipe(written, "decode").recipe.topology.nodes == 2


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_model_path_missing_and_empty_aliases(tmp_path):
    for line in ('path: ""', "path: '  '", "container: c:1"):
        text = (CORPUS / "srt-slurm-disagg.yaml").read_text().replace("path: Qwen/Qwen3-32B", line)
        if line.startswith("container"):
            text = text.replace("  container: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0\n", "")
        with pytest.raises(RecipeError, match="model.path: no model") as info:
            convert(_write(tmp_path, text))
        assert "hf:owner/name" in str(info.value)
    (tmp_path / "srtslurm.yaml").write_text("model_paths:\n  qwen3-32b-fp8: ''\n  other: 7\n")
    (tmp_path / "r").mkdir()
    with pytest.raises(RecipeError, match="alias of the cluster's srtslurm.yaml"):  # an empty target: unresolved
        convert(_srt(tmp_path / "r", "path: qwen3-32b-fp8"))
    with pytest.raises(RecipeError, match="alias of the cluster's srtslurm.yaml"):
        convert(_srt(tmp_path / "r", "path: other"))


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_aggregated_worker_nodes_count_tp_pp_and_dp(tmp_path):
    base = (CORPUS / "srt-slurm-disagg.yaml").read_text()
    agg = base[: base.index("    prefill:")] + "    aggregated:\n"
    for flags, nodes in (
        ("tensor-parallel-size: 16", 2),
        ("pipeline-parallel-size: 3", 1),
        ("tensor-parallel-size: 4\n      pipeline-parallel-size: 4", 2),
        ("data-parallel-size: 24", 3),
    ):
        text = agg + "".join(f"      {f}\n" for f in flags.split("\n      "))
        topology = convert(_write(tmp_path, text))[0].data["topology"]
        assert topology.get("nodes", 1) == nodes, flags


def test_srt_slurm_config_named_by_srtslurm_config_wins(tmp_path, monkeypatch):
    named = tmp_path / "elsewhere.yaml"
    named.write_text("model_paths:\n  qwen3-32b-fp8: hf:Qwen/Qwen3-32B-FP8\n")
    monkeypatch.setenv("SRTSLURM_CONFIG", str(named))
    assert convert(_srt(tmp_path, "path: qwen3-32b-fp8"))[0].data["model"]["repo"] == "Qwen/Qwen3-32B-FP8"


def test_dynamo_worker_is_vllm_serve_with_its_engine_args(tmp_path):
    recipe = _recipe(_one("k8s-dynamo-worker.yaml"), tmp_path)
    assert recipe.launch.command == ["vllm", "serve"] and recipe.launch.entrypoint == ""
    assert recipe.model.repo == "Qwen/Qwen3-4B" and recipe.engine.max_model_len == 8192


def test_force_replaces_what_the_output_holds(tmp_path, capsys):
    out = tmp_path / "o"
    args = ["import", str(CORPUS / "eugr-qwen3-8b-solo.yaml"), "-o", str(out)]
    assert main(args) == 0
    assert main(args) == 2 and "pass --force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0


# --------------------------------------------------------------------------- every key


#: Each format's documented keys, written here from the sources' own docs (not the importer):
#: eugr run-recipe.py's schema docstring; sparkrun core/recipe.py _KNOWN_KEYS; vllm-project/recipes'
#: models/*.yaml keys (every key that occurs at commit 8959cf64); InferenceX configs/CONFIGS.md.
DOCUMENTED = {
    "eugr": "name recipe_version container command description model mods defaults env build_args cluster_only "
    "solo_only",
    "sparkrun": "sparkrun_version recipe_version name description model model_revision runtime runtime_version mode "
    "min_nodes max_nodes container defaults env command runtime_config cluster_only solo_only benchmark metadata "
    "pre_exec post_exec post_commands mods stop_after_post builder builder_config executor_config "
    "distribution_config",
    "vllm-recipes": "meta model features opt_in_features variants compatible_strategies hardware_overrides "
    "strategy_overrides guide omni dependencies kv_offload_support default_strategy strategy_min_gpus "
    "strategy_hardware hardware_opt_in_features hardware_notes",
    "vllm-recipes.model": "model_id min_vllm_version architecture parameter_count active_parameters context_length "
    "base_args base_env nightly_required docker_image install docker_source supports_dcp flashinfer_autotune",
    "vllm-recipes.variant": "precision vram_minimum_gb description model_id min_vllm_version tp extra_args label "
    "hardware_overrides extra_env supported_hardware default_modes precision_hardware docker_image",
    "inferencex": "image model model-prefix runner precision framework multinode scenarios disagg router "
    "kv-p2p-transfer",
    # llm-d-benchmark: the stack keys its scenarios use (config/scenarios/** at 8bc9f1dd) and
    # config/README.md's sections.
    "llm-d": "name common model modelservice decode prefill images vllmCommon accelerator standalone kustomize "
    "fma nok8s multinode harness experiment workDir gateway router httpRoute storage monitoring chartVersions "
    "wva eppKedaSaturation fmaWarmupStep routing",
}


def test_every_documented_key_of_each_format_is_carried_or_noted():
    from autobench.recipe.importer import _inferencex, _llmd, _peer, _recipes

    tables = {
        "eugr": _peer.EUGR_KEYS,
        "sparkrun": _peer.SPARKRUN_KEYS,
        "vllm-recipes": _recipes.TOP_KEYS,
        "vllm-recipes.model": _recipes.MODEL_KEYS,
        "vllm-recipes.variant": _recipes.VARIANT_KEYS,
        "inferencex": _inferencex.ENTRY_KEYS,
        "llm-d": _llmd.STACK_KEYS,
    }
    for fmt, keys in DOCUMENTED.items():
        missing = [k for k in keys.split() if k not in tables[fmt]]
        assert not missing, f"{fmt}: neither carried nor noted: {missing}"


def test_a_key_the_format_does_not_know_is_noted_with_its_line(tmp_path):
    path = _write(
        tmp_path,
        "recipe_version: '2'\nmodel: a/b\nruntime: vllm\ncontainer: c:1\ndefaults: {tensor_parallel: 1}\n"
        "readiness_timeout: 600\ncommand: vllm serve {model}\n",
    )
    (imported,) = convert(path)
    assert "6: not carried: readiness_timeout (not a key of the sparkrun format)" in imported.notes


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_backend_image_and_what_is_noted(tmp_path):
    """NVIDIA/srt-slurm recipes/** shapes (c88ef731): an SGLang backend, an aggregated worker, keys
    of backend and resources that are the job's, not the server's."""
    base = (CORPUS / "srt-slurm-disagg.yaml").read_text()
    with pytest.raises(RecipeError, match=r":17:9: backend sglang is not vLLM \(hint: autobench runs vLLM\)"):
        convert(_write(tmp_path, base.replace("  type: vllm", "  type: sglang")))
    with pytest.raises(
        RecipeError, match=r":21:\d+: vllm_config: no aggregated, prefill or decode flags \(hint: add them\)"
    ):
        convert(_write(tmp_path, base.split("  vllm_config:")[0] + "  vllm_config:\n    other: {a: 1}\n"))
    (imported,) = convert(CORPUS / "srt-slurm-disagg.yaml")
    assert imported.data["container"]["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0"
    assert imported.data["meta"]["source"] == "srt-slurm: srt-slurm-disagg.yaml"
    assert "18: not carried: backend.connector" in imported.notes
    assert not any("backend.prefill_environment" in n for n in imported.notes)
    for line, key in ((10, "gpu_type"), (12, "prefill_nodes"), (13, "decode_nodes"), (15, "decode_workers")):
        assert f"{line}: not carried: resources.{key} (workers and nodes of the job)" in imported.notes
    assert not any("resources.gpus_per_node" in n for n in imported.notes)
    assert convert(CORPUS / "srt-slurm-disagg.yaml", image="my/vllm:1")[0].data["container"]["image"] == "my/vllm:1"
    no_image = base.replace("  container: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0\n", "")
    assert convert(_write(tmp_path, no_image))[0].data["container"]["image"] == "vllm/vllm-openai:latest"
    # an aggregated worker of TP 4 x DP 4 on 8-GPU nodes spans 2 nodes; its environment is the recipe's
    agg = base.split("  vllm_config:")[0].replace("prefill_environment", "aggregated_environment")
    agg += "  vllm_config:\n    aggregated:\n      tensor-parallel-size: 4\n      data-parallel-size: 4\n"
    data = convert(_write(tmp_path, agg))[0].data
    assert (data["topology"]["nodes"], data["topology"]["gpus_per_node"]) == (2, 8)
    assert data["env"] == {"PYTHONUNBUFFERED": "1"} and "roles" not in data
    # an aggregated worker and a stray role map: the aggregated one is the recipe, with its environment
    stray = agg + "    decode:\n      tensor-parallel-size: 1\n"
    data = convert(_write(tmp_path, stray.replace("  type: vllm\n", "  type: vllm\n  decode_environment: {X: '1'}\n")))[
        0
    ].data
    assert data["engine"]["tensor_parallel_size"] == 4 and data["env"] == {"PYTHONUNBUFFERED": "1"}
    data = convert(_write(tmp_path, agg.replace("data-parallel-size: 4", "data-parallel-size: 2")))[0].data
    assert data["topology"].get("nodes", 1) == 1
    data = convert(_write(tmp_path, agg.replace("  gpus_per_node: 8\n", "")), gpus_per_node=16)[0].data
    assert data["topology"].get("nodes", 1) == 1 and data["topology"]["gpus_per_node"] == 16


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_name_type_default_and_located_wrong_types(tmp_path):
    base = (CORPUS / "srt-slurm-disagg.yaml").read_text()
    assert convert(CORPUS / "srt-slurm-disagg.yaml")[0].name == "qwen3-32b-disagg"
    nameless = base.replace("name: qwen3-32b-disagg\n", "")
    assert convert(_write(tmp_path, nameless, "My Recipe.yaml"))[0].name == "my-recipe"
    (untyped,) = convert(_write(tmp_path, base.replace("  type: vllm\n", "")))  # srtctl's default backend
    assert untyped.data["roles"]["decode"]["engine"]["tensor_parallel_size"] == 4
    assert not any("srt-slurm format" in n for n in untyped.notes)
    (odd,) = convert(_write(tmp_path, base.replace("slurm:\n", "colour: red\nslurm:\n")))
    assert "3: not carried: colour (not a key of the srt-slurm format)" in odd.notes
    with pytest.raises(RecipeError, match=r":7:3: model.container: must be a string, not a list"):
        convert(
            _write(tmp_path, base.replace("container: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0", "container: [a]"))
        )
    with pytest.raises(RecipeError, match=r":11:18: gpus_per_node: x is not a whole number"):
        convert(_write(tmp_path, base.replace("gpus_per_node: 8", "gpus_per_node: x")))
    with pytest.raises(RecipeError, match=r":9:1: resources: must be a mapping, not a list"):
        convert(
            _write(tmp_path, base.split("resources:")[0] + "resources: [1]\n" + "backend:" + base.split("backend:")[1])
        )


_ONE_ROLE = """name: one-role
model:
  path: hf:Qwen/Qwen3-8B
  container: vllm/vllm-openai:v0.21.0
resources:
  gpu_type: h100
  gpus_per_node: 8
backend:
  type: vllm
  decode_environment:
    NCCL_DEBUG: WARN
    HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz0123456
  vllm_config:
    decode:
      tensor-parallel-size: 2
"""


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_a_single_role_is_the_recipe_with_its_own_environment(tmp_path):
    """A recipe with one worker kind (srt-slurm recipes/** shape: only decode, no aggregated): its
    flags and its <role>_environment are the recipe's; secrets by name, at their line."""
    (imported,) = convert(_write(tmp_path, _ONE_ROLE))
    data = imported.data
    assert "roles" not in data and data["engine"]["tensor_parallel_size"] == 2
    assert data["env"] == {"NCCL_DEBUG": "WARN"} and data["secrets"] == ["HF_TOKEN"]
    assert "12: HF_TOKEN moved to secrets (passed by name, never by value)" in imported.notes
    assert not any("backend.type" in n or "backend.vllm_config" in n for n in imported.notes)
    with pytest.raises(RecipeError, match=r":14:5: --tensor-parallel-size x: not a whole number"):
        convert(_write(tmp_path, _ONE_ROLE.replace("tensor-parallel-size: 2", "tensor-parallel-size: x")))
    with pytest.raises(RecipeError, match=r":10:23: backend.decode_environment: must be a mapping"):
        convert(_write(tmp_path, _ONE_ROLE.replace("  decode_environment:\n", "  decode_environment: 5\n  x:\n")))
    top = _ONE_ROLE.replace("resources:", "environment:\n  API_TOKEN: abc\nresources:")
    (imported,) = convert(_write(tmp_path, top))
    assert "6: API_TOKEN moved to secrets (passed by name, never by value)" in imported.notes
    with pytest.raises(RecipeError, match=r":5:14: environment: must be a mapping"):
        convert(_write(tmp_path, _ONE_ROLE.replace("resources:", "environment: 5\nresources:")))


@pytest.mark.usefixtures("_no_srtslurm_config")
def test_srt_slurm_roles_keep_their_own_engine_and_the_base_only_the_port(tmp_path):
    base = (CORPUS / "srt-slurm-disagg.yaml").read_text()
    text = base.replace(
        "    prefill:\n      tensor-parallel-size: 2\n",
        "    prefill:\n      host: 0.0.0.0\n      port: 8001\n      tensor-parallel-size: 2\n"
        '      speculative-config: \'{"method": "ngram", "num_speculative_tokens": 3}\'\n'
        "      some-new-flag: 1\n",
    )
    text = text.replace(
        "  prefill_environment:\n", "  decode_environment:\n    API_TOKEN: abc\n  prefill_environment:\n"
    )
    (imported,) = convert(_write(tmp_path, text))
    data = imported.data
    assert data["engine"] == {"host": "0.0.0.0", "port": 8001} and "speculative" not in data
    prefill = data["roles"]["prefill"]
    assert prefill["speculative"]["method"] == "ngram" and list(prefill["engine"])[-1] == "extra_args"
    assert "20: API_TOKEN moved to secrets (passed by name, never by value)" in imported.notes
    assert not any("backend.decode_environment" in n or "backend.prefill_environment" in n for n in imported.notes)
    (imported,) = convert(_write(tmp_path, base.replace("slurm:\n", "environment:\n  API_TOKEN: abc\nslurm:\n")))
    assert "4: API_TOKEN moved to secrets (passed by name, never by value)" in imported.notes
    assert imported.data["roles"]["decode"]["secrets"] == ["API_TOKEN"]
    # no GPU count anywhere: the roles stay on one node of unknown size
    data = convert(_write(tmp_path, base.replace("  gpus_per_node: 8\n", "")))[0].data
    assert "topology" not in data["roles"]["decode"] and "topology" not in data
    with pytest.raises(RecipeError, match=r":27:5: --tensor-parallel-size x: not a whole number"):
        convert(_write(tmp_path, base.replace("tensor-parallel-size: 4", "tensor-parallel-size: x")))
    with pytest.raises(RecipeError, match=r"backend.vllm_config.decode: must be a mapping"):
        convert(_write(tmp_path, base.split("    decode:")[0] + "    decode: 5\nbenchmark:\n  type: sa-bench\n"))
    # roles on 1-GPU nodes: the base cell is one node, each role spans the nodes its TP needs
    data = convert(_write(tmp_path, base.replace("gpus_per_node: 8", "gpus_per_node: 1")))[0].data
    assert data["topology"].get("nodes", 1) == 1 and data["roles"]["decode"]["topology"]["nodes"] == 4
    # a role exactly as wide as a node stays on it
    data = convert(_write(tmp_path, base.replace("gpus_per_node: 8", "gpus_per_node: 4")))[0].data
    assert "topology" not in data["roles"]["decode"] and "topology" not in data["roles"]["prefill"]
    # --gpus-per-node and --nodes win over the file's
    data = convert(CORPUS / "srt-slurm-disagg.yaml", gpus_per_node=2)[0].data
    assert data["roles"]["decode"]["topology"] == {
        "nodes": 2,
        "gpus_per_node": 2,
        "executor": "native",
        "hosts": ["node0", "node1"],
    }
    data = convert(CORPUS / "srt-slurm-disagg.yaml", nodes=1, gpus_per_node=2)[0].data
    assert "topology" not in data["roles"]["decode"]
    agg = _ONE_ROLE.replace("  gpus_per_node: 8\n", "")
    with pytest.raises(RecipeError, match=r"2 nodes, but the GPUs per node are not in the file \(srt-slurm\)"):
        convert(_write(tmp_path, agg), nodes=2)


def test_vllm_recipes_taxonomy_found_above_the_file_as_the_site_keeps_it(tmp_path, tmp_path_factory):
    """vllm-project/recipes keeps taxonomy.yaml at the checkout's root, models/<org>/<repo>.yaml
    below it; the nearest readable one with hardware_profiles is read, at most 1 MiB."""
    path = _vllmr(tmp_path)  # the corpus taxonomy at tmp_path, the file at tmp_path/models/org
    nearer = tmp_path / "models" / "taxonomy.yaml"
    for broken in ("hardware_profiles: [\n", "hardware_profiles: [h100]\n", "- 1\n"):
        nearer.write_text(broken)  # unreadable, profiles not a mapping, not a mapping: passed over
        assert convert(path, hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 1
    (tmp_path / "models" / "org" / "taxonomy.yaml").mkdir()  # a folder of that name is no file
    assert convert(path, hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 1
    profile = "hardware_profiles:\n  h100: {brand: NVIDIA, generation: hopper, gpu_count: 2, vram_gb: 20}\n"
    pad = 1024 * 1024 - len(profile)
    nearer.write_text(profile + "#" * (pad - 1) + "\n")  # exactly 1 MiB: read (2 GPUs, TP 2)
    assert nearer.stat().st_size == 1024 * 1024
    assert convert(path, hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 2
    nearer.write_text(profile + "#" * pad + "\n")  # one byte more: passed over
    assert convert(path, hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 1
    many = "hardware_profiles:\n" + "".join(f"  gpu{i:02}: {{gpu_count: 1}}\n" for i in range(14))
    nearer.write_text(many)
    with pytest.raises(RecipeError, match=r"--hardware h100 is not a profile of .*name one of: gpu00, .*, gpu11\)$"):
        convert(path, hardware="h100")
    lone = tmp_path_factory.mktemp("lone")  # no taxonomy.yaml in any folder above it
    loose = _write(lone, VLLMR.format(vram=40, extra="", variant=""))
    with pytest.raises(
        RecipeError,
        match=r"--hardware h100: no taxonomy.yaml in a folder above the file \(hint: import from a checkout of "
        r"vllm-project/recipes, or pass --gpus-per-node\)",
    ):
        convert(loose, hardware="h100")


def test_vllm_recipes_tp_map_default_and_multi_node_strategies(tmp_path):
    tp_map = "    tp: {h100: 2, default: 4}\n"
    assert convert(_vllmr(tmp_path, variant=tp_map), hardware="b200")[0].data["engine"]["tensor_parallel_size"] == 4
    # no --hardware: a map with `default` is that value (capped at the GPUs said), one without is refused at its line
    assert convert(_vllmr(tmp_path, variant=tp_map), gpus_per_node=8)[0].data["engine"]["tensor_parallel_size"] == 4
    with pytest.raises(RecipeError, match=r":9:\d+: the variant's tp depends on the GPU"):
        convert(_vllmr(tmp_path, variant="    tp: {h100: 2}\n"), gpus_per_node=8)
    multi = "default_strategy: multi_node_tp\ncompatible_strategies: [single_node_tp, multi_node_tp]\n"
    with pytest.raises(
        RecipeError,
        match=r":5:\d+: the site's strategy multi_node_tp spans nodes the file does not count \(hint: pass --nodes N "
        r"--gpus-per-node G, or pick a single-node variant\)",
    ):
        convert(_vllmr(tmp_path, extra=multi), hardware="h100")
    with pytest.raises(RecipeError, match=r":5:\d+: the site's strategy multi_node_dep spans nodes"):
        convert(_vllmr(tmp_path, extra="compatible_strategies: [multi_node_dep]\n"), hardware="h100")


def test_vllm_recipes_sizes_refused_at_their_lines(tmp_path):
    with pytest.raises(RecipeError, match=r":9:\d+: tp: x is not a whole number"):
        convert(_vllmr(tmp_path, variant="    tp: x\n"), hardware="h100")
    over = "strategy_overrides:\n  single_node_tp:\n    tp: x\n"
    with pytest.raises(RecipeError, match=r":7:\d+: tp: x is not a whole number"):
        convert(_vllmr(tmp_path, extra=over), hardware="h100")
    # a weight size of 0 (or below) says nothing: the node's GPUs; a fraction of a GB fits one GPU
    assert convert(_vllmr(tmp_path, vram=0), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 8
    assert convert(_vllmr(tmp_path, vram=-1), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 8
    assert convert(_vllmr(tmp_path, vram=0.5), hardware="h100")[0].data["engine"]["tensor_parallel_size"] == 1
    # a profile without vram_gb cannot fit the weights: refused at the variant's vram_minimum_gb
    (tmp_path / "models" / "taxonomy.yaml").write_text("hardware_profiles:\n  h100: {gpu_count: 8}\n")
    with pytest.raises(RecipeError, match=r":8:\d+: the site fits TP to the GPU's memory \(40 GB"):
        convert(_vllmr(tmp_path), hardware="h100")
    (tmp_path / "models" / "taxonomy.yaml").unlink()
    dep = "default_strategy: single_node_dep\ncompatible_strategies: [single_node_dep]\n"
    with pytest.raises(
        RecipeError, match=r":2:\d+: vllm-project/recipes sizes the engine by your hardware \(single_node_dep"
    ):
        convert(_vllmr(tmp_path, extra=dep))

"""`autobench import` of llm-d-benchmark scenarios (autobench/recipe/importer/_llmd.py): each stack
merged over the checkout's defaults.yaml and rendered as llm-d-benchmark's ``render_plans.py`` and
``_macros.j2`` render it.  The scenarios are the corpus's (llm-d-*.yaml, its INDEX.md names the
source) or small texts written here in the shape of llm-d-benchmark's config/scenarios/** files,
over the corpus's own config/templates/values/defaults.yaml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autobench.cli.import_cmds import check_imported
from autobench.compile.argv import docker_argv
from autobench.errors import RecipeError
from autobench.recipe.importer import _llmd, convert
from autobench.recipe.loader import load_recipe

CORPUS = Path(__file__).resolve().parent / "import_corpus"
DEFAULTS = CORPUS / "config" / "templates" / "values" / "defaults.yaml"
#: The corpus's own macros file in the shape of llm-d-benchmark's (its INDEX.md): the importer renders
#: whatever the checkout holds.
MACROS = CORPUS / "config" / "templates" / "jinja" / "_macros.j2"


def _one(name: str, **options):
    (imported,) = convert(CORPUS / name, **options)
    return imported


def _recipe(imported, tmp_path):
    written, _ = check_imported(imported, tmp_path)
    return load_recipe(written).recipe


def _write(folder, text, name="peer.yaml"):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _llm_d_checkout(tmp_path, scenario, defaults=None, overlays=None, macros=None):
    values = tmp_path / "config" / "templates" / "values"
    values.mkdir(parents=True, exist_ok=True)
    (values / "defaults.yaml").write_text(defaults if defaults is not None else DEFAULTS.read_text())
    (tmp_path / "config" / "templates" / "jinja").mkdir(exist_ok=True)
    (tmp_path / "config" / "templates" / "jinja" / "_macros.j2").write_text(
        macros if macros is not None else MACROS.read_text()
    )
    for name, text in (overlays or {}).items():
        (values / "overlays").mkdir(exist_ok=True)
        (values / "overlays" / f"{name}.yaml").write_text(text)
    folder = tmp_path / "config" / "scenarios"
    folder.mkdir(exist_ok=True)
    return _write(folder, scenario)


def _stack(tmp_path, body, **kw):
    """One stack (``body`` indented under it) in a checkout; its imported recipe."""
    text = "scenario:\n  - name: s\n" + "".join(f"    {line}\n" for line in body.strip("\n").split("\n"))
    return convert(_llm_d_checkout(tmp_path, text, **kw))


def _bare(values):
    """Values with the sections every merged stack has (defaults.yaml gives them), empty."""
    return {"vllmCommon": {}, "model": {}, **values}


def _engine(tmp_path, body, **kw):
    return _stack(tmp_path, body, **kw)[0].data["engine"]


def test_llm_d_generated_command_is_llm_d_benchmarks_over_its_defaults(tmp_path):
    recipe = _recipe(_one("llm-d-generated.yaml"), tmp_path)
    argv = docker_argv(recipe, home="/h")
    after = argv[argv.index("docker.io/vllm/vllm-openai:v0.21.0") + 1 :]
    assert argv[argv.index("--entrypoint") + 1] == "" and after[:3] == ["vllm", "serve", "Qwen/Qwen3-8B"]
    engine = recipe.engine
    assert (engine.tensor_parallel_size, engine.max_model_len, engine.gpu_memory_utilization) == (2, 16384, 0.9)
    assert engine.port == 8200 and engine.enable_prefix_caching is False and engine.max_num_seqs == 64
    assert engine.enforce_eager is not True  # the scenario's common flags win over defaults.yaml
    assert engine.extra_args == ["--block-size", "32", "--no-enable-log-requests"]
    assert recipe.env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "1" and recipe.env["NCCL_DEBUG"] == "WARN"
    assert recipe.topology.gpus_per_node == 2 and recipe.model.served_name == "Qwen/Qwen3-8B"


def test_llm_d_custom_commands_become_roles_with_the_pods_values(tmp_path):
    (imported,) = convert(CORPUS / "llm-d-pd-custom.yaml")
    roles = imported.data["roles"]
    assert roles["prefill"]["engine"]["tensor_parallel_size"] == 1 and roles["prefill"]["engine"]["port"] == 8000
    assert roles["decode"]["engine"]["tensor_parallel_size"] == 4 and roles["decode"]["engine"]["port"] == 8200
    assert roles["decode"]["engine"]["dtype"] == "bfloat16"  # ${accelerator.dtypeArgs} of defaults.yaml
    assert roles["decode"]["container"] == {"ports": ["8200:8200"]}
    assert imported.notes[0].startswith("42: skipped: stack kustomize-guide deploys llm-d's guide manifests")
    assert any("not carried: export" in n and "preprocess step" in n for n in imported.notes)
    written, _ = check_imported(imported, tmp_path)
    assert load_recipe(written, "prefill").recipe.engine.port == 8000


def test_llm_d_refusals_name_their_reason(tmp_path):
    with pytest.raises(RecipeError, match="merged over config/templates/values/defaults.yaml"):
        convert(_write(tmp_path, "scenario:\n  - name: x\n"))
    sim = "scenario:\n  - name: s\n    images:\n      vllm: {repository: ghcr.io/llm-d/llm-d-inference-sim, tag: v1}\n"
    with pytest.raises(RecipeError, match="inference simulator, not vLLM"):
        convert(_llm_d_checkout(tmp_path / "a", sim))
    auto = "scenario:\n  - name: s\n    images:\n      vllm: {tag: auto}\n"
    with pytest.raises(RecipeError, match="tag auto") as info:
        convert(_llm_d_checkout(tmp_path / "b", auto))
    assert "--image" in str(info.value)
    assert convert(tmp_path / "b/config/scenarios/peer.yaml", image="vllm/vllm-openai:v0.21.0")[0].data
    lws = "scenario:\n  - name: s\n    multinode: {enabled: true}\n"
    with pytest.raises(RecipeError, match="no stack of this scenario runs a modelservice vLLM pod.*multinode"):
        convert(_llm_d_checkout(tmp_path / "c", lws))
    env = "scenario:\n  - name: s\n    decode:\n      vllm:\n        customCommand: vllm serve a/b --port $UNSET_PORT\n"
    with pytest.raises(RecipeError, match=r"uses \$UNSET_PORT, set in the pod at run time"):
        convert(_llm_d_checkout(tmp_path / "d", env))


def test_llm_d_scenario_keys_are_carried_or_noted():
    (imported,) = convert(CORPUS / "llm-d-generated.yaml")
    assert "29: not carried: harness (autobench's bench: section runs the bench)" in imported.notes
    assert "31: not carried: workDir (llm-d-benchmark's workspace)" in imported.notes
    assert "5: not carried: decode replicas 2 (autobench benches one server)" in imported.notes


# --------------------------------------------------------------------------- the merge (render_plans.py)


def test_deep_merge_override_wins_and_null_keeps_the_base():
    base = {"a": {"b": 1, "c": 2}, "d": 1}
    assert _llmd.deep_merge(base, {"a": {"b": 3}, "d": None, "e": [1]}) == {"a": {"b": 3, "c": 2}, "d": 1, "e": [1]}
    assert base == {"a": {"b": 1, "c": 2}, "d": 1}  # not mutated
    assert _llmd.deep_merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}


def test_common_seeds_the_sections_that_own_the_key_unless_they_set_it():
    defaults = {"decode": {"parallelism": {"tensor": 1, "data": 1}, "enabled": True}, "prefill": {"replicas": 0}}
    layer = {
        "name": "x",
        "common": {"parallelism": {"tensor": 4, "other": 9}, "replicas": 3, "enabled": False},
        "prefill": {"replicas": 1},
    }
    out = _llmd._expand_common(layer, defaults)
    assert out["decode"]["parallelism"] == {"tensor": 4}  # only the keys decode owns
    assert out["prefill"]["replicas"] == 1  # the section's own value wins
    assert "enabled" not in out["decode"] and out["enabled"] is False  # enabled is never broadcast
    assert out["parallelism"] == {"tensor": 4, "other": 9} and "name" not in out
    assert _llmd._expand_common({"common": {"x": {"only": 1}}}, {"decode": {"x": {"other": 2}}}) == {
        "decode": {},
        "x": {"only": 1},
    }  # nothing decode models: not seeded (render_plans.py makes the section first too)


def test_sections_under_modelservice_are_hoisted_and_win(tmp_path):
    engine = _engine(
        tmp_path, "decode:\n  parallelism: {tensor: 2}\nmodelservice:\n  decode:\n    parallelism: {tensor: 4}"
    )
    assert engine["tensor_parallel_size"] == 4


def test_profile_overlay_preset_and_config_variables(tmp_path):
    overlay = "accelerator:\n  dtypeArgs: '--dtype float16'\n"
    body = (
        "accelerator: {profile: special}\nresourcePreset: big\n"
        "resourcePresets:\n  big:\n    decode:\n      parallelism: {tensor: 2}\n"
        "decode:\n  vllm:\n    customCommand: vllm serve a/b ${accelerator.dtypeArgs} --served-model-name ${model.name}"
        " --port ${decode.vllm.port} --kv-cache-dtype ${accelerator.missing} \\\n      --max-model-len ${model}"
    )
    with pytest.raises(RecipeError):  # ${model} (a mapping) and ${accelerator.missing} stay as written
        _stack(tmp_path / "a", body, overlays={"special": overlay})
    body = body.replace(" --kv-cache-dtype ${accelerator.missing} \\\n      --max-model-len ${model}", "")
    (imported,) = _stack(tmp_path / "b", body, overlays={"special": overlay})
    engine = imported.data["engine"]
    assert engine["dtype"] == "float16" and engine["port"] == 8200 and imported.data["topology"] == {"gpus_per_node": 2}
    assert imported.data["model"]["served_name"] == "facebook/opt-125m"
    assert not any("accelerator profile auto" in n for n in imported.notes)
    (auto,) = _stack(tmp_path / "c", "accelerator: {profile: auto}")
    assert any("accelerator profile auto" in n for n in auto.notes)
    (unknown,) = _stack(tmp_path / "d", "accelerator: {profile: nothere}")  # no overlay file: the defaults
    assert unknown.data["engine"]["tensor_parallel_size"] == 1


def test_a_defaults_file_that_does_not_read_is_one_located_line(tmp_path):
    path = _llm_d_checkout(tmp_path, "scenario:\n  - name: s\n", defaults="a: [")
    with pytest.raises(RecipeError, match="does not read as YAML"):
        convert(path)
    path = _llm_d_checkout(tmp_path / "b", "scenario:\n  - name: s\n", defaults="- 1\n")
    with pytest.raises(RecipeError, match="is not a mapping"):
        convert(path)
    with pytest.raises(RecipeError, match="scenario: no stack"):
        convert(_llm_d_checkout(tmp_path / "c", "scenario: []\n"))


# --------------------------------------------------------------------------- the command (_macros.j2)


def test_generated_command_follows_the_flags_table(tmp_path):
    body = (
        "model: {maxNumSeq: 32, gpuMemoryUtilization: 0}\n"
        "vllmCommon:\n  flags: {enforceEager: false, disableLogRequests: false, disableUvicornAccessLog: true,"
        " enablePrefixCaching: true, chatTemplate: /t.jinja, chatTemplateContentFormat: openai}\n"
        "routing: {proxy: {enabled: false}}\n"
        "decode:\n  parallelism: {tensor: 0}"
    )
    (imported,) = _stack(tmp_path, body)
    engine = imported.data["engine"]
    assert engine["port"] == 8000  # no routing proxy: vLLM binds the service port
    assert "tensor_parallel_size" not in engine and "gpu_memory_utilization" not in engine  # 0: flag skipped
    assert engine["enable_prefix_caching"] is True and "enforce_eager" not in engine
    assert engine["extra_args"] == [
        "--block-size",
        "32",
        "--disable-uvicorn-access-log",
        "--chat-template",
        "/t.jinja",
        "--chat-template-content-format",
        "openai",
    ]
    assert "topology" not in imported.data  # tensor 0 x dataLocal 1: no GPU request


def test_hf_uri_protocol_serves_the_hub_id_and_kv_transfer_is_appended(tmp_path):
    body = (
        "modelservice: {uriProtocol: hf}\nmodel: {huggingfaceId: org/weights, name: served/name}\n"
        "vllmCommon:\n  kvTransfer: {enabled: true, extraConfig: {backends: [UCX]}}"
    )
    (imported,) = _stack(tmp_path, body)
    data = imported.data
    assert data["model"] == {"repo": "org/weights", "served_name": "served/name"}
    assert not any("PVC copy" in n for n in imported.notes)
    kv = data["engine"]["extra_args"][data["engine"]["extra_args"].index("--kv-transfer-config") + 1]
    assert kv == '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"backends":["UCX"]}}'
    (custom,) = _stack(
        tmp_path / "b", "vllmCommon:\n  kvTransfer: {enabled: true}\ndecode:\n  vllm: {customCommand: vllm serve a/b}"
    )
    assert custom.data["engine"]["extra_args"] == [
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
    ]


def test_preprocess_steps_are_noted_and_the_default_no_op_is_not(tmp_path):
    (plain,) = _stack(tmp_path, "decode:\n  vllm: {customCommand: vllm serve a/b}")
    assert not any("preprocess step" in n for n in plain.notes)  # /bin/true ;
    body = "decode:\n  contextLengthRanges: [0-10]\n  vllm: {customPreprocessCommand: prep.sh, customCommand: vllm serve a/b}"
    (ranged,) = _stack(tmp_path / "b", body)
    assert any("not carried: prep.sh (decode pod's preprocess step)" in n for n in ranged.notes)
    body = "vllmCommon: {preprocessScript: setup.sh}\ndecode:\n  vllm: {customCommand: vllm serve a/b && echo done}"
    (after,) = _stack(tmp_path / "c", body)
    assert any("setup.sh" in n for n in after.notes) and any("echo done (runs after" in n for n in after.notes)


def test_a_wrapper_script_with_model_flag(tmp_path):
    body = "decode:\n  vllm: {customCommand: /opt/start.sh --model /model-cache/$MODEL_PATH --port 9000}"
    (imported,) = _stack(tmp_path, body)
    data = imported.data
    assert data["model"]["repo"] == "facebook/opt-125m" and data["launch"]["model_flag"] == "--model"
    assert data["launch"]["command"] == ["/opt/start.sh"] and data["engine"]["port"] == 9000
    with pytest.raises(RecipeError, match="names no model"):
        _stack(tmp_path / "b", "decode:\n  vllm: {customCommand: vllm serve --port 9000}")
    (local,) = _stack(tmp_path / "c", "decode:\n  vllm: {customCommand: vllm serve org/other --port 9000}")
    assert local.data["model"]["repo"] == "org/other"
    assert convert(CORPUS / "llm-d-generated.yaml", model="a/b")[0].data["model"]["repo"] == "a/b"


def test_the_pods_env_fills_the_command_and_the_vllm_variables_are_carried(tmp_path):
    body = (
        "model: {maxNumBatchedTokens: 512, maxNumSeq: 9}\n"
        "vllmCommon: {loadFormat: safetensors, nixlSideChannelPort: '6000', ucxTls: rc, ucxSockaddrTlsPriority: x,"
        " flags: {serverDevMode: '1', allowLongMaxModelLen: ''}}\n"
        "decode:\n  parallelism: {tensor: 2, data: 3, dataLocal: 1}\n"
        "  vllm:\n    loggingLevel: DEBUG\n    workerMultiprocMethod: fork\n    httpTimeoutKeepAlive: 30\n"
        "    customCommand: vllm serve a/b --max-num-batched-tokens $VLLM_MAX_NUM_BATCHED_TOKENS --max-num-seqs"
        " ${VLLM_MAX_NUM_SEQ} --load-format $VLLM_LOAD_FORMAT -dp $DP_SIZE -tp $TP_SIZE --data-parallel-size-local"
        " $DP_SIZE_LOCAL --block-size $VLLM_BLOCK_SIZE --max-model-len $VLLM_MAX_MODEL_LEN"
        " --gpu-memory-utilization $VLLM_ACCELERATOR_MEM_UTIL --port $VLLM_INFERENCE_PORT"
    )
    (imported,) = _stack(tmp_path, body)
    engine, env = imported.data["engine"], imported.data["env"]
    assert (engine["max_num_batched_tokens"], engine["max_num_seqs"], engine["tensor_parallel_size"]) == (512, 9, 2)
    assert engine["data_parallel_size"] == 3 and engine["port"] == 8000 and engine["max_model_len"] == 8192
    assert engine["gpu_memory_utilization"] == 0.9
    assert engine["load_format"] == "safetensors"
    assert engine["extra_args"] == [
        "--data-parallel-size-local",
        "1",
        "--block-size",
        "32",
    ]
    assert env == {
        "VLLM_WORKER_MULTIPROC_METHOD": "fork",
        "VLLM_LOGGING_LEVEL": "DEBUG",
        "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "30",
        "VLLM_SERVER_DEV_MODE": "1",
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "6000",
        "UCX_TLS": "rc",
        "UCX_SOCKADDR_TLS_PRIORITY": "x",
    }


def test_pod_env_defaults_when_the_scenario_and_defaults_say_nothing():
    env = _llmd._pod_env(MACROS, {"decode": {}, "vllmCommon": {}, "model": {}}, "decode")
    assert env == {
        "HOME": "",
        "MODEL_NAME": "",
        "MODEL_PATH": "",
        "VLLM_INFERENCE_PORT": "",
        "VLLM_METRICS_PORT": "",
        "VLLM_CACHE_ROOT": "/vllm",
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "VLLM_LOGGING_LEVEL": "INFO",
        "VLLM_HTTP_TIMEOUT_KEEP_ALIVE": "120",
        "VLLM_BLOCK_SIZE": "16",
        "VLLM_MAX_MODEL_LEN": "4096",
        "VLLM_LOAD_FORMAT": "auto",
        "VLLM_ACCELERATOR_MEM_UTIL": "0.95",
        "VLLM_MAX_NUM_SEQ": "256",
        "VLLM_TENSOR_PARALLELISM": "1",
        "VLLM_MAX_NUM_BATCHED_TOKENS": "256",
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "5557",
        "UCX_TLS": "sm,cuda_ipc,cuda_copy,tcp",
        "UCX_SOCKADDR_TLS_PRIORITY": "tcp",
        "TP_SIZE": "1",
        "DP_SIZE": "1",
        "DP_SIZE_LOCAL": "1",
    }
    env = _llmd._pod_env(
        MACROS,
        {
            "decode": {"vllm": {"cacheRoot": "/c"}},
            "vllmCommon": {"containerHome": "/h", "flags": {"x": 1}},
            "model": {},
        },
        "decode",
    )
    assert env["HOME"] == "/h" and env["VLLM_CACHE_ROOT"] == "/c"
    assert _llmd._s(True) == "true" and _llmd._s(None, "d") == "d" and _llmd._int("x") == 0


# --------------------------------------------------------------------------- stacks, roles, GPUs


def test_methods_other_than_modelservice_are_skipped_by_name(tmp_path):
    for body, why in (
        ("nok8s: {enabled: true}", "runs without Kubernetes (nok8s)"),
        ("kustomize: {enabled: true}", "deploys llm-d's guide manifests (kustomize)"),
        ("modelservice: {enabled: false}\nstandalone: {enabled: true}", "is a standalone deployment"),
        ("modelservice: {enabled: false}", "deploys no modelservice pods"),
        ("multinode: {enabled: true}", "runs LeaderWorkerSet groups (multinode)"),
    ):
        match = "no stack of this scenario runs a modelservice vLLM pod: .*" + re.escape(why)
        with pytest.raises(RecipeError, match=match):
            _stack(tmp_path / str(abs(hash(body))), body)


def test_two_stacks_are_named_after_the_file_and_their_stack(tmp_path):
    text = "scenario:\n  - name: One\n  - name: two\n    model: {huggingfaceId: a/b, name: a/b}\n"
    one, two = convert(_llm_d_checkout(tmp_path, text))
    assert (one.name, two.name) == ("peer-one", "peer-two") and one.data["name"] == "peer-one"
    assert two.data["model"]["repo"] == "a/b"
    shared = "shared:\n  model: {huggingfaceId: c/d, name: c/d}\nscenario:\n  - name: x\n"
    (imported,) = convert(_llm_d_checkout(tmp_path / "b", shared))
    assert imported.name == "x" and imported.data["model"]["repo"] == "c/d"


def test_gpus_count_precedence_and_cpu(tmp_path):
    assert _stack(tmp_path / "a", "decode: {accelerator: {count: 3}}\naccelerator: {count: 5}")[0].data["topology"] == {
        "gpus_per_node": 3
    }
    assert _stack(tmp_path / "b", "accelerator: {count: 5}")[0].data["topology"] == {"gpus_per_node": 5}
    dp = _stack(tmp_path / "c", "decode: {parallelism: {tensor: 2, dataLocal: 2}}")[0].data
    assert dp["topology"] == {"gpus_per_node": 4} and dp["container"]["gpus"] == "all"
    cpu = _stack(tmp_path / "d", "accelerator: {type: cpu}")[0].data
    assert "topology" not in cpu and "gpus" not in cpu["container"]
    with pytest.raises(RecipeError, match="decode GPUs: 65 is out of range"):
        _stack(tmp_path / "e", "accelerator: {count: 65}")


def test_prefill_pods_with_replicas_make_roles_and_more_replicas_are_noted(tmp_path):
    (imported,) = _stack(tmp_path, "prefill: {enabled: true, replicas: 2}\ndecode: {replicas: 1}")
    assert set(imported.data["roles"]) == {"prefill", "decode"}
    assert any("not carried: prefill replicas 2" in n for n in imported.notes)
    assert not any("decode replicas" in n for n in imported.notes)
    (none,) = _stack(tmp_path / "b", "prefill: {enabled: true, replicas: 0}")
    assert "roles" not in none.data
    assert _llmd._replicas({"replicas": True}) == 1 and _llmd._replicas(None) == 0 and _llmd._replicas({}) == 1


def test_image_needs_a_repository_and_tag(tmp_path):
    with pytest.raises(RecipeError, match="images.vllm: no repository and tag"):
        _stack(tmp_path, "images:\n  vllm: {repository: '', tag: v1}")
    with pytest.raises(RecipeError, match="images.vllm: no repository and tag"):
        _stack(
            tmp_path / "b",
            "images:\n  vllm: {repository: a/b, tag: null}",
            defaults="modelservice: {enabled: true}\nimages: {vllm: {repository: a/b}}\n",
        )


def test_an_unknown_stack_key_is_noted_with_its_line(tmp_path):
    (imported,) = _stack(tmp_path, "mystery: 1\nharness: {name: x}")
    assert "3: not carried: mystery (not a key of the llm-d format)" in imported.notes
    assert "4: not carried: harness (autobench's bench: section runs the bench)" in imported.notes


def test_common_value_kept_whole_where_the_section_default_is_no_mapping():
    out = _llmd._expand_common({"common": {"shell": {"zz": 1}}}, {"decode": {"shell": "/bin/zsh"}})
    assert out["decode"]["shell"] == {"zz": 1}


def test_profile_auto_and_a_profile_outside_overlays_are_not_read(tmp_path):
    evil = "accelerator:\n  dtypeArgs: '--dtype float16'\n"
    cmd = "decode:\n  vllm: {customCommand: 'vllm serve a/b ${accelerator.dtypeArgs}'}"
    (auto,) = _stack(tmp_path / "a", "accelerator: {profile: auto}\n" + cmd, overlays={"auto": evil})
    assert auto.data["engine"]["dtype"] == "bfloat16"  # auto is the cluster's detection, never a file
    scenario = "scenario:\n  - name: s\n    accelerator: {profile: ../evil}\n" + "".join(
        f"    {line}\n" for line in cmd.split("\n")
    )
    path = _llm_d_checkout(tmp_path / "b", scenario, overlays={"other": "{}\n"})
    (tmp_path / "b" / "config" / "templates" / "values" / "evil.yaml").write_text(evil)
    assert convert(path)[0].data["engine"]["dtype"] == "bfloat16"
    (named,) = _stack(tmp_path / "c", "accelerator: {profile: x1}\n" + cmd, overlays={"x1": evil})
    assert named.data["engine"]["dtype"] == "float16"


def test_config_variables_fill_only_plain_values_in_document_order():
    root = {"a": {"b": "x", "m": {"k": 1}, "l": [1], "n": 0}, "s": "${a.b} ${a.m} ${a.l} ${a.zz} ${a.n} $a.b ${b}"}
    root["items"] = ["${a.b}", {"deep": "${a.b}"}, 3]
    _llmd._fill_config_vars(root, root)
    assert root["s"] == "x ${a.m} ${a.l} ${a.zz} 0 $a.b ${b}"  # a mapping, a list or nothing stays as written
    assert root["items"] == ["x", {"deep": "x"}, 3]


def test_per_replica_vllm_variants_are_split_as_llm_ds_preprocess_splits_them(tmp_path):
    """config/scenarios/examples/gpu.yaml (llm-d-benchmark 8bc9f1dd) shape: decode replicas with
    ``vllmVariants``; ``_macros.j2`` joins each value with ``,,`` and ``set_llmdbench_environment.py``
    re-exports the pod's own (the first without LeaderWorkerSet)."""
    body = (
        "vllmCommon:\n  preprocessScript: python3 /setup/preprocess/set_llmdbench_environment.py"
        " && source $HOME/llmdbench_env.sh\n"
        "decode:\n  replicas: 2\n  vllmVariants:\n    - {maxModelLen: 2048, maxNumSeq: 64}\n"
        "    - {maxModelLen: 4096, maxNumSeq: 16}\n"
        "  vllm: {customCommand: vllm serve a/b --max-model-len $VLLM_MAX_MODEL_LEN --max-num-seqs $VLLM_MAX_NUM_SEQ"
        " --max-num-batched-tokens $VLLM_MAX_NUM_BATCHED_TOKENS}"
    )
    (imported,) = _stack(tmp_path, body)
    engine = imported.data["engine"]
    assert (engine["max_model_len"], engine["max_num_seqs"], engine["max_num_batched_tokens"]) == (2048, 64, 256)
    assert (
        "2: not carried: decode vllmVariants after the first "
        "(VLLM_MAX_MODEL_LEN=2048,,4096, VLLM_MAX_NUM_SEQ=64,,16: the first pod's values imported)"
    ) in imported.notes
    # the generated command reads the same variable; a variant without maxNumSeq in the first row
    # leaves VLLM_MAX_NUM_SEQ to model.maxNumSeq
    generated = body.split("  vllm: {customCommand")[0].replace(
        "{maxModelLen: 2048, maxNumSeq: 64}", "{maxModelLen: 2048}"
    )
    assert _engine(tmp_path / "b", generated)["max_model_len"] == 2048
    # every VLLM_* value split, in name order in the note; another variable's ",," is the pod's as written
    three = body.replace("maxNumSeq: 64}", "maxNumSeq: 64, maxNumBatchedTokens: 128}").replace(
        "maxNumSeq: 16}", "maxNumSeq: 16, maxNumBatchedTokens: 256}"
    )
    three = three.replace("  vllm: {", "  extraEnvVars: [{name: OTHER, value: 'a,,b'}]\n  vllm: {").replace(
        "vllm serve a/b", "vllm serve a/b --served-model-name $OTHER"
    )
    (imported,) = _stack(tmp_path / "e", three)
    assert imported.data["engine"]["max_num_batched_tokens"] == 128 and imported.data["model"]["served_name"] == "a,,b"
    assert (
        "2: not carried: decode vllmVariants after the first (VLLM_MAX_MODEL_LEN=2048,,4096, "
        "VLLM_MAX_NUM_BATCHED_TOKENS=128,,256, VLLM_MAX_NUM_SEQ=64,,16: the first pod's values imported)"
    ) in imported.notes
    env = _llmd._pod_env(
        MACROS, _bare({"decode": {"vllmVariants": [{"maxModelLen": 1}, "x", {"maxNumBatchedTokens": 5}]}}), "decode"
    )
    assert env["VLLM_MAX_MODEL_LEN"] == "1,,,," and env["VLLM_MAX_NUM_SEQ"] == "256"
    assert env["VLLM_MAX_NUM_BATCHED_TOKENS"] == "256"
    env = _llmd._pod_env(
        MACROS, _bare({"decode": {"vllmVariants": [{"maxNumBatchedTokens": 5, "maxNumSeq": 2}, {}]}}), "decode"
    )
    assert (env["VLLM_MAX_MODEL_LEN"], env["VLLM_MAX_NUM_SEQ"], env["VLLM_MAX_NUM_BATCHED_TOKENS"]) == (
        ",,",
        "2,,",
        "5,,",
    )
    # without the splitting preprocess vLLM would read "2048,,4096": refused, naming it
    for odd in ([], "2048", {"maxModelLen": 1}):  # no per-replica list: the model's values
        assert (
            _llmd._pod_env(MACROS, _bare({"decode": {"vllmVariants": odd}}), "decode")["VLLM_MAX_MODEL_LEN"] == "4096"
        )
    with pytest.raises(
        RecipeError,
        match=r"decode: VLLM_MAX_MODEL_LEN=2048,,4096 holds one value per replica .*"
        r"\(hint: run it in vllmCommon.preprocessScript, as llm-d-benchmark's config/README.md says\)",
    ):
        _stack(tmp_path / "c", body.replace("set_llmdbench_environment.py", "other.py"))
    # the name after `vllm serve` does not count as the preprocess
    with pytest.raises(RecipeError, match="set_llmdbench_environment.py, which this pod does not run"):
        _stack(
            tmp_path / "d",
            body.replace("python3 /setup/preprocess/set_llmdbench_environment.py &&", "true &&").replace(
                "vllm serve a/b", "vllm serve a/b --x set_llmdbench_environment.py"
            ),
        )


def test_a_nameless_stack_is_named_after_its_file(tmp_path):
    (imported,) = convert(_llm_d_checkout(tmp_path, "scenario:\n  - model: {huggingfaceId: a/b, name: a/b}\n"))
    assert imported.name == "peer" and imported.fmt == "llm-d" and imported.data["meta"]["tags"] == ["llm-d"]
    assert imported.data["meta"]["source"] == "llm-d: peer.yaml"


def test_prefill_pods_only_when_enabled_with_replicas(tmp_path):
    on = "prefill:\n  enabled: true\n  replicas: 1\n  vllm: {customCommand: vllm serve a/b --port 8001}\n"
    on += "decode:\n  vllm: {customCommand: vllm serve a/b --port 8002}"
    assert set(_stack(tmp_path, on)[0].data["roles"]) == {"prefill", "decode"}
    off = on.replace("enabled: true", "enabled: false")
    assert "roles" not in _stack(tmp_path / "b", off)[0].data
    (odd,) = _stack(tmp_path / "c", "prefill: 5\ndecode:\n  vllm: {customCommand: vllm serve a/b --port 8002}")
    assert "roles" not in odd.data


def test_a_wrapper_scripts_model_flag_anywhere_but_last(tmp_path):
    body = "decode:\n  vllm: {customCommand: /opt/start.sh --port 9000 --model /model-cache/$MODEL_PATH}"
    (imported,) = _stack(tmp_path, body)
    data = imported.data
    assert data["model"]["repo"] == "facebook/opt-125m" and data["launch"]["model_flag"] == "--model"
    assert data["engine"]["port"] == 9000 and "--model" not in data["engine"].get("extra_args", [])
    with pytest.raises(RecipeError, match="names no model"):  # a trailing --model has no value
        _stack(tmp_path / "b", "decode:\n  vllm: {customCommand: /opt/start.sh --port 9000 --model}")


def test_a_variable_the_pod_sets_at_run_time_is_refused_with_the_way_out(tmp_path):
    with pytest.raises(
        RecipeError,
        match=r"decode: the vLLM command uses \$NODE_RANK, set in the pod at run time, not in the scenario \(hint: "
        r"render the stack's manifests \(llm-d-benchmark's standup\), then import the Deployment\)",
    ):
        _stack(tmp_path, "decode:\n  vllm: {customCommand: vllm serve a/b --node-rank $NODE_RANK}")


def test_roles_keep_their_engines_and_the_base_only_host_and_port(tmp_path):
    body = (
        "prefill:\n  enabled: true\n  replicas: 1\n"
        "  vllm: {customCommand: vllm serve a/b --host 0.0.0.0 --port 8001 --max-num-seqs 4}\n"
        "decode:\n  vllm:\n    customCommand: >-\n      vllm serve a/b --host 0.0.0.0 --port 8002 --max-num-seqs 8"
        ' --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\''
    )
    data = _stack(tmp_path, body)[0].data
    assert data["engine"] == {"host": "0.0.0.0", "port": 8002} and "speculative" not in data
    assert data["roles"]["decode"]["speculative"]["method"] == "ngram"
    assert data["roles"]["prefill"]["engine"]["max_num_seqs"] == 4


def test_replicas_image_and_unknown_variables_before_the_server(tmp_path):
    for odd in (True, "2", None):
        n = _llmd._replicas({"replicas": odd})
        assert n == 1 and type(n) is int
    with pytest.raises(RecipeError, match=r"images.vllm: no repository and tag \(hint: pass --image\)"):
        _stack(tmp_path, "images:\n  vllm: {repository: 5, tag: v1}")
    with pytest.raises(RecipeError, match=r"inference simulator, not vLLM \(hint: autobench runs vLLM\)"):
        _stack(tmp_path / "b", "images:\n  vllm: {repository: ghcr.io/llm-d/llm-d-inference-sim, tag: v1}")
    body = "vllmCommon: {preprocessScript: echo $UNSET_X}\ndecode:\n  vllm: {customCommand: vllm serve a/b}"
    (imported,) = _stack(tmp_path / "c", body)
    assert "2: not carried: echo '$UNSET_X' (decode pod's preprocess step)" in imported.notes


def test_pod_env_falls_back_to_vllm_common_as_build_ms_env_vars_does():
    """_macros.j2 build_ms_env_vars (llm-d-benchmark 8bc9f1dd): each value from the role's vllm
    block or the model, else vllmCommon's, else the macro's literal default."""
    values = {
        "model": {},
        "vllmCommon": {
            "containerHome": "/home/llmd",
            "workerMultiprocMethod": "fork",
            "loggingLevel": "WARN",
            "inferencePort": 8000,
            "vllmPort": 8200,
            "blockSize": 64,
            "maxModelLen": 9000,
            "gpuMemoryUtilization": 0.8,
            "maxNumSeq": 32,
            "maxNumBatchedTokens": 1024,
        },
        "decode": {
            "parallelism": {"tensor": 2, "data": 4, "dataLocal": 2},
            "extraEnvVars": ["X=1", {"name": 5, "value": 1}, {"name": "S", "valueFrom": {}}, {"name": "B", "value": 2}],
        },
    }
    env = _llmd._pod_env(MACROS, values, "decode")
    assert env["HOME"] == "/home/llmd" and env["VLLM_CACHE_ROOT"] == "/home/llmd/vllm"
    assert (env["VLLM_WORKER_MULTIPROC_METHOD"], env["VLLM_LOGGING_LEVEL"]) == ("fork", "WARN")
    assert (env["VLLM_INFERENCE_PORT"], env["VLLM_METRICS_PORT"], env["VLLM_BLOCK_SIZE"]) == ("8000", "8200", "64")
    assert (env["VLLM_MAX_MODEL_LEN"], env["VLLM_ACCELERATOR_MEM_UTIL"]) == ("9000", "0.8")
    assert (env["VLLM_MAX_NUM_SEQ"], env["VLLM_MAX_NUM_BATCHED_TOKENS"]) == ("32", "1024")
    assert (env["TP_SIZE"], env["DP_SIZE"], env["DP_SIZE_LOCAL"]) == ("2", "4", "2")
    assert env["B"] == "2" and "S" not in env and "X" not in env and 5 not in env
    values["decode"]["vllm"] = {"servicePort": 9000, "port": 9200}  # the role's own ports win
    env = _llmd._pod_env(MACROS, values, "decode")
    assert (env["VLLM_INFERENCE_PORT"], env["VLLM_METRICS_PORT"]) == ("9000", "9200")


def test_generated_script_as_build_vllm_command_writes_it():
    """_macros.j2 build_vllm_command (llm-d-benchmark 8bc9f1dd): the preprocess (``/bin/true`` by
    default) then ``;`` (``&&`` with contextLengthRanges); prefill pods bind the inference port."""
    values = {
        "model": {"name": "x/y", "cacheBase": "/model-cache", "path": "models/x/y", "gpuMemoryUtilization": 0.9},
        "vllmCommon": {"host": "0.0.0.0", "kvTransfer": 5, "flags": {"enforceEager": True}},
        "modelservice": {"uriProtocol": "hf"},
        "decode": {"contextLengthRanges": ["0-10"]},
        "prefill": {},
    }
    decode, _ = _llmd._script(MACROS, values, "decode")
    assert decode.startswith("/bin/true && vllm serve x/y \\\n  --host 0.0.0.0 \\\n")
    assert "--port $VLLM_METRICS_PORT" in decode and "--enforce-eager" in decode
    prefill, _ = _llmd._script(MACROS, values, "prefill")
    assert prefill.startswith("/bin/true ; vllm serve x/y") and "--port $VLLM_INFERENCE_PORT" in prefill


# --------------------------------------------------------------------------- the checkout's own macros


def test_the_pod_command_is_what_the_checkouts_macros_render(tmp_path):
    """No copy of _macros.j2 in the importer: a change to the checkout's file is a change to the
    imported command and env (llm-d-benchmark 8bc9f1dd renders the pod from its own macros)."""
    changed = MACROS.read_text().replace("  --max-model-len $VLLM_MAX_MODEL_LEN", "  --max-model-len 1234 --seed 7")
    changed = changed.replace(
        "- name: VLLM_LOGGING_LEVEL\n", '- name: VLLM_LOGGING_LEVEL\n  value: "TRACE"\n- name: X\n'
    )
    assert changed.count("--seed 7") == 1 and changed.count('"TRACE"') == 1
    (imported,) = _stack(tmp_path, "model: {maxModelLen: 4096}", macros=changed)
    assert imported.data["engine"]["max_model_len"] == 1234 and "--seed" in imported.data["engine"]["extra_args"]
    assert imported.data["env"]["VLLM_LOGGING_LEVEL"] == "TRACE"


def test_a_checkout_without_its_macros_or_with_broken_ones_is_one_located_line(tmp_path):
    path = _llm_d_checkout(tmp_path, "scenario:\n  - name: s\n")
    (tmp_path / "config/templates/jinja/_macros.j2").unlink()
    with pytest.raises(RecipeError, match=r"writes the pod's command with config/templates/jinja/_macros.j2"):
        convert(path)
    broken = MACROS.read_text() + "\n{% if %}\n"
    with pytest.raises(RecipeError) as info:
        _stack(tmp_path / "b", "model: {}", macros=broken)
    lines = broken.count("\n")
    assert info.value.location.endswith(f"_macros.j2:{lines}:1"), info.value.location
    no_macro = MACROS.read_text().replace("macro build_ms_env_vars(", "macro other_env(")
    with pytest.raises(RecipeError, match="_macros.j2 defines no build_ms_env_vars macro"):
        _stack(tmp_path / "c", "model: {}", macros=no_macro)


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        ("{{ ''.__class__.__mro__ }}", "does not render with this stack's values \\(SecurityError"),
        ("{{ model | toyaml }}", "uses the toyaml filter, which autobench's import does not render"),
        ("{{ raise('an option for another gateway') }}", "_macros.j2: an option for another gateway"),
        ("{{ 1 // 0 }}", "ZeroDivisionError"),
    ],
)
def test_the_macros_render_sandboxed_and_their_failures_are_refusals(tmp_path, fragment, message):
    text = MACROS.read_text().replace("{% set role = decode if mode == 'decode' else prefill -%}", fragment, 1)
    with pytest.raises(RecipeError, match=message) as info:
        _stack(tmp_path, "model: {}", macros=text)
    assert "_macros.j2:" in info.value.location


def test_kubelet_variables_are_filled_from_the_pods_env_or_refused(tmp_path):
    """guides/tiered-prefix-cache.yaml and precise-prefix-cache-routing.yaml (llm-d-benchmark 8bc9f1dd)
    shape: ``$(NAME)`` in the command, which the kubelet fills from the container's env."""
    body = (
        "decode:\n  extraEnvVars: [{name: CPU_BYTES, value: '1024'}]\n"
        "  vllm:\n    customCommand: >-\n      vllm serve a/b --kv-transfer-config"
        ' \'{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"cpu_bytes_to_use":$(CPU_BYTES)}}\''
        " --served-model-name $(MODEL_NAME)"
    )
    (imported,) = _stack(tmp_path, body)
    extra = imported.data["engine"]["extra_args"]
    assert extra[extra.index("--kv-transfer-config") + 1].endswith('{"cpu_bytes_to_use":1024}}')
    assert imported.data["model"]["served_name"] == "facebook/opt-125m"
    with pytest.raises(RecipeError, match=r"decode: the vLLM command uses \$\(POD_IP\), which the pod's env does not"):
        _stack(tmp_path / "b", "decode:\n  vllm: {customCommand: vllm serve a/b --host $(POD_IP)}")
    (before,) = _stack(
        tmp_path / "c",
        "vllmCommon: {preprocessScript: echo $(POD_IP)}\ndecode:\n  vllm: {customCommand: vllm serve a/b}",
    )
    assert any("echo" in n and "preprocess step" in n for n in before.notes)  # before the server: noted only


def test_the_refusals_of_the_macros_name_the_way_out(tmp_path):
    path = _llm_d_checkout(tmp_path, "x: 1\nscenario:\n  - name: s\n")
    (tmp_path / "config/templates/jinja/_macros.j2").unlink()
    with pytest.raises(RecipeError) as info:
        convert(path)
    assert info.value.location.startswith(f"{path}:2:")  # the scenario's line
    assert info.value.hint == "import the scenario from a whole llm-d-benchmark checkout"
    with pytest.raises(RecipeError) as info:
        _stack(tmp_path / "b", "decode:\n  vllm: {customCommand: vllm serve a/b --host $(POD_IP)}")
    assert info.value.hint == "render the stack's manifests (llm-d-benchmark's standup), then import the Deployment"


def _env_macros(tmp_path, entries):
    path = tmp_path / "_macros.j2"
    path.write_text(
        "{% macro build_vllm_command(mode) %}vllm serve a/b{% endmacro %}\n"
        "{% macro build_ms_env_vars(mode) %}" + entries + "{% endmacro %}\n"
    )
    return path


def test_the_pods_env_is_the_rendered_entries_with_a_name_and_a_value(tmp_path):
    entries = "- plain\n- {name: 5, value: x}\n- {value: y}\n- {name: S, valueFrom: {}}\n- {name: B, value: 2}\n"
    env = _llmd._pod_env(_env_macros(tmp_path, entries), {"decode": {"parallelism": {"tensor": 4}}}, "decode")
    assert env == {"B": "2", "TP_SIZE": "4", "DP_SIZE": "1", "DP_SIZE_LOCAL": "1"}
    assert _llmd._pod_env(_env_macros(tmp_path, "just: a mapping\n"), {}, "decode")["TP_SIZE"] == "1"
    bad = _env_macros(tmp_path, '- name: A\n  value: "a"b"\n')
    with pytest.raises(RecipeError) as info:
        _llmd._pod_env(bad, {}, "prefill")
    assert info.value.message == "_macros.j2: build_ms_env_vars('prefill') does not render a YAML list of env entries"
    assert info.value.location == f"{bad}:1:1" and info.value.hint.startswith("check the scenario's env values")

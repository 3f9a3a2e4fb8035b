"""Launch, topology, open vocabularies and the rule fixes of issue 13 (each defect failing-first)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compile"))
from compile_helpers import run_script, shellcheck_path  # noqa: E402

from autobench.cli import main
from autobench.compile import compile_recipe, docker_argv, serve_argv
from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.reference import render_page
from autobench.recipe.rules import check

REPO = Path(__file__).resolve().parents[2]
SHA = "a" * 40
DRAFT_SHA = "c" * 40

CLEAN = f"""model:
  repo: org/model
  revision: {SHA}
  served_name: m
container:
  image: vllm/vllm-openai@sha256:{"b" * 64}
  ports: ["8000:8000"]
engine:
  port: 8000
  max_num_seqs: 8
  max_model_len: 4096
bench:
  dataset:
    path: data.json
  concurrency: 8
"""


def write(tmp_path: Path, extra: str, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(CLEAN + extra, encoding="utf-8")
    return path


def findings(tmp_path: Path, extra: str):
    return check(load_recipe(write(tmp_path, extra)))


def codes(tmp_path: Path, extra: str) -> list[str]:
    return [f.code for f in findings(tmp_path, extra)]


# ------------------------------------------------------------------ defects of the issue


def test_underscored_speculative_config_beside_a_pinned_draft_is_an_error(tmp_path):
    """Defect: `--speculative_config` in extra_args passed the shadowing rule; the unpinned
    draft would have run while the header named the pinned one."""
    extra = (
        f"speculative:\n  method: dflash\n  model: z/draft\n  revision: {DRAFT_SHA}\n  num_speculative_tokens: 5\n"
        'engine:\n  extra_args: [\'--speculative_config\', \'{"method":"dflash","model":"z/draft"}\']\n'
    )
    path = tmp_path / "c.yaml"
    (tmp_path / "base.yaml").write_text(CLEAN)
    path.write_text("extends: base.yaml\n" + extra)
    found = [f for f in check(load_recipe(path)) if f.code == "AB040"]
    assert len(found) == 1 and found[0].severity == "error"
    assert found[0].location.line == 8 and found[0].key == "engine.extra_args[0]"
    assert "typed field speculative " in found[0].message and "--speculative-config" in found[0].message
    # the hint names the field that exists (it used to say `speculative_config`)
    assert "set speculative instead" in found[0].hint
    with pytest.raises(RecipeError, match="AB040"):
        compile_recipe(load_recipe(path))


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ("['--max_model_len', '8192']", "engine.max_model_len"),
        ("['--max-model-len=8192']", "engine.max_model_len"),
        ("['--max_num_seqs=4']", "engine.max_num_seqs"),
        ("['-tp', '2']", "engine.tensor_parallel_size"),
        ("['--trust_remote_code']", "model.trust_remote_code"),
        ("['--quantization=fp8']", "engine.quantization"),
        ("['--nnodes', '2']", "topology.nodes"),
    ],
)
def test_any_shadowing_extra_arg_names_its_field(tmp_path, args, field):
    path = tmp_path / "s.yaml"
    text = CLEAN.replace("engine:\n", f"engine:\n  extra_args: {args}\n")
    path.write_text(text)
    found = [f for f in check(load_recipe(path)) if f.code == "AB040"]
    assert len(found) == 1, check(load_recipe(path))
    assert f"typed field {field}" in found[0].message
    assert f"set {field} instead" in found[0].hint


def test_quantization_metadata_must_agree_with_the_command(tmp_path):
    """Defect: `quantization: {method: awq}` beside `--quantization fp8` was silent."""
    text = CLEAN.replace("  served_name: m\n", "  served_name: m\n  quantization:\n    method: awq\n")
    path = tmp_path / "q.yaml"
    path.write_text(text.replace("engine:\n", "engine:\n  extra_args: ['--quantization', 'fp8']\n"))
    found = [f for f in check(load_recipe(path)) if f.code == "AB062"]
    assert len(found) == 1 and found[0].severity == "error"
    assert "fp8" in found[0].message and "awq" in found[0].message
    assert found[0].key == "engine.extra_args[0]"
    path.write_text(text.replace("engine:\n", "engine:\n  quantization: awq_marlin\n"))
    assert "AB062" not in [f.code for f in check(load_recipe(path))]  # awq_marlin is an awq kernel


def test_description_token_count_must_agree(tmp_path):
    """Defect: a description's "k=2" beside num_speculative_tokens: 4 was silent."""
    extra = "speculative:\n  method: mtp\n  num_speculative_tokens: 4\nmeta:\n  description: Qwen MTP k=2 on one GPU\n"
    found = [f for f in findings(tmp_path, extra) if f.code == "AB063"]
    assert len(found) == 1 and "'k=2'" in found[0].message and "4" in found[0].message
    assert found[0].location.line == 20
    ok = extra.replace("k=2", "k=4")
    assert "AB063" not in codes(tmp_path, ok)


# ------------------------------------------------------------------ open vocabularies


def test_unknown_speculative_method_is_a_warning_listing_the_known_ones(tmp_path, capsys):
    extra = "speculative:\n  method: nemotron_h_mtp\n  num_speculative_tokens: 3\n"
    found = findings(tmp_path, extra)
    assert [(f.code, f.severity) for f in found] == [("AB061", "warning")]
    assert "dflash" in found[0].hint and "eagle3" in found[0].hint
    assert main(["validate", str(tmp_path / "r.yaml")]) == 0
    script = compile_recipe(load_recipe(tmp_path / "r.yaml"))
    assert '{"method":"nemotron_h_mtp","num_speculative_tokens":3}' in script


def test_unknown_and_mixed_quantization(tmp_path):
    text = CLEAN.replace(
        "  served_name: m\n",
        "  served_name: m\n  quantization:\n    method: mixed\n    components:\n"
        "      - {method: int4, bits: 4, scope: experts}\n      - {method: fp8, scope: attention}\n"
        "      - {method: hqq4, scope: lm_head}\n",
    )
    path = tmp_path / "m.yaml"
    path.write_text(text)
    found = check(load_recipe(path))
    assert [(f.code, f.key) for f in found] == [("AB060", "model.quantization.components[2].method")]


def test_max_model_len_auto(tmp_path):
    path = write(tmp_path, "")
    path.write_text(CLEAN.replace("max_model_len: 4096", "max_model_len: auto"))
    loaded = load_recipe(path)
    assert check(loaded) == []
    assert "--max-model-len auto" in compile_recipe(loaded)
    path.write_text(CLEAN.replace("max_model_len: 4096", "max_model_len: automatic"))
    with pytest.raises(RecipeError, match="max_model_len"):
        load_recipe(path)


# ------------------------------------------------------------------ topology


@pytest.mark.parametrize(
    ("topology", "engine", "code", "bit"),
    [
        ("nodes: 2\n  gpus_per_node: 2", "tensor_parallel_size: 4\n  pipeline_parallel_size: 2", "AB064", "8 GPUs"),
        ("nodes: 2\n  gpus_per_node: 4", "tensor_parallel_size: 3", "AB064", "evenly"),
        ("nodes: 4\n  gpus_per_node: 1", "tensor_parallel_size: 2", "AB064", "idle"),
        ("nodes: 2", "tensor_parallel_size: 2", "AB066", "no gpus_per_node"),
        ("nodes: 2\n  gpus_per_node: 1\n  hosts: [a]", "tensor_parallel_size: 2", "AB065", "1 host(s)"),
    ],
)
def test_topology_arithmetic(tmp_path, topology, engine, code, bit):
    path = tmp_path / "t.yaml"
    path.write_text(CLEAN.replace("engine:\n", f"engine:\n  {engine}\n") + f"topology:\n  {topology}\n")
    found = [f for f in check(load_recipe(path)) if f.severity == "error"]
    assert [f.code for f in found] == [code], found
    assert bit in found[0].message
    assert found[0].location.line >= 17  # located in the topology section
    assert main(["validate", str(path)]) == 2


def test_a_fitting_topology_is_clean(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        CLEAN.replace("engine:\n", "engine:\n  tensor_parallel_size: 4\n  pipeline_parallel_size: 2\n")
        + "topology:\n  nodes: 2\n  gpus_per_node: 4\n  executor: ray\n  hosts: [gpu-a, gpu-b]\n"
    )
    loaded = load_recipe(path)
    assert check(loaded) == []
    assert loaded.recipe.topology.hosts == ["gpu-a", "gpu-b"]


# ------------------------------------------------------------------ launch and mods


def test_launch_entrypoint_command_prefix_compile_and_run(tmp_path):
    path = write(
        tmp_path,
        "launch:\n  entrypoint: ''\n  command: python3 -m vllm.entrypoints.openai.api_server\n"
        "  model_flag: --model\n  prefix: [taskset, -c, 0-9]\n",
    )
    loaded = load_recipe(path)
    argv = docker_argv(loaded.recipe, home="/h")
    image = argv.index(loaded.recipe.container.image)
    assert argv[image - 2 : image] == ["--entrypoint", ""]
    tail = argv[image + 1 : image + 10]
    assert tail == ["taskset", "-c", "0-9", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model"] + [
        "org/model",
        "--revision",
    ]
    proc, calls = run_script(compile_recipe(loaded), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert calls[0][1] == argv[1:]  # what docker received is the API's argv, word for word


def test_setup_steps_run_in_order_then_exec_the_serve_argv(tmp_path):
    mods = tmp_path / "mods"
    (mods / "fix-template").mkdir(parents=True)
    (mods / "fix-template" / "run.sh").write_text('echo patched > "$OUT/mod"\n')
    (mods / "single.sh").write_text('echo single >> "$OUT/mod"\n')
    path = write(
        tmp_path,
        'launch:\n  prefix: [nice]\n  setup:\n    - mod: mods/fix-template\n    - run: echo ran > "$OUT/run"\n'
        "    - mod: mods/single.sh\n      name: the single one\n",
    )
    loaded = load_recipe(path)
    steps = loaded.recipe.launch.setup
    assert steps[0].sha256.startswith("sha256:") and steps[2].sha256.startswith("sha256:")
    assert loaded.data["launch"]["setup"][0]["sha256"] == steps[0].sha256
    argv = docker_argv(loaded.recipe, home="/h", mods=loaded.mods)
    assert f"{(mods / 'fix-template').resolve()}:/autobench/mods/0-fix-template:ro" in argv
    assert argv[argv.index("--entrypoint") + 1] == "bash"
    # The process form runs the same steps for real: bash -c SCRIPT autobench-setup nice vllm serve ...
    serve = serve_argv(loaded.recipe, home="/h", mods=loaded.mods)
    assert serve[:2] == ["bash", "-c"] and serve[3:7] == ["autobench-setup", "nice", "vllm", "serve"]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "vllm").write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$OUT/argv"\n')
    (fake / "vllm").chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {"PATH": f"{fake}:/usr/bin:/bin", "OUT": str(out)}
    proc = subprocess.run(serve, env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (out / "mod").read_text() == "patched\nsingle\n" and (out / "run").read_text() == "ran\n"
    assert (out / "argv").read_text().splitlines() == serve[6:]
    assert "autobench: setup the single one" in proc.stderr
    script = compile_recipe(loaded)
    sc = tmp_path / "s.sh"
    sc.write_text(script)
    lint = subprocess.run([shellcheck_path(), "-s", "bash", str(sc)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


def test_mod_content_is_in_the_digest_and_pinnable(tmp_path):
    (tmp_path / "m.sh").write_text("echo one\n")
    path = write(tmp_path, "launch:\n  setup:\n    - mod: m.sh\n")
    first = load_recipe(path)
    (tmp_path / "m.sh").write_text("echo two\n")
    second = load_recipe(path)
    assert first.digest != second.digest
    assert second.digest in compile_recipe(second)
    # a written sha256 pins the mod: a changed mod is refused at its line
    path.write_text(
        CLEAN + f"launch:\n  setup:\n    - mod: m.sh\n      sha256: {first.recipe.launch.setup[0].sha256}\n"
    )
    with pytest.raises(RecipeError) as err:
        load_recipe(path)
    assert err.value.location.endswith(":19:15") and "changed" in err.value.message


def test_missing_mod_is_one_located_line(tmp_path, capsys):
    path = write(tmp_path, "launch:\n  setup:\n    - mod: mods/nope\n")
    assert main(["compile", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}:18:12" in err[0] and "mod not found" in err[0]


def test_a_setup_step_is_a_mod_or_a_command(tmp_path):
    path = write(tmp_path, "launch:\n  setup:\n    - name: nothing\n")
    with pytest.raises(RecipeError, match="exactly one"):
        load_recipe(path)
    path = write(tmp_path, "launch:\n  entrypoint: /bin/sh\n  setup:\n    - run: 'true'\n")
    assert [f.code for f in check(load_recipe(path))] == ["AB067"]


def test_embedding_model_needs_the_vllm_client(tmp_path):
    path = write(tmp_path, "")
    path.write_text(CLEAN.replace("engine:\n", "engine:\n  runner: pooling\n"))
    assert "AB068" in [f.code for f in check(load_recipe(path))]
    path.write_text(
        CLEAN.replace("engine:\n", "engine:\n  runner: pooling\n").replace(
            "bench:\n", "bench:\n  client: vllm\n  endpoint: embeddings\n"
        )
    )
    assert check(load_recipe(path)) == []


# ------------------------------------------------------------------ docs


def test_key_reference_and_rule_table_in_docs_are_current():
    page = (REPO / "docs" / "recipes.md").read_text(encoding="utf-8")
    assert render_page(page) == page, "docs/recipes.md is stale: run python -m autobench.recipe.reference"
    for key in ("`launch.setup[].mod`", "`topology.gpus_per_node`", "`engine.data_parallel_size`"):
        assert key in page


def test_engine_build_step_is_compiled_before_serve(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(
        CLEAN.replace("vllm/vllm-openai@sha256:" + "b" * 64, "vllm-node-pr")
        + "build:\n  base_image: nvcr.io/nvidia/pytorch:26.08-py3\n  vllm_ref: v0.24.0\n  prs: [31234, 31500]\n"
        "  build_args: {TORCH_CUDA_ARCH_LIST: '12.1'}\n"
    )
    loaded = load_recipe(path)
    assert [(f.code, f.key) for f in check(loaded)] == [("AB069", "build.vllm_ref")]  # not AB050: built here
    script = compile_recipe(loaded)
    build_at, serve_at = script.index("docker build"), script.index("docker run")
    assert build_at < serve_at
    assert "--build-arg 'VLLM_PRS=31234 31500'" in script and "--build-arg VLLM_REF=v0.24.0" in script
    assert 'git checkout "${VLLM_REF}"' in script  # autobench's Dockerfile, fed on stdin
    assert "autobench: built image $(docker image inspect" in script
    proc, calls = run_script(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [c[1][0] for c in calls[:3]] == ["build", "image", "run"]
    sc = tmp_path / "b.sh"
    sc.write_text(script)
    lint = subprocess.run([shellcheck_path(), "-s", "bash", str(sc)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout

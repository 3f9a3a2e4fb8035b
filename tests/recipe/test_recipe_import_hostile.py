"""`autobench import` on hostile and wrongly shaped files (issues 27 and 28, class 7): one located
line and exit 2, nothing written, secrets never by value, no raw control character printed, and
memory bounded on a 1 MB file.  Each case failed on main at 858542f (exit 70, a traceback, a
secret or a host file carried, or gigabytes of memory)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.recipe.importer import convert
from autobench.recipe.loader import load_recipe

TOKEN = "hf_" + "Zq9" * 10
SPARK = "recipe_version: '2'\nmodel: a/b\nruntime: vllm\ncontainer: img:1\n"
EUGR = "recipe_version: '1'\nname: x\ncontainer: img:1\nmodel: a/b\n"


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *extra: str) -> tuple[int, list[str], str]:
    src = tmp_path / "peer.yaml"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code = main(["import", str(src), "-o", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines(), captured.out


def _refused(tmp_path, capsys, text, bit, *extra):
    code, err, _ = _run(tmp_path, capsys, text, *extra)
    assert code == 2, err
    assert len(err) == 1 and bit in err[0] and f"{tmp_path / 'peer.yaml'}:" in err[0], err
    assert not (tmp_path / "out").exists()
    return err[0]


@pytest.mark.parametrize("mod", ["../../../etc/passwd", "/etc/passwd", "~/.ssh/id_rsa", "mods/../../outside"])
def test_a_mod_outside_the_source_tree_is_refused_at_its_line(tmp_path, capsys, mod):
    (tmp_path / "outside").mkdir()
    line = _refused(
        tmp_path,
        capsys,
        EUGR + f"mods: [{json.dumps(mod)}]\ncommand: vllm serve a/b\n",
        "is outside the recipe's folder",
    )
    assert ":5:" in line


@pytest.mark.parametrize("mod", ["/etc/passwd", "~/.bashrc", "../outside.sh"])
def test_the_loader_refuses_a_mod_path_that_leaves_the_recipe_folder(tmp_path, mod):
    from autobench.errors import RecipeError

    (tmp_path / "outside.sh").write_text("echo hi\n")
    sub = tmp_path / "recipes"
    sub.mkdir()
    recipe = sub / "r.yaml"
    recipe.write_text(
        f"model: {{repo: a/b}}\ncontainer: {{image: img:1}}\nlaunch:\n  setup:\n    - mod: {json.dumps(mod)}\n"
    )
    with pytest.raises(RecipeError, match="is outside the recipe's folder") as info:
        load_recipe(recipe)
    assert str(info.value).startswith(f"{recipe}:5:")


def test_a_placeholder_fill_is_bounded(tmp_path, capsys):
    # 160 KB of placeholders, each filled with 4 KB: 160 MB of command on main
    text = EUGR + "defaults:\n  a: '" + "x" * 4096 + "'\ncommand: vllm serve a/b " + "{a}" * 53_000 + "\n"
    _refused(tmp_path, capsys, text, "longer than 64 KiB")


@pytest.mark.parametrize(
    ("text", "bit"),
    [
        (SPARK + "min_nodes: 200000000\ndefaults: {tensor_parallel: 1}\ncommand: vllm serve {model}\n", "out of range"),
        (SPARK + "defaults: {tensor_parallel: 200000000}\ncommand: vllm serve {model}\n", "out of range"),
        (
            SPARK + "defaults: {tensor_parallel: 1}\ncommand: vllm serve {model} -tp " + "9" * 5000 + "\n",
            "whole number",
        ),
        (EUGR + "cluster_only: true\ncommand: vllm serve a/b --pipeline-parallel-size 99999999\n", "out of range"),
    ],
    ids=["min_nodes", "tp-default", "5000-digits", "pp"],
)
def test_a_number_beyond_the_domain_is_one_located_line(tmp_path, capsys, text, bit):
    _refused(tmp_path, capsys, text, bit)


def test_an_api_key_in_the_command_is_passed_by_name_never_by_value(tmp_path, capsys):
    code, err, out = _run(
        tmp_path, capsys, SPARK + f"defaults: {{tensor_parallel: 1}}\ncommand: vllm serve {{model}} --api-key {TOKEN}\n"
    )
    assert code == 0, err
    written = (tmp_path / "out" / "peer.yaml").read_text()
    assert TOKEN not in written and TOKEN not in out
    assert "VLLM_API_KEY" in load_recipe(tmp_path / "out" / "peer.yaml").recipe.secrets


@pytest.mark.parametrize("flag", ["--auth-token", "--ledger-password"])
def test_another_secret_flag_with_a_value_is_refused(tmp_path, capsys, flag):
    _refused(
        tmp_path,
        capsys,
        SPARK + f"defaults: {{tensor_parallel: 1}}\ncommand: vllm serve {{model}} {flag} s3cr3t\n",
        flag,
    )


def test_notes_print_neither_tokens_nor_raw_escape_sequences(tmp_path, capsys):
    text = (
        SPARK
        + "defaults: {tensor_parallel: 1}\ncommand: vllm serve {model}\n"
        + 'executor_config:\n  volumes: ["/home/\\e]0;pwned\\a'
        + TOKEN
        + ':/x"]\n'
        + 'mods: ["@own\\e[31mer/mods/x"]\n'
    )
    code, err, out = _run(tmp_path, capsys, text)
    assert code == 0, err
    assert "not carried: hard-coded host path" in out and "registry reference" in out
    assert "\x1b" not in out and "\x07" not in out and TOKEN not in out


def test_a_string_pre_exec_is_not_split_into_characters(tmp_path, capsys):
    _refused(
        tmp_path,
        capsys,
        SPARK + "defaults: {tensor_parallel: 1}\ncommand: vllm serve {model}\npre_exec: pip install x\n",
        "pre_exec: must be a list",
    )


#: Wrongly shaped files that were exit 70 (a TypeError/AttributeError/KeyError) on main.
SHAPES = [
    ("defaults-list", EUGR + "defaults: [1, 2]\ncommand: vllm serve a/b\n", "defaults: must be a mapping"),
    ("env-string", EUGR + "env: x\ncommand: vllm serve a/b\n", "env: must be a mapping"),
    ("mods-mapping", EUGR + "mods: {a: b}\ncommand: vllm serve a/b\n", "mods: must be a list"),
    ("command-list", EUGR + "command: [vllm, serve]\n", "command: must be a string"),
    ("model-mapping", SPARK.replace("model: a/b", "model: {x: 1}") + "command: vllm serve x/y\n", "model: must be"),
    (
        "pre_exec-number",
        SPARK + "defaults: {tensor_parallel: 1}\ncommand: vllm serve {model}\npre_exec: 5\n",
        "pre_exec",
    ),
    ("build_args-number", EUGR + "build_args: 5\ncommand: vllm serve a/b\n", "build_args"),
    (
        "executor-list",
        SPARK + "defaults: {tensor_parallel: 1}\ncommand: vllm serve {model}\nexecutor_config: [1]\n",
        "executor_config",
    ),
    (
        "features-list",
        "model: {model_id: a/b}\nfeatures: [x]\nvariants: {default: {tp: 1}}\n",
        "features: must be a mapping",
    ),
    ("variants-list", "model: {model_id: a/b}\nvariants: [x]\n", "variants: must be a mapping"),
    (
        "base_args-string",
        "model: {model_id: a/b, base_args: '--x'}\nvariants: {default: {tp: 1}}\n",
        "base_args: must be a list",
    ),
    (
        "scenarios-string",
        "e1: {image: i:1, model: a/b, framework: vllm, scenarios: x}\n",
        "scenarios: must be a mapping",
    ),
    (
        "search-space-string",
        "e1: {image: i:1, model: a/b, framework: vllm, scenarios: {s: [{isl: 1, osl: 1, search-space: x}]}}\n",
        "search-space: must be a list",
    ),
    ("compose-services-list", "services: [vllm]\n", "services: must be a mapping"),
    (
        "k8s-env-string",
        "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - {name: v, image: vllm/vllm-openai:v1, args: [--model, a/b], env: x}\n",
        "env: must be",
    ),
]


@pytest.mark.parametrize(("text", "bit"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_a_wrongly_shaped_file_is_one_located_line(tmp_path, capsys, text, bit):
    _refused(tmp_path, capsys, text, bit)


def test_a_one_megabyte_hostile_file_stays_within_bounded_memory(tmp_path):
    from autobench.errors import RecipeError

    value = "x" * 900_000  # one default of 900 KB, used a hundred times
    src = tmp_path / "big.yaml"
    src.write_text(EUGR + f"defaults:\n  a: {value}\ncommand: vllm serve a/b " + "{a} " * 100 + "\n", encoding="utf-8")
    assert 900_000 < src.stat().st_size <= 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(RecipeError, match="longer than 64 KiB"):
            convert(src)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB"  # main: 90 MB of command, then its shell words


def test_a_mod_holding_a_symbolic_link_is_not_copied(tmp_path, capsys):
    (tmp_path / "run-recipe.py").write_text("# eugr's repository root\n")
    mod = tmp_path / "mods" / "fix"
    mod.mkdir(parents=True)
    (mod / "run.sh").write_text("cat ./passwd\n")
    (mod / "passwd").symlink_to("/etc/passwd")
    code, err, _ = _run(tmp_path, capsys, EUGR + "mods: [mods/fix]\ncommand: vllm serve a/b\n")
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {mod / 'passwd'}: mod fix: passwd is a symbolic link"), err
    assert not (tmp_path / "out").exists()

"""Variants, roles and list appends (issue 13: one file, many cells)."""

from __future__ import annotations

import json

import pytest

from autobench.cli import main
from autobench.compile import compile_recipe, docker_argv
from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.loader import recipe_cells

SHA = "a" * 40
BASE = f"""model:
  repo: org/model
  revision: {SHA}
  served_name: m
container:
  image: vllm/vllm-openai@sha256:{"b" * 64}
  ports: ["8000:8000"]
engine:
  port: 8000
  max_num_seqs: 8
  extra_args: [--enable-auto-tool-choice]
bench:
  dataset: {{kind: random, input_len: 16, output_len: 8}}
  concurrency: 8
"""

MATRIX = """variants:
  fp8:
    model:
      repo: org/model-FP8
    engine:
      kv_cache_dtype: fp8
      extra_args+: [--async-scheduling]
  long:
    engine:
      max_model_len: 131072
roles:
  prefill:
    engine:
      extra_args+: ['--kv-transfer-config', '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}']
    env:
      VLLM_NIXL_SIDE_CHANNEL_PORT: "5600"
  decode:
    engine:
      port: 8100
      extra_args+: ['--kv-transfer-config', '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}']
    container:
      ports: ["8100:8100"]
"""


def test_cells_are_variants_times_roles(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(BASE + MATRIX)
    cells = ["prefill", "decode", "fp8/prefill", "fp8/decode", "long/prefill", "long/decode"]
    assert recipe_cells(path) == cells
    assert main(["variants", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["cell"] for r in rows] == cells
    assert len({r["digest"] for r in rows}) == 6  # every cell is its own recipe
    cell = load_recipe(path, "fp8/decode").recipe
    assert cell.model.repo == "org/model-FP8" and cell.engine.kv_cache_dtype == "fp8"
    assert cell.engine.port == 8100 and cell.cell == "fp8/decode"
    # list append: the base's flag, then the variant's, then the role's
    assert cell.engine.extra_args[:2] == ["--enable-auto-tool-choice", "--async-scheduling"]
    assert cell.engine.extra_args[2] == "--kv-transfer-config" and "kv_consumer" in cell.engine.extra_args[3]
    prefill = load_recipe(path, "prefill").recipe
    assert prefill.env == {"VLLM_NIXL_SIDE_CHANNEL_PORT": "5600"} and prefill.model.repo == "org/model"


def test_compile_variant_and_validate_every_cell(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(BASE + MATRIX)
    out = tmp_path / "s.sh"
    assert main(["compile", str(path), "--variant", "long/decode", "-o", str(out)]) == 0
    assert "--max-model-len 131072" in out.read_text() and "kv_consumer" in out.read_text()
    assert main(["compile", str(path), "--variant", "nope"]) == 2
    assert "cells: prefill, decode" in capsys.readouterr().err
    # a problem in one cell only is found by validate, named with its cell and its line
    path.write_text(BASE + MATRIX.replace("      max_model_len: 131072", "      max_num_seqs: 2"))
    assert main(["validate", str(path)]) == 0  # AB020 is a warning
    err = capsys.readouterr().out
    assert "engine.max_num_seqs: cell long/prefill: 2 < bench.concurrency 8" in err and "m.yaml:24:" in err


def test_a_variant_can_be_compiled_and_argv_matches(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text(BASE + MATRIX.split("roles:")[0])
    assert recipe_cells(path) == ["base", "fp8", "long"]
    loaded = load_recipe(path, "fp8")
    argv = docker_argv(loaded.recipe, home="/h")
    assert "org/model-FP8" in argv and argv[-2:] == ["--enable-auto-tool-choice", "--async-scheduling"]
    assert loaded.digest in compile_recipe(loaded)
    assert load_recipe(path).recipe.cell is None  # the base
    assert load_recipe(path).digest == load_recipe(path, "base").digest


def test_two_variants_with_the_same_name_is_one_located_line(tmp_path, capsys):
    path = tmp_path / "d.yaml"
    path.write_text(BASE + "variants:\n  a:\n    engine: {max_num_seqs: 9}\n  a:\n    engine: {max_num_seqs: 10}\n")
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "d.yaml:18:3" in out[0] and "duplicate key" in out[0]


def test_extends_append_to_a_key_that_is_not_a_list_is_refused(tmp_path, capsys):
    (tmp_path / "base.yaml").write_text(BASE)
    child = tmp_path / "c.yaml"
    child.write_text("extends: base.yaml\nengine:\n  extra_args+: [--x]\ncontainer:\n  image+: [oops]\n")
    with pytest.raises(RecipeError) as err:
        load_recipe(child)
    assert err.value.location == f"{child}:5:3"
    assert "appends to a list, but the inherited image is a str" in err.value.message
    assert main(["compile", str(child), "-o", str(tmp_path / "never.sh")]) == 2
    assert not (tmp_path / "never.sh").exists()


def test_extends_appends_to_a_parent_list_with_positions(tmp_path):
    (tmp_path / "base.yaml").write_text(BASE)
    child = tmp_path / "c.yaml"
    child.write_text("extends: base.yaml\nengine:\n  extra_args+: [--max_num_seqs, '4']\n")
    loaded = load_recipe(child)
    assert loaded.recipe.engine.extra_args == ["--enable-auto-tool-choice", "--max_num_seqs", "4"]
    from autobench.recipe.rules import check

    (f,) = [f for f in check(loaded) if f.code == "AB040"]
    assert f.location.file == child and f.location.line == 3 and f.key == "engine.extra_args[1]"

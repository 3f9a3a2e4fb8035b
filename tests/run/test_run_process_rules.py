"""Issue 13 defects, failing first: the process runtime was held to docker-only rules (a published
port required, a local model directory refused) and stored the docker script as what ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import free_port, ledger_rows, recipe_text, run_cli

from autobench.recipe import load_recipe
from autobench.recipe.loader import local_model_digest
from autobench.recipe.rules import check


def _local_recipe(tmp_path: Path, port: int) -> Path:
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"architectures": ["TinyForCausalLM"]}')
    (model / "model.safetensors").write_bytes(b"\0" * 64)
    from tokenizers import Tokenizer, models, pre_tokenizers  # the bench counts with the model's tokenizer

    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(500)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(model / "tokenizer.json"))
    text = recipe_text(port).replace("  repo: acme/tiny-model\n", f"  repo: {model}\n")
    text = text.replace(f'  ports: ["{port}:{port}"]\n', "")
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return path


def test_container_rules_do_not_apply_to_the_process_runtime(tmp_path):
    path = _local_recipe(tmp_path, 8000)
    loaded = load_recipe(path)
    docker = {f.code for f in check(loaded) if f.severity == "error"}
    assert docker == {"AB022", "AB075"}  # no published port; the container cannot see the model dir
    assert [f for f in check(loaded, runtime="process") if f.severity == "error"] == []


@pytest.mark.integration
def test_process_run_of_a_local_model_without_ports_is_done_and_stores_what_ran(tmp_path):
    port = free_port()
    path = _local_recipe(tmp_path, port)
    res = run_cli(path, tmp_path)
    assert res.returncode == 0, res.stderr + res.stdout
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE"
    model = tmp_path / "models" / "tiny"
    assert row.script_snapshot.splitlines()[-1].startswith("exec ")
    assert f" serve {model} --served-model-name tiny" in row.script_snapshot  # no --revision for a dir
    assert "docker run" not in row.script_snapshot
    digest = local_model_digest(model)
    assert digest and f"local model {model}: content {digest}" in row.notes
    (model / "config.json").write_text('{"architectures": ["OtherForCausalLM"]}')
    assert local_model_digest(model) != digest


def _no_container(tmp_path: Path, port: int) -> Path:
    """The local-model recipe with no container section at all (issue #31: it was required)."""
    path = _local_recipe(tmp_path, port)
    text = path.read_text()
    start = text.index("container:\n")
    end = text.index("secrets:")
    path.write_text(text[:start] + text[end:])
    return path


def test_a_process_only_recipe_needs_no_container_and_validates_for_the_process_runtime(tmp_path, capsys):
    from autobench.cli import main

    path = _no_container(tmp_path, 8000)
    loaded = load_recipe(path)
    assert loaded.recipe.container.image is None
    assert {f.code for f in check(loaded) if f.severity == "error"} == {"AB022", "AB075", "AB076"}
    assert main(["validate", "--no-preflight", "--runtime", "process", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "1 file(s): 0 errors" in err
    assert main(["validate", "--no-preflight", str(path)]) == 2  # docker: no image to run
    out, err = capsys.readouterr()
    assert "AB076 error:" in out and "container: no image is set; the docker runtime needs container.image" in out
    assert main(["compile", str(path)]) == 2  # the docker script cannot be written: one line
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: ") and "--runtime process" in err


@pytest.mark.integration
def test_a_process_only_recipe_runs_as_a_process(tmp_path):
    path = _no_container(tmp_path, free_port())
    res = run_cli(path, tmp_path)
    assert res.returncode == 0, res.stderr + res.stdout
    (row,) = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.image is None

"""`autobench import`: the corpus of peer recipes (tests/recipe/import_corpus, INDEX.md names the
public sources each is modelled on) imports, validates, compiles, and keeps every source flag."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from autobench.cli import main
from autobench.cli.import_cmds import check_imported
from autobench.recipe import load_recipe
from autobench.recipe.importer import convert, missing_flags

CORPUS = Path(__file__).resolve().parent / "import_corpus"
FILES = sorted(p for p in CORPUS.glob("*.yaml") if p.name != "taxonomy.yaml")  # taxonomy: --hardware profiles
#: vllm-project/recipes size TP by the hardware: the tests run them as a user of an H100 node (the
#: corpus's taxonomy.yaml).
HW = {"hardware": "h100"}


def _convert(path: Path) -> list:
    return convert(path, **(HW if path.name.startswith("vllmr-") else {}))


@pytest.fixture(autouse=True)
def _corpus_mods_allowed(monkeypatch):
    """The corpus's mods live beside its sources, outside the folder a recipe is imported into:
    a recipe may name them only from a folder the user allows (autobench.files.confined)."""
    monkeypatch.setenv("AUTOBENCH_ALLOW_DIRS", str(CORPUS))


def test_the_corpus_spans_at_least_20_recipes_in_4_formats():
    formats = Counter(_convert(path)[0].fmt for path in FILES)
    assert len(FILES) >= 20 and len(formats) >= 4, formats
    index = (CORPUS / "INDEX.md").read_text()
    for path in FILES:
        assert path.name in index, f"{path.name} is not in the corpus index"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_imports_validates_compiles_and_keeps_every_flag(tmp_path, path):
    for imported in _convert(path):
        written, texts = check_imported(imported, tmp_path)  # validates and compiles every cell
        assert imported.flags, "no flag was read from the source"
        assert missing_flags(imported, "\n".join(texts)) == []
        assert load_recipe(written).recipe.meta.source.endswith(path.name)


def test_cli_imports_the_whole_corpus_and_prints_what_it_could_not_carry(tmp_path, capsys):
    out = tmp_path / "imported"
    peers = [str(p) for p in FILES if not p.name.startswith("vllmr-")]
    hw = [str(p) for p in FILES if p.name.startswith("vllmr-")]
    assert main(["import", *peers, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert main(["import", *hw, "--hardware", "h100", "-o", str(out)]) == 0
    assert len(list(out.glob("*.yaml"))) == sum(len(_convert(p)) for p in FILES)
    assert (
        "sparkrun-registry-mod.yaml:7: not carried: mod @official/fix-gpt-oss-harmony is a registry reference" in text
    )
    assert "sparkrun-registry-mod.yaml:10: not carried: hard-coded host path /home/nvidia/tiktoken:/tiktoken" in text
    assert "eugr-mods.yaml:8: not carried: mod mods/fix-qwen3-coder-next not found in the source tree" in text
    assert main(["validate", str(out)]) == 0


def _one(path: str):
    (imported,) = _convert(CORPUS / path)
    return imported


def test_placeholders_inside_json_and_doubled_braces_become_a_typed_draft():
    spec = _one("eugr-dflash-doubled-braces.yaml").data["speculative"]
    assert spec == {
        "method": "dflash",
        "model": "z-lab/Qwen3.8-27B-DFlash2",
        "num_speculative_tokens": 8,
        "options": {"draft_tensor_parallel_size": 1},
    }
    spec = _one("sparkrun-qwen36-dflash.yaml").data["speculative"]
    assert spec["model"] == "z-lab/Qwen3.6-27B-DFlash" and spec["num_speculative_tokens"] == 15


def test_mods_builds_multinode_roles_embedding_and_wrapper(tmp_path):
    mods = _one("eugr-mods.yaml")
    (step,) = mods.data["launch"]["setup"]
    written, _ = check_imported(mods, tmp_path)
    assert load_recipe(written).recipe.launch.setup[0].sha256.startswith("sha256:")
    assert mods.data["meta"]["mods"] == ["mods/fix-qwen3-coder-next"]
    assert step == {"mod": "mods/fix-qwen3-chat-template", "name": "fix-qwen3-chat-template"}
    assert (tmp_path / "mods" / "fix-qwen3-chat-template" / "run.sh").is_file()  # copied beside the recipe
    build = _one("eugr-build-vllm-ref.yaml").data["build"]
    assert build["vllm_ref"] == "4c8f2a9e1b7d3c6f5a0e9d8c7b6a5f4e3d2c1b0a" and build["prs"] == [31234]
    assert _one("sparkrun-4node-native.yaml").data["topology"]["nodes"] == 4
    glm = _one("eugr-glm-2node-ray.yaml")  # eugr strips --distributed-executor-backend: no-Ray is its default
    assert glm.data["topology"] == {"nodes": 2, "gpus_per_node": 1, "executor": "native", "hosts": ["node0", "node1"]}
    assert "--distributed-executor-backend" not in json.dumps(glm.data)
    roles = _one("inferencex-disagg-pd.yaml").data["roles"]
    assert roles["decode"]["engine"]["tensor_parallel_size"] == 8
    embed = _one("sparkrun-embedding.yaml").data
    assert embed["engine"]["runner"] == "pooling" and embed["bench"]["endpoint"] == "embeddings"
    wrapper = _one("eugr-wrapper-script.yaml").data["launch"]
    assert wrapper == {"command": ["/workspace/scripts/serve-patched.sh"], "entrypoint": ""}
    pre = _one("sparkrun-pre-exec-taskset.yaml").data
    assert pre["launch"]["prefix"] == ["taskset", "-c", "0-9"] and pre["secrets"] == ["HF_TOKEN"]
    laguna = _one("vllmr-laguna.yaml").data
    assert set(laguna["variants"]) == {"fp8", "spec_decoding"}


BAD = [
    ("not-yaml", "recipe_version: '1'\ncommand: [unclosed\n", "YAML syntax error", ":3:1"),
    ("unknown", "hello: world\n", "unknown peer recipe format", ":1:1"),
    (
        "placeholder",
        "recipe_version: '1'\nname: x\ncontainer: c\nmodel: a/b\ncommand: vllm serve {model} --port {port}\n",
        "placeholder {port} has no default",
        ":5:10",
    ),
    (
        "bad-json",
        "recipe_version: '2'\nmodel: a/b\nruntime: vllm\ncontainer: c\n"
        "defaults:\n  spec: '{\"method\": dflash}'\ncommand: vllm serve {model} --speculative-config '{spec}'\n",
        "the JSON in this string does not parse",
        ":7:10",
    ),
    (
        "topology",
        "recipe_version: '2'\nmodel: a/b\nruntime: vllm\ncontainer: c\ndefaults:\n  tensor_parallel: 1\n"
        "command: vllm serve {model} -pp 3\n",
        "AB064",
        "",
    ),
    (
        "dup-variant",
        "model:\n  model_id: a/b\nvariants:\n  default: {precision: bf16}\n  fp8: {model_id: a/c}\n  fp8: {model_id: a/d}\n",
        "duplicate key",
        ":6:3",
    ),
]


@pytest.mark.parametrize(("text", "bit", "where"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_one_located_line_and_nothing_is_written(tmp_path, capsys, text, bit, where):
    src = tmp_path / "peer.yaml"
    src.write_text(text)
    good = FILES[0]
    out = tmp_path / "out"
    assert main(["import", str(good), str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and bit in err[0], err
    assert f"{src}{where}" in err[0]
    assert not out.exists()  # the good file was not written either


def test_unknown_from_format_is_refused(tmp_path, capsys):
    assert main(["import", str(FILES[0]), "--from", "nope", "-o", str(tmp_path / "o")]) == 2
    assert "Invalid value for '--from'" in capsys.readouterr().err


def test_written_recipes_are_plain_yaml_with_a_header(tmp_path):
    out = tmp_path / "o"
    assert main(["import", str(CORPUS / "vllm-config-gpt-oss-eagle3.yaml"), "-o", str(out)]) == 0
    text = (out / "vllm-config-gpt-oss-eagle3.yaml").read_text()
    assert text.startswith("# Imported by `autobench import` from vllm-config-gpt-oss-eagle3.yaml")
    data = YAML(typ="safe").load(text)
    assert data["speculative"]["options"] == {"draft_tensor_parallel_size": 1}
    assert data["engine"]["enable_prefix_caching"] is False
    assert (
        json.loads(data["engine"]["extra_args"][data["engine"]["extra_args"].index("--max-cudagraph-capture-size") + 1])
        == 2048
    )

"""load_recipe: positions, extends, and one clear line for every bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.loader import MAX_BYTES, RecipeSchemaError

REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"

MINIMAL = "model:\n  repo: org/model\ncontainer:\n  image: img:1\n"

BOMB = "".join(
    f"{k}: &{k} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n"
    for p, k in zip(["", "a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e", "f"], strict=True)
)

# (case id, files {name: content (str or bytes)}, file to load, expected location suffix, message bits)
BAD = [
    ("yaml-syntax", {"r.yaml": "model: [\n"}, "r.yaml", "r.yaml:2:1", ["YAML syntax error"]),
    ("yaml-colon", {"r.yaml": "model:\n  repo: a: b\n"}, "r.yaml", "r.yaml:2:10", ["YAML syntax error"]),
    ("tab", {"r.yaml": "model:\n\trepo: a/b\n"}, "r.yaml", "r.yaml:2:1", ["tab character in indentation"]),
    ("tab-after-spaces", {"r.yaml": "model:\n  \trepo: a/b\n"}, "r.yaml", "r.yaml:2:3", ["tab character"]),
    (
        "duplicate-key",
        {"r.yaml": MINIMAL + "model:\n  repo: c/d\n"},
        "r.yaml",
        "r.yaml:5:1",
        ["model: duplicate key", "line 1"],
    ),
    (
        "duplicate-nested",
        {"r.yaml": "model:\n  repo: a/b\n  repo: c/d\ncontainer: {image: i}\n"},
        "r.yaml",
        "r.yaml:3:3",
        ["repo: duplicate key"],
    ),
    (
        "wrong-type-int",
        {"r.yaml": MINIMAL + "engine:\n  max_num_seqs: lots\n"},
        "r.yaml",
        "r.yaml:6:17",
        ["engine.max_num_seqs:", "valid integer"],
    ),
    (
        "wrong-type-map",
        {"r.yaml": "model: org/model\ncontainer:\n  image: i\n"},
        "r.yaml",
        "r.yaml:1:8",
        ["model:", "dictionary"],
    ),
    (
        "wrong-type-list",
        {"r.yaml": MINIMAL + "  ports: 8000\n"},
        "r.yaml",
        "r.yaml:5:10",
        ["container.ports:", "valid list"],
    ),
    (
        "wrong-type-bool",
        {"r.yaml": MINIMAL.replace("repo: org/model", "repo: org/model\n  trust_remote_code: maybe")},
        "r.yaml",
        "r.yaml:3:22",
        ["model.trust_remote_code:", "boolean"],
    ),
    (
        "bad-literal",
        {"r.yaml": MINIMAL + "engine:\n  dtype: bf16\n"},
        "r.yaml",
        "r.yaml:6:10",
        ["engine.dtype:", "must be one of", "bfloat16"],
    ),
    (
        "bad-repo",
        {"r.yaml": MINIMAL.replace("org/model", "not a repo")},
        "r.yaml",
        "r.yaml:2:9",
        ["model.repo:", "not a Hub repo id"],
    ),
    (
        "unknown-key-did-you-mean",
        {"r.yaml": MINIMAL + "engine:\n  max_num_seq: 8\n"},
        "r.yaml",
        "r.yaml:6:3",
        ["engine.max_num_seq: unknown key", "did you mean 'max_num_seqs'"],
    ),
    (
        "unknown-top-key",
        {"r.yaml": MINIMAL + "benchh:\n  concurrency: 8\n"},
        "r.yaml",
        "r.yaml:5:1",
        ["benchh: unknown key", "did you mean 'bench'"],
    ),
    (
        "unknown-key-no-match",
        {"r.yaml": MINIMAL + "meta:\n  zzzz: 1\n"},
        "r.yaml",
        "r.yaml:6:3",
        ["meta.zzzz: unknown key", "allowed keys here:", "baseline"],
    ),
    (
        "missing-required",
        {"r.yaml": "container: {image: i}\n"},
        "r.yaml",
        "r.yaml:1:1",
        ["model: missing required key 'model'", "at the top level"],
    ),
    (
        "missing-nested",
        {"r.yaml": "model:\n  revision: main\ncontainer: {image: i}\n"},
        "r.yaml",
        "r.yaml:1:1",
        ["model.repo: missing required key 'repo'", "under `model:`"],
    ),
    ("empty-file", {"r.yaml": ""}, "r.yaml", "r.yaml:1:1", ["recipe file is empty"]),
    ("comments-only", {"r.yaml": "# nothing\n\n"}, "r.yaml", "r.yaml:1:1", ["recipe file is empty"]),
    ("not-a-mapping", {"r.yaml": "- a\n- b\n"}, "r.yaml", "r.yaml:1:1", ["must be a mapping", "a list"]),
    ("directory", {"d/x.txt": "x"}, "d", None, ["is a directory"]),
    ("binary", {"r.yaml": b"\x7fELF\x02\x01\x00\x00binary"}, "r.yaml", "r.yaml", ["binary file"]),
    ("not-utf8", {"r.yaml": b"model:\n  repo: \xff\xfe\n"}, "r.yaml", "r.yaml:2:9", ["not UTF-8"]),
    ("alias-bomb", {"r.yaml": BOMB}, "r.yaml", "r.yaml:", ["alias/anchor bomb"]),
    (
        "undefined-alias",
        {"r.yaml": MINIMAL + "engine: *nothing\n"},
        "r.yaml",
        "r.yaml:5:9",
        ["YAML syntax error", "undefined alias"],
    ),
    (
        "custom-tag",
        {"r.yaml": MINIMAL + "meta:\n  notes: !!python/object:os.system x\n"},
        "r.yaml",
        "r.yaml:6:3",
        ["meta.notes: unsupported YAML tag"],
    ),
    ("too-large", {"r.yaml": "# " + "x" * (MAX_BYTES + 10) + "\n"}, "r.yaml", "r.yaml", ["at most"]),
    ("missing-file", {}, "nope.yaml", None, ["recipe file not found"]),
    (
        "extends-missing",
        {"r.yaml": "extends: base.yaml\n" + MINIMAL},
        "r.yaml",
        "r.yaml:1:10",
        ["extends: target not found", "base.yaml"],
    ),
    (
        "extends-cycle",
        {"a.yaml": "extends: b.yaml\n" + MINIMAL, "b.yaml": "extends: a.yaml\n"},
        "a.yaml",
        "b.yaml:1:10",
        ["extends: cycle a.yaml -> b.yaml -> a.yaml"],
    ),
    ("extends-self", {"a.yaml": "extends: a.yaml\n" + MINIMAL}, "a.yaml", "a.yaml:1:10", ["extends: cycle"]),
    (
        "extends-not-string",
        {"a.yaml": "extends: [x]\n" + MINIMAL},
        "a.yaml",
        "a.yaml:1:1",
        ["extends: must be the path"],
    ),
    (
        "extends-directory",
        {"a.yaml": "extends: sub\n" + MINIMAL, "sub/x": ""},
        "a.yaml",
        "a.yaml:1:10",
        ["extends: target", "is a directory"],
    ),
    (
        "error-in-parent-file",
        {"base.yaml": MINIMAL + "engine:\n  max_num_seqs: x\n", "r.yaml": "extends: base.yaml\n"},
        "r.yaml",
        "base.yaml:6:17",
        ["engine.max_num_seqs:"],
    ),
    (
        "bad-name-from-stem",
        {"Bad Name.yaml": MINIMAL},
        "Bad Name.yaml",
        "Bad Name.yaml:1:1",
        ["name:", "does not match", "file stem"],
    ),
    (
        "nan",
        {"r.yaml": MINIMAL + "engine:\n  gpu_memory_utilization: .nan\n"},
        "r.yaml",
        "r.yaml:",
        ["not a usable number"],
    ),
]


def _write(tmp_path: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize(("files", "target", "where", "bits"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_gives_one_located_line(tmp_path, files, target, where, bits):
    _write(tmp_path, files)
    with pytest.raises(RecipeError) as info:
        load_recipe(tmp_path / target)
    text = str(info.value)
    assert "\n" not in text
    assert "(hint: " in text, text
    if where is not None:
        assert info.value.location is not None
        assert info.value.location.startswith(str(tmp_path)), text
        assert (info.value.location + ":").startswith(str(tmp_path / where)) or where.endswith(":"), text
        if where.endswith(":"):
            assert info.value.location.startswith(str(tmp_path / where[:-1])), text
        else:
            assert info.value.location == str(tmp_path / where), text
    for bit in bits:
        assert bit in text, f"{bit!r} not in {text!r}"


def test_schema_error_lists_every_problem(tmp_path):
    _write(tmp_path, {"r.yaml": MINIMAL + "engine:\n  max_num_seqs: x\n  port: y\n"})
    with pytest.raises(RecipeSchemaError) as info:
        load_recipe(tmp_path / "r.yaml")
    assert "(and 1 more problem)" in str(info.value)
    assert [p[1] for p in info.value.problems] == ["engine.port", "engine.max_num_seqs"] or sorted(
        p[1] for p in info.value.problems
    ) == ["engine.max_num_seqs", "engine.port"]


def test_seed_recipes_load_with_positions():
    loaded = load_recipe(DFLASH)
    r = loaded.recipe
    assert r.name == "qwen3-5-122b-a10b-vllm-int4-autoround-dflash"
    assert r.speculative.revision == "6c7242c934a9870d7c59c05240bdbb2467cc1394"
    assert r.meta.baseline == load_recipe(BASE).recipe.name
    assert loaded.files == [DFLASH, BASE]
    # positions point at the file where the effective value was written
    spec = loaded.position("speculative", "revision")
    assert spec.file == DFLASH and DFLASH.read_text().splitlines()[spec.line - 1].strip().startswith("revision:")
    seqs = loaded.position("engine", "max_num_seqs")
    assert seqs.file == BASE
    assert BASE.read_text().splitlines()[seqs.line - 1][seqs.col - 1 :].startswith("max_num_seqs: 8")
    vol = loaded.value_position("container", "volumes", 0)
    assert BASE.read_text().splitlines()[vol.line - 1][vol.col - 1 :].startswith("~/.cache/huggingface")
    # the child's overridden list replaced the parent's; inherited ones stayed
    assert "dflash" in r.meta.tags and r.meta.mods == ["fix-qwen3.5-enhanced-chat-template"]
    assert loaded.position("meta", "tags").file == DFLASH
    assert loaded.position("meta", "mods").file == BASE


def test_digest_is_stable_and_content_based(tmp_path):
    a = load_recipe(DFLASH)
    b = load_recipe(DFLASH)
    assert a.digest == b.digest and a.digest.startswith("sha256:") and len(a.digest) == 71
    assert a.digest != load_recipe(BASE).digest
    # the same content elsewhere (no extends, comments differ) has the same digest
    import json

    flat = {k: v for k, v in a.data.items() if k != "extends"}
    (tmp_path / "copy.yaml").write_text("# a copy\n" + json.dumps(flat), encoding="utf-8")
    assert load_recipe(tmp_path / "copy.yaml").digest == a.digest


def test_extends_merge_semantics(tmp_path):
    _write(
        tmp_path,
        {
            "base/parent.yaml": (
                "name: parent-name\n"
                + MINIMAL
                + "  ports: ['8000:8000']\nengine:\n  max_num_seqs: 4\n  dtype: bfloat16\n"
                + "env:\n  A: '1'\n  B: '2'\nspeculative:\n  method: ngram\n  num_speculative_tokens: 3\n"
            ),
            "child.yaml": (
                "extends: base/parent.yaml\n"
                "engine:\n  max_num_seqs: 16\n"
                "env:\n  B: '3'\n  C: '4'\n"
                "container:\n  ports: ['9000:8000']\n"
                "speculative: null\n"
            ),
        },
    )
    loaded = load_recipe(tmp_path / "child.yaml")
    r = loaded.recipe
    assert r.name == "child"  # never inherited: the child's stem
    assert r.engine.max_num_seqs == 16 and r.engine.dtype == "bfloat16"
    assert r.env == {"A": "1", "B": "3", "C": "4"}
    assert r.container.ports == ["9000:8000"] and r.container.image == "img:1"
    assert r.speculative is None  # null deletes the inherited block
    assert loaded.position("speculative") is None
    assert loaded.position("env", "A").file == tmp_path / "base/parent.yaml"
    assert loaded.position("env", "B").file == tmp_path / "child.yaml"
    assert loaded.position("container", "ports", 0).file == tmp_path / "child.yaml"
    assert loaded.position("container", "image").file == tmp_path / "base/parent.yaml"


def test_merge_key_positions(tmp_path):
    _write(tmp_path, {"r.yaml": MINIMAL + "x_common: &c\n  max_num_seqs: 8\nengine:\n  <<: *c\n  port: 9\n"})
    with pytest.raises(RecipeError, match="x_common: unknown key"):
        load_recipe(tmp_path / "r.yaml")
    _write(tmp_path, {"s.yaml": "model: &m\n  repo: a/b\ncontainer: {image: i}\nbench:\n  model: qwen\n"})
    assert load_recipe(tmp_path / "s.yaml").position("bench", "model").line == 5


def test_yaml_values_are_plain(tmp_path):
    _write(tmp_path, {"r.yaml": MINIMAL + "env:\n  N: 1\n  B: true\n  D: 2024-01-02\nmeta:\n  notes: 0x10\n"})
    with pytest.raises(RecipeError, match="meta.notes"):
        load_recipe(tmp_path / "r.yaml")
    _write(tmp_path, {"r.yaml": MINIMAL + "env:\n  N: 1\n  B: true\n  D: 2024-01-02\n"})
    assert load_recipe(tmp_path / "r.yaml").recipe.env == {"N": "1", "B": "true", "D": "2024-01-02"}

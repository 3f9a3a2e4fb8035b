"""``bench.dataset`` as a source (issue #33): a local path, or a Hub dataset repo + file +
revision (+ sha256), and a field mapping for jsonl/parquet records.  Each refusal is one
located line (the key's file:line:col) naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.schema import LATER_KEYS, Dataset, trim_later_defaults

SHA = "a" * 40
HEAD = f"""name: r
model:
  repo: org/model
  revision: {SHA}
bench:
  dataset:
"""


def load(tmp_path: Path, body: str) -> Dataset:
    path = tmp_path / "r.yaml"
    path.write_text(HEAD + body, encoding="utf-8")
    return load_recipe(path).recipe.bench.dataset


def refused(tmp_path: Path, body: str) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        load(tmp_path, body)
    return info.value


def test_a_hub_dataset_with_a_mapping_loads(tmp_path):
    d = load(
        tmp_path,
        f"    kind: parquet\n    repo: org/data\n    file: data/test-00000-of-00001.parquet\n"
        f"    revision: {SHA}\n    sha256: {'b' * 64}\n    fields: {{prompt: question, category: task, max_tokens: n}}\n",
    )
    assert (d.kind, d.repo, d.file, d.revision, d.sha256) == (
        "parquet",
        "org/data",
        "data/test-00000-of-00001.parquet",
        SHA,
        "b" * 64,
    )
    assert d.fields is not None
    assert (d.fields.prompt, d.fields.turns, d.fields.category, d.fields.max_tokens) == ("question", None, "task", "n")
    assert d.path is None


def test_a_turns_mapping_loads(tmp_path):
    d = load(tmp_path, "    kind: jsonl\n    path: chats.jsonl\n    fields: {turns: messages}\n")
    assert d.fields is not None and (d.fields.turns, d.fields.prompt) == ("messages", None)


def test_a_local_file_may_carry_its_sha256(tmp_path):
    d = load(tmp_path, f"    kind: jsonl\n    path: p.jsonl\n    sha256: {'c' * 64}\n")
    assert (d.path, d.sha256, d.repo) == ("p.jsonl", "c" * 64, None)


@pytest.mark.parametrize(
    ("body", "where", "words"),
    [
        ("    repo: org/data\n", "r.yaml:6:3", "a dataset repo needs file: the file inside the repo to read"),
        (
            "    path: x.json\n    repo: org/data\n    file: a.json\n",
            "r.yaml:6:3",
            "give either path (a local file) or repo + file (a Hub dataset), not both",
        ),
        ("    path: x.json\n    file: a.json\n", "r.yaml:6:3", "file and revision belong to a Hub dataset"),
        ("    path: x.json\n    revision: main\n", "r.yaml:6:3", "file and revision belong to a Hub dataset"),
        ("    kind: random\n    repo: org/d\n    file: a\n", "r.yaml:6:3", "a random dataset reads no file"),
        (f"    kind: random\n    sha256: {'d' * 64}\n", "r.yaml:6:3", "a random dataset reads no file"),
        ("    path: x.json\n    fields: {prompt: p}\n", "r.yaml:6:3", "a sharegpt dataset has its own shape"),
        ("    kind: jsonl\n    path: x\n    fields: {category: c}\n", "r.yaml:9:5", "map exactly one of prompt"),
        ("    kind: jsonl\n    path: x\n    fields: {prompt: p, turns: t}\n", "r.yaml:9:5", "map exactly one of"),
        ("    kind: jsonl\n    path: x\n    fields: {prompts: p}\n", "r.yaml:9:14", "prompts"),
        ("    repo: org/data\n    file: ../a.json\n", "r.yaml:8:11", "is not a relative path inside the repo"),
        ("    repo: org/data\n    file: /etc/passwd\n", "r.yaml:8:11", "is not a relative path inside the repo"),
        ("    repo: org/data\n    file: a//b.json\n", "r.yaml:8:11", "is not a relative path inside the repo"),
        ("    repo: org/data\n    file: a/./b.json\n", "r.yaml:8:11", "is not a relative path inside the repo"),
        ('    repo: org/data\n    file: "a\\\\b.json"\n', "r.yaml:8:11", "is not a relative path inside the repo"),
        ('    repo: org/data\n    file: "a\\tb.json"\n', "r.yaml:8:11", "control character"),
        ("    repo: not-a-repo\n    file: a.json\n", "r.yaml:7:11", "bench.dataset.repo"),
        ("    repo: org/data\n    file: a.json\n    sha256: abc\n", "r.yaml:9:13", "bench.dataset.sha256"),
        (f"    repo: org/data\n    file: a.json\n    sha256: {'A' * 64}\n", "r.yaml:9:13", "bench.dataset.sha256"),
        ("    kind: csv\n    path: a.csv\n", "r.yaml:7:11", "bench.dataset.kind"),
    ],
)
def test_each_bad_source_is_one_located_line(tmp_path, body, where, words):
    err = refused(tmp_path, body)
    assert err.location is not None and err.location.endswith(where), err.location
    assert words in err.message, err.message
    assert "\n" not in err.message


def test_the_new_keys_leave_an_old_recipe_digest_alone():
    """Every new key holds a default an old recipe leaves out: trimmed from the digested data."""
    for key in ("repo", "file", "revision", "sha256", "fields"):
        assert ("bench", "dataset", key) in LATER_KEYS
    data = {"bench": {"dataset": Dataset.model_validate({"path": "x.json"}).model_dump(mode="json")}}
    assert trim_later_defaults(data) == {
        "bench": {"dataset": {"kind": "sharegpt", "path": "x.json", "input_len": None, "output_len": None}}
    }

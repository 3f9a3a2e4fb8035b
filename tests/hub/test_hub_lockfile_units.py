"""The lock's surgical edit of a recipe, one layout at a time: every byte but the pinned value
survives (comments, quoting, line breaks), and the lock file's reading rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.errors import HubError, RecipeError
from autobench.hub.lockfile import (
    RefSpec,
    dump_lock,
    frozen_label_at,
    lock_entry,
    lock_path_for,
    read_lock,
    set_revision,
    yaml_lines,
    yaml_scalar,
)

SHA = "a" * 40
PIN = f"revision: {SHA}  # frozen: main"
KEYS = ("model", "revision")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "name: x\nmodel:\n  repo: org/m\n  revision: main  # keep me\n  other: 1\n",
            f"name: x\nmodel:\n  repo: org/m\n  revision: {SHA}  # frozen: main; keep me\n  other: 1\n",
        ),
        (
            'model:\n  repo: org/m\n  revision: "dev"   # frozen: old; note\n',
            f"model:\n  repo: org/m\n  {PIN}; note\n",
        ),
        ("model:\n  repo: org/m\n  revision: 'a b'\n", f"model:\n  repo: org/m\n  {PIN}\n"),
        ("model:\n  repo: org/m\nbench: {}\n", f"model:\n  repo: org/m\n  {PIN}\nbench: {{}}\n"),
        ("model:\n  repo: org/m", f"model:\n  repo: org/m\n  {PIN}\n"),
        ("model:\r\n  repo: org/m\r\n  revision: main\r\n", f"model:\r\n  repo: org/m\r\n  {PIN}\r\n"),
        ("model:\r\n  repo: org/m\r\n", f"model:\r\n  repo: org/m\r\n  {PIN}\r\n"),
        ("model:\n    repo: org/m\n    revision: main\n", f"model:\n    repo: org/m\n    {PIN}\n"),
        ("model: {repo: org/m, revision: main}\n", f"model: {{repo: org/m, revision: {SHA}}}\n"),
        ("model: {repo: org/m}\n", f"model: {{repo: org/m, revision: {SHA}}}\n"),
        ("model:\n  revision: main\n  repo: org/m\n", f"model:\n  {PIN}\n  repo: org/m\n"),
    ],
)
def test_only_the_revision_changes(tmp_path: Path, before: str, after: str):
    path = tmp_path / "r.yaml"
    path.write_bytes(before.encode())
    assert set_revision(path, KEYS, "repo", SHA, "main") is True
    assert path.read_bytes().decode() == after
    assert set_revision(path, KEYS, "repo", SHA, "main") is False  # pinned already: nothing to write
    assert not list(tmp_path.glob(".*autobench-tmp"))  # the atomic write left no temporary file


def test_an_all_digit_sha_is_quoted_so_it_reads_back_as_text(tmp_path: Path):
    digits = "1" * 40
    assert yaml_scalar(digits) == f'"{digits}"' and yaml_scalar(SHA) == SHA
    path = tmp_path / "r.yaml"
    path.write_text("model:\n  repo: org/m\n  revision: main\n")
    set_revision(path, KEYS, "repo", digits, "v1")
    assert path.read_text() == f'model:\n  repo: org/m\n  revision: "{digits}"  # frozen: v1\n'


def test_what_cannot_be_pinned_is_refused_and_the_file_left_alone(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text("model: org/m\n")
    with pytest.raises(RecipeError, match="model is not a mapping"):
        set_revision(path, KEYS, "repo", SHA, "main")
    path.write_text("model:\n  tokenizer: x\n")
    with pytest.raises(RecipeError, match="no repo key beside it"):
        set_revision(path, KEYS, "repo", SHA, "main")
    assert path.read_text() == "model:\n  tokenizer: x\n"


def test_the_frozen_label_is_read_from_the_value_line(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text(f"model:\n  repo: org/m  # frozen: not-this\n  revision: {SHA}  #frozen:v2.1;x\n")
    assert frozen_label_at(path, KEYS) == "v2.1"
    path.write_text(f"model:\n  repo: org/m\n  revision: {SHA}  # a note\n")
    assert frozen_label_at(path, KEYS) is None
    assert frozen_label_at(path, ("model", "tokenizer_revision")) is None
    assert frozen_label_at(path, ("bench", "revision")) is None


def test_yaml_lines_split_only_where_yaml_does():
    text = "a: 1\r\nb: '\u2028\x85'\rc: 3\nd"
    assert yaml_lines(text) == ["a: 1\r\n", "b: '\u2028\x85'\r", "c: 3\n", "d"]
    assert yaml_lines("") == [] and yaml_lines("x\n") == ["x\n"]


def test_the_lock_file_beside_the_recipe_and_its_reading_rules(tmp_path: Path):
    recipe = tmp_path / "r.yaml"
    assert lock_path_for(recipe) == tmp_path / "r.yaml.lock.json"
    assert read_lock(recipe) is None
    lock = lock_path_for(recipe)
    lock.write_text("{not json")
    with pytest.raises(HubError, match="unreadable lock file"):
        read_lock(recipe)
    for text in ("[]", '{"references": []}', "{}"):
        lock.write_text(text)
        with pytest.raises(HubError, match="not an autobench lock file"):
            read_lock(recipe)
    data = {"autobench_lock": 1, "references": {"model": {"repo": "org/m", "sha": SHA}}}
    lock.write_text(json.dumps(data))
    assert read_lock(recipe) == data


def test_a_lock_entry_counts_only_for_the_same_repo():
    spec = RefSpec("model", "org/m", SHA, ("model", "repo"), ("model", "revision"))
    lock = {"references": {"model": {"repo": "org/m", "sha": SHA}, "draft": {"repo": "org/m"}}}
    assert lock_entry(lock, spec) == {"repo": "org/m", "sha": SHA}
    assert lock_entry({"references": {"model": {"repo": "org/other"}}}, spec) is None
    assert lock_entry({"references": {"model": "org/m"}}, spec) is None
    assert lock_entry(None, spec) is None and lock_entry({}, spec) is None
    assert spec.key == "model.revision"


def test_the_lock_text_is_sorted_indented_and_redacted(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-value-123")
    text = dump_lock({"b": "x tok-value-123 y", "a": {"é": "hf_" + "A" * 30}})
    assert text == '{\n  "a": {\n    "é": "[REDACTED:hf_token]"\n  },\n  "b": "x [REDACTED:MY_SERVICE_TOKEN] y"\n}\n'

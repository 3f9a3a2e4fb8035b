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
        # the last line without its line break: the break is added and nothing else moves
        ("x:   1  # c\nmodel:\n  repo: org/m", f"x:   1  # c\nmodel:\n  repo: org/m\n  {PIN}\n"),
        ("x:   1\rmodel:\r  repo: org/m", f"x:   1\rmodel:\r  repo: org/m\r  {PIN}\r"),
        ("model:\r\n  repo: org/m\r\n  revision: main\r\n", f"model:\r\n  repo: org/m\r\n  {PIN}\r\n"),
        ("model:\r\n  repo: org/m\r\n", f"model:\r\n  repo: org/m\r\n  {PIN}\r\n"),
        ("model:\n    repo: org/m\n    revision: main\n", f"model:\n    repo: org/m\n    {PIN}\n"),
        ("model: {repo: org/m, revision: main}\n", f"model: {{repo: org/m, revision: {SHA}}}\n"),
        ("model: {repo: org/m}\n", f"model: {{repo: org/m, revision: {SHA}}}\n"),
        ("model:\n  revision: main\n  repo: org/m\n", f"model:\n  {PIN}\n  repo: org/m\n"),
        # a value spanning lines cannot be spliced: the dump writes it, on one line
        (
            'model:\n  repo: org/m\n  revision: "ma\n    in"  # old\n  x: 1\n',
            f"model:\n  repo: org/m\n  {PIN}\n  x: 1\n",
        ),
        ("model:\n  repo: org/m\n  revision: ma\n    in\n", f"model:\n  repo: org/m\n  {PIN}\n"),
        ("model:\n  repo: org/m\n  revision: |\n    main\nname: 'x'\n", f"model:\n  repo: org/m\n  {PIN}\nname: 'x'\n"),
        ('model:\n  repo: "org/m"\n  revision: >-\n    main\n', f'model:\n  repo: "org/m"\n  {PIN}\n'),
        # a value on the line after its key is spliced there
        (
            "model:\n  repo: org/m\n  revision:\n    main\n",
            f"model:\n  repo: org/m\n  revision:\n    {SHA}  # frozen: main\n",
        ),
        # an empty value: written by the dump
        ("model:\n  repo: org/m\n  revision:\n  x: 1\n", f"model:\n  repo: org/m\n  {PIN}\n  x: 1\n"),
        ("model:\n  repo: org/m\n  revision:\n", f"model:\n  repo: org/m\n  {PIN}\n"),
        ("model:\n  repo: org/m\n  revision:", f"model:\n  repo: org/m\n  {PIN}\n"),
        # a '#' inside the value is no comment
        ('model:\n  repo: org/m\n  revision: "dev#2"  # note\n', f"model:\n  repo: org/m\n  {PIN}; note\n"),
        ("model:\n  repo: org/m\n  revision: 'dev#2'\n", f"model:\n  repo: org/m\n  {PIN}\n"),
        # old Mac line breaks
        ("model:\r  repo: org/m\r", f"model:\r  repo: org/m\r  {PIN}\r"),
        ("model:\r  repo: org/m\r  revision: main\r", f"model:\r  repo: org/m\r  {PIN}\r"),
        # flow mappings: one line is dumped (no room for a comment), one spread over lines is spliced
        ("model: {repo: org/m}", f"model: {{repo: org/m, revision: {SHA}}}\n"),
        ("model: {repo: org/m, tokenizer: t}\n", f"model: {{repo: org/m, revision: {SHA}, tokenizer: t}}\n"),
        ("model: {repo: org/m}\r\nx: 1\r\n", f"model: {{repo: org/m, revision: {SHA}}}\r\nx: 1\r\n"),
        ("model: {repo: org/m,\n  revision: main\n}\n", f"model: {{repo: org/m,\n  {PIN}\n}}\n"),
        ("model: {repo: org/m,\n  tokenizer: t}\n", f"model: {{repo: org/m, revision: {SHA}, tokenizer: t}}\n"),
        # a revision with no repo key beside it (the repo is inherited) is pinned where it is
        ("model:\n  revision: main\n", f"model:\n  {PIN}\n"),
        ("model:\n  repo: org/m\n  revision: main\n", f"model:\n  repo: org/m\n  {PIN}\n"),
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


def test_an_unreadable_recipe_is_one_error_naming_the_file(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_bytes(b"model:\n  repo: \xff\n")
    with pytest.raises(RecipeError) as info:
        set_revision(path, KEYS, "repo", SHA, "main")
    assert str(info.value) == f"{path}: cannot read recipe: not UTF-8 text"
    path.write_text("model: [repo\n")
    with pytest.raises(RecipeError) as info:
        frozen_label_at(path, KEYS)
    assert str(info.value) == f"{path}: not valid YAML: while parsing a flow sequence"
    with pytest.raises(RecipeError) as info:
        frozen_label_at(tmp_path, KEYS)
    assert str(info.value).startswith(f"{tmp_path}: recipe is a directory, not a regular file")


def test_a_splice_that_does_not_read_back_falls_back_and_a_dump_that_does_not_is_refused(tmp_path, monkeypatch):
    import autobench.hub.lockfile as lockfile

    path = tmp_path / "r.yaml"
    before = "model:\n  repo: org/m\n  revision: main\n"
    path.write_text(before)
    monkeypatch.setattr(lockfile, "_redump", lambda *args: "model:\n  repo: org/m\n  revision: other\n")
    monkeypatch.setattr(lockfile, "_splice", lambda *args: "model:\n  repo: org/m\n  revision: [\n")
    with pytest.raises(RecipeError) as info:
        set_revision(path, KEYS, "repo", SHA, "main")
    assert str(info.value) == f"{path}: internal: pinning model.revision did not read back as {SHA}"
    # a splice that parses but changes another value is not taken either
    monkeypatch.setattr(lockfile, "_splice", lambda *args: f"model:\n  repo: org/x\n  revision: {SHA}\n")
    with pytest.raises(RecipeError, match="did not read back"):
        set_revision(path, KEYS, "repo", SHA, "main")
    assert path.read_text() == before
    monkeypatch.setattr(lockfile, "_redump", lambda *args: f"model:\n  repo: org/m\n  revision: {SHA}\n")
    assert set_revision(path, KEYS, "repo", SHA, "main") is True
    assert path.read_text() == f"model:\n  repo: org/m\n  revision: {SHA}\n"


def test_a_failed_write_is_one_error_and_leaves_the_recipe(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text("model:\n  repo: org/m\n")
    (tmp_path / ".r.yaml.autobench-tmp").mkdir()  # the temporary file cannot be written
    with pytest.raises(RecipeError) as info:
        set_revision(path, KEYS, "repo", SHA, "main")
    assert str(info.value) == f"{path}: cannot write: Is a directory"
    assert path.read_text() == "model:\n  repo: org/m\n"


def test_the_frozen_label_of_an_empty_value_at_the_end_is_none(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text("model:\n  repo: org/m\n  revision:\n")
    assert frozen_label_at(path, KEYS) is None
    path.write_text(f"model:\n  repo: org/m\n  revision: {SHA}  # frozen: v3\r\n")
    assert frozen_label_at(path, KEYS) == "v3"


def test_defining_file_trusts_positions_then_walks_extends(tmp_path: Path, monkeypatch):
    from types import SimpleNamespace

    from autobench.hub.lockfile import defining_file

    child, base = tmp_path / "child.yaml", tmp_path / "base.yaml"
    child.write_text("extends: base.yaml\nmodel:\n  tokenizer: org/revision-t\n")
    base.write_text("model:\n  repo: org/m\n  revision: main\n")
    walk = SimpleNamespace(path=child, positions={})
    assert defining_file(walk, ("model", "revision")) == base
    assert defining_file(walk, ("model", "tokenizer")) == child
    assert defining_file(walk, ("model", "tokenizer", "revision")) is None  # a string is no mapping
    # the loader's positions win: no file is read
    placed = SimpleNamespace(path=child, positions={("model", "revision"): SimpleNamespace(file=str(child))})
    assert defining_file(placed, ("model", "revision")) == child
    # extends to a missing file, a cycle, a path from the home folder
    child.write_text("extends: gone.yaml\nmodel:\n  tokenizer: t\n")
    assert defining_file(walk, ("model", "revision")) is None
    child.write_text("extends: base.yaml\n")
    base.write_text("extends: child.yaml\n")
    assert defining_file(walk, ("model", "revision")) is None
    monkeypatch.setenv("HOME", str(tmp_path))
    child.write_text("extends: ~/home.yaml\n")
    (tmp_path / "home.yaml").write_text("model:\n  revision: v1\n")
    assert defining_file(walk, ("model", "revision")) == tmp_path / "home.yaml"


def test_the_lock_file_errors_say_how_to_recover(tmp_path: Path):
    recipe = tmp_path / "r.yaml"
    lock = lock_path_for(recipe)
    lock.write_text("[]")
    with pytest.raises(HubError) as info:
        read_lock(recipe)
    assert str(info.value) == f"{lock}: not an autobench lock file (hint: delete it and run `autobench lock` again)"
    lock.write_text("{")
    with pytest.raises(HubError) as info:
        read_lock(recipe)
    assert str(info.value) == (
        f"{lock}: unreadable lock file (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
        " (hint: delete it and run `autobench lock` again)"
    )


def test_pin_label_branch_comment_lock_file_or_assumed_main(tmp_path: Path):
    from types import SimpleNamespace

    from autobench.hub.lockfile import pin_label

    path = tmp_path / "r.yaml"
    path.write_text(f"model:\n  repo: org/m\n  revision: {SHA}  # frozen: v7\n")
    loaded = SimpleNamespace(path=path, positions={})

    def spec(revision):
        return RefSpec("model", "org/m", revision, ("model", "repo"), ("model", "revision"))

    entry = {"repo": "org/m", "sha": SHA, "label": "v2", "label_assumed": True}
    lock = {"references": {"model": entry}}
    assert pin_label(loaded, spec("dev"), lock) == ("dev", False)  # a branch or tag is its own label
    assert pin_label(loaded, spec(None), lock) == ("main", True)
    assert pin_label(loaded, spec(SHA), lock) == ("v7", False)  # the comment first
    path.write_text(f"model:\n  repo: org/m\n  revision: {SHA}\n")
    assert pin_label(loaded, spec(SHA), lock) == ("v2", True)  # then the lock file
    assert pin_label(loaded, spec(SHA), {"references": {"model": {**entry, "label_assumed": None}}}) == ("v2", False)
    del entry["label_assumed"]
    assert pin_label(loaded, spec(SHA), lock) == ("v2", False)
    assert pin_label(loaded, spec(SHA), {"references": {"model": {**entry, "sha": "b" * 40}}}) == ("main", True)
    assert pin_label(loaded, spec(SHA), {"references": {"model": {**entry, "label": ""}}}) == ("main", True)
    assert pin_label(loaded, spec(SHA), None) == ("main", True)
    path.write_text("model:\n  repo: org/m\n")  # the sha is written nowhere this walk finds
    assert pin_label(loaded, spec(SHA), lock) == ("v2", False)


# -- lock_recipe with a stand-in resolver: what it asks, writes and returns ----------------------

OTHER = "b" * 40
MOVED = "c" * 40


class StubResolver:
    """Resolves every label to SHA (``moved``: where labels point now); records every call."""

    def __init__(self, *, offline=False, moved=None, info=None, fail=None):
        from types import SimpleNamespace

        self.settings = SimpleNamespace(offline=offline)
        self.moved, self.info, self.fail = moved, info, fail
        self.calls: list[tuple] = []

    def resolve(self, repo, revision, *, label=None):
        from autobench.hub.resolve import Resolved

        self.calls.append(("resolve", repo, revision, label))
        if self.fail == "resolve":
            raise HubError(f"{repo}: no such repo")
        sha = revision if revision and len(revision) == 40 else SHA
        return Resolved(
            repo, label or revision, sha, {"num_hidden_layers": 2}, "2026-12-01T00:00:00Z", "hub", self.info
        )

    def sha(self, repo, label, repo_type="model"):
        self.calls.append(("sha", repo, label))
        if self.fail == "sha":
            raise HubError("gone")
        return self.moved or SHA

    def config(self, repo, sha, *, label=None):
        self.calls.append(("config", repo, sha, label))
        if self.fail == "config":
            raise HubError("no config")
        return {}


def test_lock_with_a_stand_in_resolver_writes_exactly_this(tmp_path: Path):
    from autobench.hub.lockfile import lock_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "model:\n  repo: org/m\n  tokenizer_revision: dev\ncontainer:\n  image: x\n"
        "speculative:\n  method: eagle\n  model: org/d\n"
    )
    resolver = StubResolver()
    result = lock_recipe(recipe, resolver)
    assert resolver.calls == [
        ("resolve", "org/m", "main", "main"),
        ("resolve", "org/m", "dev", "dev"),
        ("resolve", "org/d", None, "main"),
    ]
    assert recipe.read_text() == (
        f"model:\n  repo: org/m\n  revision: {SHA}  # frozen: main\n  tokenizer_revision: {SHA}  # frozen: dev\n"
        f"container:\n  image: x\nspeculative:\n  method: eagle\n  model: org/d\n  revision: {SHA}  # frozen: main\n"
    )
    assert result.edited == [recipe.resolve()]  # once, though three pins changed it
    assert [(p.spec.kind, p.label, p.label_assumed, p.previous, p.changed) for p in result.pins] == [
        ("model", "main", False, "main", True),
        ("tokenizer", "dev", False, "dev", True),
        ("draft", "main", True, None, True),
    ]
    lock = json.loads((tmp_path / "r.yaml.lock.json").read_text())
    assert sorted(lock) == ["autobench_lock", "recipe", "references"]
    assert (lock["autobench_lock"], lock["recipe"]) == (1, "r.yaml")
    assert lock["references"]["tokenizer"] == {
        "repo": "org/m",
        "label": "dev",
        "label_assumed": False,
        "sha": SHA,
        "resolved_at": "2026-12-01T00:00:00Z",
        "resolved_from": "hub",
        "key": "model.tokenizer_revision",
        "file": "r.yaml",
        "fingerprint": lock["references"]["model"]["fingerprint"],
        "trust": lock["references"]["model"]["trust"],
    }
    assert lock["references"]["model"]["fingerprint"]["num_hidden_layers"] == 2
    assert lock["references"]["draft"]["key"] == "speculative.revision"
    assert result.to_json() == {
        "recipe": str(recipe),
        "lock_file": str(tmp_path / "r.yaml.lock.json"),
        "edited": [str(recipe.resolve())],
        "parents_edited": [],
        "failed": [],
        "pins": [
            {
                "kind": "model",
                "repo": "org/m",
                "label": "main",
                "label_assumed": False,
                "sha": SHA,
                "previous": "main",
                "key": "model.revision",
                "label_now": SHA,
                "file": str(recipe.resolve()),
            },
            {
                "kind": "tokenizer",
                "repo": "org/m",
                "label": "dev",
                "label_assumed": False,
                "sha": SHA,
                "previous": "dev",
                "key": "model.tokenizer_revision",
                "label_now": SHA,
                "file": str(recipe.resolve()),
            },
            {
                "kind": "draft",
                "repo": "org/d",
                "label": "main",
                "label_assumed": True,
                "sha": SHA,
                "previous": None,
                "key": "speculative.revision",
                "label_now": SHA,
                "file": str(recipe.resolve()),
            },
        ],
        "images": [],
    }
    # locked again: nothing is edited, no Hub call but the kept pins' labels
    resolver = StubResolver()
    again = lock_recipe(recipe, resolver)
    assert again.edited == [] and [p.changed for p in again.pins] == [False, False, False]
    assert [c[0] for c in resolver.calls] == ["resolve", "sha", "resolve", "sha", "resolve", "sha"]


def test_a_kept_pin_notes_where_its_label_points_now(tmp_path: Path):
    from autobench.hub.lockfile import lock_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: org/m\n  revision: {OTHER}  # frozen: v1\ncontainer:\n  image: x\n")

    def label_now(**kwargs):
        resolver = StubResolver(**kwargs)
        pins = lock_recipe(recipe, resolver).pins
        return pins[0].label_now, [c for c in resolver.calls if c[0] != "resolve"]

    assert label_now() == (SHA, [("sha", "org/m", "v1"), ("config", "org/m", SHA, "v1")])  # moved: cached
    assert label_now(moved=OTHER) == (OTHER, [("sha", "org/m", "v1")])  # still there
    assert label_now(fail="sha") == (None, [("sha", "org/m", "v1")])  # the branch is gone
    assert label_now(fail="config") == (SHA, [("sha", "org/m", "v1"), ("config", "org/m", SHA, "v1")])
    assert label_now(offline=True) == (OTHER, [])  # offline: the Hub is not asked
    entry = json.loads((tmp_path / "r.yaml.lock.json").read_text())["references"]["model"]
    assert (entry["sha"], entry["label"], entry["label_assumed"]) == (OTHER, "v1", False)


def test_trust_facts_are_kept_only_offline_and_for_the_same_sha(tmp_path: Path):
    from types import SimpleNamespace

    from autobench.hub.lockfile import lock_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: org/m\n  revision: {OTHER}\ncontainer:\n  image: x\n")
    lock = tmp_path / "r.yaml.lock.json"
    old = {"repo": "org/m", "sha": OTHER, "label": "v1", "trust": {"downloads": 7}}

    def trust(previous, **kwargs):
        lock.write_text(json.dumps({"autobench_lock": 1, "references": {"model": previous}}))
        lock_recipe(recipe, StubResolver(**kwargs))
        return json.loads(lock.read_text())["references"]["model"]["trust"]

    lock_recipe(recipe, StubResolver(offline=True))  # no lock file yet
    assert json.loads(lock.read_text())["references"]["model"]["trust"]["source"] == "cache"
    assert trust(old, offline=True) == {"downloads": 7}
    assert trust({**old, "sha": SHA}, offline=True)["downloads"] is None
    assert trust({**old, "trust": "x"}, offline=True)["source"] == "cache"
    info = SimpleNamespace(siblings=[], downloads=99, likes=1, gated=False, private=False, last_modified=None)
    assert trust(old, info=info)["downloads"] == 99  # online: the Hub's facts now


def test_a_hub_error_names_where_the_reference_is_written(tmp_path: Path):
    from autobench.hub.lockfile import lock_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text("container:\n  image: x\nmodel:\n  repo: org/m\n  revision: dev\n")
    with pytest.raises(HubError) as info:
        lock_recipe(recipe, StubResolver(fail="resolve"))
    assert str(info.value) == f"{recipe}:5:3: org/m: no such repo"
    recipe.write_text("container:\n  image: x\nmodel:\n  repo: org/m\n")
    with pytest.raises(HubError) as info:
        lock_recipe(recipe, StubResolver(fail="resolve"))
    assert str(info.value) == f"{recipe}:4:3: org/m: no such repo"
    assert recipe.read_text() == "container:\n  image: x\nmodel:\n  repo: org/m\n"
    assert not (tmp_path / "r.yaml.lock.json").exists()


def test_a_child_revision_of_its_parents_repo_is_pinned_in_the_child(tmp_path: Path):
    from autobench.hub.lockfile import lock_recipe
    from autobench.recipe.loader import load_recipe

    base, child = tmp_path / "base.yaml", tmp_path / "child.yaml"
    base.write_text("model:\n  repo: org/m\ncontainer:\n  image: x\n")
    child.write_text("extends: base.yaml\nmodel:\n  revision: dev\n")
    result = lock_recipe(child, StubResolver())
    assert child.read_text() == f"extends: base.yaml\nmodel:\n  revision: {SHA}  # frozen: dev\n"
    assert base.read_text() == "model:\n  repo: org/m\ncontainer:\n  image: x\n"
    assert result.edited == [child.resolve()]
    assert load_recipe(child).recipe.model.revision == SHA
    # a parent's revision of a repo the child overrides: the child gets its own
    base.write_text("model:\n  repo: org/m\n  revision: dev\ncontainer:\n  image: x\n")
    child.write_text("extends: base.yaml\nmodel:\n  repo: org/other\n")
    lock_recipe(child, StubResolver())
    assert child.read_text() == f"extends: base.yaml\nmodel:\n  repo: org/other\n  revision: {SHA}  # frozen: dev\n"
    assert json.loads((tmp_path / "child.yaml.lock.json").read_text())["references"]["model"]["file"] == "child.yaml"
    # a child that deletes its parent's revision with null runs the default: its null is pinned
    child.write_text("extends: base.yaml\nmodel:\n  revision: null\n")
    lock_recipe(child, StubResolver())
    assert child.read_text() == f"extends: base.yaml\nmodel:\n  revision: {SHA}  # frozen: main\n"
    assert base.read_text() == "model:\n  repo: org/m\n  revision: dev\ncontainer:\n  image: x\n"
    assert load_recipe(child).recipe.model.revision == SHA


class StubImagePin:
    section, key = "images", "container.image"

    def __init__(self, file: Path, changes: bool):
        self.file, self.changes, self.entry, self.changed = file, changes, {"digest": "sha256:1"}, False

    def apply(self) -> bool:
        self.changed = self.changes
        return self.changes

    def to_json(self) -> dict:
        return {"image": "x", "changed": self.changed}


def test_extra_pins_are_written_with_the_hub_pins_and_other_sections_kept(tmp_path: Path):
    from autobench.hub.lockfile import lock_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: org/m\n  revision: {SHA}  # frozen: main\ncontainer:\n  image: x\n")
    lock = tmp_path / "r.yaml.lock.json"
    lock.write_text(
        json.dumps(
            {
                "autobench_lock": 0,
                "recipe": "old.yaml",
                "references": {"draft": {}},
                "mods": [1],
                "images": {"other": 1},
                "custom": {"kept": True},
            }
        )
    )
    seen = []

    def extras(loaded, path, previous):
        seen.append((loaded.path, path, previous["custom"]))
        pins = [StubImagePin(recipe.resolve(), True), StubImagePin(recipe.resolve(), True)]
        return [*pins, StubImagePin(tmp_path / "x.yaml", False)]

    result = lock_recipe(recipe, StubResolver(), extras=extras)
    assert seen == [(recipe, recipe, {"kept": True})]
    assert result.edited == [recipe.resolve()]  # the Hub pin kept; the image edits counted once
    changed = [{"image": "x", "changed": True}] * 2 + [{"image": "x", "changed": False}]
    assert [e.to_json() for e in result.extra] == changed and result.to_json()["images"] == changed
    data = json.loads(lock.read_text())
    assert data["custom"] == {"kept": True} and "mods" not in data
    assert data["images"] == {"other": 1, "container.image": {"digest": "sha256:1"}}
    assert (data["autobench_lock"], data["recipe"], sorted(data["references"])) == (1, "r.yaml", ["model"])
    lock.unlink()
    lock_recipe(recipe, StubResolver(), extras=lambda *args: [StubImagePin(tmp_path / "x.yaml", True)])
    assert json.loads(lock.read_text())["images"] == {"container.image": {"digest": "sha256:1"}}


def test_a_lock_file_that_cannot_be_written_is_one_error(tmp_path: Path):
    from autobench.hub.lockfile import lock_recipe

    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: org/m\n  revision: {SHA}\ncontainer:\n  image: x\n")
    lock = tmp_path / "r.yaml.lock.json"
    lock.symlink_to(tmp_path / "missing" / "lock.json")  # dangling: no lock yet, and no folder to write in
    with pytest.raises(HubError) as info:
        lock_recipe(recipe, StubResolver())
    assert str(info.value) == f"{lock}: cannot write the lock file: No such file or directory"

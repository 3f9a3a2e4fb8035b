"""Bench datasets on the Hub, pinned like models (issue #33): `lock` pins a dataset repo to a
commit and records the file's sha256, `outdated` reports it moving, the file is verified
(mismatch: refused and removed from the cache) and read from the cache offline.

Against the fake Hub on loopback, driven through the real, unpatched huggingface_hub client
(``dataset_info`` and ``hf_hub_download(repo_type="dataset")``) filling a real HF cache."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from fakehub import (
    BASE_NEW,
    BASE_REPO,
    DATASET_FILE,
    DATASET_NEW,
    DATASET_OLD,
    DATASET_REPO,
    DATASET_V1,
    DATASET_V2,
    FakeHub,
    dataset_repo,
)
from test_hub_lock import run

from autobench.errors import HubError
from autobench.hub.client import HubSettings
from autobench.hub.datasets import fetch_dataset, file_sha256
from autobench.hub.resolve import Resolver
from autobench.recipe import load_recipe

V1_SHA256 = hashlib.sha256(DATASET_V1).hexdigest()
V2_SHA256 = hashlib.sha256(DATASET_V2).hexdigest()
KEY = "datasets/" + DATASET_REPO


def recipe_text(revision: str = "main", extra: str = "") -> str:
    return f"""\
name: ds
model:
  repo: {BASE_REPO}
  revision: {BASE_NEW}
container:
  image: vllm/vllm-openai:nightly
  ports: ["8000:8000"]
bench:
  dataset:
    kind: jsonl
    repo: {DATASET_REPO}
    file: {DATASET_FILE}
    revision: {revision}
    fields: {{prompt: question, category: task}}
{extra}"""


@pytest.fixture
def ds_hub(hub_env: FakeHub) -> FakeHub:
    hub_env.add(dataset_repo())
    return hub_env


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "ds.yaml"
    path.write_text(recipe_text(), encoding="utf-8")
    return path


def cached(sha: str) -> Path:
    settings = HubSettings.from_env()
    return settings.cache_dir / f"datasets--{DATASET_REPO.replace('/', '--')}" / "snapshots" / sha / DATASET_FILE


def test_lock_pins_the_dataset_repo_to_a_sha_and_records_the_files_sha256(ds_hub, recipe, capsys):
    code, out, err = run(capsys, "lock", str(recipe))
    assert (code, err) == (0, "")
    assert f"    revision: {DATASET_OLD}  # frozen: main\n" in recipe.read_text()
    assert load_recipe(recipe).recipe.bench.dataset.revision == DATASET_OLD
    assert f"dataset   {DATASET_REPO}  {DATASET_OLD}" in out
    entry = json.loads((recipe.parent / "ds.yaml.lock.json").read_text())["references"]["dataset"]
    assert {k: entry[k] for k in ("repo", "label", "sha", "key", "file", "dataset_file", "sha256", "size")} == {
        "repo": DATASET_REPO,
        "label": "main",
        "sha": DATASET_OLD,
        "key": "bench.dataset.revision",
        "file": "ds.yaml",
        "dataset_file": DATASET_FILE,
        "sha256": V1_SHA256,
        "size": len(DATASET_V1),
    }
    assert entry["resolved_from"] == "hub" and entry["resolved_at"].endswith("Z")
    assert cached(DATASET_OLD).read_bytes() == DATASET_V1  # in the HF cache, as huggingface_hub lays it out
    # the dataset was asked of the dataset API and fetched from the dataset resolve route
    paths = [r.path for r in ds_hub.requests]
    assert f"/api/datasets/{DATASET_REPO}/revision/main?blobs=true" in paths
    assert any(p.startswith(f"/datasets/{DATASET_REPO}/resolve/{DATASET_OLD}/") for p in paths)


def test_outdated_reports_the_dataset_moving_and_its_file_changing(ds_hub, recipe, capsys):
    assert run(capsys, "lock", str(recipe))[0] == 0
    code, out, _ = run(capsys, "outdated", "--exit-code", str(recipe))
    assert code == 0 and f"up-to-date: {DATASET_OLD[:7]} = main" in out
    ds_hub.move(KEY, "main", DATASET_NEW)
    code, out, _ = run(capsys, "outdated", "--json", "--exit-code", str(recipe))
    assert code == 1
    item = next(i for i in json.loads(out) if i["kind"] == "dataset")
    assert (item["status"], item["pinned"], item["current"], item["repo"]) == (
        "moved",
        DATASET_OLD,
        DATASET_NEW,
        DATASET_REPO,
    )
    assert item["changes"] == [
        {"field": DATASET_FILE, "old": f"sha256:{V1_SHA256}", "new": f"sha256:{V2_SHA256}", "breaking": False}
    ]
    code, out, _ = run(capsys, "outdated", str(recipe))
    assert f"moved: pinned {DATASET_OLD[:7]}, main is now {DATASET_NEW[:7]}" in out


def test_outdated_says_when_the_file_is_the_same_at_both_commits(ds_hub, recipe, capsys):
    repo = ds_hub.repos[KEY]
    repo.commits[DATASET_NEW].files[DATASET_FILE] = DATASET_V1
    repo.commits[DATASET_NEW].lfs[DATASET_FILE] = V1_SHA256
    assert run(capsys, "lock", str(recipe))[0] == 0
    ds_hub.move(KEY, "main", DATASET_NEW)
    code, out, _ = run(capsys, "outdated", "--json", str(recipe))
    item = next(i for i in json.loads(out) if i["kind"] == "dataset")
    assert item["status"] == "moved" and item["changes"] == []
    assert item["note"] == f"{DATASET_FILE} is the same at both commits"


def test_outdated_offline_reads_the_moved_branch_from_the_cache(ds_hub, recipe, capsys):
    assert run(capsys, "lock", str(recipe))[0] == 0
    ds_hub.move(KEY, "main", DATASET_NEW)
    assert run(capsys, "outdated", str(recipe))[0] == 0  # online: refs/main cached at the new sha
    ds_hub.stop()
    code, out, err = run(capsys, "outdated", "--offline", "--json", str(recipe))
    assert (code, err) == (0, "")
    item = next(i for i in json.loads(out) if i["kind"] == "dataset")
    assert (item["status"], item["current"]) == ("moved", DATASET_NEW)
    assert item["note"] == f"whether {DATASET_FILE} changed is unknown offline"


def test_a_kept_pin_is_fetched_at_its_sha_and_checked_against_the_lock_files_sha256(ds_hub, recipe, capsys):
    assert run(capsys, "lock", str(recipe))[0] == 0
    lock = recipe.parent / "ds.yaml.lock.json"
    data = json.loads(lock.read_text())
    data["references"]["dataset"]["sha256"] = "0" * 64  # what an earlier lock recorded
    lock.write_text(json.dumps(data))
    code, _, err = run(capsys, "lock", str(recipe))
    assert code == 3
    assert f"{DATASET_REPO}@{DATASET_OLD}: {DATASET_FILE} has sha256 {V1_SHA256}, not {'0' * 64}" in err
    assert "(the lock file's sha256 for this commit); the file was removed from the cache" in err
    assert not cached(DATASET_OLD).exists()


def test_the_recipes_sha256_is_checked_and_a_mismatch_removed(ds_hub, tmp_path, capsys):
    recipe = tmp_path / "ds.yaml"
    recipe.write_text(recipe_text(extra=f"    sha256: {'e' * 64}\n"), encoding="utf-8")
    code, out, err = run(capsys, "lock", str(recipe))
    assert code == 3 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {recipe}:15:5: {DATASET_REPO}@{DATASET_OLD}: {DATASET_FILE} has sha256 ")
    assert "(bench.dataset.sha256); the file was removed from the cache" in line
    assert line.endswith(
        "(hint: a corrupt or changed download: run again to fetch it anew; if the Hub still serves it, "
        "check bench.dataset.sha256 and the repo's commit)"
    )
    assert not cached(DATASET_OLD).exists()
    assert "revision: main" in recipe.read_text()  # nothing written
    assert not (tmp_path / "ds.yaml.lock.json").exists()


def test_a_hub_whose_lfs_sha256_disagrees_with_the_file_is_refused(ds_hub, recipe, capsys):
    ds_hub.repos[KEY].commits[DATASET_OLD].lfs[DATASET_FILE] = "f" * 64
    code, _, err = run(capsys, "lock", str(recipe))
    assert code == 3
    assert f"has sha256 {V1_SHA256}, not {'f' * 64} (the Hub's LFS sha256)" in err
    assert not cached(DATASET_OLD).exists()


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            (f"repo: {DATASET_REPO}", "repo: bench-org/no-such-dataset"),
            "bench-org/no-such-dataset@main: repository not found on",
        ),
        ((f"file: {DATASET_FILE}", "file: data/missing.jsonl"), "the dataset repo has no file 'data/missing.jsonl'"),
        (("revision: main", "revision: v9"), f"{DATASET_REPO}@v9: revision 'v9' not found in the repo"),
    ],
)
def test_a_dataset_that_does_not_exist_is_one_located_line(ds_hub, recipe, capsys, edit, words):
    recipe.write_text(recipe.read_text().replace(*edit), encoding="utf-8")
    code, out, err = run(capsys, "lock", str(recipe))
    assert code == 3 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {recipe}:13:5: ") and words in line, line
    assert "(hint: " in line


def test_the_missing_files_message_lists_the_files_of_its_kind(ds_hub, recipe, capsys):
    recipe.write_text(recipe.read_text().replace(DATASET_FILE, "data/prompt.jsonl"), encoding="utf-8")
    _, _, err = run(capsys, "lock", str(recipe))
    assert f"files of that kind there: {DATASET_FILE} (hint:" in err  # README.md is not one
    recipe.write_text(recipe.read_text().replace("data/prompt.jsonl", "data/x.parquet"), encoding="utf-8")
    _, _, err = run(capsys, "lock", str(recipe))
    assert "the dataset repo has no file 'data/x.parquet' at this revision; it has 2 files (hint:" in err
    assert f"/datasets/{DATASET_REPO}/tree/main" in err


def test_fetch_reads_a_pinned_file_from_the_cache_with_the_server_stopped(ds_hub):
    resolver = Resolver(HubSettings.from_env())
    online = fetch_dataset(resolver, DATASET_REPO, None, DATASET_FILE)  # main: refs/main cached
    assert (online.source, online.sha, online.sha256, online.size) == ("hub", DATASET_OLD, V1_SHA256, len(DATASET_V1))
    ds_hub.stop()
    before = len(ds_hub.requests)
    again = fetch_dataset(Resolver(HubSettings.from_env()), DATASET_REPO, DATASET_OLD, DATASET_FILE)
    assert (again.source, again.path, again.sha256) == ("cache", online.path, V1_SHA256)
    assert len(ds_hub.requests) == before  # no request at all
    offline = fetch_dataset(Resolver(HubSettings.from_env(offline=True)), DATASET_REPO, "main", DATASET_FILE)
    assert (offline.sha, offline.sha256, offline.source) == (DATASET_OLD, V1_SHA256, "cache")
    assert offline.path == online.path and offline.size == len(DATASET_V1)


def test_a_cached_file_changed_on_disk_is_refused_and_removed(ds_hub):
    resolver = Resolver(HubSettings.from_env())
    got = fetch_dataset(resolver, DATASET_REPO, DATASET_OLD, DATASET_FILE)
    blob = got.path.resolve()
    blob.write_bytes(DATASET_V2)  # bit rot, or a hand edit in the cache
    with pytest.raises(HubError) as info:
        fetch_dataset(resolver, DATASET_REPO, DATASET_OLD, DATASET_FILE, expected=V1_SHA256)
    assert f"has sha256 {V2_SHA256}, not {V1_SHA256} (bench.dataset.sha256)" in info.value.message
    assert not os.path.lexists(got.path) and not blob.exists()  # the snapshot link and its blob
    again = fetch_dataset(resolver, DATASET_REPO, DATASET_OLD, DATASET_FILE, expected=V1_SHA256)
    assert again.source == "hub" and file_sha256(again.path) == (V1_SHA256, len(DATASET_V1))


def test_offline_and_not_cached_is_one_line_naming_the_dataset_download(ds_hub):
    with pytest.raises(HubError) as info:
        fetch_dataset(Resolver(HubSettings.from_env(offline=True)), DATASET_REPO, DATASET_OLD, DATASET_FILE)
    err = info.value
    assert err.message == (
        f"{DATASET_FILE} of {DATASET_REPO}@{DATASET_OLD} is not in the local HF cache at {HubSettings.from_env().cache_dir}"
    )
    assert f"download --repo-type dataset {DATASET_REPO} --revision {DATASET_OLD}" in (err.hint or "")


def test_lock_offline_pins_from_the_cache(ds_hub, recipe, capsys):
    assert run(capsys, "lock", str(recipe))[0] == 0  # online: the file and the model's config cached
    recipe.write_text(recipe_text(), encoding="utf-8")  # back on main
    ds_hub.stop()
    code, _, err = run(capsys, "lock", "--offline", "--no-images", str(recipe))
    assert (code, err) == (0, "")
    entry = json.loads((recipe.parent / "ds.yaml.lock.json").read_text())["references"]["dataset"]
    assert (entry["sha"], entry["sha256"], entry["resolved_from"]) == (DATASET_OLD, V1_SHA256, "cache")


def test_compile_frozen_refuses_a_dataset_revision_that_is_not_a_sha(recipe, capsys):
    recipe.write_text(recipe.read_text().replace("vllm/vllm-openai:nightly", "vllm/vllm-openai@sha256:" + "a" * 64))
    code, out, err = run(capsys, "compile", "--frozen", str(recipe))
    assert code != 0 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {recipe}:13:15: bench.dataset.revision: dataset revision 'main' of {DATASET_REPO}")
    assert "--frozen refuses it" in line and f"autobench lock {recipe}" in line


def test_a_variant_that_names_another_dataset_revision_is_pinned_where_it_is_written(ds_hub, tmp_path, capsys):
    recipe = tmp_path / "ds.yaml"
    recipe.write_text(
        recipe_text(revision=DATASET_OLD) + "variants:\n  newer:\n    bench:\n      dataset:\n        revision: v2\n",
        encoding="utf-8",
    )
    ds_hub.repos[KEY].refs["v2"] = DATASET_NEW
    code, _, err = run(capsys, "lock", "--no-images", str(recipe))
    assert (code, err) == (0, "")
    assert f"        revision: {DATASET_NEW}  # frozen: v2\n" in recipe.read_text()
    entries = json.loads((tmp_path / "ds.yaml.lock.json").read_text())["references"]
    variant = entries["variants.newer.dataset"]
    assert (variant["sha"], variant["sha256"], variant["dataset_file"], variant["cell"]) == (
        DATASET_NEW,
        V2_SHA256,
        DATASET_FILE,
        "newer",
    )
    assert entries["dataset"]["sha"] == DATASET_OLD and entries["dataset"]["sha256"] == V1_SHA256


def test_a_cached_file_that_cannot_be_read_is_one_line(tmp_path):
    from autobench.hub.datasets import verify

    with pytest.raises(HubError) as info:
        verify(tmp_path, "org/d@abc", "data/x.jsonl", None, "bench.dataset.sha256", None)  # a directory
    assert info.value.message.startswith("org/d@abc: cannot read data/x.jsonl (")
    assert info.value.location == str(tmp_path)


def test_an_answer_without_a_file_list_has_no_lfs_sha256_and_lists_every_file():
    from huggingface_hub.hf_api import DatasetInfo

    from autobench.hub.datasets import _hub_sha256, _listed

    bare = DatasetInfo(id=DATASET_REPO, sha=DATASET_OLD)  # a Hub that sends no siblings
    assert _hub_sha256(bare, DATASET_FILE) is None and _listed(bare, DATASET_FILE)
    listed = DatasetInfo(
        id=DATASET_REPO,
        siblings=[
            {"rfilename": "README.md"},
            {"rfilename": DATASET_FILE, "lfs": {"sha256": V1_SHA256, "size": 1, "pointerSize": 1}},
        ],
    )
    assert _hub_sha256(listed, DATASET_FILE) == V1_SHA256 and _hub_sha256(listed, "README.md") is None
    assert _listed(listed, "README.md") and not _listed(listed, "data/other.jsonl")


def test_a_gated_dataset_names_its_dataset_page(ds_hub, recipe, capsys):
    ds_hub.repos[KEY].gated = "manual"
    code, _, err = run(capsys, "lock", str(recipe))
    assert code == 3
    assert f"{DATASET_REPO}@main: gated repo, this token has no access (401)" in err
    assert f"accept the repo's conditions at {ds_hub.url}/datasets/{DATASET_REPO} with the account" in err
    assert not cached(DATASET_OLD).exists()


def test_a_split_of_the_hubs_parquet_conversion_is_a_file_at_refs_convert_parquet(ds_hub, tmp_path, capsys):
    """The Hub publishes every dataset's config/split as parquet at the ref refs/convert/parquet
    (`{config}/{split}/0000.parquet`): a split is named as that file at that revision, pinned like
    any other."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from fakehub import FakeCommit

    buf = io.BytesIO()
    pq.write_table(pa.table({"question": ["What is a draft model?", "Translate: bonjour"], "task": ["qa", "mt"]}), buf)
    data = buf.getvalue()
    convert_sha = "c0" * 20
    repo = ds_hub.repos[KEY]
    repo.commits[convert_sha] = FakeCommit(
        convert_sha,
        {"default/test/0000.parquet": data},
        lfs={"default/test/0000.parquet": hashlib.sha256(data).hexdigest()},
    )
    repo.refs["refs/convert/parquet"] = convert_sha
    recipe = tmp_path / "split.yaml"
    text = recipe_text(revision="refs/convert/parquet").replace("kind: jsonl", "kind: parquet")
    recipe.write_text(text.replace(DATASET_FILE, "default/test/0000.parquet"), encoding="utf-8")
    code, _, err = run(capsys, "lock", "--no-images", str(recipe))
    assert (code, err) == (0, "")
    assert f"    revision: {convert_sha}  # frozen: refs/convert/parquet\n" in recipe.read_text()
    entry = json.loads((tmp_path / "split.yaml.lock.json").read_text())["references"]["dataset"]
    assert (entry["label"], entry["sha"], entry["sha256"]) == (
        "refs/convert/parquet",
        convert_sha,
        hashlib.sha256(data).hexdigest(),
    )
    code, out, _ = run(capsys, "outdated", "--json", str(recipe))
    item = next(i for i in json.loads(out) if i["kind"] == "dataset")
    assert (item["status"], item["label"]) == ("up-to-date", "refs/convert/parquet")


def test_the_missing_files_message_lists_at_most_five_of_its_kind(ds_hub, recipe, capsys):
    files = ds_hub.repos[KEY].commits[DATASET_OLD].files
    for i in range(6):
        files[f"data/extra-{i}.jsonl"] = b'{"question": "q", "task": "t"}\n'
    recipe.write_text(recipe.read_text().replace(DATASET_FILE, "data/none.jsonl"), encoding="utf-8")
    _, _, err = run(capsys, "lock", str(recipe))
    listed = err.split("files of that kind there: ", 1)[1].split(" (hint:", 1)[0]
    assert listed.split(", ") == [f"data/extra-{i}.jsonl" for i in range(5)]  # sorted, the first five


@pytest.mark.parametrize("other", [{"sha": DATASET_NEW}, {"dataset_file": "data/other.jsonl"}])
def test_a_previous_lock_of_another_commit_or_file_is_not_compared(ds_hub, tmp_path, capsys, other):
    recipe = tmp_path / "ds.yaml"
    recipe.write_text(recipe_text(revision=DATASET_OLD), encoding="utf-8")
    entry = {"repo": DATASET_REPO, "sha": DATASET_OLD, "dataset_file": DATASET_FILE, "sha256": "0" * 64, **other}
    (tmp_path / "ds.yaml.lock.json").write_text(json.dumps({"autobench_lock": 1, "references": {"dataset": entry}}))
    code, _, err = run(capsys, "lock", "--no-images", str(recipe))
    assert (code, err) == (0, "")
    assert json.loads((tmp_path / "ds.yaml.lock.json").read_text())["references"]["dataset"]["sha256"] == V1_SHA256


def test_the_recipes_sha256_wins_over_the_previous_locks(ds_hub, tmp_path, capsys):
    recipe = tmp_path / "ds.yaml"
    recipe.write_text(recipe_text(revision=DATASET_OLD, extra=f"    sha256: {V1_SHA256}\n"), encoding="utf-8")
    entry = {"repo": DATASET_REPO, "sha": DATASET_OLD, "dataset_file": DATASET_FILE, "sha256": "0" * 64}
    (tmp_path / "ds.yaml.lock.json").write_text(json.dumps({"autobench_lock": 1, "references": {"dataset": entry}}))
    code, _, err = run(capsys, "lock", "--no-images", str(recipe))
    assert (code, err) == (0, "")


def test_outdated_names_a_file_outside_lfs_by_its_git_blob(ds_hub, recipe, capsys):
    from fakehub import git_blob_sha1

    for commit in ds_hub.repos[KEY].commits.values():
        commit.lfs.clear()  # a small file kept in git, not LFS
    assert run(capsys, "lock", str(recipe))[0] == 0
    ds_hub.move(KEY, "main", DATASET_NEW)
    _, out, _ = run(capsys, "outdated", "--json", str(recipe))
    item = next(i for i in json.loads(out) if i["kind"] == "dataset")
    assert item["changes"] == [
        {
            "field": DATASET_FILE,
            "old": f"blob:{git_blob_sha1(DATASET_V1)}",
            "new": f"blob:{git_blob_sha1(DATASET_V2)}",
            "breaking": False,
        }
    ]


def test_offline_a_known_commit_without_its_file_is_not_cached_and_a_recorded_absence_is_no_file(
    ds_hub, recipe, capsys
):
    assert run(capsys, "outdated", str(recipe))[0] == 0  # online: refs/main cached, no file fetched
    offline = Resolver(HubSettings.from_env(offline=True))
    with pytest.raises(HubError) as info:
        fetch_dataset(offline, DATASET_REPO, "main", DATASET_FILE)
    assert info.value.message.startswith(f"{DATASET_FILE} of {DATASET_REPO}@main is not in the local HF cache at ")
    marker = cached(DATASET_OLD).parents[3] / ".no_exist" / DATASET_OLD / DATASET_FILE
    marker.parent.mkdir(parents=True)
    marker.touch()  # huggingface_hub's record that the file does not exist at that commit
    with pytest.raises(HubError) as info:
        fetch_dataset(offline, DATASET_REPO, "main", DATASET_FILE)
    assert (
        info.value.message
        == f"{DATASET_REPO}@main: the dataset repo has no file {DATASET_FILE!r} at this revision; it has 0 files"
    )

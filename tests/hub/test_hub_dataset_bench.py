"""The bench reads a Hub dataset (issue #33): the file comes through huggingface_hub from the fake
Hub on loopback into a real HF cache, the result records the repo, the commit and the file's
sha256, and a run offline from the cache sends the same prompts (the same prompts digest).
The server is autobench's synthetic one, in-process."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakehub import DATASET_FILE, DATASET_NEW, DATASET_OLD, DATASET_REPO, DATASET_V1, FakeHub, dataset_repo
from test_hub_lock import run as cli

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.records import FieldMap
from autobench.bench.synthetic import SyntheticConfig, ThreadedServer
from autobench.errors import BenchError, HubError
from autobench.hub.client import HubSettings

V1_SHA256 = hashlib.sha256(DATASET_V1).hexdigest()


@pytest.fixture
def server() -> Iterator[ThreadedServer]:
    srv = ThreadedServer(SyntheticConfig(port=0, model="m", log_stats_interval=0, ttft_ms=1, itl_ms=1)).start()
    yield srv
    srv.stop()


@pytest.fixture
def ds_hub(hub_env: FakeHub) -> FakeHub:
    hub_env.add(dataset_repo())
    return hub_env


def cfg(server: ThreadedServer, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "m",
        "num_prompts": 6,
        "concurrency": 2,
        "max_tokens": 4,
        "read_timeout": 5.0,
        "tokenizer": "estimated",
        "dataset_kind": "jsonl",
        "dataset_repo": DATASET_REPO,
        "dataset_file": DATASET_FILE,
        "dataset_revision": DATASET_OLD,
        "dataset_fields": FieldMap(prompt="question", category="task"),
        "seed": 3,
    }
    base.update(kw)
    return BenchConfig(**base)


def test_a_bench_of_a_hub_dataset_records_repo_commit_and_file_sha256(ds_hub, server):
    d = run_bench(cfg(server)).to_json_dict()
    assert d["completed"] == 6
    ds = d["dataset"]
    assert (ds["kind"], ds["repo"], ds["revision"], ds["file"], ds["file_sha256"]) == (
        "jsonl",
        DATASET_REPO,
        DATASET_OLD,
        DATASET_FILE,
        V1_SHA256,
    )
    assert ds["available"] == 12 and ds["path"].endswith(f"snapshots/{DATASET_OLD}/{DATASET_FILE}")


def test_an_offline_run_from_the_cache_sends_the_same_prompts(ds_hub, server, monkeypatch):
    online = run_bench(cfg(server)).to_json_dict()["dataset"]
    ds_hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = run_bench(cfg(server)).to_json_dict()["dataset"]
    assert offline["prompts_sha256"] == online["prompts_sha256"]
    assert (offline["revision"], offline["file_sha256"]) == (DATASET_OLD, V1_SHA256)


def test_a_moved_branch_gives_other_prompts_and_says_which_commit(ds_hub, server):
    old = run_bench(cfg(server, dataset_revision="main")).to_json_dict()["dataset"]
    ds_hub.move("datasets/" + DATASET_REPO, "main", DATASET_NEW)
    new = run_bench(cfg(server, dataset_revision="main")).to_json_dict()["dataset"]
    assert (old["revision"], new["revision"]) == (DATASET_OLD, DATASET_NEW)
    assert old["file_sha256"] != new["file_sha256"] and old["available"] + 1 == new["available"]


def test_a_sha256_mismatch_is_refused_before_any_request(ds_hub, server):
    with pytest.raises(HubError) as info:
        run_bench(cfg(server, dataset_sha256="0" * 64))
    assert f"has sha256 {V1_SHA256}, not {'0' * 64} (bench.dataset.sha256)" in info.value.message


def test_a_local_file_is_recorded_by_its_sha256_and_checked(tmp_path, server):
    path = tmp_path / "p.jsonl"
    path.write_bytes(DATASET_V1)
    local = cfg(server, dataset_repo=None, dataset_file=None, dataset_revision=None, dataset=str(path))
    ds = run_bench(local).to_json_dict()["dataset"]
    assert ds["file_sha256"] == V1_SHA256 and "repo" not in ds and ds["path"] == str(path)
    with pytest.raises(BenchError) as info:
        run_bench(
            cfg(
                server,
                dataset_repo=None,
                dataset_file=None,
                dataset_revision=None,
                dataset=str(path),
                dataset_sha256="1" * 64,
            )
        )
    assert info.value.location == str(path)
    assert info.value.message == f"dataset file has sha256 {V1_SHA256}, not {'1' * 64} (bench.dataset.sha256)"


def test_the_bench_command_takes_a_hub_dataset(ds_hub, server, tmp_path, capsys):
    out = tmp_path / "r.json"
    code, _, err = cli(
        capsys,
        "bench",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--num-prompts",
        "4",
        "--max-tokens",
        "4",
        "--tokenizer",
        "estimated",
        "--dataset-kind",
        "jsonl",
        "--dataset-repo",
        DATASET_REPO,
        "--dataset-file",
        DATASET_FILE,
        "--dataset-revision",
        DATASET_OLD,
        "--dataset-sha256",
        V1_SHA256,
        "--dataset-field",
        "prompt=question",
        "--dataset-field",
        "category=task",
        "--result",
        str(out),
    )
    assert code == 0, err
    ds = json.loads(out.read_text())["dataset"]
    assert (ds["repo"], ds["revision"], ds["file_sha256"]) == (DATASET_REPO, DATASET_OLD, V1_SHA256)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--dataset-field", "prompt"], "is not ROLE=NAME"),
        (["--dataset-field", "answer=x"], "is not ROLE=NAME"),
        (["--dataset-field", "prompt=a", "--dataset-field", "prompt=b"], "each once"),
        (["--dataset-sha256", "abc"], "is not a sha256"),
    ],
)
def test_bad_dataset_options_are_usage_errors(capsys, argv, words):
    code, _, err = cli(capsys, "bench", "--base-url", "http://127.0.0.1:9", "--model", "m", *argv)
    assert code == 2 and words in err


def test_a_repo_without_a_file_is_refused(server):
    with pytest.raises(BenchError, match="--dataset-repo needs --dataset-file"):
        run_bench(cfg(server, dataset_file=None))
    with pytest.raises(BenchError, match="need --dataset-repo"):
        run_bench(cfg(server, dataset_repo=None, dataset=str(Path(__file__))))


def _recipe(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(
        "name: r\nmodel:\n  repo: org/m\n  revision: " + "a" * 40 + "\n"
        "bench:\n  dataset:\n    kind: jsonl\n"
        f"    repo: {DATASET_REPO}\n    file: {DATASET_FILE}\n    revision: {DATASET_OLD}\n"
        "    fields: {prompt: question}\n" + extra,
        encoding="utf-8",
    )
    return path


def test_a_run_checks_the_lock_files_sha256_unless_the_recipe_states_one(tmp_path):
    from autobench.recipe import load_recipe
    from autobench.run.local import dataset_options

    path = _recipe(tmp_path)
    loaded = load_recipe(path)
    assert dataset_options(loaded, loaded.recipe) == {
        "dataset_sha256": None,
        "dataset_fields": FieldMap(prompt="question"),
        "dataset_repo": DATASET_REPO,
        "dataset_file": DATASET_FILE,
        "dataset_revision": DATASET_OLD,
    }
    entry = {"repo": DATASET_REPO, "sha": DATASET_OLD, "dataset_file": DATASET_FILE, "sha256": V1_SHA256}
    lock = {"autobench_lock": 1, "recipe": "r.yaml", "references": {"dataset": entry}}
    (tmp_path / "r.yaml.lock.json").write_text(json.dumps(lock))
    opts = dataset_options(loaded, loaded.recipe)
    assert (opts["dataset_sha256"], opts["dataset_sha256_from"]) == (
        V1_SHA256,
        "the lock file's sha256 for this commit",
    )
    for other in ({"sha": DATASET_NEW}, {"dataset_file": "other.jsonl"}, {"repo": "x/y"}):
        lock["references"]["dataset"] = {**entry, **other}
        (tmp_path / "r.yaml.lock.json").write_text(json.dumps(lock))
        assert dataset_options(loaded, loaded.recipe)["dataset_sha256"] is None, other
    stated = load_recipe(_recipe(tmp_path, f"    sha256: {'c' * 64}\n"))
    opts = dataset_options(stated, stated.recipe)
    assert opts["dataset_sha256"] == "c" * 64 and "dataset_sha256_from" not in opts


def test_a_run_fetches_and_verifies_the_dataset_before_anything_starts(ds_hub, tmp_path):
    from autobench.recipe import load_recipe
    from autobench.run.pipeline import fetch_dataset

    fetch_dataset(load_recipe(_recipe(tmp_path)))  # fetched into the cache
    assert (Path(HubSettings.from_env().cache_dir) / f"datasets--{DATASET_REPO.replace('/', '--')}").is_dir()
    with pytest.raises(HubError, match=r"not c{64} \(bench.dataset.sha256\)"):
        fetch_dataset(load_recipe(_recipe(tmp_path, f"    sha256: {'c' * 64}\n")))


def test_a_run_records_repo_commit_and_file_sha256_in_the_ledger(ds_hub, server, tmp_path):
    """The bench result's dataset_id goes into the ledger row (schema v11) beside the recipe
    snapshot (which holds the repo, the pinned commit and the file)."""
    from autobench.ledger import open_ledger
    from autobench.recipe import load_recipe
    from autobench.runrow import RunFacts, new_run

    result = run_bench(cfg(server))
    assert result.dataset_id == f"{DATASET_REPO}@{DATASET_OLD}:{DATASET_FILE} sha256:{V1_SHA256}"
    loaded = load_recipe(_recipe(tmp_path))
    with open_ledger(tmp_path / "l.db") as book:
        rec = book.append(new_run(loaded, "", RunFacts("DONE", "run", dataset=result.dataset_id), env={}))
        again = book.runs()[0]
        assert book.verify().ok
    assert again.dataset == rec.dataset == f"{DATASET_REPO}@{DATASET_OLD}:{DATASET_FILE} sha256:{V1_SHA256}"
    snapshot = again.recipe_snapshot["bench"]["dataset"]
    assert (snapshot["repo"], snapshot["revision"], snapshot["file"]) == (DATASET_REPO, DATASET_OLD, DATASET_FILE)


def test_dataset_id_of_a_local_file_random_prompts_and_a_vllm_result(tmp_path, server):
    from autobench.bench.result import BenchResult

    path = tmp_path / "p.jsonl"
    path.write_bytes(DATASET_V1)
    local = run_bench(cfg(server, dataset_repo=None, dataset_file=None, dataset_revision=None, dataset=str(path)))
    assert local.dataset_id == f"{path} sha256:{V1_SHA256}"
    random = run_bench(
        cfg(
            server,
            dataset_repo=None,
            dataset_file=None,
            dataset_revision=None,
            dataset_kind="random",
            dataset_fields=None,
        )
    )
    assert random.dataset_id is None
    assert BenchResult({"dataset": {"kind": "sharegpt"}}).dataset_id is None  # vLLM's result says nothing


def test_the_compiled_bench_command_names_the_hub_dataset_and_runs_as_written(ds_hub, server, tmp_path, capsys):
    """compile's `autobench bench` line carries the dataset source (repo, file, revision, sha256,
    field mapping): the command, run as compiled against the fake Hub, benches that file."""
    from autobench.compile import bench_argv
    from autobench.recipe import load_recipe

    path = _recipe(tmp_path, f'    sha256: "{V1_SHA256}"\n')

    argv = bench_argv(load_recipe(path).recipe)
    i = argv.index("--dataset-repo")
    assert argv[i : i + 10] == [
        "--dataset-repo",
        DATASET_REPO,
        "--dataset-file",
        DATASET_FILE,
        "--dataset-revision",
        DATASET_OLD,
        "--dataset-sha256",
        V1_SHA256,
        "--dataset-field",
        "prompt=question",
    ]
    assert "--dataset" not in argv
    argv[argv.index("--base-url") + 1] = server.base_url
    argv[argv.index("--num-prompts") + 1] = "3"
    argv[argv.index("--model") + 1] = "m"  # the synthetic server's name for its model
    out = tmp_path / "r.json"
    code, _, err = cli(capsys, *argv[1:], "--tokenizer", "estimated", "--result", str(out))
    assert code == 0, err
    ds = json.loads(out.read_text())["dataset"]
    assert (ds["repo"], ds["revision"], ds["file_sha256"]) == (DATASET_REPO, DATASET_OLD, V1_SHA256)


def test_a_local_file_is_hashed_within_the_bound_and_an_unreadable_one_is_one_line(tmp_path, monkeypatch):
    from autobench.bench import source

    path = tmp_path / "p.jsonl"
    path.write_bytes(DATASET_V1)
    got = source.local_file(str(path))
    assert (got.sha256, got.size, got.source, got.repo) == (V1_SHA256, len(DATASET_V1), "local", None)
    monkeypatch.setattr(source, "MAX_DATASET_BYTES", len(DATASET_V1) - 1)
    with pytest.raises(BenchError) as info:
        source.local_file(str(path))
    assert (info.value.location, info.value.message) == (
        str(path),
        f"dataset file is over {len(DATASET_V1) - 1:,} bytes",
    )
    assert info.value.hint == "use a smaller file"
    monkeypatch.setattr(source, "MAX_DATASET_BYTES", len(DATASET_V1))
    assert source.local_file(str(path)).size == len(DATASET_V1)  # exactly the bound: read
    with pytest.raises(BenchError) as info:
        source.local_file(str(tmp_path))
    assert info.value.location == str(tmp_path)
    assert info.value.message.startswith("cannot read the dataset file (")


def test_a_local_file_that_matches_its_sha256_is_read_and_one_that_does_not_says_how_to_fix(tmp_path):
    from autobench.bench import source

    path = tmp_path / "p.jsonl"
    path.write_bytes(DATASET_V1)
    assert source.local_file(str(path), V1_SHA256).sha256 == V1_SHA256
    with pytest.raises(BenchError) as info:
        source.local_file(str(path), "2" * 64)
    assert info.value.hint == "the file changed: restore it, or write its new sha256 in the recipe (--dataset-sha256)"


def test_no_lock_sha256_for_a_dataset_that_follows_a_branch(tmp_path):
    from autobench.hub.lockfile import locked_dataset_sha256

    path = _recipe(tmp_path)
    entry = {"repo": DATASET_REPO, "sha": DATASET_OLD, "dataset_file": DATASET_FILE, "sha256": V1_SHA256}
    (tmp_path / "r.yaml.lock.json").write_text(json.dumps({"references": {"dataset": entry}}))
    assert locked_dataset_sha256(path, DATASET_REPO, DATASET_OLD, DATASET_FILE) == V1_SHA256
    assert locked_dataset_sha256(path, DATASET_REPO, None, DATASET_FILE) is None  # no commit: nothing to match
    (tmp_path / "r.yaml.lock.json").write_text(json.dumps({"references": {"model": entry}}))
    assert locked_dataset_sha256(path, DATASET_REPO, DATASET_OLD, DATASET_FILE) is None
    (tmp_path / "r.yaml.lock.json").unlink()
    assert locked_dataset_sha256(path, DATASET_REPO, DATASET_OLD, DATASET_FILE) is None

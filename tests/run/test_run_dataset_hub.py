"""`autobench run` with a Hub dataset (issue #33), end to end: the fake Hub on loopback serves a
dataset repo to the real huggingface_hub client, the run records the repo, the commit and the
file's sha256 in its ledger row, and a second run offline from the HF cache sends the same
prompts (the same prompts digest).  The server is the synthetic one behind the fake `vllm`."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from run_helpers import free_port, ledger_rows, recipe_text, run_cli, run_here

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hub"))
from fakehub import DATASET_FILE, DATASET_OLD, DATASET_REPO, DATASET_V1, FakeHub, dataset_repo  # noqa: E402

FAST = "--ttft-ms 2 --itl-ms 1 --log-stats-interval 0.2"
V1_SHA256 = hashlib.sha256(DATASET_V1).hexdigest()
DATASET = (
    "  dataset:\n    kind: jsonl\n"
    f"    repo: {DATASET_REPO}\n    file: {DATASET_FILE}\n    revision: {DATASET_OLD}\n"
    "    fields: {prompt: question, category: task}\n"
)


def _recipe(tmp_path: Path, extra: str = "") -> Path:
    text = recipe_text(free_port(), max_tokens=4, num_prompts=6)
    text = text.replace("  dataset: {kind: random, input_len: 16, output_len: 4}\n", DATASET + extra)
    path = tmp_path / "synth-run.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def hub():
    fake = FakeHub()
    fake.add(dataset_repo())
    fake.start()
    yield fake
    fake.stop()


@pytest.mark.integration
def test_a_run_records_the_dataset_and_an_offline_run_sends_the_same_prompts(hub, tmp_path):
    recipe = _recipe(tmp_path)
    env = {"FAKE_VLLM_ARGS": FAST, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
    first = run_cli(recipe, tmp_path, "--json", **env)
    assert first.returncode == 0, first.stderr
    hub.stop()
    second = run_cli(recipe, tmp_path, "--json", HF_HUB_OFFLINE="1", **env)
    assert second.returncode == 0, second.stderr
    rows = ledger_rows(tmp_path)
    assert [r.status for r in rows] == ["DONE", "DONE"]
    want = f"{DATASET_REPO}@{DATASET_OLD}:{DATASET_FILE} sha256:{V1_SHA256}"
    assert [r.dataset for r in rows] == [want, want]
    digests = []
    for out in (first, second):
        bench = json.loads((Path(json.loads(out.stdout)["run_dir"]) / "bench.json").read_text())["dataset"]
        assert (bench["repo"], bench["revision"], bench["file_sha256"]) == (DATASET_REPO, DATASET_OLD, V1_SHA256)
        digests.append(bench["prompts_sha256"])
    assert digests[0] == digests[1]


def test_a_dataset_that_does_not_verify_refuses_the_run_before_anything_starts(hub, tmp_path):
    recipe = _recipe(tmp_path, f'    sha256: "{"0" * 64}"\n')
    res = run_here(recipe, tmp_path, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"))
    assert res.returncode == 3
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"error: {recipe}:22:5: {DATASET_REPO}@{DATASET_OLD}: {DATASET_FILE} has sha256")
    assert f"{DATASET_FILE} has sha256 {V1_SHA256}, not {'0' * 64} (bench.dataset.sha256)" in line


def test_a_dataset_repo_that_does_not_exist_refuses_the_run_at_its_recipe_line(hub, tmp_path):
    recipe = _recipe(tmp_path)
    recipe.write_text(recipe.read_text().replace(DATASET_REPO, "bench-org/gone"), encoding="utf-8")
    res = run_here(recipe, tmp_path, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"))
    assert res.returncode == 3
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"error: {recipe}:20:5: bench-org/gone@{DATASET_OLD}: repository not found on {hub.url}")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ledger.db").exists()
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ledger.db").exists()

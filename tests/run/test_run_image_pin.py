"""`run` checks the local image against the pinned digest before anything starts.  There is no
Docker engine here: the fake `docker` (fake_docker.py) answers `image inspect` from a JSON file of
local images and `pull` from a JSON file of what a registry would serve; everything else is real
(the CLI in a subprocess, the synthetic server, the SQLite ledger)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from run_helpers import ledger_rows
from test_run_docker import _calls, _docker_env, _run

# Every test starts real processes: autobench run, a server, the fake docker or ssh.
pytestmark = pytest.mark.integration

NAME = "registry.example:5000/vllm/vllm-openai"
PINNED = "sha256:" + "a1" * 32
OTHER = "sha256:" + "b2" * 32


def _image(*digests: str) -> dict:
    return {
        "Id": "sha256:" + "c3" * 32,
        "RepoDigests": [f"{NAME}@{d}" for d in digests],
        "Os": "linux",
        "Architecture": "arm64",
        "Created": "2026-11-20T03:00:00Z",
    }


def _state(tmp_path: Path, images: dict | None = None, registry: dict | None = None) -> None:
    state = tmp_path / "docker-state"
    if images is not None:
        (state / "images.json").write_text(json.dumps(images))
    if registry is not None:
        (state / "registry.json").write_text(json.dumps(registry))


def _run_pull(recipe: Path, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import sys

    return subprocess.run(
        [
            sys.executable,
            "-m",
            "autobench",
            "run",
            str(recipe),
            "--runtime",
            "docker",
            "--pull",
            "--ledger",
            str(tmp_path / "ledger.db"),
            "--runs-dir",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )


def _refused(res: subprocess.CompletedProcess[str], tmp_path: Path) -> str:
    assert res.returncode == 6, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    err = lines[-1]  # progress lines ("pull: docker pull ...") come before the one error line
    assert err.startswith("error: ") and "Traceback" not in res.stderr
    assert [ln for ln in lines if ln.startswith("error")] == [err]
    assert not any(c[0] == "run" for c in _calls(tmp_path))  # no container was started
    assert not (tmp_path / "ledger.db").exists() or ledger_rows(tmp_path) == []  # nothing recorded
    return err


def test_a_local_image_with_another_digest_is_refused(make_recipe, tmp_path):
    recipe = make_recipe(image=f"{NAME}@{PINNED}")
    env = _docker_env(tmp_path)
    # docker's answer for the pinned reference names another registry digest
    _state(tmp_path, images={f"{NAME}@{PINNED}": _image(OTHER)})
    err = _refused(_run(recipe, tmp_path, env), tmp_path)
    assert f"the local image {NAME}@{PINNED} carries sha256:b2b2b2b2b2b2, not the pinned sha256:a1a1a1a1a1a1" in err
    assert "refusing to start" in err and "--pull" in err


def test_a_missing_image_is_refused_and_pull_fetches_it_by_digest(make_recipe, tmp_path):
    recipe = make_recipe(image=f"{NAME}@{PINNED}")
    env = _docker_env(tmp_path, FAKE_VLLM_ARGS="--ttft-ms 5 --itl-ms 2")
    _state(tmp_path, images={f"{NAME}:nightly": _image(OTHER)})  # the tag moved locally; the pin is absent
    err = _refused(_run(recipe, tmp_path, env), tmp_path)
    assert f"the pinned image {NAME}@sha256:a1a1a1a1a1a1 is not among the local docker images" in err

    _state(tmp_path, registry={f"{NAME}@{PINNED}": _image(PINNED)})
    res = _run_pull(recipe, tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    calls = _calls(tmp_path)
    assert ["pull", f"{NAME}@{PINNED}"] in calls
    assert calls.index(["pull", f"{NAME}@{PINNED}"]) < next(i for i, c in enumerate(calls) if c[0] == "run")
    [row] = ledger_rows(tmp_path)
    assert row.status == "DONE" and row.image == f"{NAME}@{PINNED}" and row.image_digest == PINNED


def test_pull_of_a_digest_the_registry_no_longer_serves_is_one_line(make_recipe, tmp_path):
    recipe = make_recipe(image=f"{NAME}@{PINNED}")
    env = _docker_env(tmp_path)
    err = _refused(_run_pull(recipe, tmp_path, env), tmp_path)
    assert f"docker pull {NAME}@{PINNED} failed: Error response from daemon: manifest for" in err


def test_a_tag_only_image_runs_and_the_ledger_records_the_digest_docker_has(make_recipe, tmp_path):
    recipe = make_recipe(image=f"{NAME}:nightly")
    env = _docker_env(tmp_path, FAKE_VLLM_ARGS="--ttft-ms 5 --itl-ms 2")
    _state(tmp_path, images={f"{NAME}:nightly": _image(OTHER)})
    res = _run(recipe, tmp_path, env)
    assert res.returncode == 0, res.stdout + res.stderr
    [row] = ledger_rows(tmp_path)
    assert row.image == f"{NAME}:nightly" and row.image_digest == OTHER
    assert f"image not pinned by digest: {NAME}:nightly" in row.notes

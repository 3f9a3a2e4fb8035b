"""`autobench lock` / `outdated` / `compile --frozen` for container images, against the REAL
registry on loopback (docker-registry), with the fake Hub for the model pins."""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest
from fakehub import BASE_NEW, BASE_REPO

from autobench.cli import main
from autobench.recipe.loader import load_recipe

HERE = Path(__file__).resolve().parent


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def write_recipes(folder: Path, image: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / "base.yaml"
    base.write_text(
        "# Base recipe: the engine image lives here.\n"
        "name: base\n"
        "model:\n"
        f"  repo: {BASE_REPO}\n"
        "  revision: main\n"
        "container:\n"
        f"  image: {image}   # the engine; bump deliberately\n"
        '  ports: ["8000:8000"]\n'
        "\n"
        "engine:\n"
        "  max_num_seqs: 8   # conc 8\n"
        "bench:\n"
        "  dataset: {kind: random, input_len: 16, output_len: 8}\n"
    )
    child = folder / "child.yaml"
    child.write_text("# The variant.\nextends: base.yaml\nname: child\n")
    return base, child


def one_error_line(code: int, out: str, err: str, exit_code: int = 3) -> str:
    assert code == exit_code, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    return err.strip()


@pytest.mark.integration
def test_lock_pins_a_multi_arch_tag_in_place_and_records_every_platform(image_env, registry, tmp_path, capsys):
    pushed = registry.index("vllm/vllm-openai", "nightly", created="2026-11-20T03:00:00Z")
    image = f"{registry.host}/vllm/vllm-openai"
    base, child = write_recipes(tmp_path / "r", f"{image}:nightly")
    before = base.read_text()
    code, out, err = run(capsys, "lock", str(child))
    assert (code, err) == (0, "")
    after = base.read_text()
    # one line changed, in the file that writes the key (the extends parent); every other byte kept
    expected = before.replace(
        f"{image}:nightly   # the engine; bump deliberately",
        f"{image}@{pushed.digest}  # frozen: nightly; the engine; bump deliberately",
    )
    expected = expected.replace("revision: main", f"revision: {BASE_NEW}  # frozen: main")
    assert after == expected
    assert load_recipe(child).recipe.container.image == f"{image}@{pushed.digest}"
    assert f"image     {image}  {pushed.digest}  # frozen: nightly (was {image}:nightly)  -> {base.resolve()}" in out
    assert "platforms: linux/arm64 sha256:" in out and "linux/amd64 sha256:" in out

    lock = json.loads((tmp_path / "r" / "child.yaml.lock.json").read_text())
    entry = lock["images"]["container.image"]
    assert entry["registry"] == registry.host and entry["repository"] == "vllm/vllm-openai"
    assert (entry["tag"], entry["digest"], entry["file"], entry["resolved_from"]) == (
        "nightly",
        pushed.digest,
        "base.yaml",
        "registry",
    )
    assert entry["media_type"] == "application/vnd.oci.image.index.v1+json"
    assert {k: v["digest"] for k, v in entry["platforms"].items()} == pushed.platforms
    assert {k: v["config"] for k, v in entry["platforms"].items()} == pushed.configs
    assert {v["created"] for v in entry["platforms"].values()} == {"2026-11-20T03:00:00Z"}
    assert entry["resolved_at"].endswith("Z")
    assert lock["references"]["model"]["sha"] == BASE_NEW  # the Hub pins are in the same file

    # compile --frozen accepts it now
    code, out, err = run(capsys, "compile", "--frozen", str(child))
    assert code == 0, err
    assert f"{image}@{pushed.digest}" in out

    # a re-lock keeps the digest, changes no recipe, and says when the tag has moved
    moved = registry.index("vllm/vllm-openai", "nightly", created="2026-11-21T03:00:00Z")
    code, out, err = run(capsys, "lock", str(child))
    assert code == 0, err
    assert base.read_text() == after
    assert f"note: nightly has moved to {moved.digest[:19]} since this pin" in out


@pytest.mark.integration
def test_a_single_platform_docker_image_and_platform_choice(image_env, registry, tmp_path, capsys):
    single = registry.image("acme/engine", "v1", arch="arm64", docker=True)
    base, child = write_recipes(tmp_path / "r", f"{registry.host}/acme/engine:v1")
    code, out, err = run(capsys, "lock", "--platform", "linux/amd64", str(child))
    err = one_error_line(code, out, err)
    assert "a single-platform image for linux/arm64, not linux/amd64" in err
    # the image is not pinned (the Hub revisions are: issue #31)
    assert "v1   # the engine" in base.read_text() and "images" not in json.loads(
        (tmp_path / "r" / "child.yaml.lock.json").read_text()
    )
    assert "# frozen: main" in base.read_text()  # the Hub pin is written
    err = one_error_line(*run(capsys, "lock", "--platform", "arm64", str(child)), exit_code=2)
    assert "--platform: expected OS/ARCH[/VARIANT], e.g. linux/arm64" in err
    assert run(capsys, "lock", "--platform", "linux/arm64/v8", str(child))[0] == 0  # v8 is arm64's default
    entry = json.loads((tmp_path / "r" / "child.yaml.lock.json").read_text())["images"]["container.image"]
    assert entry["digest"] == single.digest and list(entry["platforms"]) == ["linux/arm64"]


@pytest.mark.integration
def test_outdated_reports_a_moved_tag_with_creation_dates_then_a_deleted_one(image_env, registry, tmp_path, capsys):
    old = registry.index("vllm/vllm-openai", "nightly", created="2026-11-20T03:00:00Z")
    image = f"{registry.host}/vllm/vllm-openai"
    _, child = write_recipes(tmp_path / "r", f"{image}:nightly")
    assert run(capsys, "lock", str(child))[0] == 0
    code, out, err = run(capsys, "outdated", "--exit-code", str(child))
    assert code == 0, err
    assert f"image     {image}  up-to-date: {old.digest[:19]} = nightly" in out

    new = registry.index("vllm/vllm-openai", "nightly", created="2026-11-21T03:00:00Z")
    code, out, _ = run(capsys, "outdated", "--exit-code", str(child))
    assert code == 1
    assert (
        f"moved: pinned {old.digest[:19]} (built 2026-11-20T03:00:00Z), nightly is now "
        f"{new.digest[:19]} (built 2026-11-21T03:00:00Z) ({new.digest})"
    ) in out
    code, out, _ = run(capsys, "outdated", "--json", str(child))
    [item] = [i for i in json.loads(out) if i["kind"] == "image"]
    assert (item["status"], item["pinned"], item["current"], item["label"]) == (
        "moved",
        old.digest,
        new.digest,
        "nightly",
    )
    assert (item["pinned_created"], item["current_created"]) == ("2026-11-20T03:00:00Z", "2026-11-21T03:00:00Z")

    registry.delete_manifest("vllm/vllm-openai", new.digest)  # the nightly tag is garbage-collected
    code, out, _ = run(capsys, "outdated", "--exit-code", str(child))
    assert code == 1
    assert f"deleted: nightly no longer exists; pinned {old.digest[:19]}" in out
    assert (
        f"note: the tag nightly no longer exists on {registry.host} (deleted or garbage-collected); the pinned digest is still served"
        in out
    )
    registry.delete_manifest("vllm/vllm-openai", old.digest)
    code, out, _ = run(capsys, "outdated", "--json", str(child))
    [item] = [i for i in json.loads(out) if i["kind"] == "image"]
    assert (item["status"], item["pinned_served"], item["current"]) == ("deleted", False, None)
    assert "the pinned digest is gone too" in item["note"]

    code, out, _ = run(capsys, "outdated", "--offline", "--json", str(child))
    [item] = [i for i in json.loads(out) if i["kind"] == "image"]
    assert item["status"] == "not-checked"


def test_compile_frozen_refuses_an_image_pinned_by_tag(image_env, tmp_path, capsys):
    base, child = write_recipes(tmp_path / "r", "vllm/vllm-openai:nightly")
    (tmp_path / "r" / "base.yaml").write_text(base.read_text().replace("revision: main", "revision: " + "a" * 40))
    err = one_error_line(*run(capsys, "compile", "--frozen", str(child)), exit_code=2)
    assert err == (
        f"error: {base}:7:10: container.image is not pinned by digest (name@sha256:...); --frozen refuses it "
        f"(hint: autobench lock {child})"
    )


@pytest.mark.integration
def test_registry_faults_pin_the_hub_revisions_and_name_the_image(image_env, registry, tmp_path, capsys):
    """Issue #31: a registry fault no longer throws away the Hub pins that resolved; the image is
    named as not pinned (with `--no-images` in the hint) and the exit status is non-zero."""
    base, child = write_recipes(tmp_path / "r", f"{registry.host}/acme/none:v9")
    before = base.read_text()
    err = one_error_line(*run(capsys, "lock", str(child)))
    assert err.startswith(
        f"error: not pinned: {base}:7:10: {registry.host}/acme/none:v9: not found on {registry.host} (404"
    )
    assert "`lock --no-images`" in err
    assert f"revision: {BASE_NEW}  # frozen: main" in base.read_text()  # the Hub pin is kept ...
    assert f"{registry.host}/acme/none:v9" in base.read_text()  # ... the image left as written
    lock = json.loads((tmp_path / "r" / "child.yaml.lock.json").read_text())
    assert lock["references"]["model"]["sha"] == BASE_NEW and "images" not in lock

    registry.index("acme/armonly", "v1", archs=("arm64",))
    base.write_text(before.replace("acme/none:v9", "acme/armonly:v1"))
    err = one_error_line(*run(capsys, "lock", "--platform", "linux/arm64", "--platform", "linux/amd64", str(child)))
    assert "platform linux/amd64 missing from the multi-arch index (it has: linux/arm64)" in err

    # a registry that accepts the connection and never answers: bounded by --timeout
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    silent = f"127.0.0.1:{sock.getsockname()[1]}"
    try:
        base.write_text(before.replace(f"{registry.host}/acme/none:v9", f"{silent}/acme/x:v1"))
        err = one_error_line(*run(capsys, "lock", "--timeout", "1", str(child)))
        assert f"{silent}/acme/x:v1: no answer from {silent} within 1 s" in err
        assert "`lock --no-images` pins only the Hub revisions" in err
    finally:
        sock.close()
    assert f"{silent}/acme/x:v1" in base.read_text()  # the image: not pinned, as written


def test_an_unparseable_image_reference_is_one_line_without_the_value(image_env, tmp_path, capsys):
    _, child = write_recipes(tmp_path / "r", "Vllm/Engine:nightly")
    err = one_error_line(*run(capsys, "lock", str(child)), exit_code=2)
    assert "container.image" in err and "lower-case" in err and "Vllm/Engine" not in err
    assert not (tmp_path / "r" / "child.yaml.lock.json").exists()


@pytest.mark.integration
def test_htpasswd_registry_with_the_docker_config_and_without(image_env, auth_registry, tmp_path, capsys):
    pushed = auth_registry.image("private/engine", "v1")
    base, child = write_recipes(tmp_path / "r", f"{auth_registry.host}/private/engine:v1")
    err = one_error_line(*run(capsys, "lock", str(child)))
    assert f"{auth_registry.host} requires credentials (401)" in err and "docker login" in err
    folder = image_env / ".docker"
    folder.mkdir()
    auth = base64.b64encode(b"bench:s3cret-registry-pass").decode()
    (folder / "config.json").write_text(json.dumps({"auths": {auth_registry.host: {"auth": auth}}}))
    code, out, err = run(capsys, "lock", str(child))
    assert (code, err) == (0, "")
    lock_text = (tmp_path / "r" / "child.yaml.lock.json").read_text()
    assert pushed.digest in lock_text
    for text in (out, lock_text, base.read_text()):
        assert "s3cret-registry-pass" not in text and auth not in text  # credentials never written


def _fake_docker(tmp_path: Path, images: dict) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "docker"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} {HERE.parent / "run" / "fake_docker.py"} "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "docker-state"
    state.mkdir()
    (state / "images.json").write_text(json.dumps(images))
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_DOCKER_STATE": str(state)}


def test_lock_offline_takes_the_digest_docker_has_and_names_what_it_cannot(image_env, tmp_path, capsys, monkeypatch):
    """There is no Docker engine here: a fake `docker image inspect` answers (tests/run/fake_docker.py)."""
    digest = "sha256:" + "e5" * 32
    name = "registry.example:5000/vllm/vllm-openai"
    local = {
        "Id": "sha256:" + "f6" * 32,
        "RepoDigests": [f"other/image@sha256:{'0' * 64}", f"{name}@{digest}"],
        "Os": "linux",
        "Architecture": "arm64",
        "Created": "2026-11-19T00:00:00Z",
    }
    for key, value in _fake_docker(tmp_path, {f"{name}:nightly": local}).items():
        monkeypatch.setenv(key, value)
    assert (
        run(capsys, "lock", str(write_recipes(tmp_path / "online", "busybox")[1]), "--no-images")[0] == 0
    )  # fills the HF cache
    base, child = write_recipes(tmp_path / "r", f"{name}:nightly")
    base.write_text(base.read_text().replace("revision: main", f"revision: {BASE_NEW}"))
    code, out, err = run(capsys, "lock", "--offline", str(child))
    assert (code, err) == (0, "")
    assert f"image: {name}@{digest}  # frozen: nightly; the engine" in base.read_text()
    entry = json.loads((tmp_path / "r" / "child.yaml.lock.json").read_text())["images"]["container.image"]
    assert (entry["digest"], entry["resolved_from"]) == (digest, "docker")
    assert entry["platforms"] == {"linux/arm64": {"digest": None, "config": None, "created": "2026-11-19T00:00:00Z"}}

    base.write_text(base.read_text().replace(f"{name}@{digest}", f"{name}:v2"))
    code, out, err = run(capsys, "lock", "--offline", str(child))
    err = one_error_line(code, "", err)
    assert f"model     {BASE_REPO}  {BASE_NEW}" in out  # the Hub pin (from the cache) is still made
    assert f"{name}:v2: not among the local docker images, so --offline cannot resolve it" in err
    assert f"`docker pull {name}:v2` first, or lock online" in err


@pytest.mark.integration
def test_outdated_on_an_unpinned_tag_and_lock_json(image_env, registry, tmp_path, capsys):
    pushed = registry.image("acme/engine", "v1")
    image = f"{registry.host}/acme/engine"
    _, child = write_recipes(tmp_path / "r", f"{image}:v1")
    code, out, err = run(capsys, "outdated", "--exit-code", str(child))
    assert code == 0, err
    assert f"image     {image}  unpinned: v1 is at {pushed.digest[:19]}" in out
    assert f"note: not pinned: follows v1; run `autobench lock {child}`" in out
    code, out, _ = run(capsys, "lock", "--json", str(child))
    [result] = json.loads(out)
    [pin] = result["images"]
    assert (pin["kind"], pin["tag"], pin["digest"], pin["pinned"]) == (
        "image",
        "v1",
        pushed.digest,
        f"{image}@{pushed.digest}",
    )
    assert pin["platforms"] == ["linux/amd64"] and pin["resolved_from"] == "registry"


@pytest.mark.integration
def test_relock_and_outdated_of_a_kept_pin_only_send_heads(image_env, registry, tmp_path, capsys):
    """Docker Hub counts manifest GETs against its pull rate limit, not HEADs: once pinned, a
    re-lock and an up-to-date check cost HEAD requests only."""
    from autobench.hub.lockfile import read_lock
    from autobench.image.pins import check_image, plan_image_pin
    from autobench.image.registry import RegistryClient, RegistrySettings

    pushed = registry.index("vllm/vllm-openai", "nightly")
    _, child = write_recipes(tmp_path / "r", f"{registry.host}/vllm/vllm-openai:nightly")
    assert run(capsys, "lock", str(child))[0] == 0
    with RegistryClient(RegistrySettings.from_env()) as client:
        pin = plan_image_pin(load_recipe(child), child, read_lock(child), client=client)
        assert (pin.digest, pin.tag_now, pin.note) == (pushed.digest, pushed.digest, None)
        assert set(pin.entry["platforms"]) == {"linux/arm64", "linux/amd64"}
        item = check_image(child, client)
        assert item.status == "up-to-date"
        assert [m for m, _ in client.sent] == ["HEAD", "HEAD", "HEAD"]
        assert client.sent[0][1] == f"vllm/vllm-openai/manifests/{pushed.digest}"


@pytest.mark.integration
def test_a_locked_image_keeps_its_tag_for_readers_of_the_tag(image_env, registry, tmp_path, capsys):
    """preflight reads the vLLM version from the tag (`:v0.23.1`); after `lock` the value is
    `name@sha256:…  # frozen: v0.23.1` and the tag is read back from the comment."""
    from autobench.image.pins import tagged_image
    from autobench.preflight.inputs import vllm_version

    pushed = registry.image("vllm/vllm-openai", "v0.23.1")
    image = f"{registry.host}/vllm/vllm-openai"
    _, child = write_recipes(tmp_path / "r", f"{image}:v0.23.1")
    assert run(capsys, "lock", str(child))[0] == 0
    loaded = load_recipe(child)
    assert loaded.recipe.container.image == f"{image}@{pushed.digest}"
    assert tagged_image(loaded) == f"{image}:v0.23.1@{pushed.digest}"
    assert vllm_version(tagged_image(loaded), None).version == (0, 23, 1)

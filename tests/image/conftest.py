"""Fixtures for the image tests: a real registry on loopback (see registry_rig.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from registry_rig import LiveRegistry  # noqa: E402


@pytest.fixture
def registry(tmp_path: Path):
    reg = LiveRegistry(tmp_path / "registry").start()
    yield reg
    reg.stop()


@pytest.fixture
def auth_registry(tmp_path: Path):
    reg = LiveRegistry(tmp_path / "auth-registry", auth=("bench", "s3cret-registry-pass")).start()
    yield reg
    reg.stop()


@pytest.fixture
def image_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No docker config of the user's, no registry credentials, short timeouts."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(home / ".docker"))
    monkeypatch.delenv("AUTOBENCH_REGISTRY_CREDENTIALS", raising=False)
    monkeypatch.setenv("AUTOBENCH_REGISTRY_TIMEOUT", "2")
    return home

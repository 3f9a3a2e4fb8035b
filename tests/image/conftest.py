"""Fixtures for the image tests: a real registry on loopback (see registry_rig.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "hub"))  # the fake Hub, for the recipes' model pins
sys.path.insert(0, str(HERE.parent / "run"))  # the fake docker CLI (no Docker engine here)

from fakehub import seed_hub  # noqa: E402
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
def image_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The fake Hub for the model pins, no docker config of the user's, no registry
    credentials, short timeouts."""
    hub = seed_hub().start()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("AUTOBENCH_HUB_TIMEOUT", "2")
    monkeypatch.setenv("DOCKER_CONFIG", str(home / ".docker"))
    monkeypatch.delenv("AUTOBENCH_REGISTRY_CREDENTIALS", raising=False)
    monkeypatch.delenv("AUTOBENCH_IMAGES", raising=False)
    monkeypatch.setenv("AUTOBENCH_REGISTRY_TIMEOUT", "2")
    yield home
    hub.stop()

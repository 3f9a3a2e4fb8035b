"""Fixtures for the Hub tests: a fake Hub on loopback, an isolated HF cache, small recipes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# huggingface_hub reads these at import time: make sure no test process ever phones home.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakehub import BASE_REPO, DRAFT_OLD, DRAFT_REPO, FakeHub, seed_hub  # noqa: E402

BASE_YAML = f"""\
# Base recipe (a trimmed copy of the seed's structure).
name: base
model:
  repo: {BASE_REPO}
  # left on main on purpose
  revision: main
  served_name: qwen
container:
  image: vllm/vllm-openai:nightly-aarch64
  ports:
    - "8000:8000"
engine:
  max_num_seqs: 8   # conc 8
"""

DFLASH_YAML = f"""\
# The DFlash variant: extends the base.
extends: base.yaml
name: dflash

speculative:
  method: dflash
  model: {DRAFT_REPO}
  revision: {DRAFT_OLD}
  num_speculative_tokens: 5
"""


@pytest.fixture
def fake_hub():
    hub = seed_hub().start()
    yield hub
    hub.stop()


@pytest.fixture
def hub_env(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    """Point autobench (which reads the env at call time) at the fake Hub; short timeouts."""
    monkeypatch.setenv("HF_ENDPOINT", fake_hub.url)
    monkeypatch.setenv("AUTOBENCH_HUB_TIMEOUT", "2")
    return fake_hub


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    d = tmp_path / "recipes"
    d.mkdir()
    (d / "base.yaml").write_text(BASE_YAML)
    (d / "dflash.yaml").write_text(DFLASH_YAML)
    return d

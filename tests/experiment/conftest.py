"""The preflight tests' loopback fake Hub (the seed's base model and its two DFlash drafts),
served to the experiment tests: pruning is the preflight's prediction, made on real configs."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
TESTS = Path(__file__).resolve().parent.parent
for folder in ("preflight", "hub"):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))

_spec = importlib.util.spec_from_file_location(
    "preflight_conftest_for_experiments", TESTS / "preflight" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_preflight = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_preflight)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch):
    fake = _preflight.preflight_hub().start()
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    monkeypatch.setenv("AUTOBENCH_HUB_TIMEOUT", "2")
    yield fake
    fake.stop()

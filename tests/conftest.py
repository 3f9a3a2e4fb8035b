"""Shared fixtures.  Each area keeps its own fixtures in tests/<area>/conftest.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


#: Examples per property test in a default run (the unit tier): at most this many, whatever the
#: test asks.  ``AUTOBENCH_HYPOTHESIS=full`` runs every property with its own count (as
#: benchmarks/mutation.py does), and so does a fuzz run with ``AUTOBENCH_FUZZ_EXAMPLES`` set
#: (benchmarks/fuzz.py); a test's own smaller count is kept.
UNIT_MAX_EXAMPLES = 25


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("AUTOBENCH_HYPOTHESIS") == "full" or os.environ.get("AUTOBENCH_FUZZ_EXAMPLES"):
        return
    from hypothesis import settings

    for item in items:
        test = getattr(item, "obj", None)
        # given() reads this attribute each time the test runs (hypothesis/core.py)
        chosen = getattr(test, "_hypothesis_internal_use_settings", None)
        if chosen is not None and chosen.max_examples > UNIT_MAX_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(chosen, max_examples=UNIT_MAX_EXAMPLES)  # type: ignore[union-attr]


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """No test may read the user's HF token/cache or the repo's ledger by accident."""
    home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("AUTOBENCH_LEDGER", raising=False)
    # `lock` / `outdated` pin images against their registry (Docker Hub for most recipes): no test
    # may reach a public registry.  Image tests turn it back on against a loopback registry.
    monkeypatch.setenv("AUTOBENCH_IMAGES", "0")
    # Nothing reaches the real Hub (a recipe's bench fetches its model's tokenizer): tests that
    # need a Hub point HF_ENDPOINT at the loopback fake Hub; everything else is refused at once.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    yield


@pytest.fixture
def repo_root() -> Path:
    return REPO


def cli_env(**extra: str) -> dict[str, str]:
    """Environment for running the CLI in a subprocess."""
    env = dict(os.environ)
    env.update(extra)
    return env

"""Shared fixtures.  Each area keeps its own fixtures in tests/<area>/conftest.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


#: Examples per property test in a default run (the unit tier): at most this many, whatever the
#: test asks.  ``AUTOBENCH_HYPOTHESIS=full`` runs every property with its own count (as
#: benchmarks/mutation.py does), and so does a fuzz run with ``AUTOBENCH_FUZZ_EXAMPLES`` set
#: (benchmarks/fuzz.py); a test's own smaller count is kept.
UNIT_MAX_EXAMPLES = 25
#: Worker processes for the whole unit tier (pyproject's ``-n auto``), at most this many.
UNIT_MAX_WORKERS = 8


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject addopts): the whole unit tier runs on every core, as its tests are
    in-process and CPU-bound (on 2 cores under load it gets twice the share of a busy machine).
    A chosen set of tests (paths or ``-k`` given, as benchmarks/mutation.py runs) and the
    integration tier, whose time is its children's, run in this one process; ``-n N`` overrides."""
    whole = config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.getoption("keyword")
    if not whole or config.getoption("markexpr") != "not integration":
        return 0
    return max(1, min(UNIT_MAX_WORKERS, os.cpu_count() or 1))


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
def _unit_tests_start_no_python(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """The unit tier's rule, enforced: a test not marked ``integration`` starts no Python child
    (no ``python -m autobench``, no server, no fresh interpreter).  Short-lived tools on files
    (bash, shellcheck, sqlite3) are fine.  The CLI runs in-process through tests/inprocess.py."""
    if request.node.get_closest_marker("integration") is not None:
        yield
        return
    real_init = subprocess.Popen.__init__
    python = os.path.realpath(sys.executable)

    def init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        first = str(argv[0]).split()[0] if argv and not kw.get("shell") else ""
        if first and os.path.realpath(shutil.which(first) or first) == python:
            raise pytest.fail.Exception(
                f"a unit test started a Python child ({' '.join(map(str, argv[:4]))} ...): run the CLI in-process"
                " (tests/inprocess.py) or mark the test @pytest.mark.integration (docs/testing.md, Tiers)",
                pytrace=False,
            )
        real_init(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", init)
    yield


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


@pytest.fixture
def bench_configs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``BenchConfig`` each ``autobench bench`` in the test built: ``run_bench`` is replaced
    by one that keeps its config and stops with a ``BenchError`` (nothing is sent)."""
    import autobench.bench.client as client
    from autobench.errors import BenchError

    seen: list[Any] = []

    def run_bench(config: Any, **_: object) -> None:
        seen.append(config)
        raise BenchError("stopped by the test")

    monkeypatch.setattr(client, "run_bench", run_bench)
    return seen


def cli_env(**extra: str) -> dict[str, str]:
    """Environment for running the CLI in a subprocess."""
    env = dict(os.environ)
    env.update(extra)
    return env

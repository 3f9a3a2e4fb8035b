"""The two test tiers (docs/testing.md, Tiers): the default run is the unit tier, `-m integration`
the other; .ci/run runs both with the README's commands; a unit test starts no Python child."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UNIT = "python -m pytest"
INTEGRATION = "python -m pytest -m integration"


def test_the_default_run_is_the_unit_tier_and_the_marker_is_declared():
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = options["addopts"]
    assert addopts[addopts.index("-m") + 1] == "not integration" and "--strict-markers" in addopts
    assert any(m.startswith("integration:") for m in options["markers"])


def test_ci_runs_both_tiers_with_the_readme_commands():
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert f".venv/bin/{UNIT}" in ci and f".venv/bin/{INTEGRATION}" in ci
    readme = (REPO / "README.md").read_text()
    assert f"\n.venv/bin/{UNIT}\n" in readme and f"\n.venv/bin/{INTEGRATION}\n" in readme


def test_a_unit_test_cannot_start_a_python_child():
    with pytest.raises(pytest.fail.Exception, match=r"tests/inprocess.py\) or mark the test"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert subprocess.run(["bash", "-c", "exit 3"], check=False).returncode == 3  # a tool is fine


@pytest.mark.integration
def test_an_integration_test_may():
    assert subprocess.run([sys.executable, "-c", "raise SystemExit(4)"], check=False).returncode == 4

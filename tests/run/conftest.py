"""Fixtures for the run tests (helpers live in run_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_helpers import free_port, recipe_text


@pytest.fixture
def make_recipe(tmp_path: Path):
    def make(**kw) -> Path:
        port = kw.pop("port", None) or free_port()
        path = tmp_path / f"{kw.get('name', 'synth-run')}.yaml"
        path.write_text(recipe_text(port, **kw), encoding="utf-8")
        return path

    return make

"""Where the jinja2 templates live.

The repository keeps them in a top-level ``templates/`` folder.  A checkout or an
editable install reads that folder; a built wheel carries the same files as the
package data ``autobench/templates/`` (``setup.py`` maps the folder there; a
``packages.find`` table in pyproject.toml cannot express it).
"""

from __future__ import annotations

from pathlib import Path

from autobench.errors import AutobenchError

_PACKAGE = Path(__file__).resolve().parent


def templates_dir(required: str, error: type[AutobenchError] = AutobenchError) -> Path:
    """The templates folder holding ``required``, or ``error`` saying how to get it."""
    for candidate in (_PACKAGE.parent / "templates", _PACKAGE / "templates"):
        if (candidate / required).is_file():
            return candidate
    raise error(f"template {required} not found", hint="reinstall autobench from a full checkout")

"""The layering contract ([tool.importlinter] in pyproject.toml, docs/architecture.md) holds:
a package imports only packages below it, and compiling never imports the Hub or registry
clients.  The next change that crosses a seam fails here, not in review."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is a [test] extra: pip install -e '.[test]'"
    done = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_package_has_a_place_in_the_layers() -> None:
    """A new top-level module must be placed in the contract (and so in docs/architecture.md)."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    placed = {name.strip() for layer in contract["layers"] for name in layer.replace("|", ":").split(":")}
    package = REPO / "autobench"
    present = {f"autobench.{p.stem}" for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    present |= {f"autobench.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert present == placed
    architecture = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in placed:
        assert f"`{name.removeprefix('autobench.')}`" in architecture, name

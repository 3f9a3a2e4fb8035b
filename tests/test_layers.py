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

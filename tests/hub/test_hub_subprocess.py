"""The CLI in fresh processes: import-time env of huggingface_hub, offline env var, import hygiene."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakehub import BASE_NEW, DRAFT_NEW, DRAFT_OLD, VALID_TOKEN

REPO = Path(__file__).resolve().parents[2]


def autobench(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, HF_HUB_DISABLE_TELEMETRY="1", **env)
    return subprocess.run(
        [sys.executable, "-m", "autobench", *argv], capture_output=True, text=True, env=full, cwd=REPO, timeout=60
    )


@pytest.mark.integration  # fresh processes: what they import, read and cache
def test_lock_then_offline_outdated_in_fresh_processes(hub_env, recipes):
    home = os.environ["HF_HOME"]
    done = autobench("lock", str(recipes / "dflash.yaml"), HF_TOKEN=VALID_TOKEN, HF_HOME=home)
    assert done.returncode == 0, done.stderr
    assert VALID_TOKEN not in done.stdout + done.stderr
    assert f"revision: {BASE_NEW}  # frozen: main" in (recipes / "base.yaml").read_text()
    hub_env.stop()
    # HF_HUB_OFFLINE=1 set before the process starts (huggingface_hub reads it at import time too)
    done = autobench(
        "outdated", "--json", str(recipes / "dflash.yaml"), HF_HUB_OFFLINE="1", HF_HOME=home, HF_TOKEN=VALID_TOKEN
    )
    assert done.returncode == 0, done.stderr
    items = {i["kind"]: i for i in json.loads(done.stdout)}
    assert items["model"]["status"] == "up-to-date"
    assert (items["draft"]["status"], items["draft"]["pinned"], items["draft"]["current"]) == (
        "moved",
        DRAFT_OLD,
        DRAFT_NEW,
    )
    done = autobench("outdated", "--exit-code", str(recipes / "dflash.yaml"), HF_HUB_OFFLINE="1", HF_HOME=home)
    assert done.returncode == 1 and "BREAKING sliding_window: 2048 -> 4096" in done.stdout
    for path in list(recipes.iterdir()) + list(Path(home).rglob("*")):
        if path.is_file():
            assert VALID_TOKEN.encode() not in path.read_bytes(), path


@pytest.mark.integration
def test_compile_and_cli_startup_never_import_the_hub_client():
    code = (
        "import sys, importlib.util\n"
        "import autobench.cli.hub_cmds\n"
        "if importlib.util.find_spec('autobench.compile'):\n"
        "    import autobench.compile\n"
        "    for name in [m for m in list(sys.modules) if m.startswith('autobench.compile')]:\n"
        "        importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('autobench.hub', 'huggingface_hub')))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_with_deadline_gives_up_on_a_stuck_call():

    from autobench.hub.client import with_deadline

    with pytest.raises(TimeoutError):  # raised at the deadline: the 10 s call is not waited for
        with_deadline(lambda: time.sleep(10), 0.2)
    assert with_deadline(lambda: 42, 1) == 42
    with pytest.raises(ZeroDivisionError):
        with_deadline(lambda: 1 / 0, 1)

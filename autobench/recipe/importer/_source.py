"""A peer file as the importer reads it: YAML with positions, typed access that fails at the line,
and the bounds every importer path shares (sizes of filled text, numbers, JSON depth)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError
from autobench.recipe.loader import _Converter, _parse, _read_text

#: The longest command a placeholder fill may produce (a real serve command is a few KB):
#: ``{a}{a}{a}...`` with a long default would otherwise grow without bound.
MAX_FILLED = 64 * 1024
#: Nesting of JSON carried in strings (``--speculative-config '{...}'``).
MAX_JSON_DEPTH = 32
#: Domain bounds of counts a peer file states (topology.nodes / gpus_per_node in the schema).
MAX_NODES = 1024
MAX_GPUS_PER_NODE = 64
MAX_PARALLEL = MAX_NODES * MAX_GPUS_PER_NODE


@dataclass
class Options:
    """What a user passes on the way in (``autobench import`` options)."""

    image: str | None = None
    model: str | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    hardware: str | None = None  # vllm-project/recipes: a hardware profile id of its taxonomy.yaml


@dataclass
class Imported:
    """One recipe converted from a peer file."""

    name: str
    data: dict[str, Any]
    source: Path
    fmt: str
    flags: list[str] = field(default_factory=list)  # the source's serve flags (normalised)
    notes: list[str] = field(default_factory=list)  # "LINE: not carried: ..."
    mods: dict[str, Path] = field(default_factory=dict)  # mod path as written in data -> source path
    # Strings the source's own launcher hands the server as written, placeholder-shaped braces
    # and all (srtctl exports an environment value's unknown {name} literally): not unfilled.
    literal: set[str] = field(default_factory=set)


class Src:
    """One YAML document of a peer file, with the positions of its keys and values."""

    def __init__(self, path: Path, data: dict[str, Any], positions: dict[Any, Any], values: dict[Any, Any]):
        self.path = path
        self.data = data
        self.positions = positions
        self.value_positions = values

    @classmethod
    def read(cls, path: Path) -> list[Src]:
        """Every mapping document of the file (Kubernetes files hold several)."""
        text = _read_text(path)
        if "\n---" in text or text.startswith("---"):
            return cls._read_all(path, text)
        raw = _parse(path, text)
        if not isinstance(raw, dict):
            raise not_a_mapping(path)
        conv = _Converter(path)
        data = conv.convert(raw, ())
        return [cls(path, data, conv.positions, conv.value_positions)]

    @classmethod
    def _read_all(cls, path: Path, text: str) -> list[Src]:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        yaml = YAML(typ="rt")
        yaml.allow_duplicate_keys = False
        try:
            docs = list(yaml.load_all(text))
        except YAMLError:
            _parse(path, text)  # the single-document parser words the error with its line
            raise RecipeError("YAML syntax error", location=f"{path}:1:1", hint="check the YAML") from None
        out = []
        conv = _Converter(path)  # one converter: the node bound holds across documents
        for raw in docs:
            if isinstance(raw, dict):
                data = conv.convert(raw, ())
                out.append(cls(path, data, dict(conv.positions), dict(conv.value_positions)))
                conv.positions.clear()
                conv.value_positions.clear()
        if not out:
            raise not_a_mapping(path)
        return out

    def where(self, *keys: Any) -> str:
        path = tuple(keys)
        while path:
            p = self.value_positions.get(path) or self.positions.get(path)
            if p is not None:
                return str(p)
            path = path[:-1]
        return f"{self.path}:1:1"

    def line(self, *keys: Any) -> str:
        return self.where(*keys).rsplit(":", 2)[-2]

    def fail(self, keys: tuple[Any, ...], message: str, hint: str) -> RecipeError:
        return RecipeError(message, location=self.where(*keys), hint=hint)

    def get(self, keys: tuple[Any, ...], kind: type | tuple[type, ...], default: Any = None) -> Any:
        """The value at ``keys`` if it has the type ``kind``; absent or null: ``default``; any
        other type: a RecipeError at its line."""
        node: Any = self.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return self.typed(keys, node, kind, default)

    def need(self, keys: tuple[Any, ...], value: Any, kind: type | tuple[type, ...]) -> Any:
        """``value`` (found at ``keys``) if it has the type ``kind``; null or any other type: located."""
        if value is None:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            want = " or ".join(dict.fromkeys(_KIND_NAMES.get(k, k.__name__) for k in kinds))
            dotted = ".".join(str(k) for k in keys)
            raise self.fail(keys, f"{dotted}: must be {want}, not null", f"write {dotted} as {want}")
        return self.typed(keys, value, kind)

    def typed(self, keys: tuple[Any, ...], value: Any, kind: type | tuple[type, ...], default: Any = None) -> Any:
        """``value`` (found at ``keys``) if it has the type ``kind``; null: ``default``; else located."""
        if value is None:
            return default
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool)):
            return value
        want = " or ".join(dict.fromkeys(_KIND_NAMES.get(k, k.__name__) for k in kinds))
        dotted = ".".join(str(k) for k in keys)
        got = _KIND_NAMES.get(type(value), type(value).__name__)
        raise self.fail(keys, f"{dotted}: must be {want}, not {got}", f"write {dotted} as {want}")

    def count(self, keys: tuple[Any, ...], value: Any, what: str, upper: int) -> int:
        """A whole count of at least 1 and at most ``upper`` (nodes, GPUs, TP...): else located."""
        if isinstance(value, str) and value.strip().isdigit() and value.isascii() and len(value.strip()) <= 9:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(keys, f"{what}: {shown(value)} is not a whole number", f"write {what} as a number")
        if not 1 <= value <= upper:
            raise self.fail(
                keys, f"{what}: {shown(value)} is out of range (1 to {upper})", f"write a {what} between 1 and {upper}"
            )
        return value


_KIND_NAMES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true/false",
}


def dig(node: Any, *keys: Any) -> Any:
    """``node[k1][k2]...`` when every level is a mapping holding the key; else None."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def not_a_mapping(path: Path) -> RecipeError:
    return RecipeError(
        "not a peer recipe: the file does not hold a YAML mapping",
        location=f"{path}:1:1",
        hint="give a recipe file (eugr, sparkrun, vllm-recipes, vLLM config, InferenceX, or a deployment file)",
    )


def shown(value: Any, limit: int = 60) -> str:
    """A value as a note or an error line shows it: short, one line (the CLI escapes and redacts)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        return "a number of " + str(len(str(abs(value)))) + " digits" if value.bit_length() < 14000 else "a huge number"
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_object(text: Any, src: Src, keys: tuple[Any, ...], flag: str) -> dict[str, Any]:
    """JSON carried in a string, parsed with a depth bound; an object is required."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        raise src.fail(keys, f"{flag}: expected a JSON object", 'write {"method": ...}')
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:  # a nesting bound before json.loads, which recurses once per level
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_JSON_DEPTH:
        raise src.fail(keys, f"{flag}: JSON nested deeper than {MAX_JSON_DEPTH} levels", "flatten the JSON")
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, ValueError) as exc:
        msg = getattr(exc, "msg", None) or "invalid JSON"
        raise src.fail(
            keys,
            f"{flag}: the JSON in this string does not parse ({msg})",
            "write valid JSON (double quotes; eugr v1 doubles literal braces {{ }})",
        ) from exc
    if not isinstance(parsed, dict):
        raise src.fail(keys, f"{flag}: expected a JSON object", 'write {"method": ...}')
    return parsed


#: An unfilled placeholder: ``{name}`` (``str.format``, srt-slurm's environment, sparkrun) or
#: ``{{ name }}`` (Jinja); not ``${NAME}`` (shell), JSON (``{"key": ...}``) or a brace list.
PLACEHOLDER = re.compile(r"(?<![$\\])\{\{?\s*[A-Za-z_][A-Za-z0-9_.-]*\s*\}\}?")


def unfilled(text: str) -> list[str]:
    """The unfilled placeholders of a string that reaches a compiled script; a Jinja template
    (``{% ... %}``, an inline ``--chat-template``) is text vLLM renders, not one."""
    return [] if "{%" in text else [m.group(0) for m in PLACEHOLDER.finditer(text)]

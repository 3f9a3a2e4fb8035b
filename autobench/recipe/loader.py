"""Load a recipe file: YAML with positions, ``extends`` merge, schema validation.

CONTRACT (other modules rely on it):
    load_recipe(path) -> LoadedRecipe
    LoadedRecipe.path       Path of the file given
    LoadedRecipe.recipe     the validated Recipe
    LoadedRecipe.data       the fully merged plain dict (after extends), as validated
                            (``Recipe.model_dump(mode="json")``: defaults filled in)
    LoadedRecipe.digest     "sha256:<hex>" over the canonical JSON of the resolved recipe
                            (``data`` without ``extends``: moving files does not change it)
    LoadedRecipe.positions  {key path tuple: Position(file, line, col)} -- where each effective key
                            was written (1-based line/col; the file may be an extended parent).
                            Sequence items are keyed by their index: ("engine", "extra_args", 0).
    LoadedRecipe.value_positions  same, pointing at the value instead of the key
    LoadedRecipe.files      every file read, the given one first, then its parents
    LoadedRecipe.mods       {setup step index: absolute path} of every mod step; each step's
                            ``sha256`` (in ``recipe``, ``data`` and so the digest) is the mod's
                            content hash, computed here (a written one must match)
    LoadedRecipe.position(*keys) -> Position | None   (nearest written ancestor if the key
                            itself was defaulted; None only when nothing on the path was written)
Errors: RecipeError with location "file:line:col" and a hint, message "key.path: what is wrong".

Loading rules, in order: the file must exist, be a regular file, be at most ``MAX_BYTES``,
be UTF-8 text without NUL bytes, and hold one YAML mapping (YAML 1.2; duplicate keys, tabs
in indentation, custom tags and more than ``MAX_NODES`` nodes after alias expansion are
refused).  ``extends: other.yaml`` (relative to the file that says it; a ``.yaml``/``.yml``
regular file whose top-level keys are recipe keys, else refused without echoing it) deep-merges the file
onto its parent: mappings merge key by key, any other value (lists included) replaces the
parent's, and ``null`` deletes the inherited key.  ``name`` is never inherited: it is the
child's own ``name:`` or else the child's file stem.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import hashlib
import json
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.digits import MAX_INT_DIGITS
from autobench.errors import RecipeError
from autobench.files import confined, read_regular, sha256_regular

if TYPE_CHECKING:  # importing the schema (pydantic) is deferred to load_recipe
    from autobench.recipe.schema import Recipe

MAX_BYTES = 1_000_000  # a recipe is a few KB; anything this big is a mistake
MAX_NODES = 20_000  # nodes after alias expansion (billion-laughs guard)
MAX_DEPTH = 50  # nesting depth
MAX_EXTENDS = 8  # length of an extends chain

#: Where a key is: mapping keys and sequence indexes from the top, ("engine", "extra_args", 0).
KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Position:
    file: Path
    line: int
    col: int

    def __str__(self) -> str:  # line 0: the file as a whole (a finding on a key written nowhere)
        return str(self.file) if self.line == 0 else f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class LoadedRecipe:
    path: Path
    recipe: Recipe
    data: dict[str, object]
    digest: str
    positions: dict[KeyPath, Position] = field(default_factory=dict)
    value_positions: dict[KeyPath, Position] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    mods: dict[int, Path] = field(default_factory=dict)
    cells: list[str] = field(default_factory=lambda: ["base"])

    def position(self, *keys: str | int) -> Position | None:
        """Where ``keys`` was written, else its nearest written ancestor, else None."""
        path = tuple(keys)
        while path:
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return None

    def value_position(self, *keys: str | int) -> Position | None:
        return self.value_positions.get(tuple(keys)) or self.position(*keys)

    def with_changes(self, changes: typing.Mapping[str, object]) -> LoadedRecipe:
        """A new recipe: this one with ``changes`` merged in, validated and digested again; this
        one is not changed (it is immutable: edit a recipe through here, never in place).

        ``changes`` maps a dotted key to its new value (``{"engine.max_num_seqs": 4}``); a mapping
        value deep-merges (``{"bench": {"concurrency": [1, 4]}}``), ``None`` deletes the key, as in
        ``extends``.  A bad change is one RecipeError located at ``with_changes``, naming the key."""
        where = Position(Path("with_changes"), 1, 1)
        overrides = []
        for key, value in changes.items():
            if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
                raise RecipeError(
                    f"with_changes: {key!r} is not a dotted recipe key", hint='e.g. "engine.max_num_seqs"'
                )
            overrides.append(Override(tuple(key.split(".")), value, where))
        data = json.loads(json.dumps(self.data))  # a deep copy; this recipe stays as it is
        doc = _Doc(self.path, data, dict(self.positions), dict(self.value_positions))
        _apply_overrides(doc, overrides)
        return _finish(doc, self.path, self.files, self.cells)


class RecipeSchemaError(RecipeError):
    """A recipe that parsed but does not match the schema.  ``problems`` holds every problem
    as ``(location, key path, message, hint)``; the error's own text is the first one."""

    problems: list[tuple[str | None, str, str, str | None]]


def canonical_digest(data: Mapping[str, object]) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def format_path(path: KeyPath) -> str:
    """("engine", "extra_args", 2) -> "engine.extra_args[2]"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


# --------------------------------------------------------------------------- reading one file


@dataclass
class _Doc:
    """One parsed file: plain data plus key/value positions."""

    path: Path
    data: dict[str, Any]
    positions: dict[KeyPath, Position]
    value_positions: dict[KeyPath, Position]


def _read_text(path: Path, *, where: str | None = None, hint_missing: str | None = None) -> str:
    location = where or str(path)
    what = "extends: target" if where else "recipe file"
    if not path.exists():
        raise RecipeError(
            f"{what} not found: {path}",
            location=where,
            hint=hint_missing or "check the path; recipes live in recipes/*.yaml",
        )
    if path.is_dir():
        raise RecipeError(
            f"{what} {path} is a directory, not a recipe file",
            location=where,
            hint="pass a .yaml file (validate accepts folders, compile takes one file)",
        )
    if not path.is_file():
        raise RecipeError(f"{what} {path} is not a regular file", location=where, hint="pass a .yaml file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise RecipeError(
            f"cannot read recipe {path}: {exc.strerror or exc}",
            location=where,
            hint="check the file's permissions",
        ) from exc
    if size > MAX_BYTES:
        raise RecipeError(
            f"file is {size} bytes; a recipe may be at most {MAX_BYTES} bytes",
            location=location,
            hint="a recipe is a few KB of YAML; is this the right file?",
        )
    # Bounded on every path (autobench.files): a /proc file reports size 0 and may never end.
    blob = read_regular(path, what="recipe file", limit=MAX_BYTES, error=RecipeError)
    if b"\x00" in blob:
        raise RecipeError(
            "binary file, not a YAML recipe",
            location=location,
            hint="pass a text .yaml recipe",
        )
    try:
        return blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = blob[: exc.start].count(b"\n") + 1
        col = exc.start - (blob.rfind(b"\n", 0, exc.start) + 1) + 1
        raise RecipeError(
            "file is not UTF-8 text (binary file?)",
            location=f"{path}:{line}:{col}",
            hint="save the recipe as UTF-8 YAML",
        ) from exc


def _tab_in_indentation(text: str) -> tuple[int, int] | None:
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip(" \t")
        indent = line[: len(line) - len(stripped)]
        if "\t" in indent and stripped and not stripped.startswith("#"):
            return lineno, indent.index("\t") + 1
    return None


class _TooManyDigits(Exception):
    def __init__(self, length: int, line: int, col: int):
        super().__init__(f"{length} characters")
        self.length, self.line, self.col = length, line, col


_CONSTRUCTOR: Any = None


def _bounded_constructor() -> Any:
    """ruamel's round-trip constructor, refusing an integer longer than MAX_INT_DIGITS digits
    before converting it (Python refuses int <-> str past 4,300 digits: an internal error)."""
    global _CONSTRUCTOR
    if _CONSTRUCTOR is None:
        from ruamel.yaml.constructor import RoundTripConstructor

        class BoundedConstructor(RoundTripConstructor):
            def construct_yaml_int(self, node: Any) -> Any:
                value = str(node.value)
                if len(value) > MAX_INT_DIGITS + 3:  # a sign and a 0x/0o/0b prefix
                    mark = node.start_mark
                    raise _TooManyDigits(len(value), mark.line + 1, mark.column + 1)
                return super().construct_yaml_int(node)

        BoundedConstructor.add_constructor("tag:yaml.org,2002:int", BoundedConstructor.construct_yaml_int)
        _CONSTRUCTOR = BoundedConstructor
    return _CONSTRUCTOR


def _parse(path: Path, text: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    yaml.Constructor = _bounded_constructor()
    try:
        return yaml.load(text)
    except _TooManyDigits as exc:
        raise RecipeError(
            f"a number of {exc.length} characters (at most {MAX_INT_DIGITS} digits)",
            location=f"{path}:{exc.line}:{exc.col}",
            hint="no recipe value needs a number this long; quote it if it is text",
        ) from exc
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        tab = _tab_in_indentation(text)
        if tab is not None and tab[0] <= line:
            raise RecipeError(
                "tab character in indentation",
                location=f"{path}:{tab[0]}:{tab[1]}",
                hint="YAML indents with spaces only; replace the tab with spaces",
            ) from exc
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        if type(exc).__name__ == "DuplicateKeyError":
            first = exc.context_mark
            key = re.search(r'duplicate key "([^"]*)"', problem)
            name = key.group(1) if key else "?"
            if not _PROFILE_KEY.fullmatch(name):  # a line of some other file, maybe a secret one
                name = "a key"
            also = f" (first written at line {first.line + 1})" if first is not None else ""
            raise RecipeError(
                f"{name}: duplicate key{also}",
                location=f"{path}:{line}:{col}",
                hint="each key may appear once per mapping; delete or merge one of them",
            ) from exc
        raise RecipeError(
            f"YAML syntax error: {problem}",
            location=f"{path}:{line}:{col}",
            hint="check indentation, colons, quotes and brackets around this spot",
        ) from exc
    except RecursionError as exc:
        raise RecipeError(
            "YAML nesting is too deep", location=str(path), hint="a recipe nests a few levels at most"
        ) from exc
    except YAMLError as exc:
        raise RecipeError(
            f"YAML error: {' '.join(str(exc).split())}",
            location=str(path),
            hint="check the file is valid YAML",
        ) from exc


class _Converter:
    """Turn ruamel's round-trip tree into plain JSON-able data, recording positions and
    guarding against alias bombs (node count), recursive aliases and deep nesting."""

    def __init__(self, path: Path):
        self.path = path
        self.nodes = 0
        self.positions: dict[KeyPath, Position] = {}
        self.value_positions: dict[KeyPath, Position] = {}
        self._stack: set[int] = set()

    def pos(self, line: int, col: int) -> Position:
        return Position(self.path, line + 1, col + 1)

    def where(self, keypath: KeyPath) -> str:
        p = self.positions.get(keypath)
        return str(p) if p else str(self.path)

    def convert(self, node: Any, keypath: KeyPath) -> Any:
        from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar

        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise RecipeError(
                f"recipe expands to more than {MAX_NODES} YAML nodes (alias/anchor bomb?)",
                location=self.where(keypath),
                hint="a recipe needs a few hundred nodes; remove the nested aliases (*name)",
            )
        if len(keypath) > MAX_DEPTH:
            raise RecipeError(
                f"{format_path(keypath[:3])}: nesting deeper than {MAX_DEPTH} levels",
                location=self.where(keypath),
                hint="flatten the structure",
            )
        if isinstance(node, (CommentedMap, CommentedSeq, dict, list)):
            if id(node) in self._stack:
                raise RecipeError(
                    f"{format_path(keypath)}: recursive alias (a node contains itself)",
                    location=self.where(keypath),
                    hint="an alias (*name) may not point at a node that contains it",
                )
            self._stack.add(id(node))
            try:
                if isinstance(node, dict):
                    return self._mapping(node, keypath)
                return self._sequence(node, keypath)
            finally:
                self._stack.discard(id(node))
        if isinstance(node, TaggedScalar) or (
            hasattr(node, "tag") and getattr(node.tag, "value", None) and not isinstance(node, (str, int, float))
        ):
            tag = getattr(getattr(node, "tag", None), "value", "?")
            raise RecipeError(
                f"{format_path(keypath)}: unsupported YAML tag {tag}",
                location=self.where(keypath),
                hint="remove the !tag; recipes hold plain strings, numbers, booleans, lists and maps",
            )
        return self._scalar(node, keypath)

    def _scalar(self, node: Any, keypath: KeyPath) -> Any:
        if node is None or isinstance(node, bool):
            return node
        if isinstance(node, int):
            return int(node)
        if isinstance(node, float):
            value = float(node)
            if math.isnan(value) or math.isinf(value):
                raise RecipeError(
                    f"{format_path(keypath)}: {value} is not a usable number",
                    location=self.where(keypath),
                    hint="write a finite number",
                )
            return value
        if isinstance(node, str):
            return str(node)
        if isinstance(node, (_dt.date, _dt.datetime)):
            return node.isoformat()  # YAML 1.2 timestamps: keep them as the text written
        return str(node)

    def _mapping(self, node: Any, keypath: KeyPath) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in node:
            value = node[key]
            if not isinstance(key, (str, int, float, bool)) and key is not None:  # `{{}}`, `? [a]`
                raise RecipeError(
                    f"{format_path(keypath)}: a mapping key must be a plain scalar",
                    location=self.where(keypath),
                    hint="write keys as plain words",
                )
            skey = key if isinstance(key, str) else json.dumps(key) if key is not None else "null"
            sub = (*keypath, skey)
            kpos, vpos = self._map_positions(node, key)
            if kpos is not None:
                self.positions[sub] = self.pos(*kpos)
            if vpos is not None and not isinstance(value, (dict, list)):  # collections: point at the key
                self.value_positions[sub] = self.pos(*vpos)
            out[skey] = self.convert(value, sub)
        return out

    @staticmethod
    def _map_positions(node: Any, key: Any) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        lc = getattr(node, "lc", None)
        data = getattr(lc, "data", None) or {}
        if key in data:
            line, col, vline, vcol = data[key]
            return (line, col), (vline, vcol)
        for merged in getattr(node, "merge", None) or []:  # `<<: *anchor` keys
            if hasattr(merged, "lc") and key in merged:
                found = _Converter._map_positions(merged, key)
                if found[0] is not None:
                    return found
        return None, None

    def _sequence(self, node: Any, keypath: KeyPath) -> list[Any]:
        out = []
        lc = getattr(node, "lc", None)
        data = getattr(lc, "data", None) or {}
        for index, item in enumerate(node):
            sub = (*keypath, index)
            if index in data:
                line, col = data[index][:2]
                self.positions[sub] = self.value_positions[sub] = self.pos(line, col)
            out.append(self.convert(item, sub))
        return out


def _read_doc(
    path: Path,
    *,
    where: str | None = None,
    hint_missing: str | None = None,
    what: str = "recipe",
    hint_keys: str = "a recipe needs at least model.repo and container.image; see recipes/ for examples",
    hint_first: str = "start the file with top-level keys such as `model:` and `container:`",
) -> _Doc:
    text = _read_text(path, where=where, hint_missing=hint_missing)
    raw = _parse(path, text)
    if raw is None:
        raise RecipeError(f"{what} file is empty", location=f"{path}:1:1", hint=hint_keys)
    if not isinstance(raw, dict):
        kind = "a list" if isinstance(raw, list) else f"a single value ({type(raw).__name__})"
        raise RecipeError(
            f"{'an' if what[0] in 'aeiou' else 'a'} {what} must be a mapping of keys, this file holds {kind}",
            location=f"{path}:1:1",
            hint=hint_first,
        )
    conv = _Converter(path)
    data = conv.convert(raw, ())
    return _Doc(path, data, conv.positions, conv.value_positions)


@dataclass(frozen=True)
class Document:
    """A YAML file read with the recipe loader's rules (size, UTF-8, duplicate keys, node and
    depth bounds): its plain data and where each key and value was written."""

    path: Path
    data: dict[str, object]
    positions: dict[KeyPath, Position]
    value_positions: dict[KeyPath, Position]

    def where(self, *keys: str | int) -> Position:
        """Where ``keys`` (or its nearest written ancestor) was written; the file's start else."""
        return _nearest(self.positions, tuple(keys)) or Position(self.path, 1, 1)

    def value_where(self, *keys: str | int) -> Position:
        return self.value_positions.get(tuple(keys)) or self.where(*keys)


def read_document(path: str | Path, *, what: str, hint: str) -> Document:
    """Read another file of ours (an experiment, ...) as the loader reads a recipe; ``what``
    names it in errors, ``hint`` says what it should hold."""
    doc = _read_doc(Path(path), what=what, hint_keys=hint, hint_first=hint)
    return Document(doc.path, doc.data, doc.positions, doc.value_positions)


@dataclass(frozen=True)
class Override:
    """One key of a recipe set from elsewhere (an experiment's factor level): the key path,
    the value (``None`` deletes the key, as in ``extends``) and where it was written."""

    path: KeyPath
    value: object
    where: Position


def _apply_overrides(doc: _Doc, overrides: typing.Sequence[Override]) -> None:
    """Deep-merge each override onto ``doc`` in order; positions point where it was written."""
    for item in overrides:
        node: Any = item.value
        for part in reversed(item.path):
            node = {part: node}
        positions = {item.path[: i + 1]: item.where for i in range(len(item.path))}
        over = _Doc(item.where.file, node, positions, {item.path: item.where})
        _merge(doc.data, over, node, (), doc.positions, doc.value_positions)


# --------------------------------------------------------------------------- extends


def _drop_prefix(positions: dict[KeyPath, Position], prefix: KeyPath) -> None:
    n = len(prefix)
    for key in [k for k in positions if k[:n] == prefix]:
        del positions[key]


def _merge(
    base: dict[str, Any],
    over: _Doc,
    node: dict[str, Any],
    prefix: KeyPath,
    pos: dict[KeyPath, Position],
    vpos: dict[KeyPath, Position],
    src_prefix: KeyPath | None = None,
) -> None:
    """Deep-merge ``node`` (a mapping of ``over`` written at ``src_prefix``) onto ``base`` at ``prefix``.

    ``key+: [items]`` appends the items to the inherited list ``key`` (or starts it)."""
    src_prefix = prefix if src_prefix is None else src_prefix
    literal = bool(prefix) and prefix[0] in ("variants", "roles")  # appended when a cell is applied
    for key, value in node.items():
        append = key.endswith("+") and len(key) > 1 and not literal
        name = key[:-1] if append else key
        path = (*prefix, name)
        src = (*src_prefix, key)
        where = over.positions.get(src) or _nearest(over.positions, src) or Position(over.path, 1, 1)
        if append:
            if not isinstance(value, list):
                raise RecipeError(
                    f"{format_path(path)}+: appending needs a list of items",
                    location=str(where),
                    hint=f"write `{name}+: [item, ...]`, or `{name}:` to replace the inherited value",
                )
            if name in base and not isinstance(base[name], list):
                kind = "mapping" if isinstance(base[name], dict) else type(base[name]).__name__
                raise RecipeError(
                    f"{format_path(path)}+: appends to a list, but the inherited {name} is a {kind}",
                    location=str(where),
                    hint=f"write `{name}:` (no +) to replace it",
                )
            start = len(base.get(name) or [])
            base.setdefault(name, []).extend(json.loads(json.dumps(value)))
            for table, target in ((over.positions, pos), (over.value_positions, vpos)):
                for k, v in table.items():
                    index = k[len(src)] if k[: len(src)] == src and len(k) > len(src) else None
                    if isinstance(index, int):
                        target[(*path, index + start, *k[len(src) + 1 :])] = v
            pos.setdefault(path, where)
        elif value is None and name in base:
            del base[name]
            _drop_prefix(pos, path)
            _drop_prefix(vpos, path)
        elif isinstance(value, dict):
            if not isinstance(base.get(name), dict):
                base[name] = {}
                _drop_prefix(pos, path)
                _drop_prefix(vpos, path)
            _merge(base[name], over, value, path, pos, vpos, src)
            if src in over.positions:
                pos[path] = over.positions[src]
        else:
            base[name] = json.loads(json.dumps(value))
            _drop_prefix(pos, path)
            _drop_prefix(vpos, path)
            n = len(src)
            for table, target in ((over.positions, pos), (over.value_positions, vpos)):
                for k, v in table.items():
                    if k[:n] == src:
                        target[(*path, *k[n:])] = v


def _flatten(doc: _Doc) -> _Doc:
    """A file with nothing to extend: merged onto nothing, so ``key+:`` lists become plain lists."""
    if not _has_append(doc.data):
        return doc
    data: dict[str, Any] = {}
    pos: dict[KeyPath, Position] = {}
    vpos: dict[KeyPath, Position] = {}
    _merge(data, doc, doc.data, (), pos, vpos)
    return _Doc(doc.path, data, pos, vpos)


def _has_append(node: Any, top: bool = True) -> bool:
    if isinstance(node, dict):
        return any(
            (k.endswith("+") and len(k) > 1) or (not (top and k in ("variants", "roles")) and _has_append(v, False))
            for k, v in node.items()
        )
    return False


RECIPE_SUFFIXES = (".yaml", ".yml")


def _refuse_non_recipe(parent: _Doc, loc: str) -> None:
    """An extends target whose top-level keys are not recipe keys is some other YAML file: refused
    without naming its keys or values (they are another file's content, maybe a secret's)."""
    from autobench.recipe.schema import Recipe

    unknown = [k for k in parent.data if k not in Recipe.model_fields]
    if unknown:
        raise RecipeError(
            f"extends: target is not a recipe: {len(unknown)} of its {len(parent.data)} top-level keys "
            "are not recipe keys",
            location=loc,
            hint="extends names another recipe file (keys such as model:, container:, engine:)",
        )


def _resolve(
    path: Path, chain: list[Path], files: list[Path], *, where: str | None = None, hint_missing: str | None = None
) -> _Doc:
    doc = _read_doc(path, where=where, hint_missing=hint_missing)
    files.append(path)
    target = doc.data.get("extends")
    if target is None:
        return _flatten(doc)
    loc = str(doc.value_positions.get(("extends",)) or doc.positions.get(("extends",)) or path)
    if not isinstance(target, str) or not target.strip():
        raise RecipeError(
            "extends: must be the path of another recipe file",
            location=loc,
            hint="write e.g. `extends: base.yaml` (relative to this file)",
        )
    parent_path = Path(target).expanduser()
    if not parent_path.is_absolute():
        parent_path = path.parent / parent_path
    resolved = parent_path.resolve()
    if resolved in chain:
        names = " -> ".join(p.name for p in [*chain, resolved])
        raise RecipeError(
            f"extends: cycle {names}",
            location=loc,
            hint="a recipe may not extend itself, directly or through its parents; remove one extends",
        )
    if len(chain) >= MAX_EXTENDS:
        raise RecipeError(
            f"extends: chain longer than {MAX_EXTENDS} files",
            location=loc,
            hint="flatten the recipe hierarchy",
        )
    if resolved.is_file() and resolved.suffix.lower() not in RECIPE_SUFFIXES:
        # checked on the resolved path: a link named base.yaml to /etc/shadow is refused too
        raise RecipeError(
            "extends: target is not a recipe file (.yaml or .yml); it is not read",
            location=loc,
            hint="extends names another recipe, e.g. `extends: base.yaml`",
        )
    parent = _resolve(
        parent_path,
        [*chain, resolved],
        files,
        where=loc,
        hint_missing=f"extends is relative to {path.name}'s folder; fix the path or create {parent_path}",
    )
    _refuse_non_recipe(parent, loc)
    data = parent.data
    pos = dict(parent.positions)
    vpos = dict(parent.value_positions)
    for key in ("name", "extends"):  # never inherited
        data.pop(key, None)
        _drop_prefix(pos, (key,))
        _drop_prefix(vpos, (key,))
    _merge(data, doc, doc.data, (), pos, vpos)
    return _Doc(path, data, pos, vpos)


# --------------------------------------------------------------------------- validation errors

_TYPE_HINTS = {
    "int_type": "write a whole number",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "float_type": "write a number",
    "float_parsing": "write a number",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "string_type": "write text (quote it if YAML reads it as something else)",
    "dict_type": "write a mapping (indented `key: value` lines)",
    "model_type": "write a mapping (indented `key: value` lines)",
    "model_attributes_type": "write a mapping (indented `key: value` lines)",
    "list_type": "write a list (`- item` lines or [a, b])",
}


def _models_in(annotation: Any) -> list[type]:
    from pydantic import BaseModel

    found: list[type] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            found.extend(_models_in(arg))
    return found


def _model_at(path: KeyPath) -> type | None:
    """The pydantic model class that owns the keys at ``path`` (for did-you-mean)."""
    from autobench.recipe.schema import Recipe

    model: type | None = Recipe
    for part in path:
        if model is None:
            return None
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return None
        models = _models_in(fields[part].annotation)
        model = models[0] if models else None
    return model


def _clean_loc(loc: tuple[Any, ...], data: Any) -> KeyPath:
    """Drop pydantic's union/validator tags so ``loc`` is a path through ``data``."""
    out: list[Any] = []
    node = data
    for i, part in enumerate(loc):
        in_map = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_map or in_list:
            out.append(part)
            node = node[part]
        elif i == len(loc) - 1 and isinstance(node, dict):
            out.append(part)  # a missing key
            node = None
        # else: a tag such as 'int' / 'function-after[...]': skip
    return tuple(out)


def _describe(err: dict[str, Any], path: KeyPath, data: Any, extra_hint: str | None) -> tuple[str, str | None]:
    kind = err["type"]
    label = format_path(path)
    if kind == "extra_forbidden":
        key = path[-1]
        owner = _model_at(path[:-1])
        allowed = sorted(getattr(owner, "model_fields", {})) if owner else []
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        if close:
            hint = f"did you mean '{close[0]}'?"
        elif allowed:
            hint = "allowed keys here: " + ", ".join(allowed)
        else:
            hint = "remove it"
        return f"{label}: unknown key '{key}'", hint
    if kind == "missing":
        under = f"under `{format_path(path[:-1])}:`" if path[:-1] else "at the top level"
        return f"{label}: missing required key '{path[-1]}'", f"add `{path[-1]}:` {under}"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"{label}: {json.dumps(err.get('input'))} must be one of {expected}", "pick one of the listed values"
    if kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern", "")
        if "/" in pattern:
            return (
                f"{label}: {json.dumps(err.get('input'))} is not a Hub repo id",
                "write owner/name, e.g. z-lab/Qwen3.5-122B-A10B-DFlash",
            )
        hint = "lower-case letters, digits, '.', '_' and '-'"
        if path == ("name",):
            hint += "; name defaults to the file stem: set `name:` explicitly or rename the file"
        return f"{label}: {json.dumps(err.get('input'))} does not match {pattern}", hint
    if kind == "value_error" and path == ("container", "image"):
        reason = str(err.get("ctx", {}).get("error", "")) or str(err["msg"])
        return (
            f"{label}: not an image reference: {reason}",
            "write [registry/]repository[:tag][@sha256:digest], e.g. vllm/vllm-openai:v0.11.0",
        )
    if kind == "grid_axis":  # autobench.recipe.schema._grid_axis: its own words and fix
        ctx = err.get("ctx") or {}
        return f"{label}: {ctx.get('message', err['msg'])}", str(ctx.get("hint") or "").replace("{key}", label)
    if kind in _BOUNDS:
        word, bound_key, fix = _BOUNDS[kind]
        bound = err.get("ctx", {}).get(bound_key)
        return f"{label}: {_shown(err.get('input'))} is {word} {bound}", f"set `{label}` to {fix.format(bound)}"
    if kind in _STRICT_TYPES and isinstance(err.get("input"), str) and _looks_like(kind, err["input"]):
        want = _STRICT_TYPES[kind]
        return (
            f"{label}: {_shown(err.get('input'))} is a quoted string, not {want}",
            f"write {want} without quotes (YAML reads anything in quotes as text)",
        )
    if kind == "value_error":  # a validator's own words, without pydantic's "Value error, "
        reason = str(err.get("ctx", {}).get("error", "")) or str(err["msg"])
        return f"{label}: {reason}", _TYPE_HINTS.get(kind) or extra_hint
    return f"{label}: {err['msg']}", _TYPE_HINTS.get(kind) or extra_hint


#: pydantic range errors -> (what the value is, the bound's ctx key, the fix with the bound).
_BOUNDS = {
    "greater_than_equal": ("below the minimum", "ge", "{} or more"),
    "greater_than": ("not above the minimum", "gt", "more than {}"),
    "less_than_equal": ("above the maximum", "le", "{} or less"),
    "less_than": ("not below the maximum", "lt", "less than {}"),
}

#: Types a recipe must write as YAML scalars, not quoted strings (the schema is strict).
_STRICT_TYPES = {
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
}


def _looks_like(kind: str, text: str) -> bool:
    """Whether ``text`` is a boolean / number that quotes turned into a string."""
    text = text.strip().lower()
    if kind == "bool_type":
        return text in ("true", "false", "yes", "no", "on", "off")
    try:
        int(text) if kind == "int_type" else float(text)
    except ValueError:
        return False
    return True


def _shown(value: Any) -> str:
    """A user's value in a message: short, JSON-quoted, control characters escaped."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _one_branch(errors: list[dict[str, Any]], data: Any) -> list[dict[str, Any]]:
    """``errors`` without the other branch's of a union (a grid axis: one value, or a list): a
    value written as a list is not also "not a valid integer", a scalar not also "not a valid
    list", when the branch it is written as has its own error at or below its key."""
    paths = [_clean_loc(tuple(err["loc"]), data) for err in errors]

    def other_branch(err: dict[str, Any], path: KeyPath) -> bool:
        is_list = isinstance(err.get("input"), list)
        wrong = (
            err["type"] == "list_type" if not is_list else err["type"] in _STRICT_TYPES or err["type"] == "string_type"
        )
        return wrong and any(p[: len(path)] == path for p, e in zip(paths, errors, strict=True) if e is not err)

    return [err for err, path in zip(errors, paths, strict=True) if not other_branch(err, path)]


def _validation_error(exc: Any, doc: _Doc) -> RecipeSchemaError:
    problems: list[tuple[str | None, str, str, str | None]] = []
    for err in _one_branch(exc.errors(include_url=False), doc.data):
        path = _clean_loc(tuple(err["loc"]), doc.data)
        ctx = (err.get("ctx") or {}) if err["type"] == "grid_axis" else {}
        path = (*path, *ctx.get("at", ()))  # a key below the model that said it: point at it
        index = ctx.get("index")
        if index is not None:  # a grid axis's bad item: point at it
            path = (*path, index)
        if err["type"] in ("missing",):
            anchor = path[:-1]
            where = _nearest(doc.positions, anchor) or Position(doc.path, 1, 1)
        elif err["type"] == "extra_forbidden":
            where = _nearest(doc.positions, path) or Position(doc.path, 1, 1)
        else:
            where = doc.value_positions.get(path) or _nearest(doc.positions, path) or Position(doc.path, 1, 1)
        message, hint = _describe(err, path, doc.data, None)
        problems.append((str(where), format_path(path), message, hint))
    location, _, message, hint = problems[0]
    if len(problems) > 1:
        message = f"{message} (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    error = RecipeSchemaError(message, location=location, hint=hint)
    error.problems = problems
    return error


def _nearest(positions: dict[KeyPath, Position], path: KeyPath) -> Position | None:
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return None


# --------------------------------------------------------------------------- mods


def content_sha256(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes; of a directory, over its files' relative paths and
    bytes (sorted, symlinks and special files refused), so a renamed or edited patch changes it."""
    if path.is_file():
        return "sha256:" + sha256_regular(path, what="mod file", error=RecipeError).hex()
    digest = hashlib.sha256()
    for item in sorted(path.rglob("*")):
        rel = item.relative_to(path).as_posix()
        if item.is_symlink() or not (item.is_file() or item.is_dir()):
            raise OSError(f"{rel} is a symlink or special file")
        if item.is_file():
            digest.update(rel.encode() + b"\0" + sha256_regular(item, what="mod file", error=RecipeError))
    return "sha256:" + digest.hexdigest()


def local_model_digest(path: str | Path) -> str | None:
    """A local model directory's pin: ``sha256:`` over its config and weight index files (their
    relative names and bytes) and every weight file's name and size.  None if it is not a folder."""
    root = Path(path)
    if not root.is_dir():
        return None
    digest = hashlib.sha256()
    for item in sorted(root.iterdir()):
        if not item.is_file():
            continue
        if item.suffix == ".json":  # config.json, *.index.json, tokenizer and generation configs
            digest.update(item.name.encode() + b"\0" + sha256_regular(item, what="model file", error=RecipeError))
        elif item.suffix in (".safetensors", ".bin", ".gguf", ".pt"):
            digest.update(f"{item.name}\0{item.stat().st_size}".encode())
    return "sha256:" + digest.hexdigest()


def _hash_mods(recipe: Any, doc: _Doc) -> tuple[Any, dict[int, Path]]:
    """Resolve and hash every mod step; refuse a missing mod or a changed one.  Returns the
    recipe with each mod's sha256 filled in (a new one: recipes are immutable) and the mods."""
    found: dict[int, Path] = {}
    shas: dict[int, str] = {}
    for i, step in enumerate(recipe.launch.setup):
        if step.mod is None:
            continue
        keys = ("launch", "setup", i, "mod")
        where = doc.value_positions.get(keys) or _nearest(doc.positions, keys) or Position(doc.path, 1, 1)
        # A mod runs with bash (on the host for the process runtime): it must be a file of the
        # recipe's own tree (or of a folder the user allows), never ../../etc/passwd or ~/x.
        path = confined(
            step.mod, where.file.parent, what=f"launch.setup[{i}].mod:", error=RecipeError, location=str(where)
        )
        if not path.exists():
            raise RecipeError(
                f"launch.setup[{i}].mod: mod not found: {path}",
                location=str(where),
                hint="mod paths are relative to the recipe file that names them; fix the path or add the mod",
            )
        if path.is_dir() and not (path / "run.sh").is_file():
            raise RecipeError(
                f"launch.setup[{i}].mod: {path} is a directory without run.sh",
                location=str(where),
                hint="a mod is a script file, or a directory whose run.sh applies it",
            )
        try:
            sha = content_sha256(path)
        except OSError as exc:
            raise RecipeError(
                f"launch.setup[{i}].mod: cannot read {path}: {exc.strerror or exc}",
                location=str(where),
                hint="a mod holds regular files only",
            ) from exc
        if step.sha256 is not None and step.sha256 != sha:
            pos = doc.value_positions.get(("launch", "setup", i, "sha256")) or where
            raise RecipeError(
                f"launch.setup[{i}].sha256: the mod {path.name} changed (it hashes to {sha})",
                location=str(pos),
                hint="review the mod's change, then update or delete the written sha256",
            )
        shas[i] = sha
        found[i] = path.resolve()
    if shas:
        setup = [
            step.model_copy(update={"sha256": shas[i]}) if i in shas else step
            for i, step in enumerate(recipe.launch.setup)
        ]
        recipe = recipe.model_copy(update={"launch": recipe.launch.model_copy(update={"setup": setup})})
    return recipe, found


# --------------------------------------------------------------------------- entry point


MATRIX_KEYS = ("variants", "roles")
BASE_CELL = "base"


def _matrix(doc: _Doc) -> dict[str, dict[str, Any]]:
    """{"variants": {name: override}, "roles": {name: override}} as written (checked shapes)."""
    out: dict[str, dict[str, Any]] = {}
    for key in MATRIX_KEYS:
        table = doc.data.get(key)
        if table is None:
            out[key] = {}
            continue
        where = doc.positions.get((key,)) or Position(doc.path, 1, 1)
        if not isinstance(table, dict):
            raise RecipeError(
                f"{key}: must map each name to its overrides",
                location=str(where),
                hint=f"write `{key}:` then `  NAME:` with the keys it changes, indented",
            )
        for name, override in table.items():
            spot = doc.positions.get((key, name)) or where
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or name == BASE_CELL:
                raise RecipeError(
                    f"{key}.{name}: not a usable {key[:-1]} name",
                    location=str(spot),
                    hint=f"letters, digits, '.', '_', '-' (and not {BASE_CELL!r})",
                )
            if not isinstance(override, dict):
                raise RecipeError(
                    f"{key}.{name}: must be a mapping of the keys this {key[:-1]} changes",
                    location=str(spot),
                    hint="e.g. `engine: {max_num_seqs: 16}`",
                )
            for inner in MATRIX_KEYS + ("name", "extends"):
                if inner in override:
                    raise RecipeError(
                        f"{key}.{name}.{inner}: a {key[:-1]} cannot set {inner}",
                        location=str(doc.positions.get((key, name, inner)) or spot),
                        hint="variants and roles override the recipe's other keys",
                    )
        out[key] = table
    both = set(out["variants"]) & set(out["roles"])
    if both:
        name = sorted(both)[0]
        raise RecipeError(
            f"roles.{name}: the name is also a variant",
            location=str(doc.positions.get(("roles", name)) or doc.path),
            hint="give variants and roles different names (a cell is VARIANT/ROLE)",
        )
    return out


def matrix_cells(matrix: Mapping[str, Mapping[str, object]]) -> list[str]:
    """Every cell of a recipe: base and each variant, times each role (``VARIANT/ROLE``)."""
    variants = [BASE_CELL, *matrix["variants"]]
    roles = list(matrix["roles"])
    if not roles:
        return variants
    return [f"{v}/{r}" if v != BASE_CELL else r for v in variants for r in roles]


def _apply_cell(doc: _Doc, matrix: dict[str, dict[str, Any]], cell: str) -> None:
    """Deep-merge the variant's, then the role's, overrides onto ``doc`` (in place)."""
    variant, _, role = cell.partition("/")
    if not role and variant in matrix["roles"]:
        variant, role = BASE_CELL, variant
    cells = matrix_cells(matrix)
    if cell not in cells or (variant != BASE_CELL and variant not in matrix["variants"]):
        raise RecipeError(
            f"no cell {cell!r} in this recipe",
            location=str(doc.path),
            hint="cells: " + ", ".join(cells) + " (autobench variants RECIPE lists them)",
        )
    written = _Doc(doc.path, doc.data, dict(doc.positions), dict(doc.value_positions))  # where overrides are
    for key, name in (("variants", variant), ("roles", role)):
        if not name or name == BASE_CELL:
            continue
        _merge(doc.data, written, matrix[key][name], (), doc.positions, doc.value_positions, (key, name))


def recipe_cells(path: str | Path) -> list[str]:
    """The cells of the recipe file at ``path`` (``["base"]`` when it has no variants or roles)."""
    doc = _resolve(Path(path), [Path(path).resolve()], [])
    return matrix_cells(_matrix(doc))


# --------------------------------------------------------------------------- bench profiles

#: Top-level keys that mark another tool's benchmark profile -> what it is.
_PROFILE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
FOREIGN_PROFILE_KEYS = {
    "framework": "a sparkrun benchmark profile (framework: {value})",
    "sparkrun_benchmark": "a sparkrun benchmark result",
    "args": "another tool's benchmark profile (args:)",
}


def _read_profile(path: Path) -> _Doc:
    """A bench profile file: a mapping of bench keys (``concurrency: [1, 4, 16]``,
    ``repeat: 2``, ``schedule: [...]``, ...).  Another tool's profile, or a recipe, is refused
    in one line; a bad key is reported at its line in the profile file."""
    from autobench.recipe.schema import Bench, Recipe

    if not path.is_file():
        raise RecipeError(
            f"bench profile not found: {path}" if not path.exists() else f"bench profile {path} is not a file",
            location=str(path),
            hint="--profile names a YAML file of bench keys (docs/recipes.md, Bench profiles)",
        )
    if path.resolve().suffix.lower() not in RECIPE_SUFFIXES:  # /etc/shadow, or a link to it, is not read
        raise RecipeError(
            "bench profile is not a .yaml or .yml file; it is not read",
            location=str(path),
            hint="--profile names a YAML file of bench keys (docs/recipes.md, Bench profiles)",
        )
    doc = _read_doc(path)
    odd = [k for k in doc.data if not (isinstance(k, str) and _PROFILE_KEY.fullmatch(k))]
    if odd:  # some other file's lines: never echo them (they may be a secret file's content)
        raise RecipeError(
            f"not a bench profile: {len(odd)} of its {len(doc.data)} top-level keys are not key names",
            location=str(path),
            hint="an autobench profile holds bench keys, e.g. `concurrency: [1, 4, 16]`, `repeat: 2`",
        )
    for key, what in FOREIGN_PROFILE_KEYS.items():
        if key in doc.data:
            value = doc.data[key]
            shown = value if isinstance(value, str) and len(value) < 40 else "..."
            raise RecipeError(
                f"{what.format(value=shown)}, not an autobench bench profile",
                location=str(doc.positions.get((key,)) or Position(path, 1, 1)),
                hint="an autobench profile holds bench keys, e.g. `concurrency: [1, 4, 16]`, `repeat: 2`, "
                "`schedule: [{concurrency: 16}, ...]` (docs/recipes.md, Bench profiles)",
            )
    recipe_keys = [k for k in doc.data if k in Recipe.model_fields and k not in Bench.model_fields]
    if recipe_keys:
        raise RecipeError(
            f"this is a recipe (it has {recipe_keys[0]}:), not a bench profile",
            location=str(doc.positions.get((recipe_keys[0],)) or Position(path, 1, 1)),
            hint="pass it as the RECIPE; a profile holds only bench keys (concurrency, repeat, schedule, ...)",
        )
    return doc


def _apply_profile(doc: _Doc, profile: Path) -> None:
    """Deep-merge the profile's keys onto the recipe's ``bench:`` (positions point into the profile)."""
    over = _read_profile(profile)
    bench = doc.data.get("bench")
    if bench is None:
        bench = doc.data["bench"] = {}
    if not isinstance(bench, dict):
        raise RecipeError(
            "bench: must be a mapping to apply a bench profile to",
            location=str(doc.positions.get(("bench",)) or doc.path),
            hint="write `bench:` then its keys, indented",
        )
    _merge(bench, over, over.data, ("bench",), doc.positions, doc.value_positions, ())


def load_recipe(
    path: str | Path,
    cell: str | None = None,
    profile: str | Path | None = None,
    overrides: typing.Sequence[Override] = (),
) -> LoadedRecipe:
    """Read, merge (``extends``) and validate one recipe; see the module docstring.  ``cell``
    picks a variant and/or role (``VARIANT``, ``ROLE``, ``VARIANT/ROLE``); default: the base.
    ``profile``: a bench profile file merged onto ``bench:`` last (``run --profile``);
    ``overrides``: keys set from elsewhere (an experiment's treatment), merged after that, each
    located where it was written, so a bad value is reported there."""
    return recipe_base(path, cell, profile).load(overrides)


@dataclass(frozen=True)
class RecipeBase:
    """A recipe read and merged (``extends``, its cell, a profile) but not yet validated: the
    part of ``load_recipe`` done once when many recipes differ only by ``overrides`` (an
    experiment's treatments), so a thousand treatments parse the YAML once."""

    path: Path
    doc: _Doc
    files: tuple[Path, ...]
    cells: tuple[str, ...]

    def load(self, overrides: typing.Sequence[Override] = ()) -> LoadedRecipe:
        """The recipe with ``overrides`` merged, validated and digested (the base is not changed)."""
        path = self.path
        base = self.doc
        data = json.loads(json.dumps(base.data))  # a deep copy: the base serves the next treatment
        if "name" not in data:
            data = {"name": path.stem, **data}
        doc = _Doc(base.path, data, dict(base.positions), dict(base.value_positions))
        _apply_overrides(doc, overrides)
        return _finish(doc, path, self.files, self.cells)


def _finish(doc: _Doc, path: Path, files: typing.Sequence[Path], cells: typing.Sequence[str]) -> LoadedRecipe:
    """Validate a merged recipe document and digest it (``load_recipe``, ``with_changes``)."""
    from pydantic import ValidationError

    from autobench.recipe.schema import Recipe, trim_later_defaults

    try:
        recipe = Recipe.model_validate(doc.data)
    except ValidationError as exc:
        raise _validation_error(exc, doc) from exc
    recipe, mods = _hash_mods(recipe, doc)
    resolved = trim_later_defaults(recipe.model_dump(mode="json"))
    digest_data = {k: v for k, v in resolved.items() if k != "extends"}
    return LoadedRecipe(
        path=path,
        recipe=recipe,
        data=resolved,
        digest=canonical_digest(digest_data),
        positions=doc.positions,
        value_positions=doc.value_positions,
        files=list(files),
        mods=mods,
        cells=list(cells),
    )


def recipe_base(path: str | Path, cell: str | None = None, profile: str | Path | None = None) -> RecipeBase:
    """Read and merge the recipe at ``path`` (its ``cell`` and ``profile``, as ``load_recipe``)."""
    path = Path(path)
    files: list[Path] = []
    doc = _resolve(path, [path.resolve()], files)
    matrix = _matrix(doc)
    for key in MATRIX_KEYS:
        doc.data.pop(key, None)
    cells = matrix_cells(matrix)
    if cell is not None and cell != BASE_CELL:
        _apply_cell(doc, matrix, cell)
    elif matrix["roles"] and cell is None:
        cell = cells[0]  # a recipe with roles has no role-less server
        _apply_cell(doc, matrix, cell)
    if cell is not None and cell != BASE_CELL and len(cells) > 1:
        doc.data["cell"] = cell
    if profile is not None:  # last: the profile's bench keys win over the recipe's and its cell's
        _apply_profile(doc, Path(profile))
        files.append(Path(profile))
    return RecipeBase(path, doc, tuple(files), tuple(cells))

"""``autobench lock``: pin every Hub reference of a recipe to a full commit sha.

Two records, both written by ``lock_recipe``:

1. The recipe itself, edited in place: ``revision: <40-hex sha>  # frozen: <label>``.  The key is
   edited in the file that defines it (possibly the ``extends:`` parent), located with the
   ruamel.yaml round-trip loader (node marks) and changed as a one-line splice, so every other
   byte -- comments, quoting, indentation, blank lines -- survives.  A missing revision key is
   added on the line after its repo key.  A splice must read back as the file's data with only
   the pin changed; one that does not (a value spanning lines, a one-line flow mapping) gives way
   to a ruamel round-trip dump.
2. A sidecar ``<recipe file>.lock.json`` (sorted keys, 2-space indent) with, per reference
   (model, tokenizer, draft): repo, label, sha, resolved_at (UTC), the architecture fingerprint
   at that sha and the trust facts.

Already-pinned shas are kept; their label comes from the ``# frozen:`` comment, else from the
lock file, else ``main`` is assumed (and said).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ruamel.yaml.comments import CommentedMap

from autobench.digits import load_json
from autobench.errors import AutobenchError, HubError, RecipeError
from autobench.files import read_regular
from autobench.hub.fingerprint import fingerprint
from autobench.hub.resolve import Resolver, is_sha
from autobench.hub.trust import trust_facts
from autobench.recipe.loader import MAX_BYTES

if TYPE_CHECKING:
    from autobench.recipe.loader import LoadedRecipe
    from autobench.recipe.schema import Recipe

LOCK_FORMAT = 1
FROZEN_RE = re.compile(r"#\s*frozen:\s*([^\s;#]+)")
VALUE_RE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s#][^\s]*")


# -- which references a recipe has --------------------------------------------------------------


@dataclass(frozen=True)
class RefSpec:
    kind: str  # "model" | "tokenizer" | "draft" | "dataset"
    repo: str
    revision: str | None  # as written / defaulted in the effective recipe
    repo_key: tuple[str, ...]
    rev_key: tuple[str, ...]

    @property
    def key(self) -> str:
        return ".".join(self.rev_key)

    @property
    def repo_type(self) -> str:
        """huggingface_hub's repo_type: a dataset repo is a repo of its own kind."""
        return "dataset" if self.kind == "dataset" else "model"


def references(recipe: Recipe) -> list[RefSpec]:
    """The Hub references of a recipe (``autobench.recipe.facts.pins``; a local model or draft
    directory is not one)."""
    from autobench.recipe.facts import pins

    return [RefSpec(p.kind, p.repo, p.revision, p.repo_key, p.rev_key) for p in pins(recipe)]


#: A lock file holds a few pins per recipe: KBs.  Far beyond that it is not one of ours.
MAX_LOCK_BYTES = 16 * 2**20

# -- where a key is written ---------------------------------------------------------------------


def _load_rt(path: Path) -> tuple[str, Any]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        # bytes decoded as they are: read_text's universal newlines would turn CRLF into LF and
        # the rewrite would then change every line of the file
        text = read_regular(path, what="recipe", limit=MAX_BYTES, error=RecipeError).decode("utf-8")
        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True  # a fallback dump (set_revision) keeps every value's quotes
        return text, yaml.load(text)
    except UnicodeDecodeError as exc:
        raise RecipeError("cannot read recipe: not UTF-8 text", location=str(path)) from exc
    except OSError as exc:
        raise RecipeError(f"cannot read recipe: {exc.strerror}", location=str(path)) from exc
    except YAMLError as exc:
        raise RecipeError(f"not valid YAML: {str(exc).splitlines()[0]}", location=str(path)) from exc


def _node(doc: Any, keys: tuple[str, ...]) -> Any:
    node = doc
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _parent_path(path: Path, doc: Any) -> Path | None:
    extends = doc.get("extends") if isinstance(doc, dict) else None
    if not extends:
        return None
    return (path.parent / Path(str(extends)).expanduser()).resolve()  # as the loader reads it


def defining_file(loaded: LoadedRecipe, keys: tuple[str, ...]) -> Path | None:
    """The file where the effective value of ``keys`` is written, a null that deletes an inherited
    value included (None: not written anywhere)."""
    pos = getattr(loaded, "positions", {}).get(tuple(keys))
    if pos is not None:
        return Path(pos.file).resolve()
    path: Path | None = Path(loaded.path).resolve()
    seen: set[Path] = set()
    while path is not None and path not in seen and path.exists():
        seen.add(path)
        _, doc = _load_rt(path)
        parent = _node(doc, keys[:-1])
        # Written here, if only as null: the loader's positions leave out a key that a child
        # deletes with null (the default then rules), and that null is the value to edit.
        if isinstance(parent, dict) and keys[-1] in parent:
            return path
        path = _parent_path(path, doc)
    return None


# The line breaks ruamel's line numbers count: CRLF, CR, LF.  str.splitlines also splits at NEL,
# U+2028/U+2029 (which a quoted value may hold), \v, \f and \x1c-\x1e: every later line number
# would be off ruamel's, and the edit would land on the wrong line.
_LINE_END = re.compile(r"\r\n|[\r\n]")


def yaml_lines(text: str) -> list[str]:
    """``text`` split into lines as YAML counts them, each with its own line break."""
    lines, start = [], 0
    for m in _LINE_END.finditer(text):
        lines.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _newline_of(text: str) -> str:
    """The file's line break: the first line's (CRLF, CR or LF); LF for a file of one line."""
    first = _LINE_END.search(text)
    return first.group(0) if first is not None else "\n"


def frozen_label_at(path: Path, keys: tuple[str, ...]) -> str | None:
    """The label of a ``# frozen: <label>`` comment on the line of ``keys``' value, if any."""
    text, doc = _load_rt(path)
    parent = _node(doc, keys[:-1])
    if not isinstance(parent, CommentedMap) or keys[-1] not in parent:
        return None
    line = parent.lc.value(keys[-1])[0]
    lines = yaml_lines(text)  # the label stops at whitespace: a line break never joins it
    match = FROZEN_RE.search(lines[line]) if line < len(lines) else None
    return match.group(1) if match else None


# -- editing a recipe in place ------------------------------------------------------------------


def yaml_scalar(sha: str) -> str:
    """The sha as YAML text that reads back as a string (an all-digit sha would load as a number)."""
    from ruamel.yaml import YAML

    return sha if isinstance(YAML(typ="rt").load(f"k: {sha}")["k"], str) else f'"{sha}"'


def _comment_for(label: str, rest: str) -> str:
    """``# frozen: <label>``, keeping any other words of the comment after the value (``rest``)."""
    rest = rest.strip()
    match = FROZEN_RE.match(rest)
    rest = rest[match.end() :].lstrip("; ").strip() if match else rest.lstrip("#").strip()
    return f"# frozen: {label}" + (f"; {rest}" if rest else "")


def _refuse_anchor(path: Path, text: str, parent: Any, keys: tuple[str, ...]) -> None:
    """`revision: &r main` shared through *r: pinning it would change every alias too (and the
    rewrite moved the anchor onto another key); the author decides which values follow the pin.
    (An alias, `revision: *r`, is the value written in place: it is pinned like any other.)"""
    name = keys[-1]
    if name not in parent:
        return
    line, col = parent.lc.value(name)
    if (line, col) < tuple(parent.lc.key(name)):
        return  # an alias: ruamel marks the anchored node, written before this key
    lines = yaml_lines(text)
    written = lines[line][col:] if line < len(lines) else ""
    if written.startswith("&"):
        anchor = re.match(r"&(\S+)", written)
        label = anchor.group(1) if anchor else "?"
        raise RecipeError(
            f"cannot pin {'.'.join(keys)}: its value carries the YAML anchor &{label}",
            location=f"{path}:{line + 1}:{col + 1}",
            hint=f"write the revision without &{label} (spell out the values that use *{label}), then lock again",
        )


def check_pinnable(path: Path, keys: tuple[str, ...]) -> None:
    """Refuse, before anything is written, a revision ``set_revision`` could not pin alone."""
    text, doc = _load_rt(path)
    parent = _node(doc, keys[:-1])
    if isinstance(parent, CommentedMap):
        _refuse_anchor(path, text, parent, keys)


def set_revision(path: Path, keys: tuple[str, ...], repo_key: str, sha: str, label: str) -> bool:
    """Write ``<keys[-1]>: <sha>  # frozen: <label>`` into ``path``; True if the file changed.

    The value is spliced into its line, or a line inserted after the repo key's.  A splice whose
    text does not read back as the file's data with only this value changed (a block or
    multi-line scalar, a one-line flow mapping) gives way to a round-trip dump, which must."""
    text, doc = _load_rt(path)
    parent = _node(doc, keys[:-1])
    if not isinstance(parent, CommentedMap):
        raise RecipeError(f"cannot pin {'.'.join(keys)}: {keys[0]} is not a mapping in this file", location=str(path))
    name = keys[-1]
    if name not in parent and repo_key not in parent:
        raise RecipeError(f"cannot pin {'.'.join(keys)}: no {repo_key} key beside it", location=str(path))
    _refuse_anchor(path, text, parent, keys)
    expected = load_json(_data(doc))
    _node(expected, keys[:-1])[name] = sha
    new_text = _splice(text, parent, name, repo_key, sha, label)
    if new_text is None or _reads_back(new_text) != _data(expected):
        new_text = _redump(doc, parent, name, repo_key, sha, label, _newline_of(text), text)
        if _reads_back(new_text) != _data(expected):
            raise RecipeError(f"internal: pinning {'.'.join(keys)} did not read back as {sha}", location=str(path))
    if new_text == text:
        return False
    _atomic_write(path, new_text)
    return True


def _splice(text: str, parent: Any, name: str, repo_key: str, sha: str, label: str) -> str | None:
    """The text with ``name``'s value replaced in its line, or a line inserted after the repo's
    (None: no value on the line to replace)."""
    lines = yaml_lines(text)
    if name in parent:
        line_no, col = parent.lc.value(name)
        match = VALUE_RE.match(lines[line_no], col) if line_no < len(lines) else None
        if match is None:  # an empty value (its mark is past it)
            return None
        line = lines[line_no]
        body = line.rstrip("\r\n")
        rest = body[match.end() :]
        lines[line_no] = f"{body[:col]}{yaml_scalar(sha)}  {_comment_for(label, rest)}{line[len(body) :]}"
    else:
        _, col = parent.lc.key(repo_key)
        at = parent.lc.value(repo_key)[0] + 1
        newline = _newline_of(text)
        if not lines[at - 1].endswith(("\r", "\n")):
            lines[at - 1] += newline
        lines.insert(at, f"{' ' * col}{name}: {yaml_scalar(sha)}  # frozen: {label}{newline}")
    return "".join(lines)


def _data(doc: Any) -> str:
    """What a loaded document says, as canonical JSON (no comments, no layout)."""
    return json.dumps(doc, sort_keys=True, default=str)


def _reads_back(text: str) -> str | None:
    """:func:`_data` of ``text`` loaded, or None when it is not YAML."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return _data(YAML(typ="rt").load(text))
    except YAMLError:
        return None


def _redump(doc: Any, parent: Any, name: str, repo_key: str, sha: str, label: str, newline: str, original: str) -> str:
    """The fallback: a ruamel round-trip dump (comments kept), written with the file's own line
    break (ruamel dumps LF)."""
    import io

    from ruamel.yaml import YAML

    if name in parent:
        at = list(parent).index(name)
        del parent[name]  # the new value takes nothing of the old one's style (a block scalar's |)
    else:
        at = list(parent).index(repo_key) + 1
    parent.insert(at, name, sha)
    if not parent.fa.flow_style():
        parent.yaml_add_eol_comment(f"frozen: {label}", name)
    yaml = YAML(typ="rt")
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(doc, out)
    text = out.getvalue()
    if original.endswith(("\n", "\r")) and not text.endswith("\n"):  # never drop the last line break
        text += "\n"
    return text.replace("\n", newline)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.autobench-tmp")
    try:
        tmp.write_text(text, encoding="utf-8", newline="")
        os.replace(tmp, path)
    except OSError as exc:
        raise RecipeError(f"cannot write: {exc.strerror}", location=str(path)) from exc


# -- the lock file --------------------------------------------------------------------------------


def lock_path_for(recipe_path: Path) -> Path:
    return recipe_path.with_name(recipe_path.name + ".lock.json")


def read_lock(recipe_path: Path) -> dict[str, Any] | None:
    path = lock_path_for(recipe_path)
    if not path.exists():
        return None
    try:
        data = load_json(read_regular(path, what="lock file", limit=MAX_LOCK_BYTES, error=HubError).decode("utf-8"))
    except (HubError, ValueError) as exc:
        raise HubError(
            f"{path}: unreadable lock file ({exc})", hint="delete it and run `autobench lock` again"
        ) from exc
    if not isinstance(data, dict) or not isinstance(data.get("references"), dict):
        raise HubError(f"{path}: not an autobench lock file", hint="delete it and run `autobench lock` again")
    return data


def locked_dataset_sha256(recipe_path: Path, repo: str, sha: str | None, file: str) -> str | None:
    """The sha256 the lock file beside ``recipe_path`` records for ``file`` of dataset ``repo``
    at commit ``sha`` (None: no lock file, or no entry for exactly that file at that commit)."""
    if sha is None:
        return None
    lock = read_lock(recipe_path)  # its "references" is a mapping (read_lock refuses others)
    entry = lock["references"].get("dataset") if lock is not None else None
    if not isinstance(entry, dict):
        return None
    if (entry.get("repo"), entry.get("sha"), entry.get("dataset_file")) != (repo, sha, file):
        return None
    value = entry.get("sha256")
    return value if isinstance(value, str) else None


def dump_lock(data: dict[str, Any]) -> str:
    """The lock file's text; every string redacted (token shapes, secret-named variables' values)."""
    from autobench.redaction import environment_secrets, redact_tree

    return json.dumps(redact_tree(data, environment_secrets()), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def lock_entry(lock: dict[str, Any] | None, spec: RefSpec) -> dict[str, Any] | None:
    entry = (lock or {}).get("references", {}).get(spec.kind)
    return entry if isinstance(entry, dict) and entry.get("repo") == spec.repo else None


@dataclass
class Pin:
    spec: RefSpec
    label: str
    label_assumed: bool
    sha: str
    previous: str | None  # the revision written before (branch or sha)
    file: Path | None  # the file edited
    changed: bool = False
    label_now: str | None = None  # where the label points now (None: unknown)


class ExtraPin(Protocol):
    """A pin resolved by another package (autobench.image): lock writes it with the Hub pins."""

    section: str  # the lock file's top-level key
    key: str  # its entry's key in that section
    entry: dict[str, Any]
    file: Path
    changed: bool

    def apply(self) -> bool:
        """Edit the recipe; True if a file changed."""
        ...

    def to_json(self) -> dict[str, Any]: ...


#: Resolves extra pins (no writes): (loaded recipe, recipe path, previous lock) -> pins.
ExtraPins = Callable[[Any, Path, dict[str, Any] | None], list[ExtraPin]]
HUB_KEYS = frozenset({"autobench_lock", "recipe", "references", "mods"})  # rewritten by every lock


@dataclass
class LockResult:
    recipe: Path
    lock_file: Path
    pins: list[Pin] = field(default_factory=list)
    edited: list[Path] = field(default_factory=list)
    extra: list[Any] = field(default_factory=list)  # ExtraPin (image pins)
    #: Pins that could not be resolved (the image when no registry answers), each one line with
    #: its hint; the pins above were still written.
    failed: list[AutobenchError] = field(default_factory=list)

    @property
    def parents_edited(self) -> list[Path]:
        """Files this lock edited other than the recipe itself: files it extends."""
        own = self.recipe.resolve()
        return [p for p in self.edited if Path(p).resolve() != own]

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": str(self.recipe),
            "lock_file": str(self.lock_file),
            "edited": [str(p) for p in self.edited],
            "parents_edited": [str(p) for p in self.parents_edited],
            "failed": [{"error": e.message, "location": e.location, "hint": e.hint} for e in self.failed],
            "pins": [
                {
                    "kind": p.spec.kind,
                    "repo": p.spec.repo,
                    "label": p.label,
                    "label_assumed": p.label_assumed,
                    "sha": p.sha,
                    "previous": p.previous,
                    "key": p.spec.key,
                    "label_now": p.label_now,
                    "file": str(p.file) if p.file else None,
                }
                for p in self.pins
            ],
            "images": [p.to_json() for p in self.extra],
        }


def pin_label(loaded: LoadedRecipe, spec: RefSpec, lock: dict[str, Any] | None) -> tuple[str, bool]:
    """The human label of a reference: its branch/tag, or for a sha the recorded label (else main)."""
    if spec.revision and not is_sha(spec.revision):
        return spec.revision, False
    if spec.revision:
        where = defining_file(loaded, spec.rev_key)
        label = frozen_label_at(where, spec.rev_key) if where else None
        if label:
            return label, False
        entry = lock_entry(lock, spec)
        if entry and entry.get("sha") == spec.revision and entry.get("label"):
            return str(entry["label"]), bool(entry.get("label_assumed", False))
    return "main", True


def _lock_dataset(
    recipe: Recipe, spec: RefSpec, resolver: Resolver, old: dict[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """Pin the recipe's Hub dataset: (sha, the lock entry's dataset facts).  The file is fetched
    into the HF cache and its sha256 checked against the recipe's ``sha256``, else against the
    previous lock's for the same commit and file (a commit's file never changes)."""
    from autobench.hub.datasets import fetch_dataset

    d = recipe.bench.dataset
    assert d.file is not None  # the schema: a repo needs a file
    expected, source = d.sha256, "bench.dataset.sha256"
    if expected is None and old and old.get("sha") == spec.revision and old.get("dataset_file") == d.file:
        expected, source = old.get("sha256"), "the lock file's sha256 for this commit"
    got = fetch_dataset(resolver, spec.repo, spec.revision, d.file, expected=expected, expected_from=source)
    assert got.sha is not None
    return got.sha, {
        "dataset_file": got.file,
        "sha256": got.sha256,
        "size": got.size,
        "resolved_at": got.resolved_at,
        "resolved_from": got.source,
    }


def _matrix_references(recipe_path: Path) -> list[tuple[RefSpec, str, str]]:
    """(reference, cell, location) for each Hub revision a ``variants:`` or ``roles:`` entry of
    the recipe file writes, or must get because it changes the repo (it would inherit the base's
    revision of another repo), and that is not pinned to a full sha yet.  ``lock`` used to pin
    only the base cell, leaving a variant's ``revision: main`` unpinned."""
    from autobench.recipe.loader import MATRIX_KEYS, load_recipe, recipe_cells

    _, doc = _load_rt(recipe_path)
    cells = recipe_cells(recipe_path)
    out: list[tuple[RefSpec, str, str]] = []
    for section in MATRIX_KEYS:
        entries = _node(doc, (section,))
        if not isinstance(entries, dict):
            continue
        for name, override in entries.items():
            cell = next((c for c in cells if name in c.split("/")), None)
            if cell is None or not isinstance(override, dict):
                continue
            loaded = load_recipe(recipe_path, cell)
            for spec in references(loaded.recipe):
                parent = _node(override, spec.rev_key[:-1])
                if not isinstance(parent, CommentedMap):
                    continue
                writes_rev = spec.rev_key[-1] in parent
                writes_repo = spec.repo_key[:-1] == spec.rev_key[:-1] and spec.repo_key[-1] in parent
                if not (writes_rev or writes_repo) or (writes_rev and is_sha(spec.revision)):
                    continue
                prefix = (section, str(name))
                line, col = parent.lc.value(spec.rev_key[-1]) if writes_rev else parent.lc.value(spec.repo_key[-1])
                out.append(
                    (
                        RefSpec(
                            spec.kind,
                            spec.repo,
                            spec.revision if writes_rev else None,
                            prefix + tuple(spec.repo_key),
                            prefix + tuple(spec.rev_key),
                        ),
                        cell,
                        f"{recipe_path}:{line + 1}:{col + 1}",
                    )
                )
    return out


def _lock_matrix(recipe_path: Path, resolver: Resolver) -> tuple[list[tuple[Pin, Path]], dict[str, Any]]:
    """The pins and lock entries of the revisions the file's variants and roles write."""
    from autobench.recipe.loader import load_recipe

    plan: list[tuple[Pin, Path]] = []
    entries: dict[str, Any] = {}
    for spec, cell, where in _matrix_references(recipe_path):
        # a revision a variant or role writes (or a repo it changes) is pinned where it is written
        label = spec.revision or "main"
        key = f"{spec.rev_key[0]}.{spec.rev_key[1]}.{spec.kind}"
        try:
            if spec.kind == "dataset":
                cell_recipe = load_recipe(recipe_path, cell).recipe
                sha, dataset_entry = _lock_dataset(cell_recipe, spec, resolver, None)
            else:
                resolved = resolver.resolve(spec.repo, spec.revision, label=label)
                sha = resolved.sha
        except HubError as exc:
            exc.location = where
            raise
        plan.append(
            (
                Pin(spec, label, spec.revision is None, sha, spec.revision, recipe_path.resolve()),
                recipe_path.resolve(),
            )
        )
        if spec.kind == "dataset":
            entries[key] = {
                "repo": spec.repo,
                "label": label,
                "label_assumed": spec.revision is None,
                "sha": sha,
                "key": spec.key,
                "file": recipe_path.name,
                "cell": cell,
                **dataset_entry,
            }
            continue
        entries[key] = {
            "repo": spec.repo,
            "label": label,
            "label_assumed": spec.revision is None,
            "sha": resolved.sha,
            "resolved_at": resolved.resolved_at,
            "resolved_from": resolved.source,
            "key": spec.key,
            "file": recipe_path.name,
            "cell": cell,
            "fingerprint": fingerprint(resolved.config),
        }
    return plan, entries


def lock_recipe(recipe_path: str | Path, resolver: Resolver, *, extras: ExtraPins | None = None) -> LockResult:
    """Resolve, then edit the recipe(s) and write the sidecar lock.  Nothing is written on error.

    ``extras`` resolves further pins (the container image) after the Hub references; they are
    written in the same write phase, each into its own lock-file section.  Sections of the
    previous lock file that this lock does not resolve (``lock --no-images``) are kept."""
    from autobench.recipe.loader import load_recipe

    recipe_path = Path(recipe_path)
    loaded = load_recipe(recipe_path)
    lock_file = lock_path_for(recipe_path)
    dataset_entry: dict[str, Any] = {}
    previous_lock = read_lock(recipe_path)
    result = LockResult(recipe_path, lock_file)
    entries: dict[str, Any] = {}
    plan: list[tuple[Pin, Path]] = []
    chain = [path.resolve() for path in loaded.files]  # the recipe, then the files it extends

    for spec in references(loaded.recipe):
        label, assumed = pin_label(loaded, spec, previous_lock)
        old = lock_entry(previous_lock, spec)
        try:
            if spec.kind == "dataset":
                sha, dataset_entry = _lock_dataset(loaded.recipe, spec, resolver, old)
            else:
                resolved = resolver.resolve(spec.repo, spec.revision, label=label)  # None: main
                sha = resolved.sha
        except HubError as exc:
            # where the revision is written, else the repo (always written: pins() needs it); the
            # recipe's sha256 when that is what the file did not match
            sha256_key = (*spec.repo_key[:-1], "sha256")
            mismatch = getattr(exc, "expected_from", None) == "bench.dataset.sha256"
            at = loaded.positions.get(sha256_key) if mismatch else None
            exc.location = str(at or loaded.positions.get(spec.rev_key) or loaded.position(*spec.repo_key))
            raise
        label_now: str | None = sha
        if is_sha(spec.revision) and not resolver.settings.offline:
            # A kept pin: note where its label points now (and cache refs/<label>, so that
            # `outdated --offline` can compare later).  Best effort: the branch may be gone.
            try:
                label_now = resolver.sha(spec.repo, label, spec.repo_type)
                if label_now != sha and spec.kind != "dataset":
                    resolver.config(spec.repo, label_now, label=label)  # cached for the diff
            except HubError:
                label_now = None if label_now == sha else label_now
        rev_file = defining_file(loaded, spec.rev_key)
        repo_file = defining_file(loaded, spec.repo_key) or recipe_path.resolve()
        # The revision is edited where it is written (a child may set the revision of its parent's
        # repo), unless that is a parent of the repo's file: the repo is overridden below the
        # revision it inherits, so the repo's file gets its own revision key.
        target = repo_file if rev_file is None or chain.index(rev_file) > chain.index(repo_file) else rev_file
        plan.append((Pin(spec, label, assumed, sha, spec.revision, target, label_now=label_now), target))
        if spec.kind == "dataset":
            entries[spec.kind] = {
                "repo": spec.repo,
                "label": label,
                "label_assumed": assumed,
                "sha": sha,
                "key": spec.key,
                "file": os.path.relpath(target, recipe_path.resolve().parent),
                **dataset_entry,
            }
            continue
        trust = trust_facts(info=resolved.info, config=resolved.config, files=resolved.files)
        if resolved.info is None and old and old.get("sha") == resolved.sha and isinstance(old.get("trust"), dict):
            trust = old["trust"]  # offline: keep the Hub's facts recorded at the last online lock
        entries[spec.kind] = {
            "repo": spec.repo,
            "label": label,
            "label_assumed": assumed,
            "sha": resolved.sha,
            "resolved_at": resolved.resolved_at,
            "resolved_from": resolved.source,
            "key": spec.key,
            "file": os.path.relpath(target, recipe_path.resolve().parent),
            "fingerprint": fingerprint(resolved.config),
            "trust": trust,
        }

    matrix_plan, matrix_entries = _lock_matrix(recipe_path, resolver)
    plan += matrix_plan
    entries.update(matrix_entries)

    extra_pins = []
    if extras is not None:
        try:
            extra_pins = extras(loaded, recipe_path, previous_lock)
        except AutobenchError as exc:  # no registry, no docker: the Hub pins are still written
            if not exc.hint or "--no-images" not in exc.hint:
                exc.hint = (exc.hint + "; " if exc.hint else "") + "or pin only the Hub revisions: `lock --no-images`"
            result.failed.append(exc)
    for pin, target in plan:  # every edit checked before the first is written
        check_pinnable(target, pin.spec.rev_key)

    for pin, target in plan:
        pin.changed = set_revision(target, pin.spec.rev_key, pin.spec.repo_key[-1], pin.sha, pin.label)
        if pin.changed and target not in result.edited:
            result.edited.append(target)
        result.pins.append(pin)
    for extra in extra_pins:
        if extra.apply() and extra.file not in result.edited:
            result.edited.append(extra.file)
        result.extra.append(extra)

    data: dict[str, Any] = {k: v for k, v in (previous_lock or {}).items() if k not in HUB_KEYS}
    data.update({"autobench_lock": LOCK_FORMAT, "recipe": recipe_path.name, "references": entries})
    if loaded.mods:  # each mod's content hash: the lock says exactly which patches the recipe runs
        data["mods"] = [
            {
                "step": index,
                "mod": loaded.recipe.launch.setup[index].mod,
                "path": os.path.relpath(path, recipe_path.resolve().parent),
                "sha256": loaded.recipe.launch.setup[index].sha256,
            }
            for index, path in sorted(loaded.mods.items())
        ]
    for extra in extra_pins:
        data[extra.section] = {**(data.get(extra.section) or {}), extra.key: extra.entry}
    try:
        lock_file.write_text(dump_lock(data), encoding="utf-8")
    except OSError as exc:
        raise HubError(f"cannot write the lock file: {exc.strerror}", location=str(lock_file)) from exc
    return result

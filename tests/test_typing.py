"""The typed spine (issue #26): no ``Any`` in a public signature of the packages data crosses
layers through, and mypy's strictness is not switched off anywhere.

A public signature is a function's or method's parameters and return annotation, or a public
class's annotated field, where the function (field), its class and its module have no leading
underscore (dunder methods such as ``__init__`` count).  ``Any`` counts when written (``Any``, ``typing.Any``, inside a string
annotation) or through a module-level alias of the package that contains it.  Private helpers
may still take ``Any`` at a third-party boundary (a SQLAlchemy row, a YAML node).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autobench"
TYPED_PACKAGES = ("recipe", "bench", "run", "ledger")


def _mentions_any(node: ast.AST | None, aliases: frozenset[str]) -> bool:
    if node is None:
        return False
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and (n.id == "Any" or n.id in aliases):
            return True
        if isinstance(n, ast.Attribute) and n.attr == "Any":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            try:
                inner = ast.parse(n.value, mode="eval")
            except SyntaxError:
                continue
            if _mentions_any(inner, aliases):
                return True
    return False


def _any_aliases(trees: dict[Path, ast.Module]) -> frozenset[str]:
    """Names bound at module level to a type expression that mentions Any (``KeyPath =
    tuple[Any, ...]``, ``Rows: TypeAlias = list[Row]``), in any module of the package, to a fixpoint."""
    names: set[str] = set()
    while True:
        found = set(names)
        for tree in trees.values():
            for st in tree.body:
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                    target, value = st.targets[0].id, st.value
                elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    target, value = st.target.id, st.value
                else:
                    continue
                if not isinstance(value, ast.Call | ast.Lambda) and _mentions_any(value, frozenset(found)):
                    found.add(target)
        if found == names:
            return frozenset(names)
        names = found


Member = ast.FunctionDef | ast.AsyncFunctionDef | ast.AnnAssign


def _public_functions(body: list[ast.stmt], prefix: str = "") -> list[tuple[str, Member]]:
    """Public functions and methods, and the annotated fields of public classes (a dataclass's
    fields are its constructor's parameters)."""
    out: list[tuple[str, Member]] = []
    for st in body:
        if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
            dunder = st.name.startswith("__") and st.name.endswith("__")
            if dunder or not st.name.startswith("_"):
                out.append((prefix + st.name, st))
        elif isinstance(st, ast.AnnAssign) and prefix and isinstance(st.target, ast.Name):
            if not st.target.id.startswith("_"):
                out.append((prefix + st.target.id, st))
        elif isinstance(st, ast.ClassDef) and not st.name.startswith("_"):
            out.extend(_public_functions(st.body, f"{prefix}{st.name}."))
        elif isinstance(st, ast.If):  # `if TYPE_CHECKING:` / version branches at module level
            out.extend(_public_functions(st.body + st.orelse, prefix))
    return out


def _signature_mentions_any(fn: Member, aliases: frozenset[str]) -> bool:
    if isinstance(fn, ast.AnnAssign):
        return _mentions_any(fn.annotation, aliases)
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]
    return any(_mentions_any(p.annotation, aliases) for p in params) or _mentions_any(fn.returns, aliases)


def _public_modules(package: str) -> list[Path]:
    folder = PACKAGE / package
    files = sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{package}.py"]
    return [f for f in files if not f.name.startswith("_") or f.name == "__init__.py"]


def any_in_public_signatures(packages: tuple[str, ...] = TYPED_PACKAGES) -> set[str]:
    """``module:qualified.name`` of every public function of ``packages`` with Any in its signature."""
    trees = {f: ast.parse(f.read_text(encoding="utf-8"), filename=str(f)) for f in PACKAGE.rglob("*.py")}
    aliases = _any_aliases(trees)
    found = set()
    for package in packages:
        for path in _public_modules(package):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for name, fn in _public_functions(trees[path].body):
                if _signature_mentions_any(fn, aliases):
                    found.add(f"{module}:{name}")
    return found


def test_no_any_in_public_signatures() -> None:
    new = sorted(any_in_public_signatures())
    assert not new, (
        "Any in a public signature (type it: a dataclass, TypedDict, Protocol, or object + narrowing):\n"
        + "\n".join(new)
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(x: Any) -> int: ...", {"m:f"}),
        ("def f(x: int) -> typing.Any: ...", {"m:f"}),
        ("def f(x: 'dict[str, Any]') -> None: ...", {"m:f"}),
        ("def f(*args: Any) -> None: ...", {"m:f"}),
        ("def f(*, key: list[Any] | None = None) -> None: ...", {"m:f"}),
        ("Row = dict[str, Any]\nRows = list[Row]\ndef f(x: Rows) -> None: ...", {"m:f"}),
        (
            "class C:\n    def method(self) -> Any: ...\n    def __init__(self, x: Any) -> None: ...",
            {"m:C.method", "m:C.__init__"},
        ),
        ("def _private(x: Any) -> Any: ...\nclass _Hidden:\n    def m(self, x: Any) -> None: ...", set()),
        ("def f(x: object) -> dict[str, object]:\n    y: Any = x\n    return {}", set()),
        ("def f(x: int) -> int:\n    def inner(y: Any) -> Any: ...\n    return x", set()),
        ("@dataclass\nclass D:\n    data: dict[str, Any]\n    _cache: Any = None\n    n: int = 0", {"m:D.data"}),
        ("X: dict[str, Any] = {}\nclass _P:\n    data: Any", set()),
    ],
)
def test_the_scan_finds_any(tmp_path: Path, source: str, expected: set[str]) -> None:
    """The scan itself: written, qualified, quoted, starred, nested and aliased Any count;
    private functions, private classes, local variables and inner functions do not."""
    tree = ast.parse(source)
    aliases = _any_aliases({tmp_path / "m.py": tree})
    found = {f"m:{name}" for name, fn in _public_functions(tree.body) if _signature_mentions_any(fn, aliases)}
    assert found == expected


def test_the_scan_covers_every_typed_package() -> None:
    for package in TYPED_PACKAGES:
        modules = _public_modules(package)
        assert modules and all(m.is_file() for m in modules), package


def test_mypy_is_strict_everywhere() -> None:
    """``strict = true`` for the whole package; an override may only add strictness: none
    ignores errors or turns a check off."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config.get("strict") is True and config.get("files") == ["autobench"]
    assert not {k for k, v in config.items() if v is False}, "a --strict check switched off globally"
    assert not config.get("ignore_errors") and config.get("follow_imports", "normal") == "normal"
    for override in config.get("overrides", []):
        modules = [override["module"]] if isinstance(override["module"], str) else override["module"]
        assert not override.get("ignore_errors"), modules
        if any(m == "autobench" or m.startswith("autobench.") for m in modules):
            assert "follow_imports" not in override, modules
            # every --strict flag is on when true, except implicit_reexport, which is on when false
            assert all(value is (key != "implicit_reexport") for key, value in override.items() if key != "module")

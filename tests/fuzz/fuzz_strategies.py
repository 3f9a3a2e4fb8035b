"""Hypothesis strategies for the fuzz suite, derived from the inputs' own definitions.

``recipe_documents()`` walks the recipe's JSON Schema (``Recipe.model_json_schema()``, the same
schema committed at schema/recipe.schema.json): every object draws a subset of its declared
properties, every string honours its ``enum`` / ``pattern`` most of the time and is hostile text
otherwise, numbers respect or break their bounds, and now and then a value of the wrong type or
an unknown key is put in.  So a new field is fuzzed the day it is added to the schema.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

TOKEN = "hf_" + "Zq9" * 10  # a token shape: must never be printed back
HOSTILE = [
    "",
    "-",
    "--",
    "--privileged",
    "--volume=/:/host",
    "-v",
    "$(touch pwned)",
    "`id`",
    "'",
    '"',
    "\\",
    "a\nb",
    "\r",
    "\x1b[2J\x1b[31m",
    "\u202e",
    "\u2028",
    "<script>alert(1)</script>",
    "[x](javascript:y)",
    "|",
    "../../../../tmp/x",
    "/etc/shadow",
    "~/x",
    "%s%n",
    "{{ 7*7 }}",
    "é日本",
    TOKEN,
    "0" * 300,
    "nan",
    "inf",
    "-1",
]
TEXT = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=24),
    st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=3).map("".join),
)
WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), TEXT, st.just([]), st.just({})
)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        return root["$defs"][name]
    return schema


def from_schema(schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy for values of ``schema`` (mostly valid, sometimes not)."""
    schema = _resolve(schema, root)
    if depth > 6:
        return st.none()
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf")
        return st.one_of([from_schema(s, root, depth + 1) for s in options])
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), TEXT) if schema["enum"] else TEXT
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        if not props:  # a free mapping (env, speculative.options, ...)
            values = (
                from_schema(schema.get("additionalProperties") or {}, root, depth + 1)
                if isinstance(schema.get("additionalProperties"), dict)
                else st.one_of(TEXT, st.integers(), st.booleans())
            )
            return st.dictionaries(
                st.one_of(st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True), TEXT), values, max_size=3
            )
        fields = {name: from_schema(sub, root, depth + 1) for name, sub in props.items()}
        return st.fixed_dictionaries({}, optional=fields).flatmap(
            lambda d: st.one_of(
                st.just(d),
                st.just(d),
                st.just(d),
                st.tuples(TEXT, WRONG).map(lambda kv: {**d, kv[0]: kv[1]}),  # an unknown key
            )
        )
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {}), root, depth + 1), max_size=3)
    if kind == "string":
        pattern = schema.get("pattern")
        valid = st.from_regex(pattern, fullmatch=True) if pattern else st.text(max_size=16)
        return st.one_of(valid, valid, TEXT)
    if kind == "integer":
        lo, hi = schema.get("minimum", schema.get("exclusiveMinimum")), schema.get("maximum")
        return st.one_of(st.integers(min_value=lo, max_value=hi), st.integers(-(2**63), 2**63))
    if kind == "number":
        return st.one_of(
            st.floats(min_value=schema.get("minimum"), max_value=schema.get("maximum"), allow_nan=False),
            st.floats(allow_nan=False, allow_infinity=False),
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return WRONG


def recipe_schema() -> dict[str, Any]:
    from autobench.recipe.schema import Recipe

    return Recipe.model_json_schema()


@st.composite
def recipe_documents(draw: Any) -> dict[str, Any]:
    """A recipe mapping: the required keys mostly valid (so deeper code is reached), the rest
    drawn from the schema, hostile values everywhere."""
    root = recipe_schema()
    doc = draw(from_schema(root, root))
    if not isinstance(doc, dict):
        doc = {}
    if draw(st.integers(0, 3)):  # mostly a loadable core
        model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
        doc["model"] = {**model, "repo": draw(st.sampled_from(["org/m", "a.b/c-d", "/models/local"]))}
        container = doc.get("container") if isinstance(doc.get("container"), dict) else {}
        doc["container"] = {**container, "image": draw(st.sampled_from(["img:1", "ghcr.io/o/i@sha256:" + "a" * 64]))}
    doc.pop("extends", None)  # extends is fuzzed as a file input (test_fuzz_files)
    return doc

"""Fuzz: ``--profile`` files -- bench keys from the schema's Bench definition, hostile YAML text
and other files' lines.  Loading with a profile raises only RecipeError in one clean line, never
echoes a line of a file that is not a profile, and what loads compiles or says why in one line."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fuzz_strategies import HOSTILE, TOKEN, from_schema, recipe_schema
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.errors import AutobenchError, RecipeError

SETTINGS = settings(
    max_examples=budget(40), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE
)
BASE = (
    "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n  ports: ['8000:8000']\n"
    "bench:\n  dataset:\n    kind: random\n    input_len: 8\n    output_len: 8\n"
)
#: Lines of files that are not profiles (a secret file's shape): never printed back.
SECRET_LINES = ["sysadm:$6$saltZq9$hashZq9:19000:0:99999:7:::", "Zq9secret=value", "- Zq9item", "[Zq9section]"]


def _bench_documents() -> st.SearchStrategy[Any]:
    root = recipe_schema()
    return from_schema(root["$defs"]["Bench"], root)


GOOD_PROFILE = st.fixed_dictionaries(
    {},
    optional={
        "concurrency": st.one_of(
            st.integers(1, 256), st.lists(st.integers(1, 256), min_size=1, max_size=6, unique=True)
        ),
        "repeat": st.integers(1, 4),
        "max_tokens": st.integers(1, 4096),
        "num_prompts": st.integers(1, 5000),
        "request_rate": st.floats(0.1, 50),
        "warmup": st.integers(0, 8),
        "dataset": st.fixed_dictionaries({"kind": st.just("random"), "input_len": st.integers(1, 2048)}),
    },
)
PROFILE_TEXT = st.one_of(
    GOOD_PROFILE.map(lambda d: json.dumps(d)),
    GOOD_PROFILE.map(lambda d: json.dumps(d)),
    _bench_documents().map(lambda d: json.dumps(d, ensure_ascii=False)),
    st.lists(st.sampled_from(SECRET_LINES), min_size=1, max_size=4).map("\n".join),
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=4).map(": ".join),
    st.text(max_size=60),
)


@SETTINGS
@given(text=PROFILE_TEXT, suffix=st.sampled_from([".yaml", ".yaml", ".yml", "", ".txt", ".json"]))
def test_any_profile_loads_or_says_why_in_one_clean_line(text, suffix):
    from autobench.compile import compile_recipe
    from autobench.recipe.loader import load_recipe

    tried("profiles: load/compile")
    with tempfile.TemporaryDirectory() as tmp:
        recipe = Path(tmp) / "r.yaml"
        recipe.write_text(BASE, encoding="utf-8")
        profile = Path(tmp) / f"p{suffix}"
        profile.write_text(text, encoding="utf-8")
        try:
            loaded = load_recipe(recipe, profile=profile)
        except RecipeError as exc:
            line = str(exc)
            assert_clean_line(line)
            assert "Zq9" not in line and TOKEN not in line  # no line of another file echoed
            return
        assert suffix in (".yaml", ".yml")  # anything else is never read
        tried("profiles: loaded (of which)")
        try:
            script = compile_recipe(loaded, "full", check=False)
        except AutobenchError as exc:
            assert_clean_line(str(exc))
            return
        assert "\x1b" not in script

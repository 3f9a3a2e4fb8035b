"""Property: no recipe value can break out of its argument.

Arbitrary strings (quotes, $(...), backticks, newlines, unicode, leading dashes, ~) go into every
string field that reaches the script; the compiled script runs under real bash with recording
stubs for docker/curl/autobench, and the argv each stub receives must equal the argv lists the
Python API returns (the same lists the process/docker runtimes execute).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from compile_helpers import run_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.compile import bench_argv, compile_recipe, container_name, docker_argv
from autobench.compile.quoting import comment_text, shell_word
from autobench.recipe.loader import LoadedRecipe, canonical_digest
from autobench.recipe.schema import Recipe
from autobench.redaction import TOKEN as SECRET_VALUE

NASTY = [
    "",
    " ",
    "'",
    '"',
    "''",
    "\\",
    "\\'",
    "$(touch pwned)",
    "`touch pwned`",
    "$HOME",
    "${HOME}",
    "~",
    "~/x",
    "-rf",
    "--help",
    "a\nb",
    "\n",
    "ab\n",
    "\r\n",
    "*",
    "?",
    "[a]",
    "!",
    "!!",
    ";",
    "&&",
    "|",
    ">x",
    "#",
    "a # b",
    "é",
    "日本語",
    "\u2028",
    "\u0085",
    "\t",
    "$'\\n'",
    "{a,b}",
    "%s",
    "x=y",
    "-",
    "--",
]
CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
TEXT = st.one_of(
    st.sampled_from(NASTY),
    st.text(CHARS, max_size=12),
    st.lists(st.sampled_from(NASTY), min_size=2, max_size=4).map("".join),
).filter(lambda s: not SECRET_VALUE.search(s) and s != "--")  # "--" as a value: test_compile_fences
NONEMPTY = TEXT.filter(bool)
MAYBE = st.none() | TEXT
ENV_KEY = st.from_regex(r"E_[A-Za-z0-9_]{0,6}", fullmatch=True)
SECRET = st.from_regex(r"SECRET_[A-Z0-9_]{0,6}", fullmatch=True)
DOCKER_EXTRA = st.lists(
    st.tuples(st.sampled_from(["--label", "--network", "-e", "--cap-add"]), TEXT).map(list)
    | TEXT.map(lambda v: ["--label=" + v]),
    max_size=2,
).map(lambda groups: [word for group in groups for word in group])
# container.image must parse as an image reference (autobench.recipe.imageref; other text is
# refused at validation, tests/recipe/test_imageref.py), so only references are drawn here.
IMAGE = st.builds(
    lambda host, path, tag: host + path + tag,
    st.sampled_from(["", "localhost:5000/", "ghcr.io/", "[::1]/"]),
    st.from_regex(r"[a-z0-9]+(?:[._-][a-z0-9]+)?(?:/[a-z0-9]+){0,2}", fullmatch=True),
    st.sampled_from(["", ":v1", ":Latest_1.x-y", "@sha256:" + "0" * 64]),
)


@st.composite
def recipes(draw) -> dict:
    d = draw
    data = {
        "name": "prop",
        "model": {
            "repo": "org/model",
            "revision": d(NONEMPTY),
            "served_name": d(MAYBE),
            "tokenizer_revision": d(MAYBE),
        },
        "container": {
            "image": d(IMAGE),
            "name": d(st.none() | st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,8}", fullmatch=True)),  # AB052
            "gpus": d(MAYBE),
            "ipc": d(MAYBE),
            "shm_size": d(MAYBE),
            "ports": d(st.lists(TEXT, max_size=2)),
            "volumes": d(st.lists(TEXT | TEXT.map(lambda s: "~/" + s), max_size=2)),
            # flags with hostile values (a stray plain word would become the image: AB056 refuses it)
            "extra_args": d(DOCKER_EXTRA),
        },
        "env": d(st.dictionaries(ENV_KEY, TEXT, max_size=3)),
        "secrets": d(st.lists(SECRET, unique=True, max_size=2)),
        "engine": {
            "host": d(TEXT),
            "kv_cache_dtype": d(MAYBE),
            "load_format": d(MAYBE),
            "attention_backend": d(MAYBE),
            "extra_args": d(st.lists(TEXT, max_size=3)),
        },
        "bench": {
            "client": d(st.sampled_from(["autobench", "vllm"])),
            "model": d(MAYBE),
            "dataset": {"kind": "sharegpt", "path": d(TEXT | TEXT.map(lambda s: "~/" + s))},
        },
    }
    if d(st.booleans()):
        data["speculative"] = {
            "method": "dflash",
            "model": "org/draft",
            "revision": d(MAYBE),
            "num_speculative_tokens": d(st.integers(1, 8)),
            "options": d(st.dictionaries(st.sampled_from(["x", "y'z", "é"]), TEXT, max_size=2)),
        }
    return data


def _loaded(data: dict) -> LoadedRecipe:
    recipe = Recipe.model_validate(data)
    resolved = recipe.model_dump(mode="json")
    return LoadedRecipe(Path("prop.yaml"), recipe, resolved, canonical_digest(resolved))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipes())
def test_script_argv_equals_api_argv(data):
    loaded = _loaded(data)
    recipe = loaded.recipe
    script = compile_recipe(loaded, "full", check=False)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = str(root / "home")
        env = {name: "secret-value" for name in recipe.secrets}
        proc, calls = run_script(script, root, env)
        assert proc.returncode == 0, proc.stderr
        assert list((root / "work").iterdir()) == []  # nothing ran that was not a stub
        assert not (root / "pwned").exists()
        run = next(argv for tool, argv in calls if tool == "docker" and argv[:1] == ["run"])
        assert ["docker", *run] == docker_argv(recipe, home=home)
        if recipe.bench.client == "vllm":
            bench = next(argv for tool, argv in calls if tool == "docker" and argv[:1] == ["exec"])
            assert ["docker", *bench] == bench_argv(recipe, home=home)
        else:
            bench = next(argv for tool, argv in calls if tool == "autobench")
            result = ["--result", recipe.name + ".bench.json"]  # the script's result file, for record --metrics
            assert ["autobench", *bench] == bench_argv(recipe, home=home) + result
        assert calls[-1] == ("docker", ["rm", "-f", container_name(recipe)])


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_comment_text_is_one_line(value):
    out = comment_text(value)
    assert "\n" not in out and "\r" not in out
    assert re.fullmatch(r"[\x20-\x7e]*", out)


def test_home_words_expand_only_home():
    from autobench.compile.quoting import Word

    assert shell_word(Word(".cache/hf:/root", home=True)) == '"${HOME}"/.cache/hf:/root'
    assert shell_word(Word("a b", home=True)) == "\"${HOME}\"'/a b'"
    assert shell_word(Word("", home=True)) == '"${HOME}"'
    assert shell_word("$(x)") == "'$(x)'"

"""No recipe value becomes an option (issue 12, item 1).

The argv lists autobench builds are read back by the parsers that will read them: vllm's kind
(real ``argparse``), autobench bench's (the real click command) and docker's (a model of pflag's
rules, since there is no Docker engine here: a word after a value-taking flag is its value
verbatim, ``--`` ends the options, the first plain word is the image and everything after it
belongs to the container).  Hypothesis puts ``-``-leading values in every value field.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import inprocess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.compile import bench_argv, docker_argv, serve_argv
from autobench.errors import RecipeError
from autobench.recipe.loader import LoadedRecipe, canonical_digest, load_recipe
from autobench.recipe.rules import check
from autobench.recipe.schema import Recipe

# Option-looking values: what a hostile recipe writes where a value belongs.
DASHY = st.one_of(
    st.sampled_from(["--privileged", "-v", "--volume=/:/host", "--api-key=x", "-", "-1", "--help", "-rf", "---"]),
    st.from_regex(r"-{1,2}[a-z][a-z-]{0,8}(=[a-z/:]{0,6})?", fullmatch=True),
)
VALUE = DASHY | st.from_regex(r"[a-z0-9][a-z0-9._/-]{0,8}", fullmatch=True)

# The vllm serve flags autobench writes, each taking one value (bool flags listed apart).
VLLM_VALUE_FLAGS = [
    "--revision",
    "--tokenizer",
    "--tokenizer-revision",
    "--served-model-name",
    "--host",
    "--port",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--max-num-batched-tokens",
    "--max-num-seqs",
    "--dtype",
    "--kv-cache-dtype",
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--load-format",
    "--attention-backend",
    "--speculative-config",
]
VLLM_BOOL_FLAGS = [
    "--trust-remote-code",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--enforce-eager",
]
DOCKER_VALUE_FLAGS = {"--name", "--gpus", "--shm-size", "-p", "-v", "--env", "-e", "--label", "--network"}
DOCKER_BOOL_FLAGS = {"-d", "--rm", "--privileged"}


def vllm_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vllm serve", exit_on_error=False, add_help=False)
    parser.add_argument("model_tag")
    for flag in VLLM_VALUE_FLAGS:
        parser.add_argument(flag)
    for flag in VLLM_BOOL_FLAGS:
        parser.add_argument(flag, action="store_true")
    return parser


def parse_docker_run(argv: list[str]) -> tuple[list[tuple[str, str | None]], str, list[str]]:
    """(options, image, container args) as docker's pflag reads ``docker run ...``."""
    assert argv[:2] == ["docker", "run"]
    words = argv[2:]
    options: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, eq, value = word.partition("=")
        if eq:
            options.append((name, value))
        elif name in DOCKER_VALUE_FLAGS:
            options.append((name, words[i + 1]))
            i += 1
        else:
            assert name in DOCKER_BOOL_FLAGS, f"docker would read {word!r} as an unknown option"
            options.append((name, None))
        i += 1
    return options, words[i], words[i + 1 :]


@st.composite
def hostile_recipes(draw) -> Recipe:
    d = draw
    data = {
        "name": "fence",
        "model": {
            "repo": "org/model",
            "revision": d(VALUE),
            "served_name": d(VALUE),
            "tokenizer_revision": d(st.none() | VALUE),
        },
        "container": {
            "image": "vllm/vllm-openai:v1",
            "name": "c1",
            "gpus": d(VALUE),
            "shm_size": d(st.none() | VALUE),
            "ports": d(st.lists(VALUE, max_size=2)),
            "volumes": d(st.lists(VALUE, max_size=2)),
        },
        "engine": {
            "host": d(VALUE),
            "kv_cache_dtype": d(st.none() | VALUE),
            "load_format": d(st.none() | VALUE),
            "attention_backend": d(st.none() | VALUE),
        },
        "bench": {
            "model": d(st.none() | VALUE),
            "dataset": {"kind": "jsonl", "path": d(VALUE)},
            "seed": d(st.integers(-5, 5)),
            "sampler": {"presence_penalty": d(st.floats(-2, 2, allow_nan=False))},
        },
    }
    return Recipe.model_validate(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_recipes())
def test_vllm_reads_every_value_back_as_the_value(recipe):
    ns = vllm_parser().parse_args(serve_argv(recipe, home="/h")[2:])
    m, e = recipe.model, recipe.engine
    assert ns.model_tag == m.repo
    assert ns.revision == m.revision
    assert ns.served_model_name == m.served_name
    assert ns.tokenizer_revision == m.tokenizer_revision
    assert ns.host == e.host
    assert (ns.kv_cache_dtype, ns.load_format, ns.attention_backend) == (
        e.kv_cache_dtype,
        e.load_format,
        e.attention_backend,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_recipes())
def test_docker_reads_the_image_as_the_image_and_no_value_as_an_option(recipe):
    argv = docker_argv(recipe, home="/h")
    options, image, rest = parse_docker_run(argv)
    assert image == recipe.container.image
    assert {name for name, _ in options} <= DOCKER_VALUE_FLAGS | DOCKER_BOOL_FLAGS
    c = recipe.container
    assert dict(options)["--gpus"] == c.gpus
    assert [v for n, v in options if n == "-p"] == c.ports
    assert [v for n, v in options if n == "-v"] == [("/h/" + v[2:]) if v.startswith("~/") else v for v in c.volumes]
    # after the image: exactly the vllm serve arguments (the image's entrypoint is vllm serve)
    assert rest == serve_argv(recipe, home="/h")[2:]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_recipes())
def test_autobench_bench_reads_every_value_back_as_the_value(recipe):
    from autobench.cli.bench_cmds import bench

    argv = bench_argv(recipe, home="/h")
    assert argv[:2] == ["autobench", "bench"]
    ctx = bench.make_context("bench", argv[2:])
    assert ctx.params["model"] == recipe.bench_model
    assert ctx.params["dataset"] == recipe.bench.dataset.path
    assert ctx.params["seed"] == recipe.bench.seed
    assert ctx.params["presence_penalty"] == recipe.bench.sampler.presence_penalty


def test_a_positional_value_starting_with_a_dash_is_refused_by_the_builder():
    # The schema refuses such an image first; the builder refuses it too, for any path that
    # builds a recipe without the schema (model_construct, a future field).
    good = Recipe.model_validate({"name": "x", "model": {"repo": "o/m"}, "container": {"image": "img"}})
    bad = good.model_copy(update={"container": good.container.model_copy(update={"image": "--privileged"})})
    with pytest.raises(RecipeError, match="container.image"):
        docker_argv(bad)


def test_a_value_of_double_dash_is_refused():
    # argparse removes "--" even from "--revision=--", so vllm could never receive it
    recipe = Recipe.model_validate(
        {"name": "x", "model": {"repo": "o/m", "revision": "--"}, "container": {"image": "img"}}
    )
    with pytest.raises(RecipeError, match="--revision"):
        serve_argv(recipe)


def _write(tmp_path: Path, extra_args: list[str] | None = None, image: str = "vllm/vllm-openai:v1") -> Path:
    import json

    path = tmp_path / "r.yaml"
    container = {"image": image, "ports": ["8000:8000"], "extra_args": extra_args or []}
    path.write_text(json.dumps({"model": {"repo": "org/m"}, "container": container}))
    return path


def test_compile_refuses_a_flag_for_an_image_with_one_located_line(tmp_path):
    path = _write(tmp_path, image="--volume=/:/host")
    proc = inprocess.autobench("compile", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {path}:1:") and "container.image: not an image reference" in lines[0]
    assert "/:/host" not in proc.stderr


@pytest.mark.parametrize(
    ("extra", "stray"),
    [
        (["--rm", "evil/image"], [1]),
        (["evil/image"], [0]),
        (["--", "x"], [0]),
        (["-it", "x"], [1]),
        (["-e", "A=1", "x"], [2]),
        (["--network=host", "x"], [1]),
        (["--network", "host"], []),
        (["--label", "--"], []),
        (["--label", "-x", "--rm"], []),
        (["--privileged", "--network", "host", "-v", "/a:/b"], []),
    ],
)
def test_a_stray_word_in_container_extra_args_is_refused(tmp_path, extra, stray):
    loaded = load_recipe(_write(tmp_path, extra))
    found = [f for f in check(loaded) if f.code == "AB056"]
    assert [f.key for f in found] == [f"container.extra_args[{i}]" for i in stray]
    assert all(f.severity == "error" for f in found)


def test_compile_without_checks_still_refuses_a_stray_image_word(tmp_path):
    from autobench.compile import compile_recipe

    loaded = load_recipe(_write(tmp_path, ["--rm", "evil/image"]))
    with pytest.raises(RecipeError, match="AB056"):
        compile_recipe(loaded, "full", check=False)


def test_glued_values_round_trip_through_real_bash(tmp_path):
    """The compiled script hands docker exactly the glued words (one quoting path)."""
    from compile_helpers import run_script

    from autobench.compile import compile_recipe

    recipe = Recipe.model_validate(
        {
            "name": "g",
            "model": {"repo": "o/m", "revision": "-x", "served_name": "--api-key=leak"},
            "container": {"image": "img:1", "name": "c", "ports": ["8000:8000"], "volumes": ["-v"]},
        }
    )
    resolved = recipe.model_dump(mode="json")
    loaded = LoadedRecipe(Path("g.yaml"), recipe, resolved, canonical_digest(resolved))
    proc, calls = run_script(compile_recipe(loaded, "full", check=False), tmp_path, {})
    assert proc.returncode == 0, proc.stderr
    run = next(argv for tool, argv in calls if tool == "docker" and argv[:1] == ["run"])
    assert "--revision=-x" in run and "--served-model-name=--api-key=leak" in run and "-v=-v" in run
    assert ["docker", *run] == docker_argv(recipe, home=str(tmp_path / "home"))

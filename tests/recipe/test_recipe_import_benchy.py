"""A sparkrun recipe's llama-benchy `benchmark:` block: its `depth` and `prefix_caching` are kept
(issue #33), in the shapes sparkrun accepts (nested `args`, flat keys swept in, a comma string),
and every other argument is noted with its line.  Shapes read at spark-arena/sparkrun 0041b8f
(`core/benchmark_profiles.py`, `benchmarking/llama_benchy.py`, `tests/test_benchmark.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.cli.import_cmds import check_imported
from autobench.errors import RecipeError
from autobench.recipe.importer import convert
from autobench.recipe.loader import load_recipe

CORPUS = Path(__file__).resolve().parent / "import_corpus"
HEAD = """\
recipe_version: "2"
model: Qwen/Qwen3-8B
runtime: vllm
container: vllm/vllm-openai:v0.23.1
defaults:
  tensor_parallel: 1
command: vllm serve {model} --max-model-len 131072
"""


def imported(tmp_path: Path, benchmark: str):
    path = tmp_path / "peer.yaml"
    path.write_text(HEAD + benchmark, encoding="utf-8")
    (one,) = convert(path)
    return one


def dataset_of(one, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    written, _ = check_imported(one, out)  # validates and compiles
    return load_recipe(written).recipe.bench.dataset


def test_the_corpus_depth_sweep_is_kept_as_a_grid_axis(tmp_path):
    (one,) = convert(CORPUS / "sparkrun-benchy-depth.yaml")
    d = dataset_of(one, tmp_path)
    assert d.depth == [0, 4096, 16384, 65536]
    assert d.shared_prefix is not None and (d.shared_prefix.prompts, d.shared_prefix.length) == (2, None)
    assert one.notes == [  # each with its line in the file
        "12: not carried: llama-benchy pp [2048]",
        "13: not carried: llama-benchy tg [32]",
        "11: not carried: benchmark timeout (sparkrun's runner)",
        "15: prefix_caching: every 2 prompts share their depth context (bench.dataset.shared_prefix), "
        "the second reusing the first's cache",
    ]


def test_one_depth_with_prefix_caching_shares_that_depth(tmp_path):
    one = imported(
        tmp_path, "benchmark:\n  framework: llama-benchy\n  args:\n    depth: [4096]\n    prefix_caching: true\n"
    )
    d = dataset_of(one, tmp_path)
    assert d.shared_prefix is not None
    assert (d.shared_prefix.prompts, d.shared_prefix.length, d.depth) == (2, None, 4096)
    assert one.notes == [
        "12: prefix_caching: every 2 prompts share their depth context (bench.dataset.shared_prefix), "
        "the second reusing the first's cache"
    ]


@pytest.mark.parametrize(
    ("block", "depth"),
    [
        ("benchmark:\n  args: {depth: [0, 1024]}\n", [0, 1024]),  # framework defaults to llama-benchy
        ("benchmark:\n  depth: 2048\n", 2048),  # flat, swept into args
        ('benchmark:\n  depth: "0,10,20"\n', [0, 10, 20]),  # a comma string, as sparkrun reads one
        ("benchmark:\n  depth: [0, 0, 512]\n", [0, 512]),  # a value listed twice: once
        ("benchmark:\n  args: {depth: [8]}\n  depth: [9]\n", 8),  # args win over a swept key
    ],
)
def test_depth_in_each_shape_sparkrun_accepts(tmp_path, block, depth):
    d = dataset_of(imported(tmp_path, block), tmp_path)
    assert d.depth == depth and d.shared_prefix is None  # no prefix caching asked: none


@pytest.mark.parametrize(
    ("block", "note"),
    [
        ("benchmark:\n  depth: [0]\n  prefix_caching: true\n", "not carried: prefix_caching (no depth above 0)"),
        ("benchmark:\n  prefix_caching: true\n", "not carried: prefix_caching (no depth above 0)"),
    ],
)
def test_prefix_caching_that_cannot_be_a_shared_prefix_is_noted(tmp_path, block, note):
    one = imported(tmp_path, block)
    assert any(note in n for n in one.notes), one.notes
    assert dataset_of(one, tmp_path).shared_prefix is None


def test_prefix_caching_false_or_a_string_flag(tmp_path):
    off = imported(tmp_path, "benchmark:\n  depth: [256]\n  prefix_caching: false\n")
    assert dataset_of(off, tmp_path).shared_prefix is None and not any("prefix" in n for n in off.notes)
    off_text = imported(tmp_path, 'benchmark:\n  depth: [256]\n  prefix_caching: " False "\n')
    assert dataset_of(off_text, tmp_path).shared_prefix is None
    on = imported(tmp_path, 'benchmark:\n  depth: [256]\n  enable_prefix_caching: "true"\n')
    shared = dataset_of(on, tmp_path).shared_prefix
    assert shared is not None and (shared.prompts, shared.length) == (2, None)


def test_another_framework_is_noted_and_nothing_is_carried(tmp_path):
    one = imported(tmp_path, "benchmark:\n  framework: tool-eval-bench\n  depth: [4096]\n")
    assert dataset_of(one, tmp_path).depth is None
    assert one.notes == ["8: not carried: benchmark framework tool-eval-bench"]


@pytest.mark.parametrize(
    ("block", "line", "words"),
    [
        ("benchmark:\n  depth: [0, -1]\n", 9, "benchmark depth -1 is not a whole number of tokens"),
        ("benchmark:\n  depth: [1.5]\n", 9, "benchmark depth 1.5 is not a whole number"),
        ('benchmark:\n  depth: "0,x"\n', 9, "benchmark depth x is not a whole number"),
        ("benchmark:\n  depth: [true]\n", 9, "benchmark depth true is not a whole number"),
        ("benchmark:\n  depth: [20000000]\n", 9, "from 0 to 10,000,000"),
        ("benchmark:\n  depth: []\n", 9, "benchmark depth is empty"),
        ("benchmark:\n  prefix_caching: maybe\n", 9, "benchmark prefix_caching maybe is not true or false"),
        ("benchmark:\n  prefix_caching: 1\n", 9, "benchmark prefix_caching 1 is not true or false"),
        ("benchmark:\n  args: [depth]\n", 9, "benchmark.args must be a mapping"),
        ("benchmark: llama-benchy\n", 8, "benchmark must be a mapping"),
    ],
)
def test_a_bad_value_is_one_located_refusal(tmp_path, block, line, words):
    with pytest.raises(RecipeError) as info:
        imported(tmp_path, block)
    if "args must be" in words:
        assert info.value.hint == "write args: {depth: [0, 4096]}"
    if "is empty" in words:
        assert info.value.hint == "write depth: [0, 4096], or drop it (llama-benchy: [0])"
    if "true or false" in words:
        assert info.value.hint == "write true or false"
    if "must be a mapping" in words and "args" not in words:
        assert info.value.hint == "write benchmark: {framework: llama-benchy, ...}"
    if "not a whole number" in words:
        assert info.value.hint == "write depth: [0, 4096] (tokens of context before each prompt)"
    assert f"peer.yaml:{line}:" in str(info.value.location) and words in info.value.message, (
        info.value.location,
        info.value.message,
    )


def test_the_largest_depth_is_carried_and_one_more_refused(tmp_path):
    """The bound itself (the recipe then fails its own max_model_len check, AB037, as it should)."""
    one = imported(tmp_path, "benchmark:\n  depth: [10000000]\n")
    assert one.data["bench"]["dataset"]["depth"] == 10_000_000
    with pytest.raises(RecipeError, match="from 0 to 10,000,000"):
        imported(tmp_path, "benchmark:\n  depth: [10000001]\n")


def test_a_depth_of_one_token_is_a_depth_above_zero(tmp_path):
    shared = dataset_of(imported(tmp_path, "benchmark:\n  depth: [0, 1]\n  prefix_caching: true\n"), tmp_path)
    assert shared.shared_prefix is not None and shared.depth == [0, 1]

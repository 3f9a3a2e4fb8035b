"""compile_recipe's refusals (their wording: the first problem, how many more, where, the fix)
and the build step a recipe's ``build:`` adds; the scripts themselves are in the golden files."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.compile.render import build_lines, compile_recipe
from autobench.errors import RecipeError
from autobench.recipe.loader import load_recipe

BASE = "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n  ports: ['8000:8000']\n"
DATASET = "bench:\n  dataset:\n    kind: random\n"


def recipe(tmp_path: Path, text: str, name: str = "r.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return load_recipe(path)


def test_an_unknown_target_is_refused_with_the_known_ones(tmp_path):
    with pytest.raises(RecipeError) as info:
        compile_recipe(recipe(tmp_path, BASE + DATASET), "nope")
    assert str(info.value) == "unknown compile target 'nope' (hint: use one of: full, serve, bench)"


def test_the_first_rule_error_is_shown_with_how_many_more(tmp_path):
    one = recipe(tmp_path, BASE)  # sharegpt without a path: AB025 only
    with pytest.raises(RecipeError) as info:
        compile_recipe(one)
    assert str(info.value) == (
        f"{tmp_path / 'r.yaml'}: AB025: bench.dataset: dataset kind sharegpt needs a path "
        "(hint: set bench.dataset.path (or use dataset kind random))"
    )
    two = recipe(tmp_path, BASE.replace("  ports: ['8000:8000']\n", ""))  # and AB022: the port is not published
    with pytest.raises(RecipeError, match=r"\(1 more error; run autobench validate\) \(hint: publish it"):
        compile_recipe(two)
    three = recipe(tmp_path, BASE.replace("  ports: ['8000:8000']\n", "") + "topology:\n  nodes: 2\n")
    with pytest.raises(RecipeError, match=r"\(2 more errors; run autobench validate\)"):
        compile_recipe(three)
    assert "docker run" in compile_recipe(one, check=False)  # check=False: rule errors are the user's call


def test_unsafe_findings_are_refused_even_without_checks(tmp_path):
    loaded = recipe(tmp_path, BASE + DATASET + 'env:\n  A: "x\\0y"\n')
    with pytest.raises(RecipeError) as info:
        compile_recipe(loaded, check=False)
    assert (
        str(info.value)
        == f"{tmp_path / 'r.yaml'}:12:6: AB055: env.A: contains a NUL character (hint: remove the \\0 escape)"
    )


def test_frozen_names_the_first_unpinned_revision_and_counts_the_rest(tmp_path):
    spec = "speculative:\n  method: eagle3\n  model: org/d\n  revision: dev\n  num_speculative_tokens: 2\n"
    loaded = recipe(tmp_path, BASE + DATASET + spec)
    with pytest.raises(RecipeError) as info:
        compile_recipe(loaded, frozen=True, check=False)
    assert str(info.value) == (
        f"{tmp_path / 'r.yaml'}:4:13: model.revision: model revision 'main' of org/m is not a full 40-hex commit "
        f"sha; --frozen refuses it (1 more unpinned) (hint: autobench lock {tmp_path / 'r.yaml'})"
    )
    only_draft = recipe(tmp_path, BASE.replace("main", "a" * 40) + DATASET + spec)
    with pytest.raises(RecipeError) as info:
        compile_recipe(only_draft, frozen=True, check=False)
    assert "speculative.revision: draft revision 'dev'" in str(info.value) and "more unpinned" not in str(info.value)


def test_a_multi_node_recipe_is_not_one_script(tmp_path):
    text = BASE + DATASET + "topology:\n  nodes: 2\n  gpus_per_node: 1\nengine:\n  tensor_parallel_size: 2\n"
    with pytest.raises(RecipeError) as info:
        compile_recipe(recipe(tmp_path, text), check=False)
    path = tmp_path / "r.yaml"
    assert str(info.value) == (
        f"{path}:12:3: a 2-node recipe compiles into node scripts and a driver, not one script "
        f"(hint: autobench compile {path} -o DIR [--hosts HEAD,WORKER,...])"
    )


BUILD = "build:\n  base_image: nvidia/cuda:12\n  vllm_ref: v0.9.0\n"


def test_a_build_section_builds_from_the_default_dockerfile_on_stdin(tmp_path):
    loaded = recipe(
        tmp_path, BASE + DATASET + BUILD + "  prs: [123, 456]\n  build_args:\n    MAX_JOBS: 4\n    FLAG: true\n"
    )
    lines, dockerfile = build_lines(loaded)
    assert [[w.value for w in line] for line in lines] == [
        ["docker", "build"],
        ["-t", "img:1"],
        ["--build-arg", "BASE_IMAGE=nvidia/cuda:12"],
        ["--build-arg", "VLLM_REPO=https://github.com/vllm-project/vllm.git"],
        ["--build-arg", "VLLM_REF=v0.9.0"],
        ["--build-arg", "VLLM_PRS=123 456"],
        ["--build-arg", "MAX_JOBS=4"],
        ["--build-arg", "FLAG=true"],
        ["-"],
    ]
    assert dockerfile is not None and "FROM" in dockerfile
    script = compile_recipe(loaded, "full")
    assert "docker build \\\n" in script and "--build-arg 'VLLM_PRS=123 456'" in script
    assert dockerfile.splitlines()[0] in script  # fed on stdin from the script itself


def test_a_build_with_its_own_dockerfile_uses_the_recipe_folder_as_context(tmp_path):
    (tmp_path / "my.Dockerfile").write_text("FROM x\n")
    loaded = recipe(tmp_path, BASE + DATASET + BUILD + "  dockerfile: my.Dockerfile\n")
    lines, dockerfile = build_lines(loaded)
    assert [w.value for w in lines[-1]] == ["-f", str(tmp_path / "my.Dockerfile"), str(tmp_path)]
    assert dockerfile is None
    assert build_lines(recipe(tmp_path, BASE + DATASET)) == (None, None)


@pytest.mark.parametrize("target", ["full", "serve", "bench"])
def test_each_target_has_its_header_and_timeout(tmp_path, target):
    loaded = recipe(tmp_path, BASE + "bench:\n  dataset:\n    kind: random\n  ready_timeout_s: 90.2\n")
    script = compile_recipe(loaded, target)
    assert f"# target:    {target}" in script and "# recipe:    r" in script
    assert ("\nREADY_TIMEOUT_S=91\n" in script) is (target != "bench")  # whole seconds, rounded up

"""compile_recipe's refusals (their wording: the first problem, how many more, where, the fix)
and the build step a recipe's ``build:`` adds; the scripts themselves are in the golden files."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.compile import render
from autobench.compile.cluster import compile_cluster
from autobench.compile.render import TARGETS, build_lines, compile_recipe, refuse_grid
from autobench.compile.slurm import compile_slurm
from autobench.errors import RecipeError
from autobench.recipe.loader import LoadedRecipe, load_recipe

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
        f"{tmp_path / 'r.yaml'}: AB025: bench.dataset: dataset kind sharegpt needs a path or a repo "
        "(hint: set bench.dataset.path, or repo and file (or use dataset kind random))"
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
    built = load_recipe(path)  # a LoadedRecipe made in code has no positions: its path is the location
    bare = LoadedRecipe(Path("built.yaml"), built.recipe, built.data, built.digest)
    with pytest.raises(RecipeError) as info:
        compile_recipe(bare, check=False)
    assert str(info.value).startswith("built.yaml: a 2-node recipe compiles into node scripts")


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


def test_a_revision_left_to_its_default_is_shown_as_such_and_frozen_names_its_section(tmp_path):
    text = BASE.replace("main", "a" * 40 + "\n  tokenizer: org/tok") + DATASET
    loaded = recipe(tmp_path, text)
    script = compile_recipe(loaded, "serve")
    assert '\n# tokenizer: org/tok @ "(default)"  UNPINNED\n' in script
    with pytest.raises(RecipeError) as info:  # no tokenizer_revision written: the error points at model:
        compile_recipe(loaded, frozen=True)
    path = tmp_path / "r.yaml"
    assert str(info.value) == (
        f"{path}:2:1: model.tokenizer_revision: tokenizer revision '(default)' of org/tok is not a full 40-hex "
        f"commit sha; --frozen refuses it (hint: autobench lock {path})"
    )


def test_frozen_points_at_the_image_of_a_recipe_pinned_but_for_its_image(tmp_path):
    loaded = recipe(tmp_path, BASE.replace("main", "a" * 40) + DATASET)
    with pytest.raises(RecipeError) as info:
        compile_recipe(loaded, frozen=True)
    path = tmp_path / "r.yaml"
    assert str(info.value) == (
        f"{path}:6:10: container.image is not pinned by digest (name@sha256:...); --frozen refuses it "
        f"(hint: autobench lock {path})"
    )


def test_a_grid_is_refused_on_a_one_cell_runtime_with_its_rule_code(tmp_path):
    loaded = recipe(tmp_path, BASE + "bench:\n  concurrency: [1, 4]\n  dataset:\n    kind: random\n")
    refuse_grid(loaded, "docker")  # the docker script benches every cell on one server
    with pytest.raises(RecipeError) as info:
        refuse_grid(loaded, "k8s")
    assert str(info.value) == (
        f"{tmp_path / 'r.yaml'}:9:3: AB081: bench.concurrency: 2 bench cells, but the k8s runtime benches one "
        "cell per job (hint: run it with autobench run (docker, process, slurm, or a multi-node recipe's nodes: "
        "one boot, every cell), or bench one cell here)"
    )


def test_a_grid_script_benches_each_cell_into_its_own_result_file(tmp_path):
    loaded = recipe(tmp_path, BASE + "bench:\n  concurrency: [1, 4]\n  dataset:\n    kind: random\n")
    script = compile_recipe(loaded, "bench")
    cell = (
        "# Bench cell {label}.\n"
        "autobench bench \\\n"
        "  --base-url http://127.0.0.1:8000 \\\n"
        "  --model org/m \\\n"
        "  --dataset-kind random \\\n"
        "  --tokenizer org/m \\\n"
        "  --tokenizer-revision main \\\n"
        "  --num-prompts 500 \\\n"
        "  --concurrency {c} \\\n"
        "  --max-tokens 256 \\\n"
        '  --result "cell-{n}.$BENCH_RESULT"\n'
        'echo "autobench: bench result in cell-{n}.$BENCH_RESULT" >&2\n'
    )
    expected = (
        cell.format(label='"1/2: concurrency=1"', c=1, n=1) + "\n" + cell.format(label='"2/2: concurrency=4"', c=4, n=2)
    )
    assert script.endswith("\n\n" + expected)
    assert "\nBENCH_RESULT=${BENCH_RESULT:-r.bench.json}\n" in script


def test_a_dockerfile_is_found_beside_the_file_that_names_it(tmp_path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "parent.yaml").write_text(BASE + DATASET + BUILD + "  dockerfile: my.Dockerfile\n")
    # the child writes build: too (another key): the dockerfile still belongs to the parent's folder
    loaded = recipe(tmp_path, "extends: base/parent.yaml\nbuild:\n  vllm_ref: v0.10.0\n", name="child.yaml")
    lines, dockerfile = build_lines(loaded)
    assert [w.value for w in lines[-1]] == ["-f", str(tmp_path / "base" / "my.Dockerfile"), str(tmp_path / "base")]
    assert dockerfile is None


def test_a_nul_in_a_value_no_rule_walks_is_refused_not_written(tmp_path):
    loaded = recipe(tmp_path, BASE + DATASET + BUILD + '  build_args:\n    "A\\0B": 1\n')
    with pytest.raises(RecipeError) as info:
        compile_recipe(loaded, check=False)
    assert str(info.value) == (
        f"{tmp_path / 'r.yaml'}: cannot compile: a shell argument cannot contain a NUL character "
        "(hint: remove control characters from the recipe)"
    )


def test_every_script_the_compile_templates_render_ends_with_one_newline(tmp_path):
    one = recipe(tmp_path, BASE + DATASET)
    two = recipe(
        tmp_path,
        BASE + DATASET + "topology:\n  nodes: 2\n  gpus_per_node: 1\nengine:\n  tensor_parallel_size: 2\n",
        name="two.yaml",
    )
    texts = [compile_recipe(one, t) for t in TARGETS] + [compile_slurm(one, check=False)]
    texts += compile_cluster(two, ["h0", "h1"], check=False).values()
    for text in texts:
        assert text.endswith("\n") and not text.endswith("\n\n")


@pytest.fixture
def broken_template(tmp_path, monkeypatch):
    """compile_recipe's environment() reading script.sh.j2 from a folder the test writes."""
    folder = tmp_path / "templates"
    folder.mkdir()
    monkeypatch.setattr(render, "templates_dir", lambda: folder)
    render.environment.cache_clear()
    yield folder / "script.sh.j2"
    render.environment.cache_clear()


def test_a_template_bug_is_reported_as_one_and_any_other_failure_is_not_swallowed(tmp_path, broken_template):
    loaded = recipe(tmp_path, BASE + DATASET)
    broken_template.write_text("#!/usr/bin/env bash\n{{ no_such_value }}\n")
    with pytest.raises(RecipeError) as info:
        compile_recipe(loaded)
    assert str(info.value) == "template error: 'no_such_value' is undefined (hint: this is a bug in templates/)"
    broken_template.write_text("{{ 1 // 0 }}\n")
    with pytest.raises(ZeroDivisionError):
        compile_recipe(loaded)

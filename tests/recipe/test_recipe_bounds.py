"""The bounds policy (autobench.recipe.bounds): each domain's maximum is refused at validation,
at its line, so validate never passes what compile or run --dry-run cannot build."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.cli import main
from autobench.errors import RecipeError
from autobench.recipe import bounds
from autobench.recipe.grid import cells
from autobench.recipe.loader import load_recipe

HEAD = "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n  ports: ['8000:8000']\n"
DATASET = "  dataset:\n    kind: random\n    input_len: 8\n    output_len: 8\n"


def values(n: int, start: int = 1) -> str:
    return "[" + ", ".join(str(i) for i in range(start, start + n)) + "]"


# (extra YAML, ok?) per domain: the bound itself passes, one more is refused.
CASES = [
    ("bench:\n  repeat: 100\n" + DATASET, True),
    ("bench:\n  repeat: 101\n" + DATASET, False),
    ("bench:\n  repeat: 1000000000\n" + DATASET, False),
    ("bench:\n  num_prompts: 10000000\n  client: vllm\n" + DATASET, True),
    # autobench's client builds every prompt in memory: prompts + warm-up up to 1,000,000
    ("bench:\n  num_prompts: 1000000\n" + DATASET, True),
    ("bench:\n  num_prompts: 1000001\n" + DATASET, False),
    ("bench:\n  num_prompts: 999999\n  warmup: 2\n" + DATASET, False),
    ("bench:\n  num_prompts: 999999\n  warmup: 1\n" + DATASET, True),
    ("bench:\n  num_prompts: 10000001\n" + DATASET, False),
    ("bench:\n  warmup: 10000001\n" + DATASET, False),
    ("bench:\n  max_tokens: 16777216\n" + DATASET, True),
    ("bench:\n  max_tokens: 16777217\n" + DATASET, False),
    ("bench:\n  concurrency: 100001\n" + DATASET, False),
    ("bench:\n  request_rate: 1000001\n" + DATASET, False),
    ("bench:\n  max_seconds: 2592001\n" + DATASET, False),
    ("bench:\n  ready_timeout_s: 2592001\n" + DATASET, False),
    (f"bench:\n  concurrency: {values(1000)}\n" + DATASET, True),
    (f"bench:\n  concurrency: {values(1001)}\n" + DATASET, False),
    (f"bench:\n  concurrency: {values(100)}\n  repeat: 100\n" + DATASET, True),  # 10,000 benches
    (f"bench:\n  concurrency: {values(101)}\n  repeat: 100\n" + DATASET, False),
    (  # 73 x 137 = 10,001 benches: one past the bound
        f"bench:\n  concurrency: {values(73)}\n"
        f"  dataset:\n    kind: random\n    input_len: {values(137)}\n    output_len: 8\n",
        False,
    ),
    (
        f"bench:\n  concurrency: {values(1000)}\n  request_rate: {values(1000)}\n"
        f"  dataset:\n    kind: random\n    input_len: {values(1000)}\n    output_len: 8\n",
        False,
    ),  # three axes of 1,000 values: 10^9 cells (MemoryError in compile before)
    ("bench:\n  dataset:\n    kind: random\n    input_len: 16777217\n    output_len: 8\n", False),
    ("topology:\n  nodes: 1025\n  gpus_per_node: 1\nbench:\n" + DATASET, False),
    ("topology:\n  gpus_per_node: 65\nbench:\n" + DATASET, False),
    ("engine:\n  tensor_parallel_size: 65537\nbench:\n" + DATASET, False),
    ("engine:\n  max_model_len: 16777217\nbench:\n" + DATASET, False),
    ("engine:\n  max_num_seqs: 100001\nbench:\n" + DATASET, False),
]


@pytest.mark.parametrize(
    ("extra", "ok"), CASES, ids=[f"{i}-{'ok' if ok else 'refused'}" for i, (_, ok) in enumerate(CASES)]
)
def test_each_domain_is_bounded_at_validation(tmp_path: Path, extra: str, ok: bool):
    path = tmp_path / "r.yaml"
    path.write_text(HEAD + extra)
    if ok:
        loaded = load_recipe(path)
        assert len(cells(loaded.recipe)) <= bounds.MAX_CELLS
        return
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert str(info.value).startswith(f"{path}:")  # located at the key


@pytest.mark.parametrize("command", [["validate"], ["compile"], ["run", "--dry-run"]])
def test_what_compile_cannot_build_validate_refuses_first(tmp_path: Path, capsys, command):
    """Before: validate passed, compile and run --dry-run ended in MemoryError (exit 70)."""
    path = tmp_path / "r.yaml"
    path.write_text(HEAD + "bench:\n  repeat: 1000000000\n" + DATASET)
    code = main([command[0], str(path), *command[1:]])
    out, err = capsys.readouterr()
    assert code == 2
    assert "bench.repeat" in out + err and "internal error" not in out + err


def test_a_recipe_built_in_code_cannot_build_a_huge_grid_either(tmp_path: Path):
    path = tmp_path / "r.yaml"
    path.write_text(HEAD + "bench:\n" + DATASET)
    recipe = load_recipe(path).recipe
    huge = recipe.model_copy(update={"bench": recipe.bench.model_copy(update={"repeat": 10**9})})
    with pytest.raises(RecipeError, match="1,000,000,000 benches"):
        cells(huge)


@pytest.mark.parametrize(
    ("axes", "schedule", "repeat", "total"),
    [
        ([1, 1, 1, 1], None, 1, 1),
        ([3, 2, 1, 1], None, 2, 12),
        ([0, 1], None, 1, 1),
        ([1000] * 3, None, 1, 10**9),
        ([5, 5], 3, 4, 12),
        ([2], None, 0, 2),
    ],
)
def test_grid_size_counts_without_building(axes, schedule, repeat, total):
    assert bounds.grid_size(axes, schedule, repeat) == total


def test_compiling_a_grid_builds_its_cells_a_bounded_number_of_times(tmp_path: Path, monkeypatch):
    """Before: cell_recipe asked is_grid, which built every cell, once per cell (quadratic: a
    10,000-bench grid took minutes to compile)."""
    from autobench.compile import compile_recipe
    from autobench.recipe import grid

    built = 0

    class Counted(grid.Cell):
        def __init__(self, *args: object, **kw: object) -> None:
            nonlocal built
            built += 1
            super().__init__(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(grid, "Cell", Counted)
    path = tmp_path / "r.yaml"
    path.write_text(HEAD + f"bench:\n  concurrency: {values(40)}\n  repeat: 5\n" + DATASET)
    compile_recipe(load_recipe(path), "full", check=False)
    assert 0 < built <= 10 * 200, built  # 200 benches

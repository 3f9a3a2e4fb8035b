"""bench.dataset.depth, shared_prefix, category and multi_turn in a recipe (issue 33): grid axes,
the cells' bench configurations, the compiled bench command and the rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.grid import cell_recipe, cells
from autobench.recipe.rules import check

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
HEAD = f"""\
name: wl
model: {{repo: acme/tiny, revision: {SHA}, served_name: tiny}}
container: {{image: "vllm/vllm-openai:v0.23.1", name: ab-wl, ports: ["8000:8000"]}}
engine: {{max_model_len: 4096, max_num_seqs: 8}}
"""


def _recipe(tmp_path: Path, bench: str) -> Path:
    path = tmp_path / "wl.yaml"
    path.write_text(HEAD + "bench:\n" + bench)
    return path


def test_depth_and_category_are_grid_axes(tmp_path: Path) -> None:
    path = _recipe(
        tmp_path,
        "  dataset: {kind: jsonl, path: d.jsonl, depth: [0, 1024], category: [code, chat, 7]}\n"
        "  max_tokens: 64\n  concurrency: 2\n",
    )
    recipe = load_recipe(path).recipe
    assert [c.label() for c in cells(recipe)] == [
        "concurrency=2 depth=0 category=code",
        "concurrency=2 depth=0 category=chat",
        "concurrency=2 depth=0 category=7",  # a numeric category is its text
        "concurrency=2 depth=1024 category=code",
        "concurrency=2 depth=1024 category=chat",
        "concurrency=2 depth=1024 category=7",
    ]
    one = cell_recipe(recipe, cells(recipe)[4])
    assert (one.bench.dataset.depth, one.bench.dataset.category) == (1024, "chat")
    assert recipe.bench.dataset.category == ["code", "chat", "7"]


def test_a_schedule_names_a_category(tmp_path: Path) -> None:
    path = _recipe(
        tmp_path,
        "  dataset: {kind: jsonl, path: d.jsonl, category: [code, chat]}\n"
        "  schedule:\n    - {category: chat}\n    - {category: code}\n",
    )
    assert [c.label() for c in cells(load_recipe(path).recipe)] == [
        "concurrency=8 category=chat",
        "concurrency=8 category=code",
    ]
    bad = _recipe(
        tmp_path, "  dataset: {kind: jsonl, path: d.jsonl, category: [code, chat]}\n  schedule: [{category: math}]\n"
    )
    found = [f for f in check(load_recipe(bad)) if f.code == "AB080"]
    assert found and "category=math is not in the grid" in found[0].message
    unknown = _recipe(tmp_path, "  dataset: {kind: jsonl, path: d.jsonl, category: [a, b]}\n  schedule: [{topic: a}]\n")
    assert [f.message for f in check(load_recipe(unknown)) if f.code == "AB080"] == [
        "schedule entry 1 unknown axis 'topic'"
    ]


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ("{kind: jsonl, path: d.jsonl, category: []}", "bench.dataset.category: empty grid"),
        ("{kind: jsonl, path: d.jsonl, category: [a, a]}", "bench.dataset.category[1]: 'a' is listed twice"),
        ("{kind: jsonl, path: d.jsonl, category: ''}", "bench.dataset.category: an empty string is not a category"),
        ("{kind: jsonl, path: d.jsonl, category: [a, 1.5]}", "bench.dataset.category[1]: float is not a category"),
        ("{kind: jsonl, path: d.jsonl, depth: -1}", "bench.dataset.depth: -1 is below the minimum 0"),
        ("{kind: jsonl, path: d.jsonl, depth: [0, 0]}", "bench.dataset.depth[1]: 0 is listed twice"),
        ("{kind: jsonl, path: d.jsonl, shared_prefix: {prompts: 0, length: 8}}", "bench.dataset.shared_prefix.prompts"),
        (
            "{kind: jsonl, path: d.jsonl, shared_prefix: {prompts: 2}}",
            "shared_prefix without a length shares each group's depth context: set depth above 0",
        ),
        (
            "{kind: jsonl, path: d.jsonl, depth: [0], shared_prefix: {prompts: 2}}",
            "shared_prefix without a length shares each group's depth context",
        ),
    ],
)
def test_bad_workload_keys_are_one_located_line(tmp_path: Path, dataset: str, message: str) -> None:
    path = _recipe(tmp_path, f"  dataset: {dataset}\n")
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    text = str(info.value)
    assert text.startswith(f"{path}:6:") and message in text and "\n" not in text, text


def test_each_cell_benches_its_depth_and_category(tmp_path: Path) -> None:
    from autobench.run.local import bench_config
    from autobench.run.plan import build_plan

    path = _recipe(
        tmp_path,
        "  dataset: {kind: jsonl, path: d.jsonl, depth: [0, 512], category: [code, chat], "
        "shared_prefix: {prompts: 4, length: 128}, multi_turn: true}\n",
    )
    loaded = load_recipe(path)
    plan = build_plan(loaded, runtime="process", runs_dir=tmp_path / "runs")
    got = [
        (c.depth, c.category, c.multi_turn) for c in (bench_config(loaded, plan, cell) for cell in cells(loaded.recipe))
    ]
    assert got == [(0, "code", True), (0, "chat", True), (512, "code", True), (512, "chat", True)]
    cfg = bench_config(loaded, plan, cells(loaded.recipe)[0])
    assert cfg.shared_prefix is not None and (cfg.shared_prefix.prompts, cfg.shared_prefix.length) == (4, 128)
    plain = load_recipe(_recipe(tmp_path, "  dataset: {kind: jsonl, path: d.jsonl}\n"))
    cfg = bench_config(plain, build_plan(plain, runtime="process", runs_dir=tmp_path / "runs"))
    assert (cfg.depth, cfg.shared_prefix, cfg.category, cfg.multi_turn) == (0, None, None, False)


def test_the_compiled_bench_command_sends_them(tmp_path: Path) -> None:
    from autobench.compile import bench_argv

    path = _recipe(
        tmp_path,
        "  dataset: {kind: jsonl, path: d.jsonl, depth: 512, category: code, "
        "shared_prefix: {prompts: 4, length: 128}, multi_turn: true}\n",
    )
    argv = bench_argv(load_recipe(path).recipe)
    joined = " ".join(argv)
    assert "--depth 512" in joined and "--shared-prefix 4:128" in joined
    assert "--category code" in joined and "--multi-turn" in argv
    plain = " ".join(bench_argv(load_recipe(_recipe(tmp_path, "  dataset: {kind: jsonl, path: d.jsonl}\n")).recipe))
    assert "--depth" not in plain and "--category" not in plain and "--multi-turn" not in plain


def _codes(path: Path) -> list[tuple[str, str, str]]:
    return [(f.code, f.key, f.message) for f in check(load_recipe(path)) if f.code in ("AB036", "AB037")]


def test_ab037_a_depth_the_server_cannot_hold(tmp_path: Path) -> None:
    ok = _recipe(tmp_path, "  dataset: {kind: jsonl, path: d.jsonl, depth: [0, 4032]}\n  max_tokens: 64\n")
    assert _codes(ok) == []  # 4032 + 64 = 4096 fits exactly
    deep = _recipe(tmp_path, "  dataset: {kind: jsonl, path: d.jsonl, depth: [0, 4033]}\n  max_tokens: 64\n")
    assert _codes(deep) == [
        (
            "AB037",
            "bench.dataset.depth",
            "depth 4,033 + 64 output tokens = 4,097 tokens, before any question, over max_model_len 4,096",
        )
    ]
    finding = next(f for f in check(load_recipe(deep)) if f.code == "AB037")
    assert finding.location is not None and (finding.location.line, finding.severity) == (6, "error")
    prefix = _recipe(
        tmp_path,
        "  dataset: {kind: jsonl, path: d.jsonl, shared_prefix: {prompts: 2, length: 4096}}\n  max_tokens: 1\n",
    )
    assert _codes(prefix) == [
        (
            "AB037",
            "bench.dataset.shared_prefix.length",
            "shared prefix 4,096 + 1 output tokens = 4,097 tokens, before any question, over max_model_len 4,096",
        )
    ]


def test_ab036_the_vllm_client_sends_none_of_them(tmp_path: Path) -> None:
    path = _recipe(
        tmp_path,
        "  client: vllm\n  dataset: {kind: sharegpt, path: d.json, depth: 8, category: code, "
        "shared_prefix: {prompts: 2, length: 8}, multi_turn: true}\n",
    )
    assert [(code, key) for code, key, _ in _codes(path)] == [
        ("AB036", "bench.dataset.depth"),  # in the order written
        ("AB036", "bench.dataset.category"),
        ("AB036", "bench.dataset.shared_prefix"),
        ("AB036", "bench.dataset.multi_turn"),
    ]


def test_a_category_with_too_few_prompts_refuses_the_run_before_anything_starts(tmp_path: Path) -> None:
    import json

    import inprocess

    data = tmp_path / "d.jsonl"
    with data.open("w") as f:
        for i in range(10):
            f.write(
                json.dumps({"q": f"question number {i} " + "word " * 5, "task": "code" if i < 7 else "math"}) + "\n"
            )
    path = tmp_path / "cats.yaml"
    path.write_text(
        HEAD + "bench:\n  dataset: {kind: jsonl, path: " + str(data) + ", fields: {prompt: q, category: task}, "
        "category: [code, math]}\n  num_prompts: 5\n"
    )
    runs, ledger = tmp_path / "runs", tmp_path / "ledger.db"
    r = inprocess.autobench(
        "run", path, "--runtime", "process", "--vllm-exec", "false", "--runs-dir", runs, "--ledger", ledger
    )
    assert r.returncode == 5, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"{data}: category 'math' has 3 usable prompts, 5 asked" in lines[0], r.stderr
    assert "code (7), math (3)" in lines[0]
    assert not runs.exists() and not ledger.exists()  # nothing started, nothing recorded


def test_a_shared_depth_context(tmp_path: Path) -> None:
    from autobench.compile import bench_argv
    from autobench.run.local import bench_config
    from autobench.run.plan import build_plan

    path = _recipe(tmp_path, "  dataset: {kind: jsonl, path: d.jsonl, depth: [0, 2048], shared_prefix: {prompts: 2}}\n")
    loaded = load_recipe(path)
    assert "--shared-prefix 2 " in " ".join(bench_argv(cell_recipe(loaded.recipe, cells(loaded.recipe)[1]))) + " "
    plan = build_plan(loaded, runtime="process", runs_dir=tmp_path / "runs")
    cfg = bench_config(loaded, plan, cells(loaded.recipe)[1])
    assert cfg.depth == 2048 and cfg.shared_prefix is not None and cfg.shared_prefix.length is None
    assert _codes(path) == []
    deep = _recipe(
        tmp_path, "  dataset: {kind: jsonl, path: d.jsonl, depth: 4095, shared_prefix: {prompts: 2}}\n  max_tokens: 2\n"
    )
    assert [code for code, _, _ in _codes(deep)] == ["AB037"]

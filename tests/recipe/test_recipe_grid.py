"""Bench grids in the recipe: axes, repeats, an explicit schedule, bench profiles, and the
refusals (each one line with file:line:col, what is wrong and the fix)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import inprocess
import pytest

from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.grid import cell_recipe, cells, is_grid
from autobench.recipe.rules import check

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
HEAD = f"""\
name: grid
model: {{repo: acme/tiny, revision: {SHA}, served_name: tiny}}
container: {{image: "vllm/vllm-openai:v0.23.1", name: ab-grid, ports: ["8000:8000"]}}
engine: {{max_model_len: 4096, max_num_seqs: 8}}
"""


def _recipe(tmp_path: Path, bench: str, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + "bench:\n" + bench)
    return path


def _labels(path: Path, **kw) -> list[str]:
    return [c.label() for c in cells(load_recipe(path, **kw).recipe)]


def test_the_cells_are_the_product_of_the_axes_in_rounds(tmp_path: Path):
    path = _recipe(
        tmp_path,
        "  dataset: {kind: random, input_len: [128, 512], output_len: 64}\n  concurrency: [1, 4]\n  repeat: 2\n",
    )
    assert _labels(path) == [
        "concurrency=1 input_len=128 output_len=64 repeat 1/2",
        "concurrency=1 input_len=512 output_len=64 repeat 1/2",
        "concurrency=4 input_len=128 output_len=64 repeat 1/2",
        "concurrency=4 input_len=512 output_len=64 repeat 1/2",
        "concurrency=1 input_len=128 output_len=64 repeat 2/2",
        "concurrency=1 input_len=512 output_len=64 repeat 2/2",
        "concurrency=4 input_len=128 output_len=64 repeat 2/2",
        "concurrency=4 input_len=512 output_len=64 repeat 2/2",
    ]
    recipe = load_recipe(path).recipe
    one = cell_recipe(recipe, cells(recipe)[3])
    assert (one.bench.concurrency, one.bench.dataset.input_len, one.bench.dataset.output_len) == (4, 512, 64)
    assert one.bench.repeat == 1 and one.bench.schedule is None
    assert recipe.bench.concurrency == [1, 4]  # the recipe itself is untouched


def test_a_schedule_orders_the_cells(tmp_path: Path):
    path = _recipe(
        tmp_path,
        "  concurrency: [1, 4, 16]\n  request_rate: [2.5, 5]\n  schedule:\n"
        "    - {concurrency: 16, request_rate: 5}\n    - {concurrency: 1, request_rate: 2.5}\n",
    )
    assert _labels(path) == ["concurrency=16 request_rate=5", "concurrency=1 request_rate=2.5"]


def test_a_scalar_recipe_is_one_cell_and_keeps_its_digest(tmp_path: Path):
    path = _recipe(tmp_path, "  concurrency: 4\n")
    loaded = load_recipe(path)
    assert not is_grid(loaded.recipe) and len(cells(loaded.recipe)) == 1
    assert cell_recipe(loaded.recipe, cells(loaded.recipe)[0]) is loaded.recipe
    assert "repeat" not in loaded.data["bench"] and "schedule" not in loaded.data["bench"]  # digest unchanged
    path.write_text(HEAD + "bench:\n  concurrency: 4\n  repeat: 1\n")  # the default, written out
    assert load_recipe(path).digest == loaded.digest


@pytest.mark.parametrize(
    ("bench", "line_col", "message", "hint"),
    [
        ("  concurrency: []\n", "6:3", "bench.concurrency: empty grid: the list has no value to bench", "at least one"),
        ("  concurrency: 0\n", "6:16", "bench.concurrency: 0 is below the minimum 1", "to 1 or more"),
        ("  concurrency: [1, 0]\n", "6:20", "bench.concurrency[1]: 0 is below the minimum 1", "to 1 or more"),
        ("  concurrency: [4, 4]\n", "6:20", "bench.concurrency[1]: 4 is listed twice", "list each value once"),
        ("  repeat: 0\n", "6:11", "bench.repeat: 0 is below the minimum 1", "set `bench.repeat` to 1 or more"),
        ("  request_rate: [1, 0]\n", "6:21", "bench.request_rate[1]: 0 is not above the minimum 0", "more than 0"),
        (
            "  dataset: {kind: random, input_len: [], output_len: 8}\n",
            "6:27",
            "bench.dataset.input_len: empty grid",
            "at least one",
        ),
    ],
)
def test_bad_grid_values_are_one_located_line(tmp_path: Path, bench: str, line_col: str, message: str, hint: str):
    path = _recipe(tmp_path, bench)
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    text = str(info.value)
    assert text.startswith(f"{path}:{line_col}: {message}"), text
    assert hint in (info.value.hint or "") and "\n" not in text


def test_a_schedule_entry_outside_the_grid_is_ab080_at_the_entry(tmp_path: Path):
    path = _recipe(
        tmp_path,
        "  concurrency: [1, 4]\n  dataset: {kind: random, input_len: [8, 16], output_len: 8}\n  schedule:\n"
        "    - {concurrency: 8, input_len: 8}\n    - {concurrency: 4}\n    - {depth: 4096, concurrency: 1}\n",
    )
    found = [f for f in check(load_recipe(path)) if f.code == "AB080"]
    assert [(f.location.line, f.location.col, f.key) for f in found] == [  # type: ignore[union-attr]
        (9, 21, "bench.schedule[0].concurrency"),
        (10, 7, "bench.schedule[1]"),
        (11, 15, "bench.schedule[2].depth"),
    ]
    assert found[0].message == "schedule entry 1 concurrency=8 is not in the grid"
    assert found[0].hint == "use one of concurrency: [1, 4], or add it"
    assert found[1].message == "schedule entry 2 names no single cell: input_len not given"
    assert found[2].message == "schedule entry 3 depth is not a grid axis of this recipe"  # an axis since #33


def test_validate_cli_refuses_a_bad_schedule(tmp_path: Path):
    path = _recipe(tmp_path, "  concurrency: [1, 4]\n  schedule: [{concurrency: 2}]\n")
    r = inprocess.autobench("validate", str(path))
    assert r.returncode != 0
    [line] = [x for x in r.stdout.splitlines() if "AB080" in x]
    assert line.startswith(f"{path}:7:28: AB080 error: bench.schedule[0].concurrency: schedule entry 1")


def test_a_grid_on_a_one_cell_runtime_is_ab081(tmp_path: Path):
    from autobench.compile import compile_recipe
    from autobench.compile.slurm import compile_slurm

    path = _recipe(tmp_path, "  concurrency: [1, 4]\n  dataset: {kind: random, input_len: 8, output_len: 8}\n")
    loaded = load_recipe(path)
    assert not [f for f in check(loaded) if f.code == "AB081"]  # docker and process bench every cell
    [f] = [f for f in check(loaded, runtime="k8s") if f.code == "AB081"]
    assert f.message == "2 bench cells, but the k8s runtime benches one cell per job"
    assert not [f for f in check(loaded, runtime="slurm") if f.code == "AB081"]  # every cell in turn
    job = compile_slurm(loaded, partition="gpu")
    assert job.count("autobench bench \\") == 2 and '--result "$RUN_DIR/bench.cell-2.json"' in job
    assert compile_recipe(loaded).count("autobench bench \\") == 2


def test_the_compiled_script_benches_every_cell_on_one_server(tmp_path: Path):
    from autobench.compile import compile_recipe

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "compile"))
    from compile_helpers import shellcheck_path

    path = _recipe(
        tmp_path,
        "  concurrency: [1, 4]\n  repeat: 2\n  schedule: [{concurrency: 4}, {concurrency: 1}]\n"
        "  dataset: {kind: random, input_len: 8, output_len: 8}\n",
    )
    script = compile_recipe(load_recipe(path))
    assert script.count("docker run") == 1 and script.count("wait_ready\n") == 1
    concurrency = [line.split()[1] for line in script.splitlines() if line.startswith("  --concurrency")]
    assert concurrency == ["4", "1", "4", "1"]
    assert '# Bench cell "1/4: concurrency=4 input_len=8 output_len=8 repeat 1/2".' in script
    assert '--result "cell-4.$BENCH_RESULT"' in script
    (tmp_path / "grid.sh").write_text(script)
    lint = subprocess.run([shellcheck_path(), "-s", "bash", str(tmp_path / "grid.sh")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


def test_a_profile_is_merged_onto_bench_with_its_own_positions(tmp_path: Path):
    path = _recipe(tmp_path, "  concurrency: 8\n  num_prompts: 50\n")
    profile = tmp_path / "sweep.yaml"
    profile.write_text("# conc sweep\nconcurrency: [1, 4, 16]\nrepeat: 2\nschedule: [{concurrency: 3}]\n")
    loaded = load_recipe(path, profile=profile)
    assert loaded.recipe.bench.concurrency == [1, 4, 16] and loaded.recipe.bench.num_prompts == 50
    assert str(loaded.position("bench", "concurrency")) == f"{profile}:2:1"
    [f] = [f for f in check(loaded) if f.code == "AB080"]
    assert str(f.location) == f"{profile}:4:26"  # the bad schedule value, in the profile file
    profile.write_text("concurrency: [1, 4]\nconcurency: 2\n")
    with pytest.raises(RecipeError) as info:
        load_recipe(path, profile=profile)
    assert str(info.value).startswith(f"{profile}:2:1: bench.concurency: unknown key 'concurency'")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "framework: llama-benchy\nargs: {concurrency: [1, 2]}\n",
            "a sparkrun benchmark profile (framework: llama-benchy)",
        ),
        ("args: {concurrency: [1, 2]}\n", "another tool's benchmark profile (args:)"),
    ],
)
def test_a_profile_for_another_tool_is_one_line(tmp_path: Path, text: str, message: str):
    path = _recipe(tmp_path, "  concurrency: 8\n")
    profile = tmp_path / "other.yaml"
    profile.write_text(text)
    with pytest.raises(RecipeError) as info:
        load_recipe(path, profile=profile)
    assert str(info.value).startswith(f"{profile}:1:1: {message}, not an autobench bench profile (hint: ")


def test_a_recipe_given_as_a_profile_is_refused(tmp_path: Path):
    path = _recipe(tmp_path, "  concurrency: 8\n")
    with pytest.raises(RecipeError) as info:
        load_recipe(path, profile=path)
    assert str(info.value).startswith(f"{path}:1:1: this is a recipe (it has name:), not a bench profile")


def test_compile_applies_a_profile(tmp_path: Path):
    path = _recipe(tmp_path, "  concurrency: 8\n  dataset: {kind: random, input_len: 8, output_len: 8}\n")
    profile = tmp_path / "p.yaml"
    profile.write_text("concurrency: [2, 32]\n")
    r = inprocess.autobench("compile", str(path), "--profile", str(profile))
    assert r.returncode == 0, r.stderr
    assert [x.split()[1] for x in r.stdout.splitlines() if x.startswith("  --concurrency")] == ["2", "32"]
    profile.write_text("framework: llama-benchy\n")
    r = inprocess.autobench("compile", str(path), "--profile", str(profile))
    assert r.returncode == 2 and r.stderr.startswith(f"error: {profile}:1:1: a sparkrun benchmark profile")


def test_validate_checks_a_recipe_with_a_profile(tmp_path: Path, capsys):
    from autobench.cli import main

    path = _recipe(tmp_path, "  concurrency: 8\n  dataset: {kind: random, input_len: 8, output_len: 8}\n")
    profile = tmp_path / "sweep.yaml"
    profile.write_text("concurrency: [1, 4]\nschedule: [{concurrency: 2}]\n")
    assert main(["validate", str(path), "--no-preflight"]) == 0
    capsys.readouterr()
    # the profile's bad schedule is found, at its line in the profile
    assert main(["validate", str(path), "--no-preflight", "--profile", str(profile)]) == 2
    [line] = [x for x in capsys.readouterr().out.splitlines() if "AB080" in x]
    assert line.startswith(f"{profile}:2:26: AB080 error: bench.schedule[0].concurrency: schedule entry 1")
    # another tool's profile is one finding at the profile, not a traceback
    profile.write_text("framework: llama-benchy\n")
    assert main(["validate", str(path), "--no-preflight", "--profile", str(profile), "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    [finding] = out["files"][0]["findings"]
    assert finding["code"] == "AB000" and "a sparkrun benchmark profile" in finding["message"]
    assert finding["file"] == str(profile) and finding["line"] == 1

"""``autobench init``: a new recipe that validates and compiles on the first try, never overwrites."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.cli import main
from autobench.recipe import load_recipe
from autobench.recipe.rules import check


def _init(tmp_path: Path, *args: str) -> int:
    return main(["init", *args])


def test_init_writes_a_recipe_that_validates_and_compiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    target = tmp_path / "qwen3-8b-eagle3.yaml"
    rc = main(
        [
            "init",
            str(target),
            "--model",
            "Qwen/Qwen3-8B",
            "--image",
            "vllm/vllm-openai:v0.11.0",
            "--speculative",
            "eagle3",
            "--draft",
            "RedHatAI/Qwen3-8B-speculator.eagle3",
            "--concurrency",
            "4",
            "--num-prompts",
            "50",
            "--no-input",
        ]
    )
    assert rc == 0
    text = target.read_text()
    assert text.count("\n# ") >= 3  # commented
    loaded = load_recipe(target)
    assert loaded.recipe.name == "qwen3-8b-eagle3"
    assert loaded.recipe.speculative is not None and loaded.recipe.speculative.method == "eagle3"
    assert loaded.recipe.bench.concurrency == 4 and loaded.recipe.engine.max_num_seqs == 4
    assert [f for f in check(loaded) if f.severity == "error"] == []
    capsys.readouterr()
    assert main(["validate", str(target)]) == 0
    assert main(["compile", str(target)]) == 0
    script = capsys.readouterr().out
    assert "--speculative-config" in script and "Qwen/Qwen3-8B" in script


def test_init_without_speculative_defaults_validates(tmp_path: Path):
    target = tmp_path / "plain.yaml"
    assert main(["init", str(target), "--model", "acme/tiny", "--no-input"]) == 0
    loaded = load_recipe(target)
    assert loaded.recipe.speculative is None
    assert [f for f in check(loaded) if f.severity == "error"] == []


def test_init_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    target = tmp_path / "mine.yaml"
    target.write_text("name: mine  # hand-written\n")
    rc = main(["init", str(target), "--model", "acme/tiny", "--no-input"])
    err = capsys.readouterr().err
    assert rc == 2
    assert target.read_text() == "name: mine  # hand-written\n"
    assert err.count("\n") == 1 and "already exists" in err and "never overwrites" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "qwen"], "--model 'qwen' is not a Hub repo id"),
        (["--model", "acme/tiny", "--image", "Not An Image"], "--image 'Not An Image' is not an image reference"),
        (["--model", "acme/tiny", "--speculative", "dflash"], "--speculative dflash needs a draft model"),
        (["--model", "acme/tiny", "--draft", "z/d"], "--draft without --speculative"),
        (["--model", "acme/tiny", "--name", "Bad Name"], "--name 'Bad Name' is not a recipe name"),
        (["--model", "acme/tiny", "--output-len", "9000"], "does not fit in --max-model-len 8192"),
        ([], "--model is required"),
    ],
)
def test_init_refuses_bad_values_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
):
    target = tmp_path / "r.yaml"
    rc = main(["init", str(target), "--no-input", *args])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "hint:" in err
    assert needle in err
    assert not target.exists()


def test_init_asks_for_what_is_missing_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The questions: model, image, method, draft, draft revision, concurrency, requests."""
    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    answers = "z-lab/base-model\nvllm/vllm-openai:v0.11.0\ndflash\nz-lab/base-model-DFlash\nmain\n2\n10\n"
    monkeypatch.setattr(sys, "stdin", Tty(answers))
    target = tmp_path / "asked.yaml"
    assert main(["init", str(target)]) == 0
    r = load_recipe(target).recipe
    assert r.model.repo == "z-lab/base-model" and r.container.image == "vllm/vllm-openai:v0.11.0"
    assert r.speculative is not None and r.speculative.model == "z-lab/base-model-DFlash"
    assert (r.bench.concurrency, r.bench.num_prompts) == (2, 10)

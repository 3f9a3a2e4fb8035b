"""Bad input: one line saying what cannot be predicted and why (exit 9), never a guessed verdict."""

from __future__ import annotations

import preflight_configs as c
import pytest
from preflight_helpers import seed_recipe

from autobench.cli import main


def _one_line(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return code, out, lines[0]


def test_missing_config_field_is_named(hub, write_recipe, capsys) -> None:
    text = seed_recipe().replace(c.BASE_REPO, c.NOFIELD_REPO).replace(c.BASE_SHA, c.FILLER_SHA)
    code, out, line = _one_line(capsys, ["preflight", str(write_recipe(text))])
    assert code == 9 and out == ""
    assert "cannot predict" in line and "has no linear_num_value_heads" in line and "hint:" in line


def test_vocab_mismatch_is_named_as_a_crash_class(hub, write_recipe, capsys) -> None:
    text = seed_recipe().replace(c.DRAFT_REPO, c.OTHER_VOCAB_DRAFT).replace(c.DRAFT_OLD, c.FILLER_SHA)
    code, out, line = _one_line(capsys, ["preflight", str(write_recipe(text))])
    assert code == 9 and out == ""
    assert "vocab_size 151936" in line and "248320" in line and "known crash class" in line


def test_uncovered_architecture(hub, write_recipe, capsys) -> None:
    text = seed_recipe().replace(c.BASE_REPO, c.UNCOVERED_REPO).replace(c.BASE_SHA, c.FILLER_SHA)
    code, _, line = _one_line(capsys, ["preflight", str(write_recipe(text))])
    assert code == 9 and "architecture RwkvForCausalLM" in line and "not covered" in line


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("0.5.0", "no KV-cache rules are encoded for vLLM 0.5.0"),
        ("latest", "'latest' is not a vLLM version"),
        ("0.15.0", "hybrid (mamba + attention) layout rules of vLLM 0.8-0.21"),
    ],
)
def test_versions_without_rules(hub, write_recipe, capsys, flag: str, expected: str) -> None:
    code, out, line = _one_line(capsys, ["preflight", str(write_recipe(seed_recipe())), "--vllm-version", flag])
    assert code == 9 and out == "" and expected in line


def test_image_tag_without_a_version(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(image="registry.example/vllm-custom:gb10"))
    code, _, line = _one_line(capsys, ["preflight", str(recipe)])
    assert code == 9 and "vLLM version of image registry.example/vllm-custom:gb10 is unknown" in line
    assert "--vllm-version" in line


def test_newer_version_uses_the_nearest_rules_and_says_so(hub, write_recipe, capsys) -> None:
    assert main(["preflight", str(write_recipe(seed_recipe())), "--vllm-version", "0.40.2"]) == 0
    out = capsys.readouterr().out
    assert "note: vLLM 0.40.2 is newer than the newest encoded rules (0.33+); using those, nearest" in out


def test_a_recipe_without_max_model_len(hub, write_recipe, capsys) -> None:
    text = seed_recipe().replace("  max_model_len: 262144\n", "")
    code, _, line = _one_line(capsys, ["preflight", str(write_recipe(text))])
    assert code == 9 and "engine.max_model_len is not set" in line


def test_a_recipe_with_max_model_len_auto(hub, write_recipe, capsys) -> None:
    """``auto`` (the schema allows it: vLLM fits the longest length the memory holds) cannot be
    predicted from configs alone: one line, exit 9 (it was a TypeError: exit 70)."""
    text = seed_recipe().replace("  max_model_len: 262144\n", "  max_model_len: auto\n")
    code, _, line = _one_line(capsys, ["preflight", str(write_recipe(text))])
    assert code == 9 and "engine.max_model_len is auto" in line


def test_unknown_gpu_name(hub, write_recipe, capsys) -> None:
    code, _, line = _one_line(capsys, ["preflight", str(write_recipe(seed_recipe())), "--gpu", "TPUv9"])
    assert code == 9 and "GPU 'TPUv9' is not in preflight's table" in line and "--gpu-memory-gib" in line


def test_local_config_folders_need_no_hub(tmp_path, write_recipe, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    (tmp_path / "t").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "t" / "config.json").write_bytes(c.dump(c.qwen35_122b()))
    (tmp_path / "d" / "config.json").write_bytes(c.dump(c.dflash_draft(8, 6, 4096)))
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8))
    code = main(
        ["preflight", str(recipe), "--target-config", str(tmp_path / "t"), "--draft-config", str(tmp_path / "d")]
    )
    assert code == 6 and "verdict: FAILS (assertion)" in capsys.readouterr().out

"""A draft whose config.json states no torch_dtype is predicted in the target's dtype, as vLLM
builds it (vllm/config/speculative.py: the draft's ModelConfig takes dtype=target's): issue #31
found it refused ("the page-size rule needs it")."""

from __future__ import annotations

import preflight_configs as c
import pytest
from preflight_helpers import seed_recipe

from autobench.cli import main
from autobench.errors import PreflightError
from autobench.preflight.geometry import geometry


def _folders(tmp_path, draft: dict) -> tuple[str, str]:
    (tmp_path / "t").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "t" / "config.json").write_bytes(c.dump(c.qwen35_122b()))
    (tmp_path / "d" / "config.json").write_bytes(c.dump(draft))
    return str(tmp_path / "t"), str(tmp_path / "d")


def test_a_draft_without_torch_dtype_takes_the_target_s(tmp_path, write_recipe, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    draft = c.dflash_draft(8, 6, 4096)
    del draft["torch_dtype"]
    target, folder = _folders(tmp_path, draft)
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8))
    code = main(["preflight", str(recipe), "--target-config", target, "--draft-config", folder])
    out, err = capsys.readouterr()
    # the same verdict as with the dtype stated (test_preflight_bad_input's folders), and it says why
    assert code == 6 and "verdict: FAILS (assertion)" in out, err
    assert "the draft's config.json states no torch_dtype: vLLM builds the draft with the target's dtype" in out


def test_geometry_inherits_only_when_the_config_is_silent() -> None:
    draft = c.dflash_draft(4, 4, 2048)
    assert geometry(draft, "d", inherit_dtype="float16").dtype == "bfloat16"  # stated: kept
    del draft["torch_dtype"]
    assert geometry(draft, "d", inherit_dtype="float16").dtype == "float16"
    with pytest.raises(PreflightError, match="has no torch_dtype / dtype"):
        geometry(draft, "d")  # a target (nothing to inherit from) still needs it


def test_local_model_directories_are_read_as_such(tmp_path, write_recipe, capsys, monkeypatch) -> None:
    """A recipe whose model and draft are local directories: preflight reads their config.json
    (no Hub), and a missing one is named as a local directory, not as a Hub repo to download."""
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    target, folder = _folders(tmp_path, c.dflash_draft(8, 6, 4096))
    text = seed_recipe(c.DRAFT_NEW, 8).replace(
        f"  repo: {c.BASE_REPO}\n  revision: {c.BASE_SHA}\n", f"  repo: {target}\n"
    )
    text = text.replace(f"  model: {c.DRAFT_REPO}\n  revision: {c.DRAFT_NEW}\n", f"  model: {folder}\n")
    code = main(["preflight", str(write_recipe(text))])
    out, err = capsys.readouterr()
    assert code == 6 and "verdict: FAILS (assertion)" in out, err  # as with --target-config/--draft-config
    missing = text.replace(f"  repo: {target}\n", f"  repo: {tmp_path / 'gone'}\n")
    code = main(["preflight", str(write_recipe(missing))])
    out, err = capsys.readouterr()
    assert code == 9 and out == ""
    assert f"model.repo is the local model directory {tmp_path / 'gone'}, which does not exist on this machine" in err
    assert "huggingface-cli" not in err

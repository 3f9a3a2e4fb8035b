"""The seed's two DFlash drafts, read from the loopback fake Hub by the real huggingface_hub client:
the numbers the seed's boots printed, and the assertion that blocked it."""

from __future__ import annotations

import json

import preflight_configs as c
from preflight_helpers import seed_recipe

from autobench.cli import main


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_old_draft_boots_with_the_seeds_numbers(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_OLD, 5))
    code, out, err = _run(capsys, "preflight", str(recipe), "--kv-blocks", "1694", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["vllm_version"] == "0.23.1" and "nightly-aarch64" in d["vllm_version_source"]
    assert d["attention_block_size"] == 2144 and d["block_size_raised"]
    assert d["mamba_padding_pct"] is None  # 2144 x 2,048 B == the 4,390,912-byte mamba page exactly
    assert d["status"] == "ok" and d["boots"]
    assert d["blocks_per_request"] == 555
    assert d["max_concurrency"] == 3.05 and d["kv_tokens"] == 800_129
    assert d["layers"] == {
        "target mamba": 36,
        "target full": 12,
        "draft full": 4,
    }
    assert d["groups"] == 13 and d["group_size"] == 4


def test_old_draft_text_names_the_functions_it_mirrors(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_OLD, 5))
    code, out, _ = _run(capsys, "preflight", str(recipe), "--kv-blocks", "1694")
    assert code == 0
    assert "attention block size: 2,144 tokens" in out and "_align_hybrid_block_size" in out
    assert "mamba page: no padding" in out
    assert "unify_kv_cache_spec_page_size" in out
    assert "blocks per request at max_model_len 262,144: 555" in out
    assert "max concurrency 3.05x, GPU KV cache size 800,129 tokens" in out
    assert out.rstrip().endswith("verdict: boots (ok)")


def test_new_draft_asserts_on_the_seeds_vllm(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8))
    code, out, _ = _run(capsys, "preflight", str(recipe), "--json")
    assert code == 6
    d = json.loads(out)
    assert d["attention_block_size"] == 2192
    assert d["mamba_padding_pct"] == 0.55  # "Padding mamba page size by 0.55%"
    assert d["status"] == "assertion" and not d["boots"]
    assert "assert new_spec.page_size_bytes == max_page_size" in d["verdict"]
    assert "2x the 4,489,216-byte mamba page" in d["verdict"]  # the draft's page is twice the target's
    assert "previous revision" in d["fix"]


def test_new_draft_on_vllm_0_22_asserts_too(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8))
    code, out, _ = _run(capsys, "preflight", str(recipe), "--vllm-version", "0.22.0", "--json")
    assert code == 6 and json.loads(out)["status"] == "assertion"


def test_new_draft_boots_with_033_rules_and_states_the_waste(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8))
    code, out, _ = _run(capsys, "preflight", str(recipe), "--vllm-version", "0.33.0", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["status"] == "padded" and d["boots"]
    assert d["attention_block_size"] == 2192 and d["mamba_padding_pct"] == 0.55
    # 36 mamba pages of 4,464,640 bytes padded to the draft's 8,978,432-byte page.
    assert d["unify_waste_pct"] == 50.27
    assert "50.27% of their memory is padding" in d["verdict"]


def test_image_tag_gives_the_version(hub, write_recipe, capsys) -> None:
    recipe = write_recipe(seed_recipe(c.DRAFT_NEW, 8, image="vllm/vllm-openai:v0.33.1"))
    code, out, _ = _run(capsys, "preflight", str(recipe), "--json")
    d = json.loads(out)
    assert code == 0 and d["vllm_version"] == "0.33.1" and d["vllm_version_source"].startswith("image tag")


def test_kv_budget_on_gb10_brackets_the_seeds_boot(hub, write_recipe, capsys) -> None:
    """GB10, 0.85, weights from the Hub's file sizes (15 shards + the draft): the seed logged 27.72 GiB
    available, 1,694 blocks (800,129 tokens, 3.05x); the estimate's range must contain them."""
    recipe = write_recipe(seed_recipe(c.DRAFT_OLD, 5))
    code, out, err = _run(capsys, "preflight", str(recipe), "--gpu", "GB10", "--json")
    assert code == 0, err
    b = json.loads(out)["budget"]
    assert b["gpu_memory_gib"] == 119.7 and b["utilization"] == 0.85
    assert b["available_gib"][0] <= 27.72 <= b["available_gib"][1]
    assert b["num_blocks"][0] <= 1694 <= b["num_blocks"][1]
    assert b["kv_tokens"][0] <= 800_129 <= b["kv_tokens"][1]
    assert b["max_model_len_fits"] == "yes"


def test_recipe_states_the_vllm_version_and_the_gpu(hub, write_recipe, capsys) -> None:
    text = seed_recipe(c.DRAFT_NEW, 8).replace(
        '  ports: ["8000:8000"]\n', '  ports: ["8000:8000"]\n  vllm_version: "0.33.0"\ntopology:\n  gpu: GB10\n'
    )
    code, out, err = _run(capsys, "preflight", str(write_recipe(text)), "--json")
    d = json.loads(out)
    assert code == 0, err
    assert d["vllm_version"] == "0.33.0" and d["vllm_version_source"] == "container.vllm_version"
    assert d["status"] == "padded" and d["budget"]["gpu_memory_gib"] == 119.7

"""Pure parts: architecture fingerprints and config diffs (no I/O)."""

from __future__ import annotations

import json

from fakehub import base_config, draft_config

from autobench.hub.diff import diff_configs, show
from autobench.hub.fingerprint import describe, fingerprint


def test_fingerprint_of_the_seed_draft_configs():
    old = fingerprint(json.loads(draft_config(4, 4, 2048)))
    new = fingerprint(json.loads(draft_config(8, 6, 4096)))
    assert (old["num_key_value_heads"], old["num_hidden_layers"], old["sliding_window"]) == (4, 4, 2048)
    assert (new["num_key_value_heads"], new["num_hidden_layers"], new["sliding_window"]) == (8, 6, 4096)
    assert old["architectures"] == ["DFlashDraftModel"] and old["head_dim"] == 128
    assert old["quantization"] is None and old["layer_types"] is None


def test_fingerprint_reads_nested_text_config_and_counts_hybrid_layer_types():
    fp = fingerprint(json.loads(base_config("5.0.0")))
    assert fp["text_config"] == "text_config"
    assert fp["architectures"] == ["Qwen3_5MoeForConditionalGeneration"]
    assert fp["model_type"] == "qwen3_5_moe"  # top level wins over text_config's
    assert (fp["num_hidden_layers"], fp["num_key_value_heads"], fp["head_dim"]) == (48, 2, 256)
    assert fp["layer_types"] == {"full_attention": 12, "linear_attention": 36}
    assert fp["quantization"] == {"method": "auto-round", "bits": 4}
    assert "L48 kv2 hd256" in describe(fp) and "auto-round-4bit" in describe(fp)


def test_fingerprint_derives_head_dim_and_reads_other_quant_formats():
    fp = fingerprint(
        {
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "config_groups": {"g0": {"weights": {"num_bits": 8}}},
            },
        }
    )
    assert fp["head_dim"] == 128 and fp["head_dim_source"] == "hidden_size/num_attention_heads"
    assert fp["quantization"] == {"method": "compressed-tensors", "bits": 8}
    assert fingerprint({"quantization_config": {"quant_method": "awq", "w_bit": 4}})["quantization"]["bits"] == 4
    assert fingerprint({"quantization_config": {"quant_method": "fp8"}})["quantization"]["bits"] == 8
    assert fingerprint({})["head_dim"] is None


def test_diff_of_the_seed_draft_bump_flags_exactly_three_breaking_changes():
    changes = diff_configs(json.loads(draft_config(4, 4, 2048)), json.loads(draft_config(8, 6, 4096)))
    assert [(c.field, c.old, c.new, c.breaking) for c in changes] == [
        ("num_hidden_layers", 4, 6, True),
        ("num_key_value_heads", 4, 8, True),
        ("sliding_window", 2048, 4096, True),
    ]


def test_diff_non_breaking_nested_added_removed_and_derived_head_dim():
    old = {
        "a": 1,
        "text_config": {"num_key_value_heads": 2, "rope_theta": 1e6},
        "torch_dtype": "bfloat16",
        "hidden_size": 4096,
        "num_attention_heads": 32,
    }
    new = {
        "text_config": {"num_key_value_heads": 4, "rope_theta": 1e7},
        "torch_dtype": "bfloat16",
        "hidden_size": 4096,
        "num_attention_heads": 16,
        "new_key": True,
    }
    changes = {c.field: c for c in diff_configs(old, new)}
    assert changes["text_config.num_key_value_heads"].breaking
    assert not changes["text_config.rope_theta"].breaking
    assert changes["num_attention_heads"].breaking
    assert changes["head_dim (derived)"].old == 128 and changes["head_dim (derived)"].new == 256
    assert changes["a"].to_json() == {"field": "a", "old": 1, "new": None, "breaking": False, "absent": "new"}
    assert show(changes["new_key"].old) == "<absent>"
    assert "torch_dtype" not in changes
    # breaking changes are listed first
    assert [c.breaking for c in diff_configs(old, new)] == sorted(
        [c.breaking for c in diff_configs(old, new)], reverse=True
    )


def test_diff_summarizes_long_layer_type_lists():
    old = json.loads(base_config("4.57.0"))
    new = json.loads(base_config("4.57.0"))
    new["text_config"]["layer_types"] = ["full_attention"] * 48
    (change,) = diff_configs(old, new)
    assert change.field == "text_config.layer_types" and change.breaking
    assert show(change.new) == "[48 items: full_attention×48]"


def test_a_hidden_size_change_alone_moves_the_derived_head_dim_and_is_breaking():
    # No head_dim key and the same head count: only hidden_size moves, a field that is not
    # breaking by name, but the KV cache page size moves with the derived head dim.
    old = {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8}
    new = {"hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8}
    changes = diff_configs(old, new)
    assert [(c.field, c.old, c.new, c.breaking) for c in changes] == [
        ("head_dim (derived)", 128, 160, True),
        ("hidden_size", 4096, 5120, False),
    ]


def test_an_explicit_head_dim_change_is_reported_once_not_again_as_derived():
    old = {"text_config": {"head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32}}
    new = {"text_config": {"head_dim": 256, "hidden_size": 4096, "num_attention_heads": 32}}
    assert [(c.field, c.breaking) for c in diff_configs(old, new)] == [("text_config.head_dim", True)]


def test_an_empty_nested_dict_is_a_field_of_its_own():
    # rope_scaling: {} -> absent is a change (an engine reads "present but empty" differently
    # from "absent"); an empty dict on both sides is not.
    (change,) = diff_configs({"rope_scaling": {}, "a": 1}, {"a": 1})
    assert (change.field, change.old, change.breaking) == ("rope_scaling", {}, False)
    assert change.to_json() == {"field": "rope_scaling", "old": {}, "new": None, "breaking": False, "absent": "new"}
    assert diff_configs({"rope_scaling": {}}, {"rope_scaling": {}}) == []
    assert diff_configs({}, {}) == []
    assert [c.to_json() for c in diff_configs({}, {"a": 1})] == [  # an empty config is no field of its own
        {"field": "a", "old": None, "new": 1, "breaking": False, "absent": "old"}
    ]
    added = diff_configs({"rope_scaling": {}}, {"rope_scaling": {"type": "yarn", "factor": 4.0}})
    assert [(c.field, show(c.old), show(c.new)) for c in added] == [
        ("rope_scaling", "{}", "<absent>"),
        ("rope_scaling.factor", "<absent>", "4.0"),
        ("rope_scaling.type", "<absent>", "'yarn'"),
    ]


def test_show_prints_up_to_six_items_whole_and_counts_longer_lists():
    six = ["full_attention"] * 5 + ["sliding_attention"]
    assert show(six) == str(six)
    assert show(["full_attention"] * 4 + ["linear_attention"] * 3) == "[7 items: full_attention×4, linear_attention×3]"
    assert show("bfloat16") == "'bfloat16'" and show(4096) == "4096" and show(None) == "None" and show({}) == "{}"

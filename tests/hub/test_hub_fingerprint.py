"""The fingerprint's reading rules, one at a time: where each fact is found (top level or the
language model's nested config), how head_dim is derived, how quantization bits are read, and
the one-line description `hub info` and lock files show."""

from __future__ import annotations

import pytest

from autobench.hub.fingerprint import describe, fingerprint, quantization, summarize_layer_types, text_config


@pytest.mark.parametrize("key", ["text_config", "language_config", "llm_config"])
def test_the_language_model_config_is_found_under_each_nested_key(key):
    config = {"architectures": ["VLM"], key: {"num_hidden_layers": 30, "model_type": "inner"}}
    assert text_config(config) == (key, {"num_hidden_layers": 30, "model_type": "inner"})
    fp = fingerprint(config)
    assert fp["text_config"] == key and fp["num_hidden_layers"] == 30
    assert fp["architectures"] == ["VLM"] and fp["model_type"] == "inner"


def test_the_first_nested_dict_wins_and_a_non_dict_is_skipped():
    config = {"text_config": "not a dict", "language_config": {"a": 1}, "llm_config": {"b": 2}}
    assert text_config(config) == ("language_config", {"a": 1})
    assert text_config({"text_config": {"x": 1}, "llm_config": {"y": 2}}) == ("text_config", {"x": 1})
    assert text_config({}) == (None, {})


def test_a_top_level_value_wins_over_the_nested_one_unless_it_is_null():
    config = {
        "num_hidden_layers": 10,
        "num_key_value_heads": None,
        "text_config": {"num_hidden_layers": 99, "num_key_value_heads": 4, "sliding_window": 512},
    }
    fp = fingerprint(config)
    assert (fp["num_hidden_layers"], fp["num_key_value_heads"], fp["sliding_window"]) == (10, 4, 512)
    assert fingerprint({"architectures": [], "text_config": {"architectures": ["Inner"]}})["architectures"] == ["Inner"]


def test_every_geometry_fact_is_read():
    config = {
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 3,
        "head_dim": 4,
        "hidden_size": 5,
        "sliding_window": 6,
        "layer_types": ["a"],
    }
    fp = fingerprint(config)
    assert [fp[k] for k in config] == [1, 2, 3, 4, 5, 6, {"a": 1}]
    assert fp["head_dim_source"] == "config"


@pytest.mark.parametrize(
    ("config", "head_dim", "source"),
    [
        ({"hidden_size": 4096, "num_attention_heads": 32}, 128, "hidden_size/num_attention_heads"),
        ({"hidden_size": 4100, "num_attention_heads": 32}, 128, "hidden_size/num_attention_heads"),  # floor
        ({"hidden_size": 4096, "num_attention_heads": 32, "head_dim": 256}, 256, "config"),
        ({"hidden_size": 4096, "num_attention_heads": 0}, None, None),
        ({"hidden_size": 4096, "num_attention_heads": 1}, 4096, "hidden_size/num_attention_heads"),
        ({"hidden_size": 4096.0, "num_attention_heads": 32}, None, None),
        ({"hidden_size": 4096, "num_attention_heads": "32"}, None, None),
        ({"hidden_size": 4096}, None, None),
        ({"text_config": {"hidden_size": 2048, "num_attention_heads": 16}}, 128, "hidden_size/num_attention_heads"),
    ],
)
def test_head_dim_is_derived_only_from_integer_sizes(config, head_dim, source):
    fp = fingerprint(config)
    assert (fp["head_dim"], fp["head_dim_source"]) == (head_dim, source)


def test_layer_types_are_counted_by_name():
    assert summarize_layer_types(["sliding", "full", "sliding", 3]) == {"3": 1, "full": 1, "sliding": 2}
    assert list(summarize_layer_types(["z", "a", "z"]) or {}) == ["a", "z"]  # sorted by name
    assert summarize_layer_types([]) is None
    assert summarize_layer_types("full") is None
    assert summarize_layer_types(None) is None


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ({"quant_method": "gptq", "bits": 4}, {"method": "gptq", "bits": 4}),
        ({"quant_method": "x", "weight_bits": 3}, {"method": "x", "bits": 3}),
        ({"quant_method": "awq", "w_bit": 4}, {"method": "awq", "bits": 4}),
        ({"quant_method": "y", "num_bits": 2}, {"method": "y", "bits": 2}),
        ({"quant_method": "gptq", "bits": "4"}, {"method": "gptq", "bits": None}),  # not an int: unknown
        ({"quant_method": "gptq", "bits": "4", "w_bit": 8}, {"method": "gptq", "bits": 8}),
        ({"quant_method": "FP8"}, {"method": "FP8", "bits": 8}),
        ({"quant_method": "mxfp4"}, {"method": "mxfp4", "bits": None}),
        ({"quantization_method": "bnb"}, {"method": "bnb", "bits": None}),
        ({"method": "hqq", "bits": 2}, {"method": "hqq", "bits": 2}),
        ({"bits": 4}, {"method": None, "bits": 4}),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": "x", "h": {"weights": None}, "i": {"weights": {"num_bits": 4}}},
            },
            {"method": "compressed-tensors", "bits": 4},
        ),
        (
            {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": "8"}}}},
            {"method": "compressed-tensors", "bits": None},
        ),
        ({"quant_method": "ct", "config_groups": ["not", "a", "dict"]}, {"method": "ct", "bits": None}),
    ],
)
def test_quantization_method_and_bits(q, expected):
    assert quantization({"quantization_config": q}) == expected
    assert fingerprint({"text_config": {"quantization_config": q}})["quantization"] == expected


def test_no_quantization_config_is_none():
    assert quantization({}) is None
    assert quantization({"quantization_config": "int4"}) is None
    assert quantization({"quantization_config": {}, "text_config": {"quantization_config": {"bits": 4}}}) == {
        "method": None,
        "bits": 4,
    }


def test_describe_is_one_line_of_the_facts_that_are_known():
    fp = fingerprint(
        {
            "architectures": ["A", "B"],
            "model_type": "m",
            "num_hidden_layers": 4,
            "num_key_value_heads": 2,
            "head_dim": 64,
            "hidden_size": 512,
            "sliding_window": 128,
            "layer_types": ["full", "swa", "swa"],
            "quantization_config": {"quant_method": "awq", "bits": 4},
        }
    )
    assert describe(fp) == "A,B m L4 kv2 hd64 h512 sw128 layers[full×1 swa×2] awq-4bit"
    assert describe(fingerprint({})) == "? ?"
    assert describe(fingerprint({"quantization_config": {"quant_method": "mxfp4"}})) == "? ? mxfp4"
    assert describe({"architectures": None, "model_type": None, "head_dim": 0}) == "? ? hd0"

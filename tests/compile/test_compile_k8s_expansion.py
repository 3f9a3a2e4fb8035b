"""The kubelet expands ``$(NAME)`` in ``command``, ``args`` and env ``value``s, Secrets included:
no recipe string may reach it unescaped (autobench.escape.kubernetes).  Every generated manifest
is parsed and run through a model of the kubelet's expansion (tests/fuzz/fuzzkit.kubelet_expand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from autobench.compile.k8s import compile_k8s
from autobench.recipe.loader import load_recipe
from tests.fuzz.fuzzkit import kubelet_expand

#: The expansions the manifests ask for on purpose.
INTENDED = {"HOME", "LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"}

ONE = """\
name: leak
model:
  repo: org/m
  revision: 0123456789abcdef0123456789abcdef01234567
  served_name: "$(HF_TOKEN)"
container:
  image: vllm/vllm-openai@sha256:8f2f0f6c4a0d1e2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3
secrets: [HF_TOKEN]
env:
  LEAK: "$(HF_TOKEN)"
  TWICE: "$$(HF_TOKEN)"
engine:
  port: 8000
bench:
  dataset: {kind: random, input_len: 16, output_len: 16}
  num_prompts: 4
"""


def container_strings(docs: list[dict[str, Any]]) -> list[str]:
    """Every string the kubelet expands: command, args and env values of every container."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "image" in node and ("args" in node or "command" in node):
                out.extend(node.get("command", []))
                out.extend(node.get("args", []))
                out.extend(e["value"] for e in node.get("env", []) if "value" in e)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in docs:
        walk(doc)
    return out


def manifests(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return [d for d in YAML(typ="safe").load_all(compile_k8s(load_recipe(path), run_id="t", check=False)) if d]


@pytest.mark.parametrize(
    "text",
    [
        ONE,
        ONE.replace("engine:\n", "topology:\n  nodes: 2\n  gpus_per_node: 1\nengine:\n"),
        ONE.replace("engine:\n", "topology:\n  nodes: 2\n  gpus_per_node: 1\n  executor: ray\nengine:\n"),
        ONE.replace("engine:\n", "launch:\n  command: [python3, -c, 'print(\"$(HF_TOKEN)\")']\nengine:\n"),
    ],
    ids=["deployment", "lws-native", "lws-ray", "launch-command"],
)
def test_no_recipe_string_is_expanded_by_the_kubelet(tmp_path, text):
    strings = container_strings(manifests(tmp_path, text))
    expanded = [kubelet_expand(s) for s in strings]
    names = {name for _, ns in expanded for name in ns}
    assert names <= INTENDED, names
    values = [v for v, _ in expanded]
    # ... and the recipe's text arrives as written: served name, env values, the bench's model
    assert any("$(HF_TOKEN)" in v for v in values)
    assert "$$(HF_TOKEN)" in values  # TWICE, given as $$(...), stays $$(...)


def test_the_bench_job_script_keeps_a_served_name_literal(tmp_path):
    docs = manifests(tmp_path, ONE)
    [job] = [d for d in docs if d["kind"] == "Job"]
    [container] = job["spec"]["template"]["spec"]["containers"]
    script, names = kubelet_expand(container["command"][2])
    assert names == [] and "'$(HF_TOKEN)'" in script

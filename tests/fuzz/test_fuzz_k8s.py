"""Fuzz: Kubernetes manifests.  For any recipe that compiles to ``--target k8s``, every generated
manifest parses as YAML, and no recipe string is expanded by the kubelet: run through a model of
its ``$(NAME)`` expansion (fuzzkit.kubelet_expand), the containers' command, args and env values
expand only the variables the manifests name on purpose."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fuzz_strategies import TEXT, recipe_documents
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, kubelet_expand, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from yamltree import mappings

from autobench.errors import AutobenchError, RecipeError

SETTINGS = settings(
    max_examples=budget(40), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE
)
INTENDED = {"HOME", "LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"}
DOLLAR = st.one_of(TEXT, st.sampled_from(["$(HF_TOKEN)", "$$(HF_TOKEN)", "$(HOME)", "a$(B)c$", "$((x))", "$"]))


def _container_strings(docs: list[Any]) -> list[str]:
    out: list[str] = []
    for node in mappings(docs):
        if "image" in node and ("args" in node or "command" in node):
            out.extend(str(v) for v in node.get("command", []))
            out.extend(str(v) for v in node.get("args", []))
            out.extend(str(e["value"]) for e in node.get("env", []) if "value" in e)
    return out


CORE = {
    "name": "k",
    "model": {"repo": "org/m", "revision": "0123456789abcdef0123456789abcdef01234567"},
    "container": {"image": "vllm/vllm-openai@sha256:" + "b" * 64, "ports": ["8000:8000"]},
    "bench": {"dataset": {"kind": "random", "input_len": 8, "output_len": 8}},
}


@st.composite
def k8s_documents(draw: Any) -> dict[str, Any]:
    doc = draw(st.one_of(st.just(None), st.just(None), recipe_documents()))
    doc = json.loads(json.dumps(CORE)) if doc is None else doc
    # $(...) where the kubelet would expand it: the served name, env values, the launch command
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    doc["model"] = {**model, "served_name": draw(DOLLAR)}
    doc["env"] = {"LEAK": draw(DOLLAR), "PLAIN": "x"}
    doc["secrets"] = ["HF_TOKEN"]
    if draw(st.booleans()):
        doc["launch"] = {"command": ["python3", "-c", draw(DOLLAR)]}
    if draw(st.booleans()):
        engine = doc.get("engine") if isinstance(doc.get("engine"), dict) else {}
        doc["engine"] = {**engine, "extra_args": [f"--chat-template={draw(DOLLAR)}"]}
    if draw(st.booleans()):
        doc["topology"] = {"nodes": 2, "gpus_per_node": 1, "executor": draw(st.sampled_from(["native", "ray"]))}
    doc.setdefault("bench", {})
    if isinstance(doc["bench"], dict):
        doc["bench"]["client"] = "autobench"
    return doc


@SETTINGS
@given(k8s_documents())
def test_no_recipe_string_survives_into_a_manifest_unescaped(doc):
    from autobench.compile.k8s import compile_k8s
    from autobench.recipe.loader import load_recipe

    tried("k8s: manifests parse, nothing expands")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.yaml"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        try:
            loaded = load_recipe(path)
        except RecipeError as exc:
            assert_clean_line(str(exc))
            return
        try:
            text = compile_k8s(loaded, run_id="fuzz", check=False)
        except AutobenchError as exc:
            assert_clean_line(str(exc))
            return
    tried("k8s: compiled (of which)")
    docs = [d for d in YAML(typ="safe").load_all(text) if d]
    assert {d["kind"] for d in docs} >= {"Service", "Job"}
    strings = _container_strings(docs)
    assert strings, "no container with a command in the manifests"  # else the check below is vacuous
    names = {name for s in strings for name in kubelet_expand(s)[1]}
    assert names <= INTENDED, names
    served = loaded.recipe.model.served_name
    if served and "$(" in served:
        assert any(served in kubelet_expand(s)[0] for s in strings)

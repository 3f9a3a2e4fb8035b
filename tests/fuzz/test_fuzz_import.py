"""Fuzz: `autobench import` over every format's shapes (issue 28, "Bad input").

Each case is a document of one source format -- its documented keys, each drawn as a plausible
value most of the time and otherwise as a wrong type, a huge number, deep nesting, a path-like
value or an escape sequence.  Whatever it holds: ``convert`` returns recipes or raises one
RecipeError (one clean line: no traceback, no raw control character, no token); the notes of
what it returns are clean once escaped as the CLI prints them; and a recipe it returns either
validates and compiles or is refused with one AutobenchError line -- never exit 70.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fuzz_strategies import HOSTILE, TEXT, TOKEN
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.errors import AutobenchError

SETTINGS = settings(
    max_examples=budget(60), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE
)

HUGE = st.sampled_from([2**31, 10**18, 200_000_000, -1, 0, 10**400])
LLMD_DEFAULTS = Path(__file__).resolve().parents[1] / "recipe/import_corpus/config/templates/values/defaults.yaml"
PATHS = st.sampled_from(["../../../etc/passwd", "/etc/shadow", "~/x", "mods/../../x", "mods/fix", "@owner/mods/x"])
FLAGS = st.sampled_from(
    [
        "--tensor-parallel-size 2",
        "-tp 999999999",
        "--max-model-len auto",
        "--compilation-config.cudagraph_mode none",
        "--api-key " + TOKEN,
        "--served-model-name a b",
        '--speculative-config \'{"method": "mtp", "num_speculative_tokens": 2}\'',
        "--speculative-config '" + "[" * 60 + "'",
        "--distributed-executor-backend ray",
        "{x}{x}{x}",
        "--port -1",
    ]
)


def _deep(depth: int) -> Any:
    node: Any = "x"
    for _ in range(depth):
        node = {"a": node}
    return node


VALUE = st.one_of(
    TEXT,
    HUGE,
    PATHS,
    st.booleans(),
    st.none(),
    st.lists(st.one_of(TEXT, PATHS, HUGE), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "tensor_parallel", "x"]), st.one_of(TEXT, HUGE), max_size=3),
    st.integers(1, 40).map(_deep),
)


@st.composite
def _command(draw: Any) -> str:
    head = draw(
        st.sampled_from(
            [
                "vllm serve {model}",
                "X=1 vllm serve a/b",
                "sglang serve a/b",
                "pip install x && vllm serve a/b",
                "taskset -c 0 vllm serve {model}",
                "",
                "bash -c 'vllm serve a/b'",
            ]
        )
    )
    return " ".join([head, *draw(st.lists(st.one_of(FLAGS, st.sampled_from(HOSTILE)), max_size=4))])


def _pick(draw: Any, plausible: st.SearchStrategy[Any]) -> Any:
    return draw(st.one_of(plausible, plausible, VALUE))


@st.composite
def peer_documents(draw: Any) -> dict[str, Any]:
    eugr = draw(st.booleans())
    doc: dict[str, Any] = {"recipe_version": "1" if eugr else "2", "command": _pick(draw, _command())}
    optional = {
        "name": st.text(max_size=10),
        "model": st.just("org/model"),
        "container": st.just("img:1"),
        "runtime": st.sampled_from(["vllm", "sglang"]),
        "defaults": st.fixed_dictionaries({"tensor_parallel": st.sampled_from([1, 2, 4]), "x": TEXT}),
        "env": st.dictionaries(st.sampled_from(["HF_TOKEN", "A", "VLLM_X"]), TEXT, max_size=2),
        "mods": st.lists(PATHS, max_size=2),
        "pre_exec": st.lists(TEXT, max_size=2),
        "min_nodes": HUGE,
        "cluster_only": st.booleans(),
        "solo_only": st.booleans(),
        "build_args": st.lists(st.sampled_from(["--vllm-ref", "main", "--apply-vllm-pr", "x", "-x"]), max_size=4),
        "executor_config": st.fixed_dictionaries(
            {}, optional={"volumes": st.lists(TEXT, max_size=2), "shm_size": TEXT}
        ),
        "metadata": st.fixed_dictionaries({}, optional={"description": TEXT}),
        "benchmark": VALUE,
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=8)):
        doc[key] = _pick(draw, optional[key])
    return doc


@st.composite
def other_documents(draw: Any) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["vllm-recipes", "inferencex", "compose", "kubernetes", "helm", "srt", "config", "llm-d"])
    )
    if kind == "llm-d":  # written into a checkout beside the corpus's defaults.yaml by _check
        stack = {
            "name": _pick(draw, TEXT),
            "common": _pick(
                draw, st.just({"model": {"name": "a/b", "huggingfaceId": "a/b"}, "parallelism": {"tensor": 2}})
            ),
            "decode": _pick(
                draw,
                st.fixed_dictionaries(
                    {
                        "replicas": HUGE,
                        "parallelism": st.fixed_dictionaries({"tensor": HUGE, "dataLocal": HUGE}),
                        "vllm": st.fixed_dictionaries(
                            {"customCommand": _command(), "additionalFlags": st.lists(FLAGS)}
                        ),
                        "extraEnvVars": st.just([{"name": "A", "value": "${model.name}"}]),
                    }
                ),
            ),
            "prefill": _pick(draw, st.fixed_dictionaries({"enabled": st.booleans(), "replicas": HUGE})),
            "images": _pick(draw, st.just({"vllm": {"repository": "vllm/vllm-openai", "tag": "auto"}})),
            "accelerator": _pick(draw, st.fixed_dictionaries({"count": HUGE, "profile": TEXT})),
            "kustomize": _pick(draw, st.fixed_dictionaries({"enabled": st.booleans()})),
        }
        return {"scenario": _pick(draw, st.lists(st.just(stack), max_size=2))}
    if kind == "vllm-recipes":
        return {
            "model": _pick(
                draw, st.fixed_dictionaries({"model_id": st.just("a/b"), "base_args": st.lists(FLAGS, max_size=2)})
            ),
            "features": _pick(
                draw, st.just({"f": {"args": ["--x", "1"], "modes": {"m": {"args": ["--y"]}}, "default_mode": "m"}})
            ),
            "opt_in_features": _pick(draw, st.just(["f"])),
            "variants": _pick(draw, st.just({"default": {"tp": {"h100": 2}}, "base": {"extra_args": ["--x", "2"]}})),
        }
    if kind == "inferencex":
        row = _pick(draw, st.fixed_dictionaries({"tp": HUGE, "conc-start": HUGE, "conc-end": HUGE}))
        return {
            "e": {
                "image": "i:1",
                "model": "a/b",
                "framework": _pick(draw, st.just("vllm")),
                "scenarios": {"s": [{"isl": _pick(draw, HUGE), "osl": 8, "search-space": [row]}]},
            }
        }
    if kind == "compose":
        return {
            "services": {
                "v": {
                    "image": _pick(draw, st.just("vllm/vllm-openai:v1")),
                    "command": _pick(draw, _command()),
                    "environment": _pick(draw, st.just(["HF_TOKEN=${HF_TOKEN}", "A=${B:-c}"])),
                    "deploy": _pick(draw, st.just({"resources": {"reservations": {"devices": [{"count": 2}]}}})),
                }
            }
        }
    if kind == "kubernetes":
        container = {
            "name": "v",
            "image": _pick(draw, st.just("vllm/vllm-openai:v1")),
            "command": _pick(draw, _command().map(lambda c: ["sh", "-c", c])),
            "env": _pick(draw, st.just([{"name": "A", "value": "$(B)"}])),
            "resources": {"limits": {"nvidia.com/gpu": _pick(draw, HUGE)}},
        }
        return {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "spec": {
                "leaderWorkerTemplate": {
                    "size": _pick(draw, HUGE),
                    "leaderTemplate": {"spec": {"containers": [container]}},
                }
            },
        }
    if kind == "helm":
        return {
            "servingEngineSpec": {
                "modelSpec": [
                    _pick(
                        draw,
                        st.fixed_dictionaries(
                            {
                                "name": TEXT,
                                "repository": st.just("vllm/vllm-openai"),
                                "tag": st.just("v1"),
                                "modelURL": st.just("a/b"),
                                "requestGPU": HUGE,
                                "vllmConfig": st.just({"extraArgs": ["--x"], "tensorParallelSize": 2}),
                            }
                        ),
                    )
                ]
            }
        }
    if kind == "srt":
        return {
            "model": {"path": _pick(draw, st.sampled_from(["a/b", "hf:a/b", "alias", "/abs/dir"])), "container": "c:1"},
            "resources": {"gpus_per_node": _pick(draw, HUGE)},
            "backend": {
                "type": _pick(draw, st.just("vllm")),
                "vllm_config": _pick(
                    draw,
                    st.sampled_from(
                        [
                            {"aggregated": {"tensor-parallel-size": 2, "x": {"y": 1}}},
                            {
                                "prefill": {"served-model-name": "a/b", "data-parallel-size": 64},
                                "decode": {"served-model-name": "c/d"},
                            },
                        ]
                    ),
                ),
            },
        }
    return {
        "model": _pick(draw, st.just("a/b")),
        "tensor_parallel_size": _pick(draw, HUGE),
        "speculative_config": _pick(draw, st.just({"method": "mtp"})),
    }


def _check(doc: dict[str, Any]) -> None:
    from autobench.cli.import_cmds import check_imported
    from autobench.escape import human
    from autobench.recipe.importer import convert

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "peer.yaml"
        if "scenario" in doc:  # an llm-d-benchmark checkout: the corpus's defaults.yaml above the scenario
            values = Path(tmp) / "config" / "templates" / "values"
            values.mkdir(parents=True)
            (values / "defaults.yaml").write_text(LLMD_DEFAULTS.read_text(), encoding="utf-8")
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")  # JSON is YAML
        try:
            vllmr = "model" in doc and isinstance(doc["model"], dict)
            results = convert(path, gpus_per_node=8 if vllmr else None)
        except AutobenchError as exc:
            assert_clean_line(str(exc))
            return
        for imported in results:
            for note in imported.notes:
                assert_clean_line(human(note))
            assert TOKEN not in json.dumps(imported.data)
            out = Path(tmp) / "out"
            out.mkdir(exist_ok=True)
            try:
                check_imported(imported, out)
            except AutobenchError as exc:
                assert_clean_line(str(exc))


@SETTINGS
@given(peer_documents())
def test_any_eugr_or_sparkrun_file_imports_or_says_why_in_one_clean_line(doc):
    tried("import: eugr/sparkrun")
    _check(doc)


@SETTINGS
@given(other_documents())
def test_any_recipes_inferencex_or_deployment_file_imports_or_says_why_in_one_clean_line(doc):
    tried("import: vllm-recipes/inferencex/deployment")
    _check(doc)

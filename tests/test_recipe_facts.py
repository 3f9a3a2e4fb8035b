"""One answer per recipe fact: validate, compile and run ask ``autobench.recipe.facts``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from autobench.compile import compile_recipe
from autobench.errors import RecipeError
from autobench.recipe import load_recipe
from autobench.recipe.facts import parse_port_spec, pins, server_endpoint, unpinned
from autobench.recipe.rules import check
from autobench.run import RunOptions, prepare

sys.path.insert(0, str(Path(__file__).resolve().parent / "run"))
from run_helpers import SHA, recipe_text  # noqa: E402

PORT = 18123


def _recipe(tmp_path: Path, ports: str, extra_args: str = "") -> Path:
    text = recipe_text(PORT).replace(f'ports: ["{PORT}:{PORT}"]', f"ports: {ports}")
    text = text.replace("  host: 127.0.0.1\n", "  host: 0.0.0.0\n")
    if extra_args:
        text = text.replace("container:\n", f"container:\n  extra_args: {extra_args}\n", 1)
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    return path


CASES = [
    pytest.param("[]", "['--network', 'host']", "host-network", f"http://127.0.0.1:{PORT}", id="host-network"),
    pytest.param(f'["127.0.0.1:9001:{PORT}/tcp"]', "", "published", "http://127.0.0.1:9001", id="published"),
    pytest.param(f'["9002:{PORT}"]', "", "published", "http://127.0.0.1:9002", id="published-all-interfaces"),
    pytest.param("[]", "", "unpublished", None, id="neither"),
    pytest.param(f'["{PORT}"]', "", "unpublished", None, id="random-host-port"),
]


@pytest.mark.parametrize(("ports", "extra_args", "how", "url"), CASES)
def test_compile_run_and_validate_agree_on_the_endpoint(tmp_path, ports, extra_args, how, url):
    path = _recipe(tmp_path, ports, extra_args)
    loaded = load_recipe(path)
    endpoint = server_endpoint(loaded.recipe)
    assert endpoint.how == how
    ab022 = [f for f in check(loaded) if f.code == "AB022"]
    options = RunOptions(runtime="docker", runs_dir=tmp_path / "runs", dry_run=True)
    if url is None:
        assert ab022 and ab022[0].severity == "error"  # validate refuses ...
        with pytest.raises(RecipeError, match="AB022"):  # ... compile refuses ...
            compile_recipe(loaded)
        with pytest.raises(RecipeError, match="AB022"):  # ... and run refuses before anything starts
            prepare(path, options)
        return
    assert endpoint.base_url == url and not ab022
    script = compile_recipe(loaded)
    assert re.search(r"^BASE_URL=(\S+)$", script, re.M)[1] == url
    assert f"--base-url {url}" in script
    _, plan, _ = prepare(path, options)
    assert plan.base_url == url and plan.health_url == f"{url}/health"


def test_the_process_runtime_dials_the_engine_host(tmp_path):
    loaded = load_recipe(_recipe(tmp_path, "[]"))
    assert server_endpoint(loaded.recipe, "process").base_url == f"http://127.0.0.1:{PORT}"
    from autobench.run.plan import build_plan

    assert build_plan(loaded, runtime="process", runs_dir=tmp_path).base_url == f"http://127.0.0.1:{PORT}"


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("8000:8000", (None, 8000, 8000, "tcp")),
        ("9000:8000/udp", (None, 9000, 8000, "udp")),
        ("127.0.0.1:9000:8000", ("127.0.0.1", 9000, 8000, "tcp")),
        ("[::1]:9000:8000", ("::1", 9000, 8000, "tcp")),
        ("127.0.0.1::8000", ("127.0.0.1", None, 8000, "tcp")),
        ("8000", (None, None, 8000, "tcp")),
        ("8000-8010:8000-8010", None),
        # digits docker cannot read: a superscript (int() raises on it) and full-width digits
        ("²", None),
        ("9000:²", None),
        ("８０００", None),
        ("８０００:8000", None),
    ],
)
def test_port_specs(spec, parsed):
    got = parse_port_spec(spec)
    assert (None if got is None else (got.ip, got.host_port, got.container_port, got.proto)) == parsed


def test_compile_run_validate_and_lock_agree_on_the_pins(tmp_path):
    text = recipe_text(PORT, revision="main") + (
        "speculative:\n  method: dflash\n  model: z-lab/Draft\n  revision: bce6f76\n  num_speculative_tokens: 5\n"
    )
    text = text.replace("  served_name: tiny\n", f"  served_name: tiny\n  tokenizer_revision: {SHA}\n")
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_recipe(path)
    from autobench.hub.lockfile import references
    from autobench.run.plan import unpinned_refs

    kinds = [(p.kind, p.repo, p.full_sha) for p in pins(loaded.recipe)]
    assert kinds == [
        ("model", "acme/tiny-model", False),
        ("tokenizer", "acme/tiny-model", True),
        ("draft", "z-lab/Draft", False),
    ]
    assert [r.kind for r in references(loaded.recipe)] == ["model", "tokenizer", "draft"]  # what lock pins
    codes = {f.code: f.key for f in check(loaded) if f.code in ("AB010", "AB011", "AB012")}
    assert codes == {"AB010": "model.revision", "AB012": "speculative.revision"}  # validate
    assert unpinned_refs(loaded) == [f"{p.key} ({p.ref})" for p in unpinned(loaded.recipe)]  # run
    assert [p.key for p in unpinned(loaded.recipe)] == ["model.revision", "speculative.revision"]
    header = compile_recipe(loaded, check=False).split("\n\n", 1)[0]
    assert header.count("UNPINNED") == 2  # compile's header
    with pytest.raises(RecipeError, match="model.revision"):
        compile_recipe(loaded, check=False, frozen=True)


def test_a_local_model_is_no_pin_anywhere(tmp_path):
    text = recipe_text(PORT).replace("  repo: acme/tiny-model\n", "  repo: /models/tiny\n")
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_recipe(path)
    from autobench.run.plan import unpinned_refs

    assert pins(loaded.recipe) == [] and unpinned_refs(loaded) == []
    assert not [f for f in check(loaded) if f.code == "AB010"]

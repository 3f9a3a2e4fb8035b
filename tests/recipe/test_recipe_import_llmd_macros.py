"""llm-d-benchmark's macros rendered as ``render_plans.py`` renders them, sandboxed and bounded
(autobench/recipe/importer/_llmd_macros.py).  The macros files here are a few lines written for
these tests, with the names and arguments of llm-d-benchmark's ``build_vllm_command`` and
``build_ms_env_vars`` (its ``config/templates/jinja/_macros.j2`` at 8bc9f1dd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.errors import RecipeError
from autobench.recipe.importer import _llmd_macros
from autobench.recipe.importer._llmd_macros import MAX_BYTES, macros_file, render


def _macros(tmp_path: Path, body: str, env: str = '- name: A\n  value: "1"') -> Path:
    path = tmp_path / "_macros.j2"
    path.write_text(
        "{% macro build_vllm_command(mode='decode') -%}\n" + body + "\n{%- endmacro %}\n"
        "{% macro build_ms_env_vars(mode='decode') -%}\n" + env + "\n{%- endmacro %}\n",
        encoding="utf-8",
    )
    return path


def test_the_macros_file_is_beside_the_checkouts_values_folder():
    defaults = Path("/c/config/templates/values/defaults.yaml")
    assert macros_file(defaults) == Path("/c/config/templates/jinja/_macros.j2")


def test_the_filters_render_plans_registers(tmp_path):
    body = (
        "{{ none | tojson }} {{ {'a': [1, 2]} | tojson }} "
        "{{ none | is_empty }} {{ '  ' | is_empty }} {{ 'x' | is_empty }} {{ {} | is_empty }} {{ [] | is_empty }}"
        " {{ [0] | is_empty }} {{ 0 | is_empty }} {{ '' | default_if_empty('d') }} {{ 'v' | default_if_empty('d') }}"
    )
    out = render(_macros(tmp_path, body), {"none": None}, "build_vllm_command", "decode")
    assert out == 'null {"a":[1,2]} True True False True True False False d v'


@pytest.mark.parametrize("name", ["toyaml", "b64pad", "b64encode", "model_id_label"])
def test_the_other_macros_filters_refuse_by_name(tmp_path, name):
    with pytest.raises(RecipeError) as info:
        render(_macros(tmp_path, "{{ 'x' | " + name + " }}"), {}, "build_vllm_command", "prefill")
    assert info.value.message == (
        f"_macros.j2: build_vllm_command('prefill') uses the {name} filter, which autobench's import does not render"
    )
    assert info.value.hint.startswith("render the stack's manifests") and info.value.location.endswith(":1:1")


def test_model_id_label_is_the_models_short_name(tmp_path):
    path = _macros(tmp_path, "[{{ model_id_label }}]")
    assert render(path, {"model": {"shortName": "qwen3"}}, "build_vllm_command", "decode") == "[qwen3]"
    assert render(path, {"model": {"name": "a/b"}}, "build_vllm_command", "decode") == "[]"
    assert render(path, {"model": "a/b"}, "build_vllm_command", "decode") == "[]"
    assert render(path, {"model_id_label": "own"}, "build_vllm_command", "decode") == "[own]"  # the values win


def test_the_macros_own_raise_is_a_refusal(tmp_path):
    with pytest.raises(RecipeError) as info:
        render(_macros(tmp_path, "{{ raise('gateway class x takes no y') }}"), {}, "build_vllm_command", "decode")
    assert info.value.message == "_macros.j2: gateway class x takes no y"
    assert info.value.hint == "check the scenario's values"
    with pytest.raises(RecipeError) as info:
        render(_macros(tmp_path, "{{ raise() }}"), {}, "build_vllm_command", "decode")
    assert info.value.message == "_macros.j2: "


def test_a_value_the_macros_cannot_use_is_a_refusal(tmp_path):
    with pytest.raises(RecipeError) as info:
        render(_macros(tmp_path, "{{ n // 0 }}"), {"n": 1}, "build_vllm_command", "decode")
    assert info.value.message.startswith(
        "_macros.j2: build_vllm_command('decode') does not render with this stack's values (ZeroDivisionError:"
    )
    assert info.value.hint == "check the scenario's values"


def test_only_the_two_macros_and_two_modes_are_rendered(tmp_path):
    path = _macros(tmp_path, "x")
    assert render(path, {}, "build_ms_env_vars", "prefill") == '- name: A\n  value: "1"'
    for call, mode in (("build_standalone_vllm_command", "decode"), ("build_vllm_command", "standalone")):
        with pytest.raises(ValueError, match=rf"not a macro autobench renders: {call}\({mode}\)"):
            render(path, {}, call, mode)


def test_the_file_and_what_it_renders_are_bounded(tmp_path):
    assert MAX_BYTES == 1 << 20  # the 1 MiB docs/import.md states
    path = _macros(tmp_path, "x")
    text = path.read_text()
    path.write_text(text + "{#" + "." * (MAX_BYTES - len(text) - 4) + "#}")
    assert path.stat().st_size == MAX_BYTES and render(path, {}, "build_vllm_command", "decode") == "x"
    path.write_text(text + "{#" + "." * (MAX_BYTES - len(text) - 3) + "#}")
    with pytest.raises(RecipeError) as info:
        render(path, {}, "build_vllm_command", "decode")
    assert (info.value.message, info.value.hint) == ("_macros.j2 is over 1 MiB", "check the checkout")
    big = _macros(tmp_path, "{{ 'x' * n }}")
    assert len(render(big, {"n": MAX_BYTES}, "build_vllm_command", "decode")) == MAX_BYTES
    with pytest.raises(RecipeError) as info:
        render(big, {"n": MAX_BYTES + 1}, "build_vllm_command", "decode")
    assert info.value.message == "_macros.j2: build_vllm_command('decode') renders over 1 MiB"
    assert info.value.hint.startswith("a pod's command and env are a few KB")


@pytest.mark.parametrize("kind", ["missing", "folder", "not utf-8"])
def test_a_macros_file_that_does_not_read(tmp_path, kind):
    path = tmp_path / "_macros.j2"
    if kind == "folder":
        path.mkdir()
    elif kind == "not utf-8":
        path.write_bytes(b"\xff\xfe{% macro x() %}")
    with pytest.raises(RecipeError) as info:
        render(path, {}, "build_vllm_command", "decode")
    assert info.value.message.startswith("llm-d-benchmark's config/templates/jinja/_macros.j2 does not read (")
    assert info.value.hint.startswith("import the scenario from a whole llm-d-benchmark checkout")
    assert info.value.location == f"{path}:1:1"


def test_blocks_are_trimmed_as_render_plans_trims_them(tmp_path):
    """``trim_blocks`` and ``lstrip_blocks`` (render_plans.py ``_get_jinja_env``): a block tag's
    line leaves neither its indentation nor its newline in the pod's script."""
    body = "a\n  {% if true %}\nb\n  {% endif %}\nc"
    assert render(_macros(tmp_path, body), {}, "build_vllm_command", "decode") == "a\nb\nc"


def test_the_sandbox_keeps_the_template_from_pythons_internals(tmp_path):
    with pytest.raises(RecipeError, match=r"SecurityError"):
        render(_macros(tmp_path, "{{ x.__class__.__subclasses__() }}"), {"x": 1}, "build_vllm_command", "decode")
    assert _llmd_macros.CALLS == ("build_vllm_command", "build_ms_env_vars")


def test_a_missing_macro_and_a_syntax_error_are_located_in_the_macros_file(tmp_path):
    path = tmp_path / "_macros.j2"
    path.write_text("{% macro build_vllm_command(mode) %}x{% endmacro %}\n")
    with pytest.raises(RecipeError) as info:
        render(path, {}, "build_ms_env_vars", "decode")
    assert (info.value.message, info.value.hint) == (
        "_macros.j2 defines no build_ms_env_vars macro",
        "check the llm-d-benchmark checkout",
    )
    path.write_text("a\nb\n{% if %}\n")
    with pytest.raises(RecipeError) as info:
        render(path, {}, "build_vllm_command", "decode")
    assert info.value.message.startswith("_macros.j2: Expected an expression")
    assert (info.value.location, info.value.hint) == (f"{path}:3:1", "check the checkout")

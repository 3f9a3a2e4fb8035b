"""`autobench import`: a serve command names its model as vLLM's own parser reads it, and no
imported recipe carries a placeholder nothing fills.

The texts are the corpus's (tests/recipe/import_corpus, INDEX.md names the public source each is
modelled on) with one line changed into the shape under test."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.cli import main
from autobench.cli.import_cmds import check_imported
from autobench.errors import RecipeError
from autobench.recipe.importer import convert
from autobench.recipe.importer._command import serve_model
from autobench.recipe.loader import load_recipe

CORPUS = Path(__file__).resolve().parent / "import_corpus"
NOT_BOTH = "vLLM moves --model's value to the positional model and refuses the other as an unrecognized argument"


def _write(tmp_path: Path, text: str, name: str = "peer.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# --------------------------------------------------------------------------- the model of vllm serve


@pytest.mark.parametrize(
    ("args", "model", "rest"),
    [
        (["a/b", "--port", "8001"], "a/b", ["--port", "8001"]),
        (["-tp", "2", "--model", "a/b", "--enforce-eager"], "a/b", ["-tp", "2", "--enforce-eager"]),
        (["--model=a/b", "-tp", "2"], "a/b", ["-tp", "2"]),
        (["--model", "a/b", "-tp", "2", "--model", "a/b"], "a/b", ["-tp", "2"]),  # the same again: dropped
        (["--model", "a/b", "--model=a/b", "--model", "a/b"], "a/b", []),
        (["-tp", "2", "--model=a/b"], "a/b", ["-tp", "2"]),
        (["--model", "a/b", "--model", "a/b", "-tp", "2"], "a/b", ["-tp", "2"]),
        (["--model", "a/b", "x", "--model=a/b", "y"], "a/b", ["x", "y"]),
        ([], None, []),
        (["--port", "8001"], None, ["--port", "8001"]),
        (["--model-impl", "vllm", "a"], None, ["--model-impl", "vllm", "a"]),  # not --model
    ],
)
def test_the_model_is_the_positional_or_the_first_model_option(args, model, rest):
    assert serve_model(args) == (model, rest, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a/b", "--model", "c/d"], "`vllm serve a/b` and `--model c/d`: " + NOT_BOTH),
        (["a/b", "--model", "a/b"], NOT_BOTH + " (even the same one)"),  # vLLM refuses equal ones too
        (["a/b", "-tp", "2", "--model=a/b"], "`vllm serve a/b` and `--model a/b`"),
        (
            ["--model", "a/b", "--model", "c/d"],
            "--model is given twice (a/b, then c/d): vLLM serves the first, ignores the other",
        ),
        (["--model", "a/b", "--model=c/d"], "--model is given twice (a/b, then c/d)"),
        (["--model", "a/b", "x", "--model", "c/d"], "--model is given twice (a/b, then c/d)"),
        (["--model", "a/b", "-tp", "2", "--model", "c/d", "y"], "--model is given twice (a/b, then c/d)"),
        (["--model", "a/b", "--model"], "--model is given twice (a/b, then )"),
        (["-tp", "2", "--model"], "--model has no value"),
        (["--model", "--port", "8001"], "--model has no value"),
        (["a/b", "--model"], "--model has no value"),
    ],
)
def test_vllm_refuses_a_second_model_and_so_does_the_import(args, message):
    _model, _rest, refused = serve_model(args)
    assert refused is not None and message in refused[0]
    hint = refused[1]
    if "has no value" in message:
        assert hint == "write --model MODEL"
    elif "given twice" in message:
        assert hint == "delete the --model you do not mean"
    else:
        assert hint.startswith("name the model once: `vllm serve MODEL ...`")
        assert refused[0].endswith("argument" if "c/d" in message else "argument (even the same one)")


def test_compose_positional_and_model_option_refused_at_the_command_line(tmp_path, capsys):
    text = (CORPUS / "compose-vllm-openai.yaml").read_text()
    path = _write(tmp_path, text.replace("--model ${MODEL:-Qwen/Qwen3-8B}", "Qwen/Qwen3-8B --model Qwen/Qwen3-4B"))
    with pytest.raises(RecipeError, match="`vllm serve Qwen/Qwen3-8B` and `--model Qwen/Qwen3-4B`") as info:
        convert(path)
    assert info.value.location.startswith(f"{path}:{_line_of(path, 'command:')}:")
    assert main(["import", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}:{_line_of(path, 'command:')}:"), err
    assert "not both" in err[0] and not (tmp_path / "out").exists()


def test_the_same_model_twice_is_refused_too(tmp_path):
    text = (CORPUS / "compose-vllm-openai.yaml").read_text()
    path = _write(tmp_path, text.replace("--model ${MODEL:-Qwen/Qwen3-8B}", "Qwen/Qwen3-8B --model=Qwen/Qwen3-8B"))
    with pytest.raises(RecipeError, match=r"\(even the same one\)"):
        convert(path)


def test_eugr_command_with_a_model_option_after_its_positional_is_refused(tmp_path):
    text = (CORPUS / "eugr-qwen3-8b-solo.yaml").read_text()
    assert "vllm serve {model}" in text
    path = _write(tmp_path, text.replace("vllm serve {model}", "vllm serve {model} --model Qwen/Qwen3-4B"))
    with pytest.raises(RecipeError, match="`vllm serve Qwen/Qwen3-8B-FP8` and `--model Qwen/Qwen3-4B`") as info:
        convert(path)
    assert info.value.location.startswith(f"{path}:{_line_of(path, 'command:')}:")


def test_dynamo_worker_with_two_model_options(tmp_path):
    text = (CORPUS / "k8s-dynamo-worker.yaml").read_text()
    assert "args: [--model, Qwen/Qwen3-4B," in text
    same = _write(
        tmp_path,
        text.replace("args: [--model, Qwen/Qwen3-4B,", "args: [--model, Qwen/Qwen3-4B, --model, Qwen/Qwen3-4B,"),
    )
    (imported,) = convert(same)
    assert imported.data["model"]["repo"] == "Qwen/Qwen3-4B"
    assert "--model" not in imported.data.get("engine", {}).get("extra_args", [])
    other = _write(
        tmp_path, text.replace("args: [--model, Qwen/Qwen3-4B,", "args: [--model, Qwen/Qwen3-4B, --model, a/b,")
    )
    with pytest.raises(RecipeError, match="given twice"):
        convert(other)


def test_the_model_option_alone_is_the_model_served(tmp_path):
    (imported,) = convert(CORPUS / "compose-vllm-openai.yaml")
    assert imported.data["model"]["repo"] == "Qwen/Qwen3-8B"
    assert "--model" not in imported.data["engine"].get("extra_args", [])
    recipe = load_recipe(check_imported(imported, tmp_path)[0]).recipe
    assert recipe.model.repo == "Qwen/Qwen3-8B"


# --------------------------------------------------------------------------- srt-slurm's placeholders


def _srt(tmp_path: Path, old: str, new: str) -> Path:
    text = (CORPUS / "srt-slurm-agg-env.yaml").read_text()
    assert old in text
    return _write(tmp_path, text.replace(old, new))


def test_srt_slurm_environment_without_placeholders_imports_whole(tmp_path):
    (imported,) = convert(CORPUS / "srt-slurm-agg-env.yaml")
    assert imported.data["env"]["DG_JIT_CACHE_DIR"] == "/tmp/dg-cache-dsv3-agg-tp4"
    assert imported.data["env"]["ETCD_LEASE_TTL"] == "3600"
    check_imported(imported, tmp_path)


def test_srt_slurm_job_id_in_a_role_environment_is_kept_as_srtctl_exports_it(tmp_path):
    """InferenceX's agentic recipes write DG_JIT_CACHE_DIR: "/tmp/dg-cache-...-{job_id}"; srtctl
    fills only {node} and {node_id}, so its workers get the literal text: the import carries it
    as written, says so at its line, and the compiled scripts carry it too."""
    path = _srt(tmp_path, '"/tmp/dg-cache-dsv3-agg-tp4"', '"/tmp/dg-cache-dsv3-agg-tp4-{job_id}"')
    (imported,) = convert(path)
    assert imported.data["env"]["DG_JIT_CACHE_DIR"] == "/tmp/dg-cache-dsv3-agg-tp4-{job_id}"
    line = _line_of(path, "DG_JIT_CACHE_DIR")
    [note] = [n for n in imported.notes if "kept as srtctl exports it" in n]
    assert note.startswith(f"{line}:") and "DG_JIT_CACHE_DIR=" in note and "{node} and {node_id}" in note
    recipe_path = check_imported(imported, tmp_path)[0]
    assert "{job_id}" in recipe_path.read_text()


def test_srt_slurm_a_literal_kept_for_one_value_does_not_excuse_another(tmp_path):
    """Only the exact value srtctl exports is marked literal: a placeholder elsewhere in the
    recipe (here a served-model name) is still refused by the class-wide check."""
    path = _srt(tmp_path, '"/tmp/dg-cache-dsv3-agg-tp4"', '"/tmp/dg-cache-dsv3-agg-tp4-{job_id}"')
    (imported,) = convert(path)
    imported.data["model"]["served_name"] = "m-{job_id}"
    from autobench.recipe.importer import _no_placeholder

    with pytest.raises(RecipeError, match=r"model.served_name holds \{job_id\}"):
        _no_placeholder(imported)


@pytest.mark.parametrize("name", ["node", "node_id"])
def test_srt_slurm_per_worker_placeholders_are_refused(tmp_path, name):
    path = _srt(tmp_path, 'ETCD_LEASE_TTL: "3600"', f'NIXL_HOST: "{{{name}}}-ib"')
    with pytest.raises(RecipeError, match=rf"NIXL_HOST: \{{{name}\}} is srt-slurm's per-worker placeholder") as info:
        convert(path)
    assert info.value.location.startswith(f"{path}:{_line_of(path, 'NIXL_HOST')}:")


def test_srt_slurm_placeholders_in_each_role_environment(tmp_path):
    text = (CORPUS / "srt-slurm-disagg.yaml").read_text()
    path = _write(tmp_path, text.replace('PYTHONUNBUFFERED: "1"', 'PYTHONUNBUFFERED: "{node_id}"'))
    with pytest.raises(RecipeError, match=r"PYTHONUNBUFFERED: \{node_id\}"):
        convert(path)


BRACE = "write a literal brace as {{ or }}"
WITHOUT = "write the value without"


@pytest.mark.parametrize(
    ("value", "message", "hint"),
    [
        ('"x}"', "fails srtctl's placeholder formatting", BRACE),
        ('"{"', "fails srtctl's placeholder formatting", BRACE),
        ('"{0}"', "takes no positional field", WITHOUT),
        ('"a{}b"', "takes no positional field", WITHOUT),
        ('"{node.x}"', "per-worker placeholder", WITHOUT),
        ('"{job_id.x}"', "fails srtctl's placeholder formatting", WITHOUT),  # srtctl: 'str' has no .x
    ],
)
def test_srt_slurm_values_srtctl_cannot_format(tmp_path, value, message, hint):
    path = _srt(tmp_path, '"/tmp/dg-cache-dsv3-agg-tp4"', value)
    with pytest.raises(RecipeError, match=message) as info:
        convert(path)
    assert info.value.hint.startswith(hint), info.value.hint
    assert info.value.location.startswith(f"{path}:{_line_of(path, 'DG_JIT_CACHE_DIR')}:")


@pytest.mark.parametrize(
    ("value", "exported"),
    [
        ('"N{{V}}L"', "N{V}L"),  # doubled braces: srtctl exports one brace
        ('"}}NVL{{"', "}NVL{"),
        ('"{job_id!r}"', "'{job_id}'"),  # SafeDict gives "{job_id}", then !r
        ('"a-{job_id}-{run}"', "a-{job_id}-{run}"),
    ],
)
def test_srt_slurm_values_are_formatted_exactly_as_srtctl_formats_them(tmp_path, value, exported):
    path = _srt(tmp_path, 'NCCL_P2P_LEVEL: "NVL"', f"NCCL_P2P_LEVEL: {value}")
    (imported,) = convert(path)
    assert imported.data["env"]["NCCL_P2P_LEVEL"] == exported
    check_imported(imported, tmp_path)


# --------------------------------------------------------------------------- the whole class


SPARKRUN = """\
recipe_version: "2"
model: Qwen/Qwen3-8B
runtime: vllm
container: vllm/vllm-openai:v0.24.0
solo_only: true
defaults:
  port: 8000
metadata:
  description: serves {model} on {port}
command: |
  vllm serve {model} --port {port} \\
    --served-model-name {alias}
"""


def test_a_placeholder_sparkrun_leaves_unfilled_is_refused_where_it_is_written(tmp_path, capsys):
    """sparkrun (RECIPES.md, ``Recipe.render_command``) leaves a placeholder without a default as
    written: vLLM would be served the literal text."""
    path = _write(tmp_path, SPARKRUN)
    with pytest.raises(RecipeError) as info:
        convert(path)
    assert info.value.message.split(": ", 1)[1].startswith("model.served_name holds {alias}, a placeholder nothing")
    assert info.value.location == f"{path}:12:25"  # the line and column of `{alias}` in the file
    assert info.value.hint == "write the value the placeholder stands for"
    assert main(["import", str(path), "-o", str(tmp_path / "out")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_check_names_a_list_item_and_skips_meta_and_jinja_templates(tmp_path):
    listed = SPARKRUN.replace("--served-model-name {alias}", "--tool-call-parser {parser}")
    with pytest.raises(RecipeError) as info:
        convert(_write(tmp_path, listed, "listed.yaml"))
    assert info.value.message.split(": ", 1)[1].startswith("engine.extra_args[1] holds {parser}")
    # the description keeps its braces (meta reaches no compiled script); a Jinja chat template is
    # text vLLM renders
    fine = SPARKRUN.replace("--served-model-name {alias}", "--chat-template '{% if m %}{{ m }}{% endif %}'")
    (imported,) = convert(_write(tmp_path, fine, "fine.yaml"))
    assert imported.data["meta"]["description"] == "serves {model} on {port}"
    assert "{{ m }}" in " ".join(imported.data["engine"]["extra_args"])


def test_a_placeholder_not_written_as_such_in_the_source_is_located_at_its_first_line(tmp_path):
    from autobench.recipe.importer import _located

    path = _write(tmp_path, "a: 1\nb: x{y}z\n")
    assert _located(path, "{y}") == f"{path}:2:5"
    assert _located(path, "{q}") == f"{path}:1:1"
    assert _located(tmp_path / "missing.yaml", "{y}") == f"{tmp_path / 'missing.yaml'}:1:1"


def test_a_wrapper_before_vllm_serve_stays_a_prefix_apart_from_the_command(tmp_path):
    text = SPARKRUN.replace("vllm serve {model}", "taskset -c 0-3 vllm serve {model}").replace(
        " \\\n    --served-model-name {alias}", ""
    )
    (imported,) = convert(_write(tmp_path, text))
    launch = imported.data["launch"]
    assert (launch["command"], launch["prefix"]) == (["vllm", "serve"], ["taskset", "-c", "0-3"])
    assert imported.data["model"]["repo"] == "Qwen/Qwen3-8B"

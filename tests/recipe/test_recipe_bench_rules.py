"""The bench's rules between its settings (autobench.recipe.benchrules): a recipe that autobench's
client could not bench is refused when it loads, one line at the key the rule names; `autobench
bench` refuses the same options with the same words where it reads them (a usage error, nothing
started); and no error line of the schema repeats the label of its own key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autobench.bench.client import BenchConfig
from autobench.cli import main
from autobench.errors import BenchError, RecipeError, UsageError
from autobench.recipe import load_recipe
from autobench.recipe.benchrules import CLI, RECIPE, Load, LoadRuleError, check_load
from autobench.recipe.bounds import MAX_CLIENT_PROMPTS

SHA = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
HEAD = f"""\
name: w
model: {{repo: acme/tiny, revision: "{SHA}"}}
container: {{image: "vllm/vllm-openai:v0.23.1"}}
"""
RANDOM = "  dataset: {kind: random, input_len: 8, output_len: 8}\n"
TWO_NODES = "topology: {nodes: 2, gpus_per_node: 1, hosts: [h0, h1]}\n"
BASE = ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m"]
#: file:line:col: LABEL: MESSAGE (hint: HINT)
LINE = re.compile(r"^.*?\.yaml:(\d+):(\d+): (\S+): (.*?)(?: \(hint: (.*)\))?$")


def _line(tmp_path: Path, text: str) -> str:
    path = tmp_path / "w.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    line = str(e.value)
    assert "\n" not in line and "Traceback" not in line
    return line


def _parts(line: str) -> tuple[str, str, str, str]:
    """(line:col, label, message, hint) of a recipe error line."""
    m = LINE.match(line)
    assert m is not None, line
    return f"{m[1]}:{m[2]}", m[3], m[4], m[5] or ""


@pytest.fixture
def given(bench_configs: list[BenchConfig]) -> list[BenchConfig]:
    return bench_configs


# (recipe bench, where, key, message, hint; the same options of `autobench bench`, its option, hint)
SAME = [
    pytest.param(
        "  num_prompts: 2\n  workers: 4\n  concurrency: 8\n" + RANDOM,
        "5:16",
        "bench.num_prompts",
        "2 prompts for 4 load generators: each needs at least one prompt",
        "set bench.num_prompts to 4 or more, or fewer bench.workers",
        ["--num-prompts", "2", "--workers", "4", "--concurrency", "8"],
        "--num-prompts",
        "set --num-prompts to 4 or more, or fewer --workers",
        id="prompts-for-workers",
    ),
    pytest.param(
        "  num_prompts: 1\n  concurrency: 8\n  worker_hosts: [a, b, c]\n" + RANDOM,
        "5:16",
        "bench.num_prompts",
        "1 prompt for 3 load generators: each needs at least one prompt",
        "set bench.num_prompts to 3 or more, or fewer hosts (bench.worker_hosts)",
        ["--num-prompts", "1", "--concurrency", "8", "--worker-host", "a", "--worker-host", "b", "--worker-host", "c"],
        "--num-prompts",
        "set --num-prompts to 3 or more, or fewer hosts (--worker-host)",
        id="prompts-for-hosts",
    ),
    pytest.param(
        "  workers: 3\n  concurrency: 8\n  dataset: {kind: random, input_len: 8, output_len: 8, multi_turn: true}\n",
        "5:12",
        "bench.workers",
        "3 load generators with a multi-turn dataset: a conversation's turns run in one load generator",
        "drop bench.workers (a conversation's turns are not dealt to several processes yet), "
        "or drop bench.dataset.multi_turn",
        ["--workers", "3", "--concurrency", "8", "--multi-turn"],
        "--workers",
        "drop --workers (a conversation's turns are not dealt to several processes yet), or drop --multi-turn",
        id="multi-turn-workers",
    ),
    pytest.param(
        "  workers: 4\n  concurrency: [2, 8]\n" + RANDOM,
        "5:12",
        "bench.workers",
        "4 load generators for concurrency 2: each needs at least one request in flight",
        "fewer bench.workers, or bench.concurrency 4 or more",
        ["--workers", "4", "--concurrency", "2"],
        "--workers",
        "fewer --workers, or --concurrency 4 or more",
        id="concurrency",
    ),
    pytest.param(
        "  request_rate: [1, 5]\n  dataset: {kind: random, input_len: 8, output_len: 8, multi_turn: true}\n",
        "5:3",
        "bench.request_rate",
        "a multi-turn dataset sends each conversation's next turn when its answer has ended (a closed loop)",
        "drop bench.request_rate, or bench.dataset.multi_turn",
        ["--request-rate", "5", "--multi-turn"],
        "--request-rate",
        "drop --request-rate, or --multi-turn",
        id="rate-multi-turn",
    ),
    pytest.param(
        "  num_prompts: 999999\n  warmup: 2\n" + RANDOM,
        "6:11",
        "bench.warmup",
        "999,999 prompts + 2 warm-up is more than 1,000,000",
        "every prompt is built in memory before the clock starts: fewer prompts (bench.max_seconds caps the duration)",
        ["--num-prompts", "999999", "--warmup", "2"],
        "--warmup",
        "every prompt is built in memory before the clock starts: fewer prompts (--max-seconds caps the duration)",
        id="prompts-and-warmup",
    ),
]


@pytest.mark.parametrize(("bench", "where", "key", "message", "hint", "argv", "option", "cli_hint"), SAME)
def test_a_recipe_and_the_cli_refuse_the_same_bench_in_the_same_words(
    tmp_path: Path, given: list[BenchConfig], capsys, bench, where, key, message, hint, argv, option, cli_hint
) -> None:
    assert _parts(_line(tmp_path, "bench:\n" + bench)) == (where, key, message, hint)
    assert main([*BASE, *argv]) == UsageError.exit_code == 2
    assert capsys.readouterr().err == f"error: {option}: {message} (hint: {cli_hint})\n"
    assert given == []  # refused where the options are read: no bench started


def test_what_the_rules_allow_loads_and_benches(tmp_path: Path, given: list[BenchConfig]) -> None:
    ok = [
        "  num_prompts: 4\n  workers: 4\n  concurrency: 4\n",  # one prompt and one request each
        "  num_prompts: 2\n  concurrency: 8\n  worker_hosts: [a, b]\n",
        "  num_prompts: 1\n  concurrency: 64\n",  # concurrency above the prompts: as given (docs/bench.md)
        "  num_prompts: 999999\n  warmup: 1\n",
        "  request_rate: 5\n  workers: 2\n  concurrency: 2\n  num_prompts: 2\n",  # rate mode with workers
        "  warmup: 10\n  num_prompts: 2\n",  # more warm-up than prompts: distinct prompts, any number
    ]
    for bench in ok:
        path = tmp_path / "w.yaml"
        path.write_text(HEAD + "bench:\n" + bench + RANDOM, encoding="utf-8")
        load_recipe(path)
    # vllm bench serve builds its own sample (no in-memory cap of ours) and ignores multi-turn
    path.write_text(HEAD + "bench:\n  client: vllm\n  num_prompts: 10000000\n  warmup: 5\n" + RANDOM, encoding="utf-8")
    load_recipe(path)
    path.write_text(
        HEAD + "bench:\n  client: vllm\n  request_rate: 5\n"
        "  dataset: {kind: random, input_len: 8, output_len: 8, multi_turn: true}\n",
        encoding="utf-8",
    )
    load_recipe(path)
    for argv in (["--num-prompts", "4", "--workers", "4", "--concurrency", "4"], ["--request-rate", "5"]):
        assert main([*BASE, *argv]) == BenchError.exit_code  # reached the (stopped) bench
    assert [c.num_prompts for c in given] == [4, 1000]


def test_the_rule_counts_each_bound_once() -> None:
    # the defaults: one load generator, one prompt, one request in flight, no warm-up (all allowed)
    assert Load() == Load(1, 1, 1, 0, False, False, False)
    check_load(Load(), CLI)
    check_load(Load(generators=3, num_prompts=3, concurrency=3), RECIPE)
    check_load(Load(num_prompts=MAX_CLIENT_PROMPTS), CLI)
    check_load(Load(num_prompts=MAX_CLIENT_PROMPTS - 5, warmup=5), CLI)
    check_load(Load(generators=1, multi_turn=True), CLI)
    check_load(Load(rate=True, generators=2, num_prompts=2, concurrency=2), CLI)
    refusals = [
        (Load(generators=4, num_prompts=3, concurrency=4), "num_prompts", "3 prompts for 4 load generators"),
        (Load(generators=4, num_prompts=4, concurrency=3), "workers", "4 load generators for concurrency 3"),
        (Load(generators=2, num_prompts=2, concurrency=1, on_hosts=True), "hosts", "2 load generators for"),
        (Load(generators=2, num_prompts=9, concurrency=9, multi_turn=True), "workers", "2 load generators with a"),
        (Load(rate=True, multi_turn=True), "request_rate", "a multi-turn dataset sends"),
        (Load(num_prompts=MAX_CLIENT_PROMPTS + 1), "num_prompts", "1,000,001 prompts is more than 1,000,000"),
        (Load(num_prompts=MAX_CLIENT_PROMPTS, warmup=1), "warmup", "1,000,000 prompts + 1 warm-up is more"),
    ]
    for load, key, words in refusals:
        with pytest.raises(LoadRuleError) as e:
            check_load(load, CLI)
        assert e.value.key == key and e.value.message.startswith(words) and str(e.value) == e.value.message
        assert getattr(CLI, key).startswith("--") and getattr(RECIPE, key).startswith("bench.")


def test_the_client_itself_refuses_them_at_the_option_too() -> None:
    """A BenchConfig built in Python (a run's bench) is held to the same rules by its own check."""
    cases = [
        ({"num_prompts": 2, "workers": 4, "concurrency": 8}, "--num-prompts", "2 prompts for 4 load generators"),
        ({"request_rate": 5.0, "multi_turn": True}, "--request-rate", "a multi-turn dataset sends"),
        ({"num_prompts": 999_999, "warmup": 2}, "--warmup", "999,999 prompts + 2 warm-up"),
    ]
    for fields, option, words in cases:
        with pytest.raises(BenchError) as e:
            BenchConfig(base_url="http://h:1", model="m", **fields).check()  # type: ignore[arg-type]
        assert e.value.location == option and e.value.message.startswith(words)


# Every error the schema's own validators word (autobench.recipe.schema: _located, ValueError),
# one recipe each: the label of the key is said once, before the message.
SCHEMA_ERRORS = [
    "bench:\n  workers: 3\n  worker_hosts: [a, b]\n",
    "bench:\n  workers: 2\n  client: vllm\n",
    "bench:\n  worker_hosts: [a]\n  client: vllm\n",
    "bench:\n  workers: 4\n  concurrency: 2\n",
    "bench:\n  concurrency: 2\n  worker_hosts: [a, b, c]\n",
    "bench:\n  workers: 2\n  dataset: {multi_turn: true}\n",
    "bench:\n  worker_hosts: [a, b]\n  dataset: {multi_turn: true}\n",
    "bench:\n  num_prompts: 2\n  workers: 4\n",
    "bench:\n  request_rate: 5\n  dataset: {multi_turn: true}\n",
    "bench:\n  num_prompts: 1000000\n  warmup: 1\n",
    "bench:\n  worker_hosts: ['-oX']\n",
    "bench:\n  worker_hosts: gpu1\n",
    "bench:\n  worker_hosts: nodes\n",
    "bench:\n  worker_hosts: [a]\n  worker_python: ' '\n",
    TWO_NODES + "bench:\n  worker_hosts: nodes\n  workers: 3\n",
    TWO_NODES + "bench:\n  worker_hosts: nodes\n  concurrency: 1\n",
    TWO_NODES + "bench:\n  worker_hosts: nodes\n  num_prompts: 1\n",
    "bench:\n  dataset: {kind: random, input_len: 8, output_len: 8, category: code}\n",
    "bench:\n  dataset: {kind: random, path: /x}\n",
    "bench:\n  dataset: {shared_prefix: {prompts: 2}}\n",
    "bench:\n  dataset: {kind: jsonl, path: /x, fields: {category: c}}\n",
    "bench:\n  concurrency: []\n",
    "bench:\n  concurrency: [1, 1]\n",
    "bench:\n  dataset: {category: [a, a]}\n",
    "bench:\n  slo: {}\n",
    "bench:\n  concurrency: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n  repeat: 100\n  request_rate: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n",
    "launch:\n  setup: [{run: x, mod: y}]\n",
    "container: {image: '--volume=/:/host'}\n",
]


@pytest.mark.parametrize("text", SCHEMA_ERRORS)
def test_no_error_line_repeats_its_keys_label(tmp_path: Path, text: str) -> None:
    path = tmp_path / "w.yaml"
    head = HEAD.split("container:")[0] if text.startswith("container") else HEAD  # the image is the case
    path.write_text(head + text, encoding="utf-8")
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    _, label, message, _ = _parts(str(e.value))
    leaf = re.sub(r"\[\d+\]$", "", label).rsplit(".", 1)[-1]
    first = message.split(" ", 1)[0].rstrip(":")
    assert not message.startswith((label, "Value error")), str(e.value)
    assert first not in (label, leaf, f"bench.{leaf}"), str(e.value)


def test_a_context_the_bench_cannot_build_is_refused_when_the_recipe_loads(tmp_path: Path) -> None:
    """bench.dataset.depth and shared_prefix.length stop at the bench's own 10,000,000 tokens
    (autobench.recipe.bounds.MAX_CONTEXT_TOKENS); before, 2^24 passed validation and the bench
    refused it when it ran."""
    from autobench.bench.workload import MAX_CONTEXT_TOKENS
    from autobench.recipe.bounds import MAX_CONTEXT_TOKENS as BOUND

    assert MAX_CONTEXT_TOKENS == BOUND == 10_000_000
    for dataset, where in [
        ("{kind: random, input_len: 8, output_len: 8, depth: 10000001}", "bench.dataset.depth"),
        ("{kind: random, input_len: 8, output_len: 8, depth: [0, 10000001]}", "bench.dataset.depth[1]"),
        (
            "{kind: random, input_len: 8, output_len: 8, shared_prefix: {prompts: 2, length: 10000001}}",
            "bench.dataset.shared_prefix.length",
        ),
    ]:
        line = _line(tmp_path, f"bench:\n  dataset: {dataset}\n")
        assert f" {where}: 10000001 is above the maximum 10000000" in line
    path = tmp_path / "w.yaml"
    path.write_text(HEAD + "bench:\n  dataset: {kind: random, input_len: 8, output_len: 8, depth: 10000000}\n")
    load_recipe(path)


@pytest.mark.parametrize(
    ("bench", "where", "message"),
    [
        ("  concurrency: 100001\n", "bench.concurrency", "100001 is above the maximum 100000"),
        ("  concurrency: [1, 100001]\n", "bench.concurrency[1]", "100001 is above the maximum 100000"),
        ("  request_rate: [0.5, 2000000]\n", "bench.request_rate[1]", "2000000 is above the maximum 1000000.0"),
        ("  dataset: {depth: 12000000}\n", "bench.dataset.depth", "12000000 is above the maximum 10000000"),
    ],
)
def test_a_grid_axis_out_of_bounds_is_one_problem_not_one_per_union_branch(
    tmp_path: Path, bench: str, where: str, message: str
) -> None:
    """One value or a list: before, the branch it is not written as added its own problem, first
    for a list ("bench.concurrency: Input should be a valid integer"), second for a value ("Input
    should be a valid list")."""
    path = tmp_path / "w.yaml"
    path.write_text(HEAD + "bench:\n" + bench, encoding="utf-8")
    with pytest.raises(RecipeError) as e:
        load_recipe(path)
    problems = e.value.problems  # type: ignore[attr-defined]
    assert [(key, text) for _, key, text, _ in problems] == [(where, f"{where}: {message}")]


def test_validate_json_gives_a_schema_errors_key_in_its_field(tmp_path: Path, capsys) -> None:
    """`validate --format json`: the key of a schema error in `key` (it was "", the key only in the
    message), the message without it; the text line is as before, the key said once."""
    import json

    path = tmp_path / "w.yaml"
    path.write_text(HEAD + "bench:\n  num_prompts: 2\n  workers: 4\n  concurrency: 8\n" + RANDOM, encoding="utf-8")
    assert main(["validate", "--format", "json", str(path)]) == 2
    (finding,) = json.loads(capsys.readouterr().out)["files"][0]["findings"]
    assert (finding["code"], finding["key"], finding["line"], finding["col"]) == ("AB000", "bench.num_prompts", 5, 16)
    assert finding["message"] == "2 prompts for 4 load generators: each needs at least one prompt"
    assert main(["validate", str(path)]) == 2
    out = capsys.readouterr().out
    assert f"{path}:5:16: AB000 error: bench.num_prompts: 2 prompts for 4 load generators:" in out

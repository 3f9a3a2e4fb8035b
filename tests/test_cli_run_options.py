"""`autobench run` and `autobench experiment run` take the same run options (declared once,
autobench.cli.run_options) and hand every one to the run pipeline; an experiment's Slurm array
tasks pass each on to the `autobench run` they call.  In-process: `autobench.run.run_recipe` is
replaced by a recorder (what is tested is what reaches it), the experiment's boot prediction by
"ready" (no Hub)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace

import click
import pytest

import autobench.experiment.plan as experiment_plan
import autobench.run as run_package
from autobench.cli import main
from autobench.cli.experiment_cmds import experiment
from autobench.cli.run_cmds import run
from autobench.cli.run_options import SPECS
from autobench.experiment.array import run_args
from autobench.run.outcome import RunOptions

RECIPE = """\
name: opts
model: {repo: org/model, served_name: m}
container: {image: vllm/vllm-openai:v0.11.0, ports: ["8000:8000"]}
engine: {max_model_len: 4096}
bench:
  dataset: {kind: random, input_len: 16, output_len: 64}
  num_prompts: 10
"""

#: Every run option with a value that is not its default: (its words, the RunOptions field, the value).
WORDS = {
    "runtime": (["--runtime", "process"], "runtime", "process"),
    "partition": (["--partition", "gpu"], "partition", "gpu"),
    "gpus_per_node": (["--gpus-per-node", "2"], "gpus_per_node", 2),
    "gpu_request": (["--gpu-request", "gres"], "gpu_request", "gres"),
    "account": (["--account", "team"], "account", "team"),
    "time_limit": (["--time", "1:00:00"], "time_limit", "1:00:00"),
    "container": (["--container", "docker"], "container", "docker"),
    "vllm_exec": (["--vllm-exec", "/opt/vllm"], "vllm_exec", "/opt/vllm"),
    "ledger_url": (["--ledger", "LEDGER"], "ledger", "LEDGER"),
    "runs_dir": (["--runs-dir", "RUNS"], "runs_dir", "RUNS"),
    "allow_unpinned": (["--allow-unpinned"], "allow_unpinned", True),
    "ready_timeout_s": (["--ready-timeout", "90"], "ready_timeout_s", 90.0),
    "grace_s": (["--grace", "3.5"], "grace_s", 3.5),
    "pull": (["--pull"], "pull", True),
    "force": (["--force"], "force", True),
    "vllm_version": (["--vllm-version", "0.11.0"], "vllm_version", "0.11.0"),
    "hosts": (["--hosts", "head, w1"], "hosts", ("head", "w1")),
    "remote": (["--remote", "ssh -p 2222"], "remote", "ssh -p 2222"),
    "profile": (["--profile", "PROFILE"], "profile", "PROFILE"),
    "require_tokenizer": (["--require-tokenizer"], "require_tokenizer", True),
}

#: What an experiment's Slurm array sets for the whole job (sbatch resources, the ledger the
#: script names, the node runtime) rather than passing on to each task's `autobench run`.
JOB_LEVEL = {"runtime", "partition", "gpus_per_node", "gpu_request", "account", "time_limit", "container"}
JOB_LEVEL |= {"ledger", "hosts", "remote"}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A recipe and an experiment over it; run_recipe records the options it is given."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUTOBENCH_LEDGER", raising=False)
    (tmp_path / "r.yaml").write_text(RECIPE, encoding="utf-8")
    (tmp_path / "exp.yaml").write_text("recipe: r.yaml\nfactors:\n  engine.max_num_seqs: [8, 16]\n", encoding="utf-8")
    given: list[RunOptions] = []

    def run_recipe(recipe: object, options: RunOptions, echo: object = None) -> SimpleNamespace:
        given.append(options)
        return SimpleNamespace(
            status="DONE", display_id=None, run_uid=None, exit_code=0, to_json_dict=lambda: {"status": "DONE"}
        )

    monkeypatch.setattr(run_package, "run_recipe", run_recipe)
    monkeypatch.setattr(experiment_plan, "preflight_predictor", lambda *a, **k: lambda loaded: ("ready", None, None))
    return SimpleNamespace(path=tmp_path, given=given)


COMMANDS = {"run": ["run", "r.yaml", "--json"], "experiment run": ["experiment", "run", "exp.yaml", "--json"]}


def _words(world: SimpleNamespace, names: Iterable[str] = WORDS) -> tuple[list[str], dict[str, object]]:
    """The words giving each named option its value in ``world``, and the RunOptions expected."""
    here = {"LEDGER": str(world.path / "ledger.db"), "RUNS": str(world.path / "runs"), "PROFILE": "p.yaml"}
    argv: list[str] = []
    expected: dict[str, object] = {}
    for name in names:
        words, field, value = WORDS[name]
        argv += [here.get(w, w) for w in words]
        expected[field] = here.get(value, value) if isinstance(value, str) else value
    return argv, expected


def test_the_table_names_every_run_option_and_each_fills_a_field() -> None:
    fields = {f.name for f in dataclasses.fields(RunOptions)}
    assert {spec.name for spec in SPECS} == set(WORDS)
    assert {field for _, field, _ in WORDS.values()} <= fields


def test_both_commands_declare_each_run_option_alike() -> None:
    cmd_exp = experiment.commands["run"]
    for spec in SPECS:
        mine = [next(p for p in cmd.params if p.name == spec.name) for cmd in (run, cmd_exp)]
        assert all(isinstance(p, click.Option) for p in mine)
        a, b = mine
        assert (a.opts, a.default, repr(a.type), a.is_flag, a.envvar) == (
            b.opts,
            b.default,
            repr(b.type),
            b.is_flag,
            b.envvar,
        ), spec.name


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_run_option_reaches_the_run_pipeline(world: SimpleNamespace, command: str) -> None:
    words, expected = _words(world)
    assert main([*COMMANDS[command], *words]) == 0
    assert world.given, "run_recipe was not called"
    for options in world.given:  # one per treatment for the experiment
        assert {f: getattr(options, f) for f in expected} == expected


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_without_options_both_commands_run_with_the_defaults(world: SimpleNamespace, command: str) -> None:
    assert main(COMMANDS[command]) == 0
    assert world.given, "run_recipe was not called"
    for options in world.given:
        # the experiment's treatments print plain progress lines (their output interleaves)
        assert dataclasses.replace(options, live=None) == RunOptions()
        assert options.live is (False if command == "experiment run" else None)


def test_an_array_task_passes_every_run_option_on_to_its_run(world: SimpleNamespace) -> None:
    """What an experiment's Slurm task runs: `autobench run FILE --ledger ... <run_args>`, whose
    options (parsed by `run` itself) equal the experiment's, but for the job-level ones."""
    _, values = _words(world)
    values["profile"] = str(world.path / "p.yaml")  # a task resolves it on the node: absolute
    asked = RunOptions(**values)  # type: ignore[arg-type]
    assert main(["run", "r.yaml", "--json", *run_args(asked)]) == 0
    (got,) = world.given
    passed = {f.name for f in dataclasses.fields(RunOptions)} & set(values) - JOB_LEVEL
    assert passed, "nothing checked"
    assert {f: getattr(got, f) for f in passed} == {f: getattr(asked, f) for f in passed}
    assert got.live is False and got.runtime == "docker"  # --container docker: the node runs docker


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_both_commands_refuse_and_take_the_same_edge_values(world: SimpleNamespace, command: str) -> None:
    (world.path / "a-file").write_text("", encoding="utf-8")
    (world.path / "a-dir").mkdir()
    taken = ["--gpus-per-node", "0", "--ready-timeout", "0.5", "--grace", "0.5", "--profile", "p.yaml"]
    assert main([*COMMANDS[command], *taken]) == 0
    options = world.given[-1]
    assert (options.gpus_per_node, options.ready_timeout_s, options.grace_s) == (0, 0.5, 0.5)
    for words in (["--ready-timeout", "0"], ["--runs-dir", "a-file"], ["--profile", "a-dir"], ["--grace", "-1"]):
        before = len(world.given)
        assert main([*COMMANDS[command], *words]) == 2, words
        assert len(world.given) == before, words


def test_a_help_for_an_option_not_in_the_group_is_a_mistake() -> None:
    from autobench.cli.run_options import run_options

    with pytest.raises(ValueError, match=r"help for options not in the group: \['grace'\]"):
        run_options(grace="seconds")
    assert callable(run_options(grace_s="seconds"))


def test_replay_run_takes_the_run_options_a_replay_can_change(world: SimpleNamespace, monkeypatch) -> None:
    """`replay RUN --run` declares its run options from the same table (a subset); each reaches
    the replay, on the runtime given (else the one the run used)."""
    import autobench.run.replay as replay_module

    recipe = Path(__file__).resolve().parent.parent / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
    ledger = str(world.path / "ledger.db")
    assert main(["record", str(recipe), "--status", "DONE", "--ledger", ledger]) == 0
    seen: list[RunOptions] = []

    def replay_run(rec: object, options: RunOptions, **_: object) -> SimpleNamespace:
        seen.append(options)
        return SimpleNamespace(run_id=None, exit_code=0, to_json_dict=lambda: {"status": "DONE"})

    monkeypatch.setattr(replay_module, "replay_run", replay_run)
    names = ("vllm_exec", "ledger_url", "runs_dir", "ready_timeout_s", "grace_s", "pull", "force")
    words, expected = _words(world, names)
    assert main(["replay", "1", "--run", "--json", *words]) == 0
    (options,) = seen
    assert {f: getattr(options, f) for f in expected} == expected and options.runtime == "docker"
    assert main(["replay", "1", "--run", "--json", "--ledger", ledger, "--runtime", "process"]) == 0
    assert dataclasses.replace(seen[1], runtime="docker", ledger=None) == RunOptions()
    assert seen[1].runtime == "process" and seen[1].ledger == ledger
    with pytest.raises(ValueError, match=r"not run options: \['grace'\]"):
        from autobench.cli.run_options import run_options

        run_options(only=("grace",))

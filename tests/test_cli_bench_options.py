"""`autobench bench`'s options are declared once (autobench.cli.bench_options), each named as the
BenchConfig field it fills: what is given reaches the config, parsed; nothing given is the
config's own default.  In-process: `run_bench` is replaced by a recorder that stops the bench
(what is tested is the config the command builds)."""

from __future__ import annotations

import dataclasses

import pytest

from autobench.bench.client import BenchConfig
from autobench.bench.records import FieldMap
from autobench.bench.workload import SharedPrefix
from autobench.cli import main
from autobench.cli.bench_options import DATASET, SPECS
from autobench.compile.cluster import DEFAULT_REMOTE
from autobench.errors import BenchError

BASE = ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m"]
SHA = "ab" * 32


@pytest.fixture
def given(bench_configs: list[BenchConfig]) -> list[BenchConfig]:
    return bench_configs


def test_every_option_is_named_as_a_config_field() -> None:
    fields = {f.name for f in dataclasses.fields(BenchConfig)}
    names = [spec.name for spec in SPECS]
    assert set(names) <= fields and len(names) == len(set(names))
    assert {spec.name for spec in DATASET} == {n for n in names if n.startswith("dataset")}


def test_nothing_given_is_the_configs_defaults(given: list[BenchConfig], capsys, monkeypatch) -> None:
    monkeypatch.delenv("AUTOBENCH_REMOTE", raising=False)
    assert main(BASE) == BenchError.exit_code
    # the one default the command resolves: how load generators reach --worker-host hosts
    # (--remote, else AUTOBENCH_REMOTE, else the cluster runtime's ssh)
    defaults = BenchConfig(base_url="http://127.0.0.1:9", model="m", num_prompts=1000, remote=DEFAULT_REMOTE)
    assert given == [defaults]
    assert "stopped by the test" in capsys.readouterr().err


def test_the_dataset_options_reach_the_config_parsed(given: list[BenchConfig]) -> None:
    argv = [*BASE, "--dataset-kind", "jsonl", "--dataset-repo", "org/prompts", "--dataset-file", "d/t.jsonl"]
    argv += ["--dataset-revision", "c" * 40, "--dataset-sha256", SHA]
    argv += ["--dataset-field", "prompt=question", "--dataset-field", "category=task"]
    argv += ["--shared-prefix", "8:512", "--slo", "ttft=200,tpot=50", "--concurrency", "4"]
    main(argv)
    (config,) = given
    assert (config.dataset_kind, config.dataset, config.dataset_repo, config.dataset_file) == (
        "jsonl",
        None,
        "org/prompts",
        "d/t.jsonl",
    )
    assert (config.dataset_revision, config.dataset_sha256) == ("c" * 40, SHA)
    assert config.dataset_fields == FieldMap(prompt="question", category="task")
    assert config.shared_prefix == SharedPrefix(8, 512)
    assert config.slo == {"ttft": 200.0, "tpot": 50.0} and config.concurrency == 4


def test_a_local_dataset_file_is_the_dataset_field(given: list[BenchConfig], tmp_path) -> None:
    main([*BASE, "--dataset", str(tmp_path / "p.jsonl")])
    assert given[0].dataset == str(tmp_path / "p.jsonl") and given[0].dataset_repo is None


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--dataset-sha256", "ABC"], "is not a sha256"),
        (["--dataset-sha256", "AB" * 32], "--dataset-sha256"),  # 64 characters, upper case
        (["--dataset-field", "prompt"], "is not ROLE=NAME"),
        (["--dataset-field", "prompt="], "--dataset-field"),
        (["--dataset-field", "prompt=a", "--dataset-field", "prompt=b"], "each once"),
        (["--shared-prefix", "x"], "is not N:L or N"),
        (["--slo", "fast=1"], "is not KEY=MS"),
    ],
)
def test_a_bad_value_is_one_line_and_no_bench(given: list[BenchConfig], capsys, words, said) -> None:
    code = main([*BASE, *words])
    err = capsys.readouterr().err
    assert code != 0 and said in err and "Traceback" not in err
    assert given == []


def test_every_role_of_a_dataset_field(given: list[BenchConfig]) -> None:
    main([*BASE, "--dataset-field", "turns=conv", "--dataset-field", "max_tokens=cap"])
    assert given[0].dataset_fields == FieldMap(turns="conv", max_tokens="cap")

"""Designs -> treatments (pure): full factorial in the order written, exclusions, an explicit
list, a seeded random subset, the maximum; and every bad experiment file as one located line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.errors import RecipeError
from autobench.experiment import load_experiment, treatments

RECIPE = """\
name: small
model:
  repo: org/model
  revision: 0123456789abcdef0123456789abcdef01234567
speculative:
  method: ngram
  num_speculative_tokens: 3
  options: {prompt_lookup_max: 4}
container:
  image: vllm/vllm-openai:v0.11.0
  ports: ["8000:8000"]
engine:
  max_num_seqs: 8
bench:
  dataset: {kind: random, input_len: 64, output_len: 32}
  num_prompts: 16
"""


def write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "r.yaml").write_text(RECIPE, encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text("recipe: r.yaml\n" + body, encoding="utf-8")
    return path


def labels(path: Path) -> list[str]:
    return [t.label() for t in treatments(load_experiment(path))]


def test_full_design_is_the_product_in_the_order_written_less_the_exclusions(tmp_path) -> None:
    path = write(
        tmp_path,
        "factors:\n  speculative.num_speculative_tokens: [1, 2, 3]\n  engine.max_num_seqs: [8, 32]\n"
        "exclude:\n  - {speculative.num_speculative_tokens: 3, engine.max_num_seqs: 32}\n",
    )
    assert labels(path) == [
        "num_speculative_tokens=1 max_num_seqs=8",
        "num_speculative_tokens=1 max_num_seqs=32",
        "num_speculative_tokens=2 max_num_seqs=8",
        "num_speculative_tokens=2 max_num_seqs=32",
        "num_speculative_tokens=3 max_num_seqs=8",
    ]
    assert [t.id for t in treatments(load_experiment(path))] == ["t1", "t2", "t3", "t4", "t5"]


def test_an_exclusion_of_one_factor_removes_every_treatment_at_that_level(tmp_path) -> None:
    path = write(
        tmp_path,
        "factors:\n  speculative.num_speculative_tokens: [1, 2]\n  engine.max_num_seqs: [8, 32]\n"
        "exclude:\n  - {engine.max_num_seqs: 32}\n",
    )
    assert labels(path) == ["num_speculative_tokens=1 max_num_seqs=8", "num_speculative_tokens=2 max_num_seqs=8"]


def test_list_design_keeps_the_treatments_as_written(tmp_path) -> None:
    path = write(
        tmp_path,
        "design: list\ntreatments:\n  - {engine.max_num_seqs: 16}\n  - {engine.max_num_seqs: 4, env.VLLM_X: '1'}\n",
    )
    assert labels(path) == ["max_num_seqs=16", "max_num_seqs=4 VLLM_X=1"]


def test_random_design_is_a_seeded_subset_in_design_order(tmp_path) -> None:
    body = "factors:\n  speculative.num_speculative_tokens: [1, 2, 3, 4, 5, 6, 7, 8]\n  engine.max_num_seqs: [1, 2, 4, 8, 16]\n"
    a = labels(write(tmp_path, body + "design: random\nsample: {size: 6, seed: 7}\n"))
    b = labels(write(tmp_path, body + "design: random\nsample: {size: 6, seed: 7}\n"))
    c = labels(write(tmp_path, body + "design: random\nsample: {size: 6, seed: 8}\n"))
    full = labels(write(tmp_path, body))
    assert a == b and a != c and len(a) == 6 and len(set(a)) == 6
    assert a == [x for x in full if x in a]  # design order
    # the whole design, sampled: every treatment once
    assert sorted(labels(write(tmp_path, body + "design: random\nsample: {size: 40, seed: 1}\n"))) == sorted(full)


def test_a_huge_design_is_refused_at_once_without_being_built(tmp_path) -> None:
    levels = "[" + ", ".join(str(i) for i in range(1, 1001)) + "]"
    path = write(
        tmp_path,
        f"factors:\n  engine.max_num_seqs: {levels}\n  engine.max_num_batched_tokens: {levels}\n"
        f"  speculative.num_speculative_tokens: {levels}\n",
    )
    with pytest.raises(RecipeError) as info:
        treatments(load_experiment(path))
    assert str(info.value).startswith(
        f"{path}:2:1: the design has 1,000,000,000 treatments, more than max_treatments 1,000"
    )


# ------------------------------------------------------------------------------ bad input

BAD = [
    # (experiment body, line:col, message)
    (
        "factors:\n  engine.max_num_seq: [1, 2]\n",
        "3:3",
        "factors.engine.max_num_seq: engine has no key 'max_num_seq' (did you mean 'max_num_seqs'?)",
    ),
    (
        "factors:\n  speculative.num_speculative_tokens: [1, two]\n",
        "3:43",
        "treatment t2 (num_speculative_tokens=two): speculative.num_speculative_tokens",
    ),
    (
        "factors:\n  speculative.num_speculative_tokens: [1, 0]\n",
        "3:43",
        "treatment t2 (num_speculative_tokens=0): speculative.num_speculative_tokens",
    ),
    ("factors: {}\n", "2:1", "factors: the design is empty (no factor has levels)"),
    ("factors:\n  engine.max_num_seqs: []\n", "3:3", "factors.engine.max_num_seqs: needs a list of one or more levels"),
    (
        "factors:\n  engine.max_num_seqs: [8]\nexclude:\n  - {engine.max_num_batched_tokens: 8}\n",
        "5:6",
        "exclude[0].engine.max_num_batched_tokens: not a factor of this experiment",
    ),
    (
        "factors:\n  engine.max_num_seqs: [8]\nexclude:\n  - {engine.max_num_seqs: 9}\n",
        "5:27",
        "exclude[0].engine.max_num_seqs: 9 is not one of its levels",
    ),
    (
        "factors:\n  engine.max_num_seqs: [1, 2, 3]\nmax_treatments: 2\n",
        "4:1",
        "the design has 3 treatments, more than max_treatments 2",
    ),
    ("factors:\n  name: [a, b]\n", "3:3", "factors.name: name cannot be a factor (a treatment is one recipe cell)"),
    ("factors:\n  engine.max_num_seqs: [8, 8]\n", "3:28", "factors.engine.max_num_seqs[1]: level 8 is listed twice"),
    ("factor:\n  engine.max_num_seqs: [8]\n", "2:1", "factor: not an experiment key (did you mean 'factors'?)"),
    ("design: list\n", "2:1", "design: list needs `treatments:`, a list of them"),
    (
        "factors:\n  engine.max_num_seqs: [8]\ndesign: random\n",
        "4:1",
        "design: random needs `sample: {size: N, seed: S}`",
    ),
    (
        "factors:\n  engine.max_num_seqs: [8, 16]\ndesign: random\nsample: {size: 3}\n",
        "5:16",
        "sample.size 3: the design has only 2 treatments left to sample",
    ),
    (
        "factors:\n  engine.max_num_seqs: [8, 16]\ndesign: random\nsample: {size: 2}\nexclude: [{engine.max_num_seqs: 8}]\n",
        "5:16",
        "sample.size 2: the design has only 1 treatments left to sample after its exclusions",
    ),
    (
        "factors:\n  engine.max_num_seqs: [1, 2, 3, 4]\nmax_treatments: 2\nexclude: [{engine.max_num_seqs: 1}]\n",
        "4:1",
        "the design has up to 4 treatments, more than max_treatments 2",
    ),
    (
        "design: list\ntreatments: [{engine.max_num_seqs: 8}, {engine.max_num_seqs: 9}, {engine.max_num_seqs: 10}]\n"
        "max_treatments: 2\n",
        "4:1",
        "the design has 3 treatments, more than max_treatments 2",
    ),
    ("factors:\n  env.A.B: [x]\n", "3:3", "factors.env.A.B: env.A has no keys below it"),
    (
        "factors:\n  engine.max_num_seqs: [8, 16]\nexclude: [{engine.max_num_seqs: 8}, {engine.max_num_seqs: 16}]\n",
        "4:1",
        "the design is empty: its exclusions leave no treatment",
    ),
    (
        "design: list\ntreatments: [{engine.max_num_seqs: 8}]\nfactors: {engine.max_num_seqs: [8]}\n"
        "exclude: [{engine.max_num_seqs: 8}]\n",
        "5:1",
        "the design is empty: its exclusions leave no treatment",
    ),
    (
        "factors:\n"
        f"  engine.max_num_seqs: [{', '.join(str(i) for i in range(1, 31))}]\n"
        f"  engine.max_num_batched_tokens: [{', '.join(str(i) for i in range(1, 31))}]\n"
        "max_treatments: 1\n"
        f"exclude: [{', '.join(f'{{engine.max_num_batched_tokens: {i}}}' for i in range(1, 30))}]\n",
        "6:1",
        "the design has 900 candidate treatments and its exclusions leave 1 of the first 40: too sparse to plan "
        "(at most 20 x max_treatments are looked at)",
    ),
    (
        "factors:\n  engine.port: [8000, 70000]\n",
        "3:23",
        "treatment t2 (port=70000): engine.port: 70000 is above the maximum 65535",
    ),
]


@pytest.mark.parametrize(("body", "where", "message"), BAD, ids=[b[2][:40] for b in BAD])
def test_a_bad_experiment_is_one_located_line_before_anything_boots(tmp_path, capsys, body, where, message) -> None:
    path = write(tmp_path, body)
    code = main(["experiment", "plan", str(path), "--offline"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {path}:{where}: {message}"), err
    if not message.startswith(("treatment", "factors.engine.max_num_seq:")):  # those go on: the loader's own text
        assert err.startswith(f"error: {path}:{where}: {message} (hint: "), err


def test_a_treatment_that_breaks_a_rule_is_refused_naming_the_treatment(tmp_path, capsys) -> None:
    path = write(tmp_path, "factors:\n  env.HF_TOKEN: [hf_abcdefghijklmnopqrstuvwxyz0123456789]\n")
    code = main(["experiment", "plan", str(path), "--offline"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert "treatment t1" in err and "hf_abcdefghijklmnopqrstuvwxyz0123456789" not in err


def test_a_missing_recipe_is_located_at_the_recipe_key(tmp_path, capsys) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("recipe: nowhere.yaml\nfactors:\n  engine.max_num_seqs: [8]\n")
    code = main(["experiment", "plan", str(path), "--json"])
    _, err = capsys.readouterr()
    assert err == (
        f"error: {path}:1:9: recipe: {tmp_path / 'nowhere.yaml'} is not a recipe file "
        "(hint: the path is relative to the experiment file)\n"
    )
    assert code == 2


def test_plan_json_lists_levels_and_digests(tmp_path, capsys) -> None:
    path = write(tmp_path, "factors:\n  engine.max_num_seqs: [8, 16]\n")
    code = main(["experiment", "plan", str(path), "--offline", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [t["levels"] for t in doc["treatments"]] == [{"engine.max_num_seqs": 8}, {"engine.max_num_seqs": 16}]
    assert all(t["digest"].startswith("sha256:") for t in doc["treatments"])


@pytest.mark.parametrize(
    ("level", "shown"),
    [
        ("6c7242c934a9870d7c59c05240bdbb2467cc1394", "6c7242c"),  # a full sha: its short form
        ("6c7242c934a9870d7c59c05240bdbb2467cc139", "6c7242c934a9870d7c59c05240bdbb2467cc139"),  # 39: not a sha
        ("6c7242c934a9870d7c59c05240bdbb2467cc13944", "6c7242c934a9870d7c59c05240bdbb2467cc13944"),  # 41
        ("main-branch-name-that-is-forty-chars-xx", "main-branch-name-that-is-forty-chars-xx"),
        ("6C7242C934A9870D7C59C05240BDBB2467CC1394", "6C7242C934A9870D7C59C05240BDBB2467CC1394"),  # not lower hex
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (8, "8"),
        (0.9, "0.9"),
        (2.0, "2"),
        ({"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
    ],
)
def test_a_level_is_labelled_short_and_exact(level, shown) -> None:
    from autobench.experiment.design import short

    assert short(level) == shown


def test_a_label_names_a_factor_by_its_last_key_unless_two_share_it(tmp_path) -> None:
    path = write(tmp_path, "factors:\n  engine.max_num_seqs: [8]\n  env.max_num_seqs: ['1']\n  engine.dtype: [half]\n")
    assert labels(path) == ["engine.max_num_seqs=8 env.max_num_seqs=1 dtype=half"]
    empty = write(tmp_path, "design: list\ntreatments:\n  - {engine.max_num_seqs: 8}\n")
    (t,) = treatments(load_experiment(empty))
    assert t.id == "t1" and t.assignment() == {"engine.max_num_seqs": 8}


def test_an_exclusion_keeps_a_listed_treatment_that_does_not_set_its_factor(tmp_path) -> None:
    path = write(
        tmp_path,
        "design: list\nfactors:\n  engine.max_num_seqs: [8, 16]\n"
        "treatments:\n  - {engine.max_num_seqs: 8}\n  - {engine.dtype: half}\n  - {engine.max_num_seqs: 16}\n"
        "exclude:\n  - {engine.max_num_seqs: 8}\n",
    )
    assert labels(path) == ["dtype=half", "max_num_seqs=16"]
    assert [t.id for t in treatments(load_experiment(path))] == ["t1", "t2"]
    exactly = write(tmp_path, "factors:\n  engine.max_num_seqs: [8, 9]\nmax_treatments: 2\n")
    assert labels(exactly) == ["max_num_seqs=8", "max_num_seqs=9"]
    at_most = write(
        tmp_path, "design: list\ntreatments: [{engine.max_num_seqs: 8}, {engine.max_num_seqs: 9}]\nmax_treatments: 2\n"
    )
    assert labels(at_most) == ["max_num_seqs=8", "max_num_seqs=9"]


def test_a_label_names_factors_sharing_a_last_key_by_their_whole_key(tmp_path) -> None:
    path = write(
        tmp_path,
        f"factors:\n  speculative.revision: ['{'a' * 40}']\n  model.revision: ['{'b' * 40}']\n"
        "  engine.max_num_seqs: [8]\n",
    )
    assert labels(path) == ["speculative.revision=aaaaaaa model.revision=bbbbbbb max_num_seqs=8"]


def test_a_full_design_looks_at_exactly_twenty_candidates_per_treatment_allowed(tmp_path) -> None:
    """max_treatments 1: at most (1 + 1) x 20 = 40 excluded candidates are passed over.  The 41st
    candidate kept is a design; the 41st excluded one is refused as too sparse."""
    excluded = "".join(f"  - {{engine.max_num_seqs: {n}}}\n" for n in range(1, 41))
    kept = write(
        tmp_path, f"max_treatments: 1\nfactors:\n  engine.max_num_seqs: {list(range(1, 42))}\nexclude:\n{excluded}"
    )
    assert labels(kept) == ["max_num_seqs=41"]
    one_more = excluded + "  - {engine.max_num_seqs: 41}\n"
    levels = list(range(1, 43))
    sparse = write(tmp_path, f"max_treatments: 1\nfactors:\n  engine.max_num_seqs: {levels}\nexclude:\n{one_more}")
    with pytest.raises(RecipeError) as err:
        treatments(load_experiment(sparse))
    assert err.value.message == (
        "the design has 42 candidate treatments and its exclusions leave 0 of the first 40: too sparse to plan "
        "(at most 20 x max_treatments are looked at)"
    )

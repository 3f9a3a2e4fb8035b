"""`autobench experiment plan`: every treatment a validated, digested recipe; the seed's
BLOCKED draft pruned by the preflight's prediction (real configs from the loopback fake Hub)
before anything boots."""

from __future__ import annotations

import json
from pathlib import Path

import preflight_configs as c
import pytest
from preflight_helpers import seed_recipe

from autobench.cli import main
from autobench.errors import RecipeError
from autobench.experiment import load_experiment, plan_experiment
from autobench.experiment.plan import PRUNED, READY, UNPREDICTED, preflight_predictor
from autobench.recipe import load_recipe


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _seed_experiment(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "r.yaml").write_text(seed_recipe(c.DRAFT_OLD, 5), encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text(
        "recipe: r.yaml\n"
        "factors:\n"
        "  speculative.num_speculative_tokens: [5, 8]\n"
        f"  speculative.revision: [{c.DRAFT_OLD}, {c.DRAFT_NEW}]\n" + extra,
        encoding="utf-8",
    )
    return path


def test_the_seeds_blocked_draft_is_pruned_with_the_page_size_cause(hub, tmp_path, capsys) -> None:
    exp = _seed_experiment(tmp_path)
    code, out, err = _run(capsys, "experiment", "plan", str(exp), "--vllm-version", "0.23.1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    by_label = {t["label"]: t for t in doc["treatments"]}
    assert list(by_label) == [
        "num_speculative_tokens=5 revision=6c7242c",
        "num_speculative_tokens=5 revision=bce6f76",
        "num_speculative_tokens=8 revision=6c7242c",
        "num_speculative_tokens=8 revision=bce6f76",
    ]
    blocked = by_label["num_speculative_tokens=8 revision=bce6f76"]
    assert blocked["status"] == PRUNED and blocked["id"] == "t4"
    assert blocked["cause"].startswith(
        "predicted boot failure on vLLM 0.23.1: AssertionError: assert new_spec.page_size_bytes"
    )
    assert "unify_kv_cache_spec_page_size" in blocked["cause"]
    assert by_label["num_speculative_tokens=5 revision=6c7242c"]["status"] == READY
    assert by_label["num_speculative_tokens=8 revision=6c7242c"]["status"] == READY
    assert (doc["ready"], doc["pruned"], doc["unpredicted"]) == (2, 2, 0)
    assert (doc["experiment"], doc["file"], doc["recipe"], doc["design"]) == (
        "exp",
        str(exp),
        str(tmp_path / "r.yaml"),
        "full",
    )
    assert doc["digest"].startswith("sha256:") and len(doc["treatments"]) == 4
    assert blocked["fix"] and blocked["unpinned"] == [] and blocked["digest"].startswith("sha256:")
    assert blocked["levels"] == {"speculative.num_speculative_tokens": 8, "speculative.revision": c.DRAFT_NEW}
    assert set(blocked) == {"id", "label", "levels", "digest", "status", "cause", "fix", "unpinned"}
    ready = by_label["num_speculative_tokens=5 revision=6c7242c"]
    assert (ready["cause"], ready["fix"]) == (None, None)
    # the human table says the same, one row per treatment
    code, out, _ = _run(capsys, "experiment", "plan", str(exp), "--vllm-version", "0.23.1")
    assert code == 0
    assert "4 treatments: 2 ready, 2 pruned (predicted not to boot), 0 without a prediction" in out


def test_each_treatment_is_the_recipe_with_its_levels_and_digested_like_one(hub, tmp_path) -> None:
    exp = load_experiment(_seed_experiment(tmp_path))
    plan = plan_experiment(exp, predictor=preflight_predictor("0.23.1"))
    t3 = plan.treatments[2]
    assert t3.loaded.recipe.speculative.num_speculative_tokens == 8
    assert t3.loaded.recipe.speculative.revision == c.DRAFT_OLD
    # the same recipe written by hand has the same digest: a treatment is a recipe like any other
    by_hand = tmp_path / "by-hand.yaml"
    by_hand.write_text(seed_recipe(c.DRAFT_OLD, 8), encoding="utf-8")
    assert load_recipe(by_hand).digest == t3.digest
    assert len({t.digest for t in plan.treatments}) == 4
    # the plan's digest is stable, and changes with the definition
    again = plan_experiment(load_experiment(exp.path), predictor=preflight_predictor("0.23.1"))
    assert again.digest == plan.digest
    changed = plan_experiment(
        load_experiment(_seed_experiment(tmp_path, "max_treatments: 10\n")), predictor=preflight_predictor("0.23.1")
    )
    assert changed.digest != plan.digest


def test_a_treatment_without_a_prediction_stays_in_with_the_reason(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing cached: no config to predict from
    exp = _seed_experiment(tmp_path)
    code, out, err = _run(capsys, "experiment", "plan", str(exp), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert {t["status"] for t in doc["treatments"]} == {UNPREDICTED}
    assert all(t["cause"].startswith("preflight: ") for t in doc["treatments"])


def test_a_plan_where_every_treatment_is_pruned_exits_6(hub, tmp_path, capsys) -> None:
    exp = _seed_experiment(tmp_path)
    text = exp.read_text().replace(f"[{c.DRAFT_OLD}, {c.DRAFT_NEW}]", f"[{c.DRAFT_NEW}]")
    exp.write_text(text)
    code, out, _ = _run(capsys, "experiment", "plan", str(exp), "--vllm-version", "0.23.1")
    assert code == 6 and "2 treatments: 0 ready, 2 pruned" in out


def test_the_bench_grid_of_the_experiment_is_every_treatments_grid(tmp_path) -> None:
    exp_path = _seed_experiment(tmp_path, "bench: {concurrency: [1, 8]}\n")
    plan = plan_experiment(load_experiment(exp_path), predictor=lambda loaded: (READY, None, None))
    assert all(t.loaded.recipe.bench.concurrency == [1, 8] for t in plan.treatments)
    # and a recipe position still points into the recipe, a level's into the experiment file
    t1 = plan.treatments[0].loaded
    assert t1.value_position("speculative", "num_speculative_tokens").file == exp_path
    assert t1.position("model", "repo").file == tmp_path / "r.yaml"


def test_treatments_with_the_same_preflight_inputs_share_one_prediction(hub, tmp_path, monkeypatch) -> None:
    """engine.max_num_seqs is not read by the preflight: its 3 levels share each (k, draft)'s
    prediction, computed once; k and the draft change the inputs, so 2 x 2 predictions."""
    import autobench.preflight.predict as predict_module

    calls: list[tuple[int, str]] = []
    real = predict_module.predict

    def counting(name, target, draft, serve, version, opts, **kw):  # type: ignore[no-untyped-def]
        calls.append((serve.num_speculative_tokens, draft.source))
        return real(name, target, draft, serve, version, opts, **kw)

    monkeypatch.setattr(predict_module, "predict", counting)
    exp = load_experiment(_seed_experiment(tmp_path, "  engine.max_num_seqs: [4, 8, 16]\n"))
    plan = plan_experiment(exp, predictor=preflight_predictor("0.23.1"))
    assert len(plan.treatments) == 12
    assert sorted(calls) == sorted(set(calls)) and len(calls) == 4
    # every treatment still has its own answer: the blocked draft is pruned at k 5 and 8 for each max_num_seqs
    statuses = {(t.treatment.label(), t.status) for t in plan.treatments}
    assert {s for label, s in statuses if "revision=bce6f76" in label} == {PRUNED}
    assert {s for label, s in statuses if "revision=6c7242c" in label} == {READY}
    # a new predictor starts afresh: nothing is kept between plans
    plan_experiment(exp, predictor=preflight_predictor("0.23.1"))
    assert len(calls) == 8


def test_the_shared_prediction_keys_on_every_input(tmp_path) -> None:
    """RecipeInputs.key differs when any input differs: the serve options, the version, the
    options, the utilization, either config (by identity), and the name."""
    from dataclasses import replace

    from autobench.preflight.inputs import Loaded, VersionPick
    from autobench.preflight.layout import ServeOptions
    from autobench.preflight.predict import Options, RecipeInputs
    from autobench.preflight.versions import parse_version

    cfg, other = {"a": 1}, {"a": 1}
    base = RecipeInputs(
        "r",
        Loaded(cfg, "org/m@abc1234", None),
        None,
        ServeOptions(max_model_len=4096),
        VersionPick(parse_version("0.23.1"), "--vllm-version"),
        Options(vllm_version="0.23.1"),
        None,
    )
    same = replace(base, opts=Options(vllm_version="0.23.1"), serve=ServeOptions(max_model_len=4096))
    assert same.key() == base.key() and hash(base.key()) == hash(same.key())
    changed = [
        replace(base, name="s"),
        replace(base, target=Loaded(other, "org/m@abc1234", None)),  # an equal dict, another read
        replace(base, target=Loaded(cfg, "org/m@abc1234", 10)),
        replace(base, draft=Loaded(cfg, "org/d@abc1234", None)),
        replace(base, serve=ServeOptions(max_model_len=8192)),
        replace(base, serve=ServeOptions(max_model_len=4096, num_speculative_tokens=3)),
        replace(base, version=VersionPick(parse_version("0.22.0"), "--vllm-version")),
        replace(base, opts=Options(vllm_version="0.23.1", gpu_memory_gib=80.0)),
        replace(base, utilization=0.8),
    ]
    keys = [c.key() for c in changed]
    assert base.key() not in keys and len(set(keys)) == len(keys)


class _Reader:
    """A Hub reader that counts what it is asked (``preflight.inputs.HubReader``)."""

    def __init__(self) -> None:
        self.settings, self.hub = object(), object()
        self.calls: list[tuple[object, ...]] = []

    def sha(self, repo: str, label: str) -> str:
        self.calls.append(("sha", repo, label))
        if repo == "org/down":
            from autobench.errors import HubError

            raise HubError("the fake hub is down")
        return "f" * 40

    def config(self, repo: str, sha: str, *, label: str | None = None) -> dict[str, object]:
        self.calls.append(("config", repo, sha, label))
        return {"repo": repo}

    def file(self, repo: str, sha: str, filename: str, *, label: str | None = None, required: bool = True):  # type: ignore[no-untyped-def]
        self.calls.append(("file", repo, filename, required))
        return None if not required else Path("/weights") / filename


def test_the_memo_asks_for_each_answer_once_and_remembers_errors() -> None:
    from autobench.errors import HubError
    from autobench.experiment.plan import _Memo

    inner = _Reader()
    memo = _Memo(inner)  # type: ignore[arg-type]
    assert memo.settings is inner.settings and memo.hub is inner.hub
    assert memo.sha("org/m", "main") == memo.sha("org/m", "main") == "f" * 40
    first = memo.config("org/m", "f" * 40, label="main")
    assert memo.config("org/m", "f" * 40, label="main") is first  # the same dict: a prediction key by identity
    assert memo.config("org/m", "f" * 40) == {"repo": "org/m"}  # another label: asked again
    assert memo.file("org/m", "s", "index.json", required=False) is None
    assert memo.file("org/m", "s", "index.json", required=False) is None
    assert memo.file("org/m", "s", "index.json") == Path("/weights/index.json")  # required by default
    for _ in range(2):
        with pytest.raises(HubError, match="the fake hub is down"):
            memo.sha("org/down", "main")
    assert inner.calls == [
        ("sha", "org/m", "main"),
        ("config", "org/m", "f" * 40, "main"),
        ("config", "org/m", "f" * 40, None),
        ("file", "org/m", "index.json", False),
        ("file", "org/m", "index.json", True),
        ("sha", "org/down", "main"),
    ]


def test_a_given_reader_is_the_one_asked(tmp_path) -> None:
    (tmp_path / "r.yaml").write_text(seed_recipe(c.DRAFT_OLD, 5).replace(c.BASE_REPO, "org/down"), encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text("recipe: r.yaml\nfactors:\n  speculative.num_speculative_tokens: [5, 8]\n", encoding="utf-8")
    inner = _Reader()
    plan = plan_experiment(load_experiment(path), predictor=preflight_predictor("0.23.1", resolver=inner))  # type: ignore[arg-type]
    assert [(t.status, t.cause) for t in plan.treatments] == [(UNPREDICTED, "preflight: the fake hub is down")] * 2
    assert inner.calls == [("sha", "org/down", c.BASE_SHA)]  # asked once for both treatments


def test_a_prediction_that_cannot_be_made_leaves_the_treatment_in(hub, tmp_path) -> None:
    """The configs are read, but this vLLM's hybrid layout is not encoded: no prediction, each
    treatment stays in with the reason (computed once for the treatments that share inputs)."""
    exp = load_experiment(_seed_experiment(tmp_path))
    plan = plan_experiment(exp, predictor=preflight_predictor("0.10.0"))
    assert {t.status for t in plan.treatments} == {UNPREDICTED}
    causes = {t.cause for t in plan.treatments}
    assert len(causes) == 1
    (cause,) = causes
    assert cause is not None and cause.startswith("preflight: cannot predict: the hybrid (mamba + attention)")


def test_the_plan_digest_is_the_definition_and_each_treatments_digest_canonically(tmp_path) -> None:
    import hashlib

    from autobench.experiment.plan import plan_digest

    path = _seed_experiment(tmp_path, "  env.NOTE: ['é', 'b']\n")
    exp = load_experiment(path)
    plan = plan_experiment(exp, predictor=lambda loaded: (READY, None, None))
    blob = json.dumps(
        {"definition": exp.doc.data, "treatments": [t.digest for t in plan.treatments]},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert '"é"' in blob  # written as itself, not \u00e9
    assert plan.digest == "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()
    assert plan_digest(exp, list(plan.treatments)) == plan.digest


def test_the_rules_are_checked_for_docker_unless_told(tmp_path) -> None:
    """A recipe that publishes no port is an error for docker (AB022) and fine as a process."""
    (tmp_path / "r.yaml").write_text(
        "model: {repo: org/m, served_name: m}\ncontainer: {image: 'vllm/vllm-openai:v0.11.0'}\n"
        "engine: {port: 8000, max_model_len: 4096}\nbench: {dataset: {kind: random}}\n",
        encoding="utf-8",
    )
    path = tmp_path / "exp.yaml"
    path.write_text("recipe: r.yaml\nfactors:\n  engine.max_num_seqs: [4, 8]\n", encoding="utf-8")
    exp = load_experiment(path)
    ready = lambda loaded: (READY, None, None)  # noqa: E731
    with pytest.raises(RecipeError) as err:
        plan_experiment(exp, predictor=ready)
    assert err.value.message == (
        "treatment t1 (max_num_seqs=4): AB022 engine.port: 8000 is not published (container.ports: none)"
    )
    assert err.value.location is not None and err.value.location.endswith("r.yaml:3:16")
    assert len(plan_experiment(exp, predictor=ready, runtime="process").treatments) == 2
    assert len(plan_experiment(exp, predictor=ready, runtime=None).treatments) == 2
    assert len(plan_experiment(exp, predictor=ready, runtime=lambda loaded: "process").treatments) == 2


def test_a_problem_of_the_recipe_itself_is_the_recipes_not_a_treatments(tmp_path) -> None:
    """The recipe as written is loaded first: a key of its own that does not validate is reported
    at its line in the recipe, not as the first treatment's problem."""
    (tmp_path / "r.yaml").write_text(
        "model: {repo: org/m, served_name: m}\nengine: {max_num_seq: 4}\nbench: {dataset: {kind: random}}\n",
        encoding="utf-8",
    )
    path = tmp_path / "exp.yaml"
    path.write_text("recipe: r.yaml\nfactors:\n  engine.max_model_len: [4096]\n", encoding="utf-8")
    with pytest.raises(RecipeError) as err:
        plan_experiment(load_experiment(path), predictor=lambda loaded: (READY, None, None), runtime=None)
    assert not err.value.message.startswith("treatment") and "max_num_seq" in err.value.message
    assert err.value.location is not None and err.value.location.startswith(str(tmp_path / "r.yaml") + ":2:")


def test_without_a_predictor_the_preflight_predicts(hub, tmp_path) -> None:
    exp = load_experiment(_seed_experiment(tmp_path))
    default = plan_experiment(exp)
    told = plan_experiment(exp, predictor=preflight_predictor())
    assert [(t.status, t.cause) for t in default.treatments] == [(t.status, t.cause) for t in told.treatments]
    assert {t.status for t in default.treatments} != {READY}  # the preflight answered, not a stand-in

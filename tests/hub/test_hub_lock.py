"""`autobench lock`: the real huggingface_hub client against the fake Hub on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakehub import BASE_NEW, BASE_OLD, BASE_REPO, DRAFT_NEW, DRAFT_OLD, DRAFT_REPO, FakeHub

from autobench.cli import main
from autobench.recipe.loader import load_recipe


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))  # exit codes come back through click (`outdated --exit-code` -> 1)
    out, err = capsys.readouterr()
    return code, out, err


def test_lock_dflash_pins_model_and_draft_to_full_shas(hub_env: FakeHub, recipes: Path, capsys):
    code, out, err = run(capsys, "lock", str(recipes / "dflash.yaml"))
    assert (code, err) == (0, "")
    base = (recipes / "base.yaml").read_text()
    child = (recipes / "dflash.yaml").read_text()
    # the model key lives in the extends-parent: edited there, comments and layout intact
    assert f"  revision: {BASE_NEW}  # frozen: main\n" in base
    assert "  # left on main on purpose\n" in base and "max_num_seqs: 8   # conc 8\n" in base
    assert '    - "8000:8000"\n' in base
    assert f"  revision: {DRAFT_OLD}  # frozen: main\n" in child
    assert child.startswith("# The DFlash variant: extends the base.\n")
    loaded = load_recipe(recipes / "dflash.yaml")
    assert loaded.recipe.model.revision == BASE_NEW
    assert loaded.recipe.speculative.revision == DRAFT_OLD
    assert "label assumed: main" in out  # the hand-written draft sha had no label

    lock = json.loads((recipes / "dflash.yaml.lock.json").read_text())
    model, draft = lock["references"]["model"], lock["references"]["draft"]
    assert (model["repo"], model["label"], model["sha"], model["file"]) == (BASE_REPO, "main", BASE_NEW, "base.yaml")
    assert (draft["repo"], draft["sha"], draft["label_assumed"]) == (DRAFT_REPO, DRAFT_OLD, True)
    assert draft["fingerprint"]["num_key_value_heads"] == 4 and draft["fingerprint"]["sliding_window"] == 2048
    assert model["fingerprint"]["layer_types"] == {"full_attention": 12, "linear_attention": 36}
    assert model["trust"]["downloads"] == 42785 and model["trust"]["has_chat_template"] is True
    assert model["trust"]["weight_bytes"] == 15 * 4_466_000_000
    assert draft["trust"]["weight_bytes"] == 1_550_000_000 and draft["trust"]["likes"] == 17
    assert draft["resolved_at"].endswith("Z")
    # the real client filled a real on-disk cache
    cache = Path(__import__("os").environ["HF_HOME"]) / "hub"
    assert (cache / f"models--z-lab--Qwen3.5-122B-A10B-DFlash/snapshots/{DRAFT_OLD}/config.json").exists()
    assert (cache / "models--shieldstar--Qwen3.5-122B-A10B-int4-AutoRound-EC/refs/main").read_text() == BASE_NEW


def test_lock_file_is_deterministic_and_relock_changes_no_recipe(hub_env: FakeHub, recipes: Path, capsys):
    assert run(capsys, "lock", str(recipes / "dflash.yaml"))[0] == 0
    base, child = (recipes / "base.yaml").read_text(), (recipes / "dflash.yaml").read_text()
    text = (recipes / "dflash.yaml.lock.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    hub_env.move(BASE_REPO, "main", BASE_OLD)  # upstream moves: a pinned recipe does not follow
    code, out, _ = run(capsys, "lock", "--json", str(recipes / "dflash.yaml"))
    assert code == 0 and json.loads(out)[0]["edited"] == []
    assert (recipes / "base.yaml").read_text() == base and (recipes / "dflash.yaml").read_text() == child
    lock = json.loads((recipes / "dflash.yaml.lock.json").read_text())
    assert lock["references"]["model"]["sha"] == BASE_NEW and lock["references"]["model"]["label"] == "main"


def test_lock_inserts_a_missing_revision_beside_the_repo_and_keeps_other_comments(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "model:\n"
        f"  repo: {BASE_REPO}  # the base\n"
        "  tokenizer: " + BASE_REPO + "\n"
        "container: {image: x}\n"
        "speculative:\n"
        "  method: dflash\n"
        f"  model: {DRAFT_REPO}\n"
        "  revision: main   # keep an eye on this one\n"
    )
    assert run(capsys, "lock", str(recipe))[0] == 0
    text = recipe.read_text()
    assert text == (
        "model:\n"
        f"  repo: {BASE_REPO}  # the base\n"
        f"  revision: {BASE_NEW}  # frozen: main\n"
        "  tokenizer: " + BASE_REPO + "\n"
        f"  tokenizer_revision: {BASE_NEW}  # frozen: main\n"
        "container: {image: x}\n"
        "speculative:\n"
        "  method: dflash\n"
        f"  model: {DRAFT_REPO}\n"
        f"  revision: {DRAFT_NEW}  # frozen: main; keep an eye on this one\n"
    )
    lock = json.loads((tmp_path / "r.yaml.lock.json").read_text())
    assert sorted(lock["references"]) == ["draft", "model", "tokenizer"]


def test_lock_keeps_a_tag_label_and_reads_labels_back_from_comments(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: {BASE_REPO}\n  revision: 'v1'\ncontainer:\n  image: x\n")
    assert run(capsys, "lock", str(recipe))[0] == 0
    assert f"  revision: {BASE_OLD}  # frozen: v1\n" in recipe.read_text()
    (tmp_path / "r.yaml.lock.json").unlink()  # the label survives in the comment alone
    assert run(capsys, "lock", str(recipe))[0] == 0
    entry = json.loads((tmp_path / "r.yaml.lock.json").read_text())["references"]["model"]
    assert (entry["label"], entry["label_assumed"], entry["sha"]) == ("v1", False, BASE_OLD)


def test_lock_label_from_lock_file_when_the_comment_is_gone(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: {DRAFT_REPO}\n  revision: v2\ncontainer:\n  image: x\n")
    hub_env.repos[DRAFT_REPO].refs["v2"] = DRAFT_OLD
    assert run(capsys, "lock", str(recipe))[0] == 0
    recipe.write_text(f"model:\n  repo: {DRAFT_REPO}\n  revision: {DRAFT_OLD}\ncontainer:\n  image: x\n")
    assert run(capsys, "lock", str(recipe))[0] == 0
    assert f"revision: {DRAFT_OLD}  # frozen: v2\n" in recipe.read_text()


def test_inherited_revision_of_another_repo_is_overridden_in_the_child(hub_env, recipes, capsys):
    child = recipes / "other.yaml"
    child.write_text(f"extends: base.yaml\nname: other\nmodel:\n  repo: {DRAFT_REPO}\n")
    base_before = (recipes / "base.yaml").read_text()
    assert run(capsys, "lock", str(child))[0] == 0
    assert (recipes / "base.yaml").read_text() == base_before  # the parent pins another repo
    assert child.read_text().endswith(f"  repo: {DRAFT_REPO}\n  revision: {DRAFT_NEW}  # frozen: main\n")


def test_flow_style_mapping_falls_back_to_a_round_trip_dump(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"# top comment\nmodel: {{repo: {DRAFT_REPO}}}\ncontainer:\n  image: x  # img\n")
    assert run(capsys, "lock", str(recipe))[0] == 0
    text = recipe.read_text()
    assert "# top comment" in text and "# img" in text
    assert load_recipe(recipe).recipe.model.revision == DRAFT_NEW


def test_offline_lock_reads_the_cache_back_with_the_server_stopped(hub_env, recipes, tmp_path, capsys):
    assert run(capsys, "lock", str(recipes / "dflash.yaml"))[0] == 0
    online = json.loads((recipes / "dflash.yaml.lock.json").read_text())
    fresh = tmp_path / "fresh.yaml"  # an unpinned recipe: needs refs/main from the cache
    fresh.write_text(f"model:\n  repo: {BASE_REPO}\ncontainer:\n  image: x\n")
    hub_env.stop()
    code, out, err = run(capsys, "lock", "--offline", str(recipes / "dflash.yaml"), str(fresh))
    assert (code, err) == (0, "")
    offline = json.loads((recipes / "dflash.yaml.lock.json").read_text())
    for kind in ("model", "draft"):
        assert offline["references"][kind]["sha"] == online["references"][kind]["sha"]
        assert offline["references"][kind]["fingerprint"] == online["references"][kind]["fingerprint"]
        assert offline["references"][kind]["resolved_from"] == "cache"
        assert offline["references"][kind]["trust"] == online["references"][kind]["trust"]  # kept
    assert f"  revision: {BASE_NEW}  # frozen: main\n" in fresh.read_text()
    trust = json.loads((tmp_path / "fresh.yaml.lock.json").read_text())["references"]["model"]["trust"]
    assert trust["source"] == "cache" and trust["downloads"] is None and trust["has_chat_template"] is True


def test_hub_info_prints_trust_facts(hub_env, capsys):
    code, out, _ = run(capsys, "hub", "info", f"{BASE_REPO}@v1")
    assert code == 0
    assert f"revision       v1 -> {BASE_OLD}" in out
    assert "downloads      42785" in out and "chat template  yes (tokenizer_config.json)" in out
    assert "weights        66.99 GB in 15 files" in out and "gated          no" in out
    assert "last modified  2026-05-01T09:00:00Z" in out
    code, out, _ = run(capsys, "hub", "info", "--json", DRAFT_REPO)
    data = json.loads(out)
    assert data["sha"] == DRAFT_NEW and data["fingerprint"]["num_key_value_heads"] == 8
    assert data["trust"]["has_chat_template"] is False and data["trust"]["has_quantization_config"] is False


def test_hub_info_rejects_a_malformed_reference(capsys):
    code, _, err = run(capsys, "hub", "info", "not a repo@")
    assert code == 2 and err.startswith("error: 'not a repo@' is not REPO[@REVISION]")


def test_a_sha_that_looks_like_a_number_is_written_quoted(tmp_path):
    from autobench.hub.lockfile import set_revision

    recipe = tmp_path / "r.yaml"
    recipe.write_text("model:\n  repo: a/b\n  revision: main # x\n")
    digits = "1" * 40
    assert set_revision(recipe, ("model", "revision"), "repo", digits, "main")
    assert recipe.read_text() == f'model:\n  repo: a/b\n  revision: "{digits}"  # frozen: main; x\n'
    assert not set_revision(recipe, ("model", "revision"), "repo", digits, "main")  # idempotent


def test_defining_file_follows_extends_without_loader_positions(recipes):
    from types import SimpleNamespace

    from autobench.hub.lockfile import defining_file, frozen_label_at

    loaded = SimpleNamespace(path=recipes / "dflash.yaml", positions={})
    assert defining_file(loaded, ("model", "revision")) == (recipes / "base.yaml").resolve()
    assert defining_file(loaded, ("speculative", "revision")) == (recipes / "dflash.yaml").resolve()
    assert defining_file(loaded, ("model", "tokenizer")) is None
    assert frozen_label_at(recipes / "dflash.yaml", ("speculative", "revision")) is None


def test_lock_records_each_mods_content_hash(hub_env, tmp_path, capsys):
    """Issue 13: a mod's sha256 is in the lock file beside the Hub pins."""
    (tmp_path / "mods" / "fix").mkdir(parents=True)
    (tmp_path / "mods" / "fix" / "run.sh").write_text("patch -p1 < fix.patch\n")
    (tmp_path / "mods" / "fix" / "fix.patch").write_text("--- a\n+++ b\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"model:\n  repo: {BASE_REPO}\ncontainer: {{image: x}}\n"
        "launch:\n  setup:\n    - mod: mods/fix\n    - run: echo hi\n"
    )
    assert run(capsys, "lock", str(recipe))[0] == 0
    lock = json.loads((tmp_path / "r.yaml.lock.json").read_text())
    sha = load_recipe(recipe).recipe.launch.setup[0].sha256
    assert lock["mods"] == [{"step": 0, "mod": "mods/fix", "path": "mods/fix", "sha256": sha}]
    assert sha.startswith("sha256:") and len(sha) == 71

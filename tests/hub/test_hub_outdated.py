"""`autobench outdated`: the seed's moved draft, JSON, exit codes, offline."""

from __future__ import annotations

import json
from pathlib import Path

from fakehub import BASE_NEW, BASE_OLD, BASE_REPO, DRAFT_NEW, DRAFT_OLD, DRAFT_REPO
from test_hub_lock import run


def test_outdated_on_the_seed_pin_reports_the_draft_moved_with_three_breaking_changes(hub_env, recipes, capsys):
    code, out, err = run(capsys, "outdated", str(recipes / "dflash.yaml"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    draft = next(i for i, line in enumerate(lines) if DRAFT_REPO in line)
    assert f"moved: pinned 6c7242c, main is now bce6f76 ({DRAFT_NEW})  BREAKING" in lines[draft]
    assert lines[draft + 1 : draft + 4] == [
        "      BREAKING num_hidden_layers: 4 -> 6",
        "      BREAKING num_key_value_heads: 4 -> 8",
        "      BREAKING sliding_window: 2048 -> 4096",
    ]
    assert "assuming it was taken from main" in lines[draft + 4]
    assert f"{BASE_REPO}  unpinned: main is at {BASE_NEW[:7]}" in out


def test_outdated_json_and_exit_code(hub_env, recipes, capsys):
    code, out, _ = run(capsys, "outdated", "--json", "--exit-code", str(recipes / "dflash.yaml"))
    assert code == 1
    items = {i["kind"]: i for i in json.loads(out)}
    draft = items["draft"]
    assert (draft["status"], draft["pinned"], draft["current"], draft["breaking"]) == (
        "moved",
        DRAFT_OLD,
        DRAFT_NEW,
        True,
    )
    assert [(c["field"], c["old"], c["new"], c["breaking"]) for c in draft["changes"]] == [
        ("num_hidden_layers", 4, 6, True),
        ("num_key_value_heads", 4, 8, True),
        ("sliding_window", 2048, 4096, True),
    ]
    assert draft["label"] == "main" and draft["label_assumed"] is True
    assert items["model"]["status"] == "unpinned" and items["model"]["pinned"] is None


def test_after_lock_everything_is_up_to_date_until_upstream_moves(hub_env, recipes, capsys):
    recipe = recipes / "base.yaml"
    assert run(capsys, "lock", str(recipe))[0] == 0
    code, out, _ = run(capsys, "outdated", "--exit-code", str(recipe))
    assert code == 0 and f"up-to-date: {BASE_NEW[:7]} = main" in out
    hub_env.move(BASE_REPO, "main", BASE_OLD)
    code, out, _ = run(capsys, "outdated", "--exit-code", str(recipe))
    assert code == 1
    assert "moved: pinned a0b1c2d, main is now 9e1d0c3" in out and "BREAKING" not in out
    assert "changed  transformers_version: '5.0.0' -> '4.57.0'" in out


def test_pin_recorded_only_in_the_lock_file_is_checked(hub_env, tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model:\n  repo: {DRAFT_REPO}\n  revision: main\ncontainer:\n  image: x\n")
    lock = {
        "autobench_lock": 1,
        "recipe": "r.yaml",
        "references": {"model": {"repo": DRAFT_REPO, "label": "main", "sha": DRAFT_OLD}},
    }
    (tmp_path / "r.yaml.lock.json").write_text(json.dumps(lock))
    code, out, _ = run(capsys, "outdated", "--json", str(recipe))
    (item,) = json.loads(out)
    assert (item["status"], item["pinned"], item["label_assumed"]) == ("moved", DRAFT_OLD, False)
    assert "lock file only" in item["note"]


def test_offline_outdated_reads_the_cache_with_the_server_stopped(hub_env, recipes, capsys):
    # online once: caches both draft configs and refs/main
    assert run(capsys, "outdated", str(recipes / "dflash.yaml"))[0] == 0
    hub_env.stop()
    code, out, err = run(capsys, "outdated", "--offline", "--json", str(recipes / "dflash.yaml"))
    assert (code, err) == (0, "")
    draft = next(i for i in json.loads(out) if i["kind"] == "draft")
    assert draft["status"] == "moved" and len(draft["changes"]) == 3


def test_outdated_defaults_to_recipes_dir(hub_env, recipes, capsys, monkeypatch):
    monkeypatch.chdir(recipes.parent)
    code, out, _ = run(capsys, "outdated")
    assert code == 0 and str(Path("recipes") / "base.yaml") in out and str(Path("recipes") / "dflash.yaml") in out
    monkeypatch.chdir(recipes)
    code, _, err = run(capsys, "outdated")
    assert code == 2 and "no recipes given" in err


def test_offline_moved_without_the_new_config_cached_says_so(hub_env, recipes, capsys):
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import write_ref

    assert run(capsys, "hub", "info", f"{DRAFT_REPO}@{DRAFT_OLD}")[0] == 0  # caches the old config only
    write_ref(HubSettings.from_env(), DRAFT_REPO, "main", DRAFT_NEW)
    hub_env.stop()
    code, out, _ = run(capsys, "outdated", "--offline", "--json", str(recipes / "dflash.yaml"))
    assert code == 3  # the base model was never cached: one clear error
    (recipes / "dflash.yaml").write_text(
        (recipes / "dflash.yaml").read_text().replace("extends: base.yaml\n", "")
        + f"model:\n  repo: {DRAFT_REPO}\n  revision: {DRAFT_OLD}\n"
        "container:\n  image: x\n"
    )
    code, out, _ = run(capsys, "outdated", "--offline", "--json", str(recipes / "dflash.yaml"))
    assert code == 0
    draft = next(i for i in json.loads(out) if i["kind"] == "draft")
    assert draft["status"] == "moved" and draft["changes"] == []
    assert draft["note"].startswith("config diff unavailable offline: config.json of " + DRAFT_REPO + "@main")

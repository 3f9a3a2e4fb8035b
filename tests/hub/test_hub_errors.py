"""Every fault of issue 3's "Bad input and faults": one line naming repo, revision and the fix.

All of them go through the real huggingface_hub client (unpatched) against loopback servers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakehub import (
    BASE_REPO,
    DRAFT_OLD,
    DRAFT_REPO,
    GATED_REPO,
    NOCONFIG_REPO,
    VALID_TOKEN,
    closed_port_url,
    silent_server,
)
from test_hub_lock import run


def recipe_with(tmp_path: Path, repo: str, revision: str = "main") -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(f"model:\n  repo: {repo}\n  revision: {revision}\ncontainer:\n  image: x\n")
    return path


def one_error_line(code: int, out: str, err: str) -> str:
    assert code == 3, (code, out, err)  # HubError's exit code
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


def test_unknown_repo(hub_env, tmp_path, capsys):
    recipe = recipe_with(tmp_path, "nobody/does-not-exist")
    err = one_error_line(*run(capsys, "lock", str(recipe)))
    assert err.startswith(
        f"error: {recipe}:3:3: nobody/does-not-exist@main: repository not found on "
        f"{hub_env.url} (or private and not visible to this token)"
    )
    assert "(hint: check the repo id (owner/name) in the recipe; for a private repo set HF_TOKEN)" in err
    assert not (tmp_path / "r.yaml.lock.json").exists()
    assert "revision: main\n" in recipe.read_text()  # nothing written on error


def test_unknown_revision(hub_env, tmp_path, capsys):
    recipe = recipe_with(tmp_path, DRAFT_REPO, "no-such-branch")
    err = one_error_line(*run(capsys, "lock", str(recipe)))
    assert f"{DRAFT_REPO}@no-such-branch: revision 'no-such-branch' not found in the repo" in err
    assert f"use an existing branch, tag or full 40-hex sha (`autobench hub info {DRAFT_REPO}` shows main)" in err
    sha = "0" * 39 + "1"  # a full sha that does not exist
    err = one_error_line(*run(capsys, "hub", "info", f"{DRAFT_REPO}@{sha}"))
    assert f"{DRAFT_REPO}@{sha}: revision '{sha}' not found in the repo" in err


def test_gated_repo_without_a_token(hub_env, capsys):
    err = one_error_line(*run(capsys, "hub", "info", GATED_REPO))
    assert err == (
        f"error: {GATED_REPO}@main: gated repo, this token has no access (401) (hint: accept the "
        f"repo's conditions at {hub_env.url}/{GATED_REPO} with the account whose token is in "
        "HF_TOKEN (or `hf auth login`))"
    )


def test_gated_repo_with_a_token_not_granted_then_granted(hub_env, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", VALID_TOKEN)
    err = one_error_line(*run(capsys, "hub", "info", GATED_REPO))
    assert f"{GATED_REPO}@main: gated repo, this token has no access (403)" in err
    assert VALID_TOKEN not in err
    hub_env.repos[GATED_REPO].granted.add(VALID_TOKEN)
    code, out, _ = run(capsys, "hub", "info", GATED_REPO)
    assert code == 0 and "gated          manual" in out and VALID_TOKEN not in out
    assert hub_env.requests[-1].authorization == f"Bearer {VALID_TOKEN}"  # sent, by name only


def test_bad_token(hub_env, capsys, monkeypatch):
    bad = "hf_thisIsNotAValidToken000000000000"
    monkeypatch.setenv("HF_TOKEN", bad)
    err = one_error_line(*run(capsys, "hub", "info", BASE_REPO))
    assert f"{BASE_REPO}@main: the Hub rejected the token (401 Unauthorized: invalid credentials)" in err
    assert f"create a new one at {hub_env.url}/settings/tokens, or unset HF_TOKEN for public repos" in err
    assert bad not in err


def test_stored_token_file_is_used_when_hf_token_is_unset(hub_env, capsys, monkeypatch, tmp_path):
    import os

    (Path(os.environ["HF_HOME"]) / "token").write_text("hf_storedButWrong\n")
    err = one_error_line(*run(capsys, "hub", "info", BASE_REPO))
    assert "rejected the token" in err and "hf_storedButWrong" not in err


def test_network_down_connection_refused(monkeypatch, tmp_path, capsys):
    url = closed_port_url()
    monkeypatch.setenv("HF_ENDPOINT", url)
    recipe = recipe_with(tmp_path, DRAFT_REPO)
    err = one_error_line(*run(capsys, "lock", str(recipe)))
    assert f"{DRAFT_REPO}@main: cannot reach {url} (" in err
    assert "work from the local HF cache with --offline / HF_HUB_OFFLINE=1" in err


def test_slow_network_fails_within_a_bound(monkeypatch, tmp_path, capsys):
    """A Hub that accepts connections but never answers must not hang a lock (correctness, not speed)."""
    recipe = recipe_with(tmp_path, DRAFT_REPO, DRAFT_OLD)
    with silent_server() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        err = one_error_line(*run(capsys, "lock", "--timeout", "1", str(recipe)))
    assert f"{DRAFT_REPO}@{DRAFT_OLD}: no answer from {url} within 1 s" in err
    assert "raise --timeout / AUTOBENCH_HUB_TIMEOUT" in err


def test_slow_file_download_is_bounded_by_the_deadline(hub_env, monkeypatch, tmp_path, capsys):
    """model_info answers but the config download hangs: the download worker's deadline fires."""
    from autobench.errors import HubError
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import Resolver

    with silent_server() as url:
        settings = HubSettings.from_env(timeout=0.5)
        settings = HubSettings(url, settings.cache_dir, False, 0.5, None)
        with pytest.raises(HubError) as info:
            Resolver(settings).config(DRAFT_REPO, DRAFT_OLD, label="main")
    assert f"{DRAFT_REPO}@main: no answer from {url} within 0.5 s" in str(info.value)


def test_offline_with_nothing_cached(tmp_path, capsys, monkeypatch):
    import os

    monkeypatch.setenv("HF_ENDPOINT", closed_port_url())  # would fail loudly if anything were sent
    recipe = recipe_with(tmp_path, DRAFT_REPO)
    cache = Path(os.environ["HF_HOME"]) / "hub"
    err = one_error_line(*run(capsys, "lock", "--offline", str(recipe)))
    assert err == (
        f"error: {recipe}:3:3: {DRAFT_REPO}@main is not in the local HF cache at {cache} (hint: run "
        f"`autobench lock` online once, or `huggingface-cli download {DRAFT_REPO} --revision main`)"
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the env var works like --offline
    err = one_error_line(*run(capsys, "hub", "info", f"{DRAFT_REPO}@{DRAFT_OLD}"))
    assert f"{DRAFT_REPO}@{DRAFT_OLD} is not in the local HF cache at {cache}" in err


def test_offline_ref_cached_but_config_not(hub_env, tmp_path, capsys):
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import write_ref

    write_ref(HubSettings.from_env(), DRAFT_REPO, "main", DRAFT_OLD)
    (HubSettings.from_env().cache_dir / f"models--z-lab--Qwen3.5-122B-A10B-DFlash/snapshots/{DRAFT_OLD}").mkdir(
        parents=True
    )
    err = one_error_line(*run(capsys, "hub", "info", "--offline", DRAFT_REPO))
    assert f"config.json of {DRAFT_REPO}@main is not in the local HF cache" in err


def test_missing_config_json_online_and_offline(hub_env, capsys):
    err = one_error_line(*run(capsys, "hub", "info", NOCONFIG_REPO))
    assert err == (
        f"error: {NOCONFIG_REPO}@main: the Hub has no config.json at this revision (hint: pin a "
        f"revision of {NOCONFIG_REPO} that contains config.json (is it a transformers model repo?))"
    )
    hub_env.stop()  # the client cached the absence (.no_exist) and refs/main: offline says the same
    err = one_error_line(*run(capsys, "hub", "info", "--offline", NOCONFIG_REPO))
    assert f"{NOCONFIG_REPO}@main: the Hub has no config.json at this revision" in err


def test_token_never_reaches_recipe_lock_or_output(hub_env, recipes, capsys, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", VALID_TOKEN)
    outputs = [
        run(capsys, "lock", str(recipes / "dflash.yaml")),
        run(capsys, "outdated", "--json", str(recipes / "dflash.yaml")),
        run(capsys, "hub", "info", "--json", DRAFT_REPO),
        run(capsys, "hub", "info", "nobody/x"),
    ]
    assert [o[0] for o in outputs] == [0, 0, 0, 3]
    assert all(VALID_TOKEN not in o[1] + o[2] for o in outputs)
    for path in recipes.iterdir():
        assert VALID_TOKEN not in path.read_text(), path
    assert any(r.authorization == f"Bearer {VALID_TOKEN}" for r in hub_env.requests)


def test_malformed_lock_file_is_one_line(hub_env, recipes, capsys):
    (recipes / "dflash.yaml.lock.json").write_text("{not json")
    err = one_error_line(*run(capsys, "lock", str(recipes / "dflash.yaml")))
    assert "unreadable lock file" in err and "delete it and run `autobench lock` again" in err


def test_translate_refuses_to_swallow_unknown_exceptions():
    from autobench.hub.client import HubSettings, translate

    settings = HubSettings("http://127.0.0.1:1", Path("/tmp/x"), False, 1.0, "hf_secret")
    with pytest.raises(KeyError):
        raise translate(KeyError("bug"), settings, "a/b", "main")
    assert "hf_secret" not in repr(settings)
    err = translate(OSError(28, "No space left on device"), settings, "a/b", "main")
    assert str(err) == (
        "a/b@main: cannot use the HF cache at /tmp/x (No space left on device) "
        "(hint: check HF_HOME / HF_HUB_CACHE points to a writable directory)"
    )
    assert json.dumps  # keep the import used

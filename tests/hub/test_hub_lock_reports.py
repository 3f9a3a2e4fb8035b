"""Issue #31: `lock` never edits a parent recipe without saying so; `outdated a.yaml b.yaml`
reports every recipe and exits non-zero when any could not be checked."""

from __future__ import annotations

import json
from pathlib import Path

from fakehub import FakeHub
from test_hub_lock import run


def test_locking_a_child_says_which_parent_it_edited(hub_env: FakeHub, recipes: Path, capsys):
    code, out, err = run(capsys, "lock", "--no-images", str(recipes / "dflash.yaml"))
    assert (code, err) == (0, "")
    base = (recipes / "base.yaml").resolve()
    assert (
        f"  note: edited {base}, a file {recipes / 'dflash.yaml'} extends (the revision is written there); "
        "every recipe extending it gets this pin"
    ) in out.splitlines()
    code, out, _ = run(capsys, "lock", "--no-images", "--json", str(recipes / "dflash.yaml"))
    assert json.loads(out)[0]["parents_edited"] == []  # nothing changed the second time
    code, out, _ = run(capsys, "lock", "--no-images", str(recipes / "base.yaml"))
    assert code == 0 and "note: edited" not in out  # the recipe itself: nothing to say


def test_outdated_reports_each_recipe_and_fails_if_any_failed(hub_env: FakeHub, recipes: Path, capsys):
    broken = recipes / "broken.yaml"
    broken.write_text("name: broken\nmodel: [not, a, mapping]\n")
    code, out, err = run(capsys, "outdated", str(broken), str(recipes / "dflash.yaml"))
    assert code == 2, err  # the broken recipe's class of error (a recipe error), after every report
    assert str(recipes / "dflash.yaml") in out and "moved: pinned 6c7242c" in out  # checked after the failure
    assert err.startswith(f"{broken}: not checked: ") and err.count("\n") == 1
    code, out, _ = run(capsys, "outdated", "--json", str(broken), str(recipes / "dflash.yaml"))
    doc = json.loads(out)
    assert code == 2 and {"recipe": str(broken), "status": "error"}.items() <= doc[-1].items()
    assert any(i.get("kind") == "draft" for i in doc)

"""build.vllm_repo and build.vllm_ref reach git in the build: neither may be read as an option
(`--upload-pack=CMD` runs CMD), so each is refused at its line unless git reads it as a URL / a
ref; the default Dockerfile also ends git clone's options with `--`."""

from __future__ import annotations

from pathlib import Path

import pytest

from autobench.compile.render import build_lines
from autobench.errors import RecipeError
from autobench.recipe.loader import load_recipe

BASE = (
    "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n"
    "bench:\n  dataset:\n    kind: random\n"
)


def recipe(tmp_path: Path, repo: str | None, ref: str) -> Path:
    path = tmp_path / "r.yaml"
    build = "build:\n  base_image: nvcr.io/nvidia/pytorch:25.01-py3\n" + f"  vllm_ref: {ref!r}\n"
    if repo is not None:
        build += f"  vllm_repo: {repo!r}\n"
    path.write_text(BASE + build)
    return path


@pytest.mark.parametrize(
    ("repo", "ref", "ok"),
    [
        (None, "v0.11.0", True),
        ("https://github.com/vllm-project/vllm.git", "0123456789abcdef0123456789abcdef01234567", True),
        ("git@github.com:me/vllm.git", "feature/x", True),
        ("ssh://git@host/vllm.git", "main", True),
        ("file:///srv/vllm", "v1.0+local", True),
        ("--upload-pack=touch /tmp/pwned", "main", False),
        ("-u", "main", False),
        ("me@host:-x", "main", False),
        ("/srv/vllm", "main", False),  # a bare path: write file:///srv/vllm
        (None, "--orphan", False),
        (None, "-b", False),
        (None, "main; id", False),
        (None, "a b", False),
    ],
)
def test_build_values_are_git_words_never_options(tmp_path, repo, ref, ok):
    path = recipe(tmp_path, repo, ref)
    if ok:
        lines, dockerfile = build_lines(load_recipe(path))
        assert dockerfile is not None and 'git clone -- "${VLLM_REPO}"' in dockerfile
        return
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert str(info.value).startswith(f"{path}:")

"""Multi-node fences: a host is ``[user@]host`` and never an option; ``--remote`` is words, never code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autobench.compile.cluster import DEFAULT_REMOTE, compile_cluster, is_host, remote_words
from autobench.errors import RecipeError
from autobench.recipe.loader import load_recipe

TWO = (
    "name: r\nmodel:\n  repo: org/m\n  revision: main\ncontainer:\n  image: img:1\n"
    "bench:\n  dataset:\n    kind: random\n"
    "topology:\n  nodes: 2\n  gpus_per_node: 1\nengine:\n  tensor_parallel_size: 2\n"
)


def two_node(tmp_path: Path):
    path = tmp_path / "two.yaml"
    path.write_text(TWO)
    return load_recipe(path)


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("node1", True),
        ("gpu-01.example.com", True),
        ("10.0.0.7", True),
        ("root@10.0.0.7", True),
        ("ubuntu@gpu_1", True),
        ("[fe80::1%eth0]", True),
        ("fe80::1", True),
        ("a@--trust-remote-code", False),  # reached vLLM as --master-addr --trust-remote-code
        ("-oProxyCommand=x", False),
        ("--x@host", False),
        ("a@-x", False),
        ("a@b@c", False),
        ("@host", False),
        ("host@", False),
        ("h;touch x", False),
        ("h $(id)", False),
        ("h`id`", False),
        ("", False),
        ("h\nx", False),
    ],
)
def test_a_host_is_user_at_host_and_neither_part_an_option(host, ok):
    assert is_host(host) is ok


def test_a_head_host_whose_address_is_an_option_is_refused_before_any_script(tmp_path):
    with pytest.raises(RecipeError) as info:
        compile_cluster(two_node(tmp_path), ["a@--trust-remote-code", "h1"], check=False)
    assert "not a host name" in str(info.value)


def test_a_recipe_host_whose_address_is_an_option_fails_validation(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(TWO.replace("  nodes: 2\n", "  nodes: 2\n  hosts: ['a@--trust-remote-code', h1]\n"))
    with pytest.raises(RecipeError):
        load_recipe(path)


def _remote_array(driver: str, env: dict[str, str], cwd: Path) -> list[str]:
    """The REMOTE array the driver builds, by running its own lines under bash."""
    lines = [line for line in driver.splitlines() if "REMOTE" in line and not line.startswith("#")]
    setup = "\n".join(line for line in lines if line.startswith(("REMOTE=", 'if [ -n "${AUTOBENCH_REMOTE')))
    out = subprocess.run(
        ["bash", "-c", setup + '\nprintf "%s\\0" "${REMOTE[@]}"'],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        check=True,
        text=True,
        cwd=cwd,
    ).stdout
    return out.split("\0")[:-1]


@pytest.mark.parametrize(
    "remote",
    [
        DEFAULT_REMOTE,
        "ssh -o X=$(touch PWNED)",
        "ssh -o 'ProxyCommand=`touch PWNED`'",
        'ssh "$HOME" ${IFS}x',
        "ssh -p 2222\t-l\tuser",
    ],
)
def test_the_remote_command_reaches_the_driver_as_words_and_runs_nothing(tmp_path, remote):
    driver = compile_cluster(two_node(tmp_path), ["h0", "h1"], remote, check=False)["driver.sh"]
    assert _remote_array(driver, {}, tmp_path) == remote.split() == remote_words(remote)
    assert not (tmp_path / "PWNED").exists()


def test_the_environment_still_overrides_the_compiled_remote(tmp_path):
    driver = compile_cluster(two_node(tmp_path), ["h0", "h1"], "ssh -p 22", check=False)["driver.sh"]
    assert _remote_array(driver, {"AUTOBENCH_REMOTE": "env X=1"}, tmp_path) == ["env", "X=1"]


def test_an_empty_remote_is_refused():
    with pytest.raises(RecipeError):
        remote_words("  ")

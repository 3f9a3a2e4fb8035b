"""The recipe's ``env:`` and ``secrets:`` reach the server in every container mode of
``compile --target slurm`` (they used to reach it only with ``--container docker``).

The scripts run here with bash and stand-ins for what cannot exist on this machine (``srun``
with pyxis, ``apptainer``, the GPU server, ``curl``, ``autobench``): each stand-in records the
environment it was started with, which is what the container runtime reads from the job."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from compile_helpers import make_fake_bin, shellcheck_path

from autobench.compile.quoting import shell_word
from autobench.compile.slurm import compile_slurm
from autobench.recipe.loader import load_recipe

HOSTILE = "a b'c\"$HOME`x`;\\n"  # a value a shell would split, expand or run if it were not quoted
RECIPE = f"""name: envy
model:
  repo: org/m
  revision: 0123456789abcdef0123456789abcdef01234567
container:
  image: img:1
  ports: ['8000:8000']
secrets: [HF_TOKEN]
env:
  DG_JIT_CACHE_DIR: /tmp/dg-cache
  NCCL_P2P_LEVEL: NVL
  ODD: {json.dumps(HOSTILE)}
bench:
  dataset:
    kind: random
"""
TWO_NODES = "engine:\n  pipeline_parallel_size: 2\ntopology:\n  nodes: 2\n  gpus_per_node: 1\n"
NAMES = ["HF_TOKEN", "DG_JIT_CACHE_DIR", "NCCL_P2P_LEVEL", "ODD"]
PLAIN = {"DG_JIT_CACHE_DIR": "/tmp/dg-cache", "NCCL_P2P_LEVEL": "NVL", "ODD": HOSTILE}

# Records its argv and environment (NUL-separated) under $FAKE_LOG, then stays up until the
# job's teardown stops it (a server; tail never exits on its own).
RECORDER = r"""#!/usr/bin/env bash
n=$(find "$FAKE_LOG" -maxdepth 1 -type f -name '*.argv' | wc -l)
n=$(printf '%03d' "$n")
printf '%s\0' "$@" > "$FAKE_LOG/$n-TOOL.argv"
env -0 > "$FAKE_LOG/$n-TOOL.env"
exec tail -f /dev/null
"""
# The same for the bench, which ends at once.
BENCH = RECORDER.replace("exec tail -f /dev/null", "exit 0")
# curl: the server is "ready" once it has recorded its environment (until then the job's
# readiness loop polls again; its `sleep` is a stand-in that returns at once).
CURL = """#!/usr/bin/env bash
ls "$FAKE_LOG"/*.env >/dev/null 2>&1 || exit 7
"""


def _compile(tmp_path: Path, mode: str, extra: str = "") -> str:
    path = tmp_path / "envy.yaml"
    path.write_text(RECIPE + extra, encoding="utf-8")
    return compile_slurm(load_recipe(path), container=mode)


def _run(tmp_path: Path, script: str) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, str]]]:
    """Run the job script with bash; return {tool: the environment it was started with}."""
    bindir = make_fake_bin(tmp_path)
    stubs = {"autobench": BENCH, "curl": CURL}
    for tool in ("vllm", "srun", "apptainer", "autobench", "curl"):
        (bindir / tool).write_text(stubs.get(tool, RECORDER).replace("TOOL", tool))
        (bindir / tool).chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    (tmp_path / "job.sh").write_text(script, encoding="utf-8")
    env = {
        "PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(tmp_path),
        "FAKE_LOG": str(log),
        "AUTOBENCH_RUN_DIR": str(tmp_path),
        "HF_TOKEN": "hf_secret_value",
    }
    proc = subprocess.run(["bash", str(tmp_path / "job.sh")], env=env, capture_output=True, text=True, timeout=60)
    seen: dict[str, dict[str, str]] = {}
    for entry in sorted(log.glob("*.env")):
        pairs = (item.split("=", 1) for item in entry.read_text().split("\0") if "=" in item)
        seen[entry.stem.split("-", 1)[1]] = dict(pairs)
    return proc, seen


@pytest.mark.parametrize("mode", ["none", "pyxis", "apptainer"])
def test_the_server_process_is_started_with_the_recipes_env_and_the_bench_without_it(tmp_path, mode):
    proc, seen = _run(tmp_path, _compile(tmp_path, mode))
    assert proc.returncode == 0, proc.stderr
    server = seen[{"none": "vllm", "pyxis": "srun", "apptainer": "apptainer"}[mode]]
    for name, value in PLAIN.items():
        assert server[name] == value  # exactly the value: no word splitting, no expansion
    assert server["HF_TOKEN"] == "hf_secret_value"  # the secret, from the job's environment
    if mode == "apptainer":  # what apptainer injects into the container over the image's values
        assert {n: server[f"APPTAINERENV_{n}"] for n in NAMES} == {**PLAIN, "HF_TOKEN": "hf_secret_value"}
    bench = seen["autobench"]
    assert bench["HOME"] == str(tmp_path) and "DG_JIT_CACHE_DIR" not in bench  # not the server's env


def test_pyxis_names_every_variable_so_the_images_values_do_not_win(tmp_path):
    script = _compile(tmp_path, "pyxis")
    assert "--container-env=" + ",".join(NAMES) in script.split()
    _, seen = _run(tmp_path, script)
    (record,) = (tmp_path / "log").glob("*-srun.argv")
    argv = record.read_text().split("\0")
    assert argv[:2] == ["--ntasks=1", "--export=ALL"]
    assert "--container-env=" + ",".join(NAMES) in argv


#: (mode, nodes, executor): ray is a multi-node executor, and a multi-node job with
#: --container docker is refused (test_run_slurm), so neither combination is a case.
CASES = [
    (mode, nodes, executor)
    for mode in ("none", "docker", "pyxis", "apptainer")
    for nodes in (1, 2)
    for executor in ("native", "ray")
    if not (nodes == 1 and executor == "ray") and not (nodes == 2 and mode == "docker")
]


@pytest.mark.parametrize(("mode", "nodes", "executor"), CASES)
def test_every_mode_carries_the_env_and_never_a_secrets_value_and_passes_shellcheck(tmp_path, mode, nodes, executor):
    extra = TWO_NODES + (f"  executor: {executor}\n" if executor == "ray" else "") if nodes == 2 else ""
    script = _compile(tmp_path, mode, extra)
    assert "hf_secret_value" not in script and "HF_TOKEN=" not in script.replace('APPTAINERENV_HF_TOKEN="${', "")
    if mode == "docker":  # docker run carries them itself: the secret by name, the values quoted
        assert "--env HF_TOKEN \\" in script and "--env DG_JIT_CACHE_DIR=/tmp/dg-cache \\" in script
    else:
        assert "  export DG_JIT_CACHE_DIR=/tmp/dg-cache\n" in script and "  export NCCL_P2P_LEVEL=NVL\n" in script
    launches = [line for line in script.splitlines() if line.startswith(("srun ", "  srun ", "vllm ", "apptainer "))]
    assert launches == []  # every server (each node's step) is started through serve_env
    assert script.count("serve_env ") == (1 if nodes == 1 else 2)
    if mode == "pyxis":
        assert script.count("--container-env=" + ",".join(NAMES)) == (1 if nodes == 1 else 2)
        assert script.count("--container-image img:1 \\\n") == (1 if nodes == 1 else 2)
    if mode == "apptainer":
        assert script.count("apptainer exec --nv docker://img:1 \\\n") == (1 if nodes == 1 else 2)
    # a one-node pyxis server is its own srun step; a multi-node job's steps are srun --nodes=1 -w NODE
    assert script.count("srun --ntasks=1 --export=ALL") == (1 if nodes == 1 and mode == "pyxis" else 0)
    assert script.count("srun --nodes=1 --ntasks=1 --export=ALL") == (0 if nodes == 1 else 2)
    if mode == "docker":  # the container in the foreground of the background job: its PID is the server's
        assert "serve_env docker run \\\n  --name " in script
        assert "  export " not in script  # docker run sets them in the container, not in docker's client
    # shellcheck, on the same recipe with a value that needs quoting but no `$` (SC2016, "expressions
    # don't expand in single quotes", is exactly what the quoting is for)
    path = tmp_path / "job.sh"
    tame = script.replace(shell_word(HOSTILE), shell_word("two words"))
    path.write_text(tame.replace(shell_word("ODD=" + HOSTILE), shell_word("ODD=two words")))
    lint = subprocess.run(
        [shellcheck_path(), "--severity=style", "-s", "bash", str(path)], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("mode", ["pyxis", "apptainer"])
@pytest.mark.parametrize(
    ("volume", "why"),
    [
        ("hf-cache:/root/.cache/huggingface", "is a named docker volume (its source is no absolute path)"),
        ("/data", "is not SRC:DST[:OPTIONS]"),
        ("/data:/data:ro,z", "has the docker option(s) z"),
        ("/a,b:/data", "holds a ',' (the list separator of bind mounts)"),
        ("/data:/a,b", "holds a ',' (the list separator of bind mounts)"),
        ("/data:/data:ro:x", "is not SRC:DST[:OPTIONS]"),
        ("/data:", "is not SRC:DST[:OPTIONS]"),
        (":/data", "is not SRC:DST[:OPTIONS]"),
    ],
)
def test_a_volume_the_container_runtime_cannot_mount_is_refused_in_one_line(tmp_path, mode, volume, why):
    from autobench.errors import RecipeError

    extra = f"container:\n  image: img:1\n  ports: ['8000:8000']\n  volumes: [{json.dumps(volume)}]\n"
    path = tmp_path / "envy.yaml"
    path.write_text(RECIPE.replace("container:\n  image: img:1\n  ports: ['8000:8000']\n", extra), encoding="utf-8")
    with pytest.raises(RecipeError) as info:
        compile_slurm(load_recipe(path), container=mode)
    assert str(info.value) == (
        f"container.volumes: {volume!r} {why}, which --container {mode} cannot mount "
        "(hint: write it as /host/path:/container/path[:ro], or use --container docker)"
    )


@pytest.mark.parametrize(("mode", "flag"), [("pyxis", "--container-mounts"), ("apptainer", "--bind")])
def test_each_volume_is_one_mount_read_only_only_when_it_says_ro(tmp_path, mode, flag):
    volumes = "['/d:/d:rw', '~/c:/c', '/m:/models:ro,rw']"
    extra = f"container:\n  image: img:1\n  ports: ['8000:8000']\n  volumes: {volumes}\n"
    path = tmp_path / "envy.yaml"
    path.write_text(RECIPE.replace("container:\n  image: img:1\n  ports: ['8000:8000']\n", extra), encoding="utf-8")
    script = compile_slurm(load_recipe(path), container=mode)
    mounts = [line.strip() for line in script.splitlines() if line.strip().startswith(flag + " ")]
    assert mounts == [f"{flag} /d:/d \\", f'{flag} "${{HOME}}"/c:/c \\', f"{flag} /m:/models:ro \\"]
    assert "# container.volumes" not in script  # mounted, so not said to be left out


def test_a_job_without_volumes_says_nothing_about_them(tmp_path):
    assert "container.volumes" not in _compile(tmp_path, "none")

"""docker/bench.Dockerfile builds the bench image the k8s bench Job runs.  No Docker engine (or
hadolint) exists on the test machine, so the file is parsed: its instructions are Dockerfile
instructions, the base image has the Python autobench requires and the bash and python3 the
Job's script calls, every path it copies exists and is what the package build needs, and it
installs the package and leaves `autobench` the Job's command."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "bench.Dockerfile"
KNOWN = {"FROM", "RUN", "COPY", "ADD", "WORKDIR", "ENV", "ARG", "CMD", "ENTRYPOINT", "LABEL", "USER", "EXPOSE"}


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word, rest.strip()))
    return out


def test_the_bench_dockerfile_builds_the_package_the_job_runs() -> None:
    steps = instructions()
    assert steps[0][0] == "FROM" and all(word in KNOWN for word, _ in steps), steps
    # python:3.X-slim is Debian with bash and python3; its X meets requires-python
    base = steps[0][1]
    match = re.fullmatch(r"python:(\d+)\.(\d+)-slim", base)
    assert match, base
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    need = tuple(int(x) for x in re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"]).groups())
    assert (int(match[1]), int(match[2])) >= need
    copied = [shlex.split(rest)[:-1] for word, rest in steps if word == "COPY"]
    sources = {src for srcs in copied for src in srcs}
    assert sources == {"pyproject.toml", "setup.py", "README.md", "autobench", "templates"}
    assert all((REPO / src).exists() for src in sources)
    runs = [rest for word, rest in steps if word == "RUN"]
    assert any(re.match(r"pip install --no-cache-dir \. ", r + " ") for r in runs), runs
    assert ("CMD", '["autobench", "--help"]') in steps


def test_the_k8s_default_bench_image_is_the_one_the_dockerfile_documents() -> None:
    from autobench import __version__

    assert f"-t autobench:{__version__} ." in DOCKERFILE.read_text(encoding="utf-8")

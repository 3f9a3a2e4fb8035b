"""Latency of `autobench lock` with the container image pinned, beside the Hub-only figure, against
loopback servers: the fake Hub (tests/hub) and a REAL registry (Debian's docker-registry, filled
with a multi-arch index arm64 + amd64 by tests/image/registry_rig.py).  Prints figures; not part of
the test suite.

    .venv/bin/python benchmarks/image_lock.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "image"))
sys.path.insert(0, str(ROOT / "tests" / "hub"))  # first: its conftest holds the recipes
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

from conftest import BASE_YAML, DFLASH_YAML  # noqa: E402
from fakehub import seed_hub  # noqa: E402
from registry_rig import LiveRegistry  # noqa: E402

from autobench.errors import RegistryError  # noqa: E402
from autobench.hub.client import HubSettings  # noqa: E402
from autobench.hub.lockfile import lock_recipe  # noqa: E402
from autobench.hub.resolve import Resolver  # noqa: E402
from autobench.image.pins import check_image, plan_image_pin  # noqa: E402
from autobench.image.registry import RegistryClient, RegistrySettings  # noqa: E402

ROUNDS = 7


def fresh(tmp: Path, image: str) -> Path:
    d = Path(tempfile.mkdtemp(dir=tmp))
    (d / "base.yaml").write_text(BASE_YAML.replace("vllm/vllm-openai:nightly-aarch64", image))
    (d / "dflash.yaml").write_text(DFLASH_YAML)
    return d / "dflash.yaml"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    hub = seed_hub().start()
    registry = LiveRegistry(tmp / "registry").start()
    try:
        registry.index("vllm/vllm-openai", "nightly-aarch64")
        image = f"{registry.host}/vllm/vllm-openai:nightly-aarch64"
        settings = RegistrySettings.from_env(env={"DOCKER_CONFIG": str(tmp / "no-docker-config")})
        figures: dict[str, list[float]] = {}
        requests: list[int] = []
        for i in range(ROUNDS):
            hub_only = Resolver(HubSettings(hub.url, tmp / f"hub-cache{i}", False, 10.0, None))
            with_image = Resolver(HubSettings(hub.url, tmp / f"img-cache{i}", False, 10.0, None))
            client = RegistryClient(settings)

            def extras(loaded, path, lock, client=client):
                return [plan_image_pin(loaded, path, lock, client=client)]

            a, b = fresh(tmp, image), fresh(tmp, image)
            steps = [
                ("lock, Hub only, cold cache", partial(lock_recipe, a, hub_only)),
                ("lock, Hub + image, cold cache", partial(lock_recipe, b, with_image, extras=extras)),
                ("lock, Hub only, warm (re-lock)", partial(lock_recipe, a, hub_only)),
                ("lock, Hub + image, warm (re-lock)", partial(lock_recipe, b, with_image, extras=extras)),
                ("outdated, image only", partial(check_image, b, client)),
            ]
            for label, step in steps:
                before = client.requests
                figures.setdefault(label, []).append(timed(step))
                if label == "lock, Hub + image, cold cache":
                    requests.append(client.requests - before)
            client.close()

        def fails(host: str, timeout: float) -> float:
            client = RegistryClient(RegistrySettings(timeout=timeout, env={"DOCKER_CONFIG": "/nonexistent"}))
            start = time.perf_counter()
            try:
                client.manifest(host, "vllm/vllm-openai", "nightly")
            except RegistryError:
                return time.perf_counter() - start
            raise SystemExit("a lock against a dead registry did not fail")

        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        silent = fails(f"127.0.0.1:{sock.getsockname()[1]}", 1.0)
        sock.close()
    finally:
        registry.stop()
        hub.stop()

    print(
        f"fake Hub + docker-registry on loopback, {ROUNDS} rounds, DFlash recipe (model + draft + image: "
        "a multi-arch index, arm64 + amd64)"
    )
    for name, values in figures.items():
        print(f"  {name:<36} median {statistics.median(values):7.1f} ms   min {min(values):7.1f} ms")
    print(f"  registry requests per cold image lock  {statistics.median(requests):.0f} (index, 2 manifests, 2 configs)")
    print(f"  dead registry (accepts, never answers), --timeout 1: failed after {silent:.2f} s")


if __name__ == "__main__":
    main()

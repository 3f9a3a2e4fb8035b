"""What the local docker has: ``docker image inspect`` RepoDigests, and ``docker pull`` by digest.

``RepoDigests`` lists ``name@sha256:…`` for every registry digest an image was pulled (or pushed)
under; for a multi-arch tag that is the index digest, the same digest ``lock`` pins.  Used by
``lock --offline`` (the digest of a tag docker already has) and by ``run`` (the local image must
carry the pinned digest before a server starts from it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autobench.digits import load_json
from autobench.errors import RegistryError
from autobench.image.resolve import PlatformImage, ResolvedImage, platform_name, utc_now
from autobench.recipe.imageref import ImageRef, ImageRefError, parse_image_ref

INSPECT_TIMEOUT_S = 60.0
PULL_TIMEOUT_S = 2 * 3600.0  # a vLLM image is 10+ GB


@dataclass(frozen=True)
class LocalImage:
    reference: str
    image_id: str | None
    repo_digests: tuple[str, ...]  # "name@sha256:…" as docker reports them
    platform: str
    created: str | None

    def digests_for(self, ref: ImageRef) -> list[str]:
        """The registry digests recorded for ``ref``'s repository (same registry and path)."""
        out = []
        for item in self.repo_digests:
            try:
                parsed = parse_image_ref(item)
            except ImageRefError:
                continue
            if parsed.digest and parsed.registry == ref.registry and parsed.repository == ref.repository:
                out.append(parsed.digest)
        return out


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:300] if lines else "no message"


def inspect(reference: str, *, docker: str = "docker", env: Mapping[str, str] | None = None) -> LocalImage | None:
    """``docker image inspect REFERENCE``; None when docker has no such image."""
    try:
        done = subprocess.run(
            [docker, "image", "inspect", reference],
            capture_output=True,
            text=True,
            timeout=INSPECT_TIMEOUT_S,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise RegistryError(
            f"{reference}: cannot ask docker for its local images: {docker!r} not found",
            hint="install the docker CLI, or resolve online (without --offline)",
        ) from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RegistryError(
            f"{reference}: `docker image inspect` did not answer ({type(exc).__name__})",
            hint="check that the Docker engine is running",
        ) from exc
    if done.returncode != 0:
        said = _first_line(done.stderr or done.stdout)
        if "no such image" in said.lower() or "not found" in said.lower():
            return None
        raise RegistryError(
            f"{reference}: `docker image inspect` failed: {said}", hint="check that the Docker engine is running"
        )
    try:
        data = load_json(done.stdout)
        info: dict[str, Any] = data[0]
        digests = tuple(str(d) for d in info.get("RepoDigests") or [])
    except (ValueError, IndexError, KeyError, TypeError, AttributeError) as exc:
        raise RegistryError(
            f"{reference}: `docker image inspect` printed something that is not its JSON",
            hint="check the docker CLI",
        ) from exc
    created = info.get("Created")
    return LocalImage(
        reference=reference,
        image_id=str(info["Id"]) if info.get("Id") else None,
        repo_digests=digests,
        platform=platform_name(info.get("Os"), info.get("Architecture"), info.get("Variant")),
        created=created if isinstance(created, str) else None,
    )


def resolve_local(ref: ImageRef, *, docker: str = "docker", env: Mapping[str, str] | None = None) -> ResolvedImage:
    """``lock --offline``: the registry digest docker recorded for ``ref`` (no network)."""
    local = inspect(str(ref), docker=docker, env=env)
    if local is None:
        raise RegistryError(
            f"{ref}: not among the local docker images, so --offline cannot resolve it",
            hint=f"`docker pull {ref}` first, or lock online",
        )
    digests = local.digests_for(ref)
    if ref.digest is not None:
        if ref.digest not in digests:
            raise RegistryError(
                f"{ref}: the local image does not carry this digest (it has: {', '.join(digests) or 'none'})",
                hint=f"`docker pull {ref}` first, or lock online",
            )
        digest = ref.digest
    elif not digests:
        raise RegistryError(
            f"{ref}: docker has this image but no registry digest for it (built locally, never pushed or pulled)",
            hint="push it to a registry and lock online, or pull it from one",
        )
    else:
        digest = sorted(digests)[0] if len(set(digests)) > 1 else digests[0]
    platform = PlatformImage(local.platform, None, None, local.created)
    return ResolvedImage(
        ref.registry,
        ref.repository,
        ref.tag or ref.digest or "latest",
        digest,
        None,
        {local.platform: platform},
        utc_now(),
        "docker",
    )


def pull(reference: str, *, docker: str = "docker", env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """``docker pull REFERENCE`` (bounded); (ok, the last line docker printed)."""
    try:
        done = subprocess.run(
            [docker, "pull", reference],
            capture_output=True,
            text=True,
            timeout=PULL_TIMEOUT_S,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    text = (done.stdout + "\n" + done.stderr).strip().splitlines()
    return done.returncode == 0, (text[-1].strip() if text else "")

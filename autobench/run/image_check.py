"""Before a docker run starts: is the local image the pinned one?

A recipe pinned by digest (``name@sha256:…``, what ``autobench lock`` writes) runs only if
``docker image inspect`` finds a local image whose ``RepoDigests`` carry that digest.  A missing
image or another digest is refused before anything starts (RunError, nothing recorded); with
``--pull`` the pinned digest is pulled first (``docker pull name@sha256:…``) and checked again.

A recipe that names only a tag is not refused (``validate`` warns about it); the digest docker
has for it is recorded with the run when docker can tell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from autobench.errors import RegistryError, RunError
from autobench.recipe.imageref import parse_image_ref


@dataclass(frozen=True)
class ImageCheck:
    digest: str | None  # the registry digest of the image that runs (None: unknown)
    pinned: bool
    note: str | None = None


def _short(digest: str) -> str:
    algo, _, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:12]}"


def local_digest(image: str, *, docker: str, env: Mapping[str, str]) -> str | None:
    """The registry digest docker records for ``image`` (best effort: None when unknown)."""
    from autobench.image.local import inspect

    ref = parse_image_ref(image)
    try:
        local = inspect(f"{ref.name}@{ref.digest}" if ref.digest else image, docker=docker, env=env)
    except RegistryError:
        return None
    if local is None:
        return None
    digests = local.digests_for(ref)
    if ref.digest:
        return ref.digest if ref.digest in digests else None
    return digests[0] if digests else None


def check_local_image(
    image: str, *, docker: str, env: Mapping[str, str], pull: bool, echo: Callable[[str], None]
) -> ImageCheck:
    from autobench.image.local import inspect
    from autobench.image.local import pull as docker_pull

    ref = parse_image_ref(image)
    if ref.digest is None:  # the same answer as recipe.facts.image_digest
        digest = local_digest(image, docker=docker, env=env)
        return ImageCheck(digest, False, f"image not pinned by digest: {image}")
    by_digest = f"{ref.name}@{ref.digest}"
    hint_pull = f"run with --pull (docker pull {by_digest}), or `docker pull {by_digest}` yourself"
    for attempt in range(2):
        try:
            local = inspect(by_digest, docker=docker, env=env)
        except RegistryError as exc:
            raise RunError(
                f"cannot check the local image against its pin: {exc.message}",
                hint="start the Docker engine; nothing ran and nothing was recorded",
            ) from exc
        if local is not None:
            digests = local.digests_for(ref)
            if ref.digest in digests:
                return ImageCheck(ref.digest, True)
            have = ", ".join(_short(d) for d in digests) or "no registry digest"
            problem = f"the local image {by_digest} carries {have}, not the pinned {_short(ref.digest)}"
        else:
            problem = f"the pinned image {ref.name}@{_short(ref.digest)} is not among the local docker images"
        if not pull or attempt == 1:
            raise RunError(
                f"{problem}; refusing to start",
                hint=hint_pull if not pull else "the registry no longer serves this digest? see `autobench outdated`",
            )
        echo(f"pull: docker pull {by_digest}")
        ok, said = docker_pull(by_digest, docker=docker, env=env)
        if not ok:
            raise RunError(
                f"docker pull {by_digest} failed: {said[:200]}",
                hint="check the registry and your `docker login`; see `autobench outdated` for a deleted tag",
            )
    raise AssertionError("unreachable")  # pragma: no cover

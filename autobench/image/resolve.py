"""An image tag -> its digest, the per-platform manifest digests, and when each was built.

``resolve(client, registry, repository, reference, platforms)``:

* the manifest at the tag (or digest) is fetched and verified; its digest is THE pin (for a
  multi-arch image that is the index digest, which docker records in ``RepoDigests`` when it
  pulls by tag);
* an index lists one manifest per platform: those wanted are fetched by digest (verified) and
  their config blob gives ``created``.  Wanted: the platforms asked for (each must be present),
  else whichever of linux/arm64 (a DGX Spark) and linux/amd64 (an H100 box) the index has;
* a single manifest's platform comes from its config (``os``/``architecture``/``variant``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from autobench.digits import load_json
from autobench.errors import RegistryError
from autobench.image.registry import Manifest, RegistryClient, is_digest

DEFAULT_PLATFORMS = ("linux/arm64", "linux/amd64")


def utc_now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def platform_name(os_: Any, arch: Any, variant: Any = None) -> str:
    """``linux/arm64`` (arm64's v8 variant is the default and dropped), ``linux/arm/v7``."""
    name = f"{os_ or 'unknown'}/{arch or 'unknown'}"
    if variant and not (arch == "arm64" and variant == "v8"):
        name += f"/{variant}"
    return name


@dataclass
class PlatformImage:
    platform: str
    digest: str | None  # the platform's manifest digest (None: not known, e.g. from docker)
    config: str | None = None  # the config blob digest
    created: str | None = None  # from the config blob

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "config": self.config, "created": self.created}


@dataclass
class ResolvedImage:
    registry: str
    repository: str
    reference: str  # what was resolved (the tag, or a digest)
    digest: str
    media_type: str | None
    platforms: dict[str, PlatformImage] = field(default_factory=dict)
    resolved_at: str = field(default_factory=utc_now)
    source: str = "registry"  # "registry" | "docker" (lock --offline)

    @property
    def created(self) -> str | None:
        """When the first wanted platform's image was built (linux/arm64 before linux/amd64)."""
        for p in self.platforms.values():
            if p.created:
                return p.created
        return None


def _config(client: RegistryClient, manifest: Manifest) -> tuple[str | None, dict[str, Any]]:
    config = manifest.data.get("config")
    digest = config.get("digest") if isinstance(config, dict) else None
    if not isinstance(digest, str) or not is_digest(digest):
        raise RegistryError(
            f"{manifest.registry}/{manifest.repository}@{manifest.digest}: the manifest has no config digest",
            hint="the image is malformed; pin another",
        )
    body = client.blob(manifest.registry, manifest.repository, digest, what="config")
    try:
        data = load_json(body)
    except ValueError:
        data = {}
    return digest, data if isinstance(data, dict) else {}


def _created(config: dict[str, Any]) -> str | None:
    value = config.get("created")
    return value if isinstance(value, str) and value else None


def resolve(
    client: RegistryClient,
    registry: str,
    repository: str,
    reference: str,
    platforms: Sequence[str] = (),
) -> ResolvedImage:
    """Resolve ``reference`` (tag or digest); ``platforms``: each must be present (default: any of
    linux/arm64 and linux/amd64 present, at least one)."""
    top = client.manifest(registry, repository, reference)
    where = f"{registry}/{repository}{'@' if is_digest(reference) else ':'}{reference}"
    out = ResolvedImage(registry, repository, reference, top.digest, top.media_type)
    if top.kind == "manifest":
        config_digest, config = _config(client, top)
        name = platform_name(config.get("os"), config.get("architecture"), config.get("variant"))
        wrong = [p for p in platforms if p != name]
        if wrong:
            raise RegistryError(
                f"{where}: a single-platform image for {name}, not {wrong[0]}",
                hint=f"pin an image built for {wrong[0]} (a multi-arch tag), or drop --platform {wrong[0]}",
            )
        out.platforms[name] = PlatformImage(name, top.digest, config_digest, _created(config))
        return out
    offered: dict[str, dict[str, Any]] = {}
    for desc in top.data.get("manifests") or []:
        if not isinstance(desc, dict) or not isinstance(desc.get("platform"), dict):
            continue
        p = desc["platform"]
        name = platform_name(p.get("os"), p.get("architecture"), p.get("variant"))
        if name != "unknown/unknown":  # attestation manifests
            offered.setdefault(name, desc)
    has = ", ".join(sorted(offered)) or "none"
    missing = [p for p in platforms if p not in offered]
    if missing:
        raise RegistryError(
            f"{where}: platform {missing[0]} missing from the multi-arch index (it has: {has})",
            hint=f"pin an image built for {missing[0]}, or drop --platform {missing[0]}",
        )
    wanted = list(platforms) or [p for p in DEFAULT_PLATFORMS if p in offered]
    if not wanted:
        raise RegistryError(
            f"{where}: the index has neither linux/arm64 nor linux/amd64 (it has: {has})",
            hint="pass --platform OS/ARCH for the machine that runs it",
        )
    for name in wanted:
        desc = offered[name]
        digest = desc.get("digest")
        if not isinstance(digest, str) or not is_digest(digest):
            raise RegistryError(f"{where}: the index entry for {name} has no valid digest", hint="pin another image")
        manifest = client.manifest(registry, repository, digest)
        if manifest.kind != "manifest":
            raise RegistryError(f"{where}: the index entry for {name} is not an image manifest", hint="pin another")
        config_digest, config = _config(client, manifest)
        out.platforms[name] = PlatformImage(name, manifest.digest, config_digest, _created(config))
    return out

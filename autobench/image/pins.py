"""``lock`` and ``outdated`` for ``container.image``.

Lock: the tag is resolved (registry, or ``docker image inspect`` with ``--offline``) and the
recipe's value becomes ``image: <name>@sha256:…  # frozen: <tag>``, edited in the file that
writes it by the same one-line splice as Hub revisions (comments and layout survive).  The lock
file gets an ``images`` section keyed ``container.image``: registry, repository, tag, the digest
(of the index for a multi-arch image), the per-platform manifest digests with their config
digests and creation dates, and when and from where it was resolved.

A reference that already carries a digest is kept, never re-resolved; its tag comes from the
reference (``name:tag@digest``), the ``# frozen:`` comment, or the lock file.  Online, lock checks
the digest is still served and notes where the tag points now.

Outdated: the pinned digest against where the tag points now -- ``up-to-date``, ``moved`` (old and
new digest and creation dates), ``deleted`` (the tag is gone; whether the pinned digest is still
served is said), ``unpinned`` (the recipe follows a tag).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.errors import RegistryError
from autobench.hub.lockfile import defining_file, frozen_label_at, set_revision
from autobench.image.registry import ManifestNotFound, RegistryClient, short
from autobench.image.resolve import PlatformImage, ResolvedImage, resolve
from autobench.recipe.facts import container_image
from autobench.recipe.imageref import ImageRef, parse_image_ref

if TYPE_CHECKING:
    from autobench.recipe.loader import LoadedRecipe

SECTION = "images"
KEYS = ("container", "image")
KEY = "container.image"


def lock_entry(lock: dict[str, Any] | None, ref: ImageRef) -> dict[str, Any] | None:
    """The lock file's entry for this image (same registry and repository), if any."""
    entry = ((lock or {}).get(SECTION) or {}).get(KEY)
    if not isinstance(entry, dict):
        return None
    if entry.get("registry") != ref.registry or entry.get("repository") != ref.repository:
        return None
    return entry


def image_tag(loaded: LoadedRecipe, ref: ImageRef, lock: dict[str, Any] | None) -> str | None:
    """The tag a pin was taken from: written, ``# frozen:``, or the lock file's (None: unknown)."""
    if ref.tag:
        return ref.tag
    if ref.digest is None:
        return "latest"  # what docker pulls for an untagged name
    where = defining_file(loaded, KEYS)
    label = frozen_label_at(where, KEYS) if where else None
    if label:
        return label
    entry = lock_entry(lock, ref)
    if entry and entry.get("digest") == ref.digest and entry.get("tag"):
        return str(entry["tag"])
    return None


def _entry(resolved: ResolvedImage, ref: ImageRef, tag: str | None, file: Path, recipe_path: Path) -> dict[str, Any]:
    return {
        "image": ref.name,
        "registry": resolved.registry,
        "repository": resolved.repository,
        "tag": tag,
        "digest": resolved.digest,
        "media_type": resolved.media_type,
        "platforms": {name: p.to_json() for name, p in resolved.platforms.items()},
        "resolved_at": resolved.resolved_at,
        "resolved_from": resolved.source,
        "key": KEY,
        "file": os.path.relpath(file, recipe_path.resolve().parent),
    }


@dataclass
class ImagePin:
    """One image pin, resolved; ``apply()`` edits the recipe (the lock's write phase)."""

    previous: str  # the reference as written
    name: str
    tag: str | None
    digest: str
    file: Path
    entry: dict[str, Any]
    source: str
    tag_now: str | None = None  # for a kept pin: where its tag points now (None: unknown / gone)
    note: str | None = None
    changed: bool = False
    section: str = SECTION
    key: str = KEY

    @property
    def pinned(self) -> str:
        return f"{self.name}@{self.digest}"

    def apply(self) -> bool:
        if self.tag is None:  # a kept digest with no known tag: nothing to write
            return False
        self.changed = set_revision(self.file, KEYS, "image", self.pinned, self.tag)
        return self.changed

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "image",
            "image": self.name,
            "tag": self.tag,
            "digest": self.digest,
            "previous": self.previous,
            "pinned": self.pinned,
            "key": KEY,
            "file": str(self.file),
            "resolved_from": self.source,
            "tag_now": self.tag_now,
            "note": self.note,
            "platforms": sorted(self.entry.get("platforms") or {}),
        }


def _with_location(exc: RegistryError, loaded: LoadedRecipe) -> RegistryError:
    where = loaded.value_position(*KEYS) if hasattr(loaded, "value_position") else loaded.position(*KEYS)
    exc.location = exc.location or (str(where) if where else str(loaded.path))
    return exc


def plan_image_pin(
    loaded: LoadedRecipe,
    recipe_path: Path,
    previous_lock: dict[str, Any] | None,
    *,
    client: RegistryClient | None,
    platforms: Sequence[str] = (),
    docker: str = "docker",
) -> ImagePin:
    """Resolve the recipe's image (online with ``client``, else from local docker); writes nothing."""
    from autobench.image.local import resolve_local

    written = container_image(loaded.recipe)  # (image_extras skips a recipe without one)
    ref = parse_image_ref(written)  # the schema accepted it: it parses
    tag = image_tag(loaded, ref, previous_lock)
    file = defining_file(loaded, KEYS) or recipe_path.resolve()
    old = lock_entry(previous_lock, ref)
    tag_now: str | None = None
    note = None
    try:
        if client is None:
            if ref.digest and old and old.get("digest") == ref.digest:
                resolved = _from_entry(old, ref)
            else:
                resolved = resolve_local(ref, docker=docker)
        elif (
            ref.digest
            and old
            and old.get("digest") == ref.digest
            and old.get("resolved_from") == "registry"
            and not platforms
        ):
            # A kept pin the lock file already describes: one HEAD proves it is still served.
            client.head_digest(ref.registry, ref.repository, ref.digest)
            resolved = _from_entry(old, ref)
        else:
            resolved = resolve(client, ref.registry, ref.repository, ref.digest or tag or "latest", platforms)
        if client is not None and ref.digest and tag:
            try:
                tag_now = client.head_digest(ref.registry, ref.repository, tag)
            except ManifestNotFound:
                note = f"the tag {tag} no longer exists on {ref.registry}"
    except RegistryError as exc:
        raise _with_location(exc, loaded) from None
    if ref.digest and tag is None:
        note = "no tag recorded for this digest: it is kept as written (write `# frozen: TAG` after it)"
    if tag_now and tag_now != resolved.digest:
        note = f"{tag} has moved to {short(tag_now)} since this pin; see `autobench outdated {recipe_path}`"
    return ImagePin(
        previous=written,
        name=ref.name,
        tag=tag,
        digest=resolved.digest,
        file=file,
        entry=_entry(resolved, ref, tag, file, recipe_path),
        source=resolved.source,
        tag_now=tag_now,
        note=note,
    )


def _from_entry(old: dict[str, Any], ref: ImageRef) -> ResolvedImage:
    """A kept pin as the lock file recorded it (resolution time and source included)."""
    digest = str(old["digest"])
    return ResolvedImage(
        ref.registry,
        ref.repository,
        digest,
        digest,
        old.get("media_type"),
        {n: PlatformImage(n, p.get("digest"), p.get("config"), p.get("created")) for n, p in _platforms(old)},
        str(old.get("resolved_at") or ""),
        str(old.get("resolved_from") or "registry"),
    )


def _platforms(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    raw = entry.get("platforms")
    return [(k, v) for k, v in raw.items() if isinstance(v, dict)] if isinstance(raw, dict) else []


# -- outdated -------------------------------------------------------------------------------------


@dataclass
class ImageOutdated:
    recipe: Path
    image: str
    tag: str | None
    pinned: str | None
    current: str | None
    status: str  # up-to-date | moved | deleted | unpinned | no-tag | not-checked
    pinned_created: str | None = None
    current_created: str | None = None
    pinned_served: bool | None = None  # for a deleted tag: is the pinned digest still served?
    note: str | None = None
    kind: str = "image"
    changes: list[Any] = field(default_factory=list)

    @property
    def breaking(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": str(self.recipe),
            "kind": "image",
            "repo": self.image,
            "label": self.tag,
            "label_assumed": False,
            "pinned": self.pinned,
            "current": self.current,
            "status": self.status,
            "breaking": False,
            "pinned_created": self.pinned_created,
            "current_created": self.current_created,
            "pinned_served": self.pinned_served,
            "note": self.note,
            "changes": [],
        }


def _created_of(client: RegistryClient, ref: ImageRef, digest: str) -> str | None:
    try:
        return resolve(client, ref.registry, ref.repository, digest).created
    except RegistryError:
        return None


def check_image(recipe_path: str | Path, client: RegistryClient | None) -> ImageOutdated | None:
    """Where the pinned image's tag points now (``client`` None: offline, not checked); None for
    a recipe without an image (run only as a process)."""
    from autobench.hub.lockfile import read_lock
    from autobench.recipe.loader import load_recipe

    recipe_path = Path(recipe_path)
    loaded = load_recipe(recipe_path)
    if loaded.recipe.container.image is None:
        return None
    lock = read_lock(recipe_path)
    ref = parse_image_ref(container_image(loaded.recipe))
    tag = image_tag(loaded, ref, lock)
    entry = lock_entry(lock, ref)
    pinned, note = ref.digest, None
    if pinned is None and entry and entry.get("tag") == tag and entry.get("digest"):
        pinned, note = str(entry["digest"]), "pinned in the lock file only (the recipe still says the tag)"
    item = ImageOutdated(recipe_path, ref.name, tag, pinned, None, "unpinned", note=note)
    if entry and entry.get("digest") == pinned:
        item.pinned_created = next((p.get("created") for _, p in _platforms(entry) if p.get("created")), None)
    if tag is None:
        item.status = "no-tag"
        item.note = "no tag recorded for this digest: nothing to compare (write `# frozen: TAG` after it)"
        return item
    if client is None:
        item.status = "not-checked"
        item.note = "offline: the registry was not asked"
        return item
    try:
        try:
            item.current = client.head_digest(ref.registry, ref.repository, tag)
        except ManifestNotFound:
            item.status = "deleted"
            if pinned:
                try:
                    client.head_digest(ref.registry, ref.repository, pinned)
                    item.pinned_served = True
                except ManifestNotFound:
                    item.pinned_served = False
            served = {True: "the pinned digest is still served", False: "the pinned digest is gone too", None: ""}
            item.note = (
                f"the tag {tag} no longer exists on {ref.registry} (deleted or garbage-collected)"
                + (f"; {served[item.pinned_served]}" if pinned else "")
                + "; keep the pin while it lasts, `docker save` the image you have, or move to a current tag "
                "and `autobench lock` again"
            )
            return item
    except RegistryError as exc:
        raise _with_location(exc, loaded) from None
    if pinned is None:
        item.note = f"not pinned: follows {tag}; run `autobench lock {recipe_path}`"
        return item
    if item.current == pinned:
        item.status = "up-to-date"
        return item
    item.status = "moved"
    item.current_created = _created_of(client, ref, item.current)
    if item.pinned_created is None:
        item.pinned_created = _created_of(client, ref, pinned)
    return item


def image_extras(*, offline: bool, timeout: float | None, platforms: Sequence[str] = ()) -> tuple[Any, Any]:
    """(the ``extras`` hook for ``hub.lockfile.lock_recipe``, the client to close afterwards)."""
    from autobench.image.registry import RegistrySettings

    client = None if offline else RegistryClient(RegistrySettings.from_env(timeout=timeout))

    def extras(loaded: LoadedRecipe, recipe_path: Path, previous_lock: dict[str, Any] | None) -> list[Any]:
        if loaded.recipe.container.image is None:  # a process-only recipe: no image to pin
            return []
        return [plan_image_pin(loaded, recipe_path, previous_lock, client=client, platforms=platforms)]

    return extras, client


def tagged_image(loaded: LoadedRecipe) -> str:
    """The recipe's image with its tag: ``name:TAG@sha256:…`` when the value is ``name@sha256:…``
    and the tag is known (``# frozen: TAG``, else the lock file), else the value as written.
    For readers of the tag (preflight reads the vLLM version from ``:v0.23.1``)."""
    from autobench.hub.lockfile import read_lock

    if loaded.recipe.container.image is None:  # a process-only recipe: no tag to read
        return ""
    image = str(loaded.recipe.container.image)
    try:
        ref = parse_image_ref(image)
    except ValueError:
        return image
    if ref.digest is None or ref.tag is not None:
        return image
    try:
        tag = image_tag(loaded, ref, read_lock(Path(loaded.path)))
    except Exception:  # noqa: BLE001 - a best-effort reading aid: an unreadable lock file changes nothing here
        return image
    return f"{ref.name}:{tag}@{ref.digest}" if tag else image

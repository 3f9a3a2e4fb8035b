"""CLI: ``autobench lock``, ``autobench outdated``, ``autobench hub info``.

Thin commands: parse options, call one library function in autobench.hub, print.  Plain text
(stable, greppable) everywhere; ``--json`` for machines.  Errors propagate as HubError/RecipeError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from autobench.cli.options import Group, json_option, print_json
from autobench.cli.output import say
from autobench.cli.params import Finite

_offline = click.option("--offline", is_flag=True, help="Read only the local HF cache (same as HF_HUB_OFFLINE=1).")
_timeout = click.option(
    "--timeout",
    type=Finite(min=0, min_open=True),
    default=None,
    help="Seconds per Hub request (default 10, or AUTOBENCH_HUB_TIMEOUT).",
)
_images = click.option(
    "--images/--no-images",
    default=True,
    envvar="AUTOBENCH_IMAGES",
    show_default=True,
    help="Also pin / check container.image against its registry (AUTOBENCH_IMAGES=0 turns it off).",
)


def _resolver(offline: bool, timeout: float | None) -> Any:
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import Resolver

    return Resolver(HubSettings.from_env(offline=offline or None, timeout=timeout))


def _platforms(values: tuple[str, ...]) -> tuple[str, ...]:
    """--platform values as OS/ARCH[/VARIANT] (linux/arm64/v8 is linux/arm64, as in the index)."""
    import re

    out = []
    for value in values:
        if not re.fullmatch(r"[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?", value):
            raise click.BadParameter("expected OS/ARCH[/VARIANT], e.g. linux/arm64", param_hint="--platform")
        out.append(value.removesuffix("/v8") if value.startswith("linux/arm64/") else value)
    return tuple(out)


def _short(sha: str | None) -> str:
    return sha[:7] if sha else "-"


@click.command()
@click.argument("recipes", nargs=-1, required=True, type=click.Path(path_type=Path))
@_offline
@_timeout
@json_option
@_images
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    metavar="OS/ARCH",
    callback=lambda ctx, param, value: _platforms(value),
    help="A platform the image's index must offer (repeatable; default: whichever of linux/arm64, linux/amd64 it has).",
)
@click.pass_context
def lock(
    ctx: click.Context,
    recipes: tuple[Path, ...],
    offline: bool,
    timeout: float | None,
    as_json: bool,
    images: bool,
    platforms: tuple[str, ...],
) -> None:
    """Pin the model, tokenizer and draft revisions of RECIPES to commit shas, the image to a digest.

    What cannot be pinned (the image, when no registry answers) is reported on stderr and the
    exit status is non-zero, but the pins that resolved are written (`--no-images`: the Hub
    revisions only).  A revision written in a file the recipe extends is edited there, and the
    output says so.

    Edits each revision in place (`revision: <sha>  # frozen: <label>`) and the image
    (`image: <name>@sha256:…  # frozen: <tag>`), and writes <recipe>.lock.json beside the
    recipe with fingerprints, trust facts and the image's per-platform digests.  --offline
    reads the HF cache and the images docker already has.
    """
    from autobench.hub.lockfile import lock_recipe
    from autobench.image.pins import image_extras

    resolver = _resolver(offline, timeout)
    extras, client = image_extras(offline=resolver.settings.offline, timeout=timeout, platforms=platforms)
    try:
        results = [lock_recipe(path, resolver, extras=extras if images else None) for path in recipes]
    finally:
        if client is not None:
            client.close()
    failed = [e for r in results for e in r.failed]
    if as_json:
        print_json([r.to_json() for r in results], sort_keys=True)
        if failed:
            ctx.exit(failed[0].exit_code)
        return
    for result in results:
        say(f"{result.recipe}")
        for pin in result.pins:
            was = "" if pin.previous == pin.sha else f" (was {pin.previous or 'main, by default'})"
            assumed = " [label assumed: main]" if pin.label_assumed else ""
            where = f"  -> {pin.file}" if pin.changed else ""
            say(f"  {pin.spec.kind:<9} {pin.spec.repo}  {pin.sha}  # frozen: {pin.label}{assumed}{was}{where}")
            if pin.label_now and pin.label_now != pin.sha:
                say(
                    f"      note: {pin.label} has moved to {pin.label_now[:7]} since this pin; "
                    f"see `autobench outdated {result.recipe}`"
                )
        for image in result.extra:
            was = "" if image.previous == image.pinned else f" (was {image.previous})"
            where = f"  -> {image.file}" if image.changed else ""
            tag = f"  # frozen: {image.tag}" if image.tag else ""
            say(f"  {'image':<9} {image.name}  {image.digest}{tag}{was}{where}")
            platforms_ = image.entry.get("platforms") or {}
            if platforms_:
                shown = ", ".join(f"{k} {(v.get('digest') or 'digest unknown')[:19]}" for k, v in platforms_.items())
                say(f"      platforms: {shown} (from {image.source})")
            if image.note:
                say(f"      note: {image.note}")
        for parent in result.parents_edited:  # never silently: a parent is shared by every child
            say(
                f"  note: edited {parent}, a file {result.recipe} extends (the revision is written there); "
                "every recipe extending it gets this pin"
            )
        say(f"  lock file: {result.lock_file}")
        for exc in result.failed:  # what could not be pinned; the pins above are written
            say(f"error: not pinned: {exc}", err=True)
    if failed:
        ctx.exit(failed[0].exit_code)


@click.command()
@click.argument("recipes", nargs=-1, type=click.Path(path_type=Path))
@_offline
@_timeout
@json_option
@_images
@click.option("--exit-code", is_flag=True, help="Exit 1 when any pin has moved upstream (or its image tag is gone).")
@click.pass_context
def outdated(
    ctx: click.Context,
    recipes: tuple[Path, ...],
    offline: bool,
    timeout: float | None,
    as_json: bool,
    images: bool,
    exit_code: bool,
) -> None:
    """Show pins whose branch or image tag has moved upstream, with the config changes.

    RECIPES default to recipes/*.yaml."""
    from autobench.errors import AutobenchError, UsageError
    from autobench.hub.outdated import check_recipe

    paths = list(recipes) or sorted(Path("recipes").glob("*.yaml"))
    if not paths:
        raise UsageError("no recipes given and none found in ./recipes", hint="pass RECIPE paths")
    resolver = _resolver(offline, timeout)
    items: list[Any] = []
    client = None
    if images and not resolver.settings.offline:
        from autobench.image.registry import RegistryClient, RegistrySettings

        client = RegistryClient(RegistrySettings.from_env(timeout=timeout))
    failed: list[tuple[Path, AutobenchError]] = []
    try:
        for path in paths:  # every recipe is checked and reported, whichever failed before it
            try:
                found: list[Any] = list(check_recipe(path, resolver))
                if images:
                    from autobench.image.pins import check_image

                    image = check_image(path, client)
                    if image is not None:  # None: a process-only recipe has no image
                        found.append(image)
            except AutobenchError as exc:
                failed.append((path, exc))
                continue
            items.extend(found)
    finally:
        if client is not None:
            client.close()
    if as_json:
        doc = [i.to_json() for i in items]
        doc += [{"recipe": str(p), "status": "error", "error": e.message, "hint": e.hint} for p, e in failed]
        print_json(doc, sort_keys=True)
    else:
        _print_outdated(items)
        for path, error in failed:
            say(f"{path}: not checked: {error}", err=True)
    if failed:  # a recipe that could not be checked is a failure, reported after all the others
        ctx.exit(failed[0][1].exit_code)
    if exit_code and any(i.status in ("moved", "deleted") for i in items):
        ctx.exit(1)


def _print_outdated(items: list[Any]) -> None:
    from autobench.hub.diff import show

    recipe = None
    for item in items:
        if item.recipe != recipe:
            recipe = item.recipe
            say(str(recipe))
        if item.kind == "image":
            _print_image(item)
            continue
        head = f"  {item.kind:<9} {item.repo}"
        if item.status == "unpinned":
            say(f"{head}  unpinned: {item.label} is at {_short(item.current)}")
        elif item.status == "up-to-date":
            say(f"{head}  up-to-date: {_short(item.pinned)} = {item.label}")
        else:
            flag = "  BREAKING" if item.breaking else ""
            say(
                f"{head}  moved: pinned {_short(item.pinned)}, {item.label} is now "
                f"{_short(item.current)} ({item.current}){flag}"
            )
            if not item.changes:
                say("      config.json unchanged")
            for change in item.changes:
                mark = "BREAKING" if change.breaking else "changed "
                say(f"      {mark} {change.field}: {show(change.old)} -> {show(change.new)}")
        if item.note:
            say(f"      note: {item.note}")


def _print_image(item: Any) -> None:
    from autobench.image.registry import short

    def built(when: str | None) -> str:
        return f" (built {when})" if when else ""

    head = f"  {'image':<9} {item.image}"
    if item.status == "moved":
        say(
            f"{head}  moved: pinned {short(item.pinned)}{built(item.pinned_created)}, {item.tag} is now "
            f"{short(item.current)}{built(item.current_created)} ({item.current})"
        )
        say(f"      hint: `autobench lock` after a test run takes {item.tag} at {short(item.current)}")
    elif item.status == "deleted":
        say(f"{head}  deleted: {item.tag} no longer exists; pinned {short(item.pinned)}")
    elif item.status == "up-to-date":
        say(f"{head}  up-to-date: {short(item.pinned)} = {item.tag}")
    elif item.status == "unpinned":
        say(f"{head}  unpinned: {item.tag} is at {short(item.current)}")
    else:
        say(f"{head}  {item.status}: pinned {short(item.pinned)}")
    if item.note:
        say(f"      note: {item.note}")


@click.group(cls=Group)
def hub() -> None:
    """Inspect Hub repositories (trust facts)."""


@hub.command()
@click.argument("ref", metavar="REPO[@REV]")
@_offline
@_timeout
@json_option
def info(ref: str, offline: bool, timeout: float | None, as_json: bool) -> None:
    """Commit sha, architecture fingerprint and trust facts of REPO at REV (default main)."""
    from autobench.hub.fingerprint import describe
    from autobench.hub.info import hub_info
    from autobench.hub.trust import describe_weights

    data = hub_info(ref, _resolver(offline, timeout))
    if as_json:
        print_json(data, sort_keys=True)
        return
    t, fp = data["trust"], data["fingerprint"]

    def yn(value: Any) -> str:
        return "?" if value is None else ("yes" if value else "no")

    template = yn(t["has_chat_template"]) + (f" ({t['chat_template_source']})" if t["chat_template_source"] else "")
    rows = [
        ("repo", data["repo"]),
        ("revision", f"{data['revision']} -> {data['sha']}"),
        ("from", data["resolved_from"]),
        ("architecture", describe(fp)),
        ("downloads", "?" if t["downloads"] is None else t["downloads"]),
        ("likes", "?" if t["likes"] is None else t["likes"]),
        ("gated", "?" if t["gated"] is None else (t["gated"] or "no")),
        ("config.json", yn(t["has_config"])),
        ("quantization", yn(t["has_quantization_config"])),
        ("chat template", template),
        ("weights", describe_weights(t["weight_files"], t["weight_bytes"])),
        ("last modified", t["last_modified"] or "?"),
    ]
    for key, value in rows:
        say(f"{key:<14} {value}")

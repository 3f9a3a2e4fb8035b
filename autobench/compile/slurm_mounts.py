"""``container.volumes`` (docker's ``-v SRC:DST[:ro]``) as the bind mounts of a Slurm job's
container: pyxis's ``--container-mounts SRC:DST[:ro]`` or Apptainer's ``--bind SRC:DST[:ro]``.

Both take a comma-separated list and accept the option several times (pyxis's args.c adds each
entry to its mount list; Apptainer's guide, "Bind Paths and Mounts": "The --bind/-B option can
be specified multiple times"), so each volume is its own option and a ``~/`` source is expanded
against ``$HOME`` like docker's.  What neither can do is refused with one line instead of being
dropped: a named docker volume (pyxis takes "a relative path, an absolute path, tmpfs or umount"
as a source), an anonymous one, a path holding ``,`` (their list separator), and a docker option
other than ``ro`` / ``rw`` (``z``, ``nocopy``, propagation ... mean nothing to them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autobench.compile.argv import Lines, _opt
from autobench.errors import RecipeError

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

FLAGS = {"pyxis": "--container-mounts", "apptainer": "--bind"}


def _refuse(volume: str, mode: str, why: str) -> RecipeError:
    return RecipeError(
        f"container.volumes: {volume[:80]!r} {why}, which --container {mode} cannot mount",
        hint="write it as /host/path:/container/path[:ro], or use --container docker",
    )


def mount_lines(recipe: Recipe, mode: str) -> Lines:
    """One ``FLAG SRC:DST[:ro]`` per volume for ``mode`` (pyxis or apptainer)."""
    flag = FLAGS[mode]
    lines: Lines = []
    for volume in recipe.container.volumes:
        parts = volume.split(":")
        if len(parts) < 2 or len(parts) > 3 or not parts[0] or not parts[1]:
            raise _refuse(volume, mode, "is not SRC:DST[:OPTIONS]")
        src, dst = parts[0], parts[1]
        if not src.startswith(("/", "~/")):
            raise _refuse(volume, mode, "is a named docker volume (its source is no absolute path)")
        if "," in src or "," in dst:
            raise _refuse(volume, mode, "holds a ',' (the list separator of bind mounts)")
        options = set(parts[2].split(",")) if len(parts) == 3 else set()
        if options - {"ro", "rw"}:
            raise _refuse(volume, mode, f"has the docker option(s) {','.join(sorted(options - {'ro', 'rw'}))}")
        read_only = ":ro" if "ro" in options else ""
        lines.append(_opt(flag, f"{src}:{dst}{read_only}", path=True))
    return lines

"""Opening files a user or a recipe names: the one file-reading policy.

1. **Where:** a path a recipe (or another tool's file being imported) names is confined to the
   recipe's own folder tree, or to a folder the user allows (``AUTOBENCH_ALLOW_DIRS``, a
   ``:``-separated list): :func:`confined`.  Links are resolved first, so a link inside the tree
   to ``/etc/shadow`` is outside it.
2. **What:** regular files only (:func:`open_regular`).
3. **How much:** every read is bounded in bytes, on every path through the reader: a whole
   file (:func:`read_regular`), or line by line (:func:`read_lines`: the total counts every
   byte read, also those of an over-long line being skipped).


A path given on the command line may name anything: ``/dev/zero`` never ends, a FIFO
blocks ``open()`` until a writer appears (forever), a terminal waits for input.  So a
file is checked with ``stat`` *before* it is opened and refused unless it is a regular
file; it is then opened with ``O_NONBLOCK`` (an ``open`` that cannot block, even if the
path was swapped for a FIFO in between) and checked again with ``fstat`` on the open
descriptor.  Reads are bounded: a file over its limit is refused from its size, and a
file that grows while it is read stops at the limit.

Errors are raised as the caller's ``AutobenchError`` subclass (one line, the path as
location), so a dataset error stays a bench error (exit 5) and so on.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from autobench.errors import AutobenchError


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def open_regular(
    path: str | os.PathLike[str],
    *,
    what: str,
    error: type[AutobenchError] = AutobenchError,
    limit: int | None = None,
    missing_hint: str | None = None,
) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (of at most ``limit`` bytes)."""
    where = os.fspath(path)
    try:
        st = os.stat(where)
    except FileNotFoundError as exc:
        raise error(f"{what} not found", location=where, hint=missing_hint) from exc
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", location=where) from exc
    _check(st, where, what, error, limit)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", location=where) from exc
    try:
        _check(os.fstat(fd), where, what, error, limit)  # the path may have changed since the stat
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check(st: os.stat_result, where: str, what: str, error: type[AutobenchError], limit: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise error(
            f"{what} is {_kind(st.st_mode)}, not a regular file",
            location=where,
            hint="give a regular file (special files such as FIFOs and devices are refused: they can block "
            "or never end)",
        )
    if limit is not None and st.st_size > limit:
        raise error(
            f"{what} is {human_bytes(st.st_size)}, over the {human_bytes(limit)} limit",
            location=where,
            hint="split it or sample it into a smaller file",
        )


def read_regular(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit: int,
    error: type[AutobenchError] = AutobenchError,
    missing_hint: str | None = None,
) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes."""
    with open_regular(path, what=what, error=error, limit=limit, missing_hint=missing_hint) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise error(f"cannot read {what}: {exc.strerror or exc}", location=os.fspath(path)) from exc
    if len(data) > limit:  # it grew while it was read
        raise error(f"{what} is over the {human_bytes(limit)} limit", location=os.fspath(path))
    return data


def sha256_regular(
    path: str | os.PathLike[str],
    *,
    what: str,
    error: type[AutobenchError] = AutobenchError,
) -> bytes:
    """The sha256 digest of a regular file, read a block at a time (memory stays bounded
    whatever the size; FIFOs and devices are refused as by :func:`open_regular`).  At most the
    size the file states is read: one that grows while it is hashed, or reports a false size
    (``/proc/self/pagemap`` says 0 and never ends), is refused rather than read for ever."""
    where = os.fspath(path)
    with open_regular(path, what=what, error=error) as f:
        size = os.fstat(f.fileno()).st_size
        digest = hashlib.sha256()
        read = 0
        try:
            while block := f.read(min(2**20, size + 1 - read)):
                read += len(block)
                if read > size:
                    raise error(f"{what} changed while it was read (larger than its stated size)", location=where)
                digest.update(block)
        except OSError as exc:
            raise error(f"cannot read {what}: {exc.strerror or exc}", location=where) from exc
    return digest.digest()


#: Folders outside a recipe's tree that a recipe may name files in (``:``-separated).
ALLOW_ENV = "AUTOBENCH_ALLOW_DIRS"


def allowed_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """The folders of ``$AUTOBENCH_ALLOW_DIRS`` (resolved; empty entries ignored)."""
    raw = (os.environ if env is None else env).get(ALLOW_ENV, "")
    return [Path(part).expanduser().resolve() for part in raw.split(os.pathsep) if part.strip()]


def confined(
    path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    *,
    what: str,
    error: type[AutobenchError] = AutobenchError,
    location: str | None = None,
    allow: list[Path] | None = None,
) -> Path:
    """``path`` (relative to ``root``; absolute and ``~/`` paths too) resolved, if it lies inside
    ``root`` or inside an allowed folder (:func:`allowed_dirs`); otherwise ``error``, naming the
    path as written, never its content."""
    written = os.fspath(path)
    candidate = Path(written).expanduser()
    if not candidate.is_absolute():
        candidate = Path(root) / candidate
    resolved = candidate.resolve()
    for base in [Path(root).resolve(), *(allowed_dirs() if allow is None else allow)]:
        if resolved == base or resolved.is_relative_to(base):
            return resolved
    raise error(
        f"{what} {written!r} is outside the recipe's folder ({Path(root)})",
        location=location,
        hint=f"keep it inside the recipe's folder, or allow its folder with {ALLOW_ENV}=DIR",
    )


def read_lines(
    path: str | os.PathLike[str],
    *,
    what: str,
    limit: int,
    max_line: int,
    error: type[AutobenchError] = AutobenchError,
    missing_hint: str | None = None,
) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) of each line of a regular file; ``None`` for a line longer than
    ``max_line`` bytes (skipped a piece at a time, never held whole).  Every byte read counts
    towards ``limit``, those of a skipped line too: a file that never ends (``/proc/self/pagemap``
    reports size 0) stops at ``limit``."""
    where = os.fspath(path)
    with open_regular(path, what=what, error=error, limit=limit, missing_hint=missing_hint) as f:
        total = 0
        lineno = 0

        def more(size: int) -> bytes:
            nonlocal total
            try:
                chunk = f.readline(size)
            except OSError as exc:
                raise error(f"cannot read {what}: {exc.strerror or exc}", location=where) from exc
            total += len(chunk)
            if total > limit:
                raise error(f"{what} is over the {human_bytes(limit)} limit", location=where)
            return chunk

        while True:
            line = more(max_line + 1)
            if not line:
                return
            lineno += 1
            if len(line) > max_line and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest, a piece at a time
                    line = more(max_line)
                yield lineno, None
                continue
            yield lineno, line

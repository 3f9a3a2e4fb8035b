"""Opening files a user names: regular files only, and never more than a stated size.

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

import os
import stat
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

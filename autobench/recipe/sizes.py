"""``container.shm_size``: the one parser of a memory size, for every target.

The recipe's field is docker's ``--shm-size`` value, so it is read the way docker reads it
(``RAMInBytes`` of github.com/docker/go-units, size.go): a number (digits, optionally a
fraction), an optional space, then an optional unit letter ``k m g t p`` (case-insensitive,
powers of 1024) followed by an optional ``i`` and/or ``b`` -- or a bare ``b``.  So ``16g``,
``16G``, ``16gb``, ``16GiB``, ``1.5g`` and a Kubernetes-style ``20Gi`` (what an imported
Helm ``shmSize`` says) all mean the same bytes to every target: docker gets the text as
written, Kubernetes a quantity of those bytes (:func:`kubernetes_quantity`).

Stricter than docker on one point: the size must be at least one byte (docker reads ``0`` as
"the default, 64 MB", which a recipe should say by leaving the field out).
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?) ?(?:([kmgtp])i?b?|b)?", re.IGNORECASE)  # a bare b: bytes
_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
#: Kubernetes binary suffixes, largest first (resource.Quantity: Ki Mi Gi Ti Pi Ei).
_QUANTITY = (("Pi", 1024**5), ("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024))
#: What a refusal suggests.
SIZE_HINT = "a number and a unit docker reads, e.g. 16g, 512m or 20Gi"


def parse_size(text: str) -> int:
    """The bytes ``text`` stands for; ValueError (one line, saying what is wrong) when docker
    would refuse it or it is not at least one byte."""
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"{text[:40]!r} is not a size docker reads")
    number, unit = m.group(1), (m.group(2) or "").lower()
    size = int(float(number) * _UNIT[unit])  # go-units: float64 times the unit, truncated
    if size < 1:
        raise ValueError(f"{text[:40]!r} is less than one byte")
    return size


def kubernetes_quantity(text: str) -> str:
    """``text`` (see :func:`parse_size`) as a Kubernetes quantity: the largest binary suffix
    that divides it exactly (``16g`` -> ``16Gi``, ``1.5g`` -> ``1536Mi``), else plain bytes."""
    size = parse_size(text)
    for suffix, factor in _QUANTITY:
        if size % factor == 0:
            return f"{size // factor}{suffix}"
    return str(size)

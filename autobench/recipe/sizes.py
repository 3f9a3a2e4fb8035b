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

import math
import re
from decimal import Decimal

_SIZE = re.compile(r"(\d+(?:\.\d+)?) ?(?:([kmgtp])i?b?|b)?", re.IGNORECASE)  # a bare b: bytes
_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
#: Kubernetes binary suffixes, largest first (resource.Quantity: Ki Mi Gi Ti Pi Ei).
_QUANTITY = (("Pi", 1024**5), ("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024))
#: A Kubernetes quantity of bytes (resource.Quantity: a decimal number, then a binary suffix, a
#: decimal one -- k M G T P E, powers of 1000 -- or an exponent e3 / E3).
_K8S = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|[eE][+-]?\d{1,3})?")
_K8S_FACTOR = {
    "": 1,
    **{s: 1024 ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: 1000 ** (i + 1) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
}
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


def from_kubernetes_quantity(text: str) -> str:
    """A Kubernetes quantity of bytes (what a chart writes into an emptyDir ``sizeLimit``, e.g. a
    Helm ``shmSize``) as a ``container.shm_size`` of the same bytes: a binary quantity docker
    reads as written (``20Gi``), anything else as whole bytes (``20G`` is 20 * 1000**3 bytes in
    Kubernetes but 20 GiB to docker: ``20000000000``; Kubernetes rounds a fraction of a byte up).
    ValueError when it is no quantity of at least one byte."""
    m = _K8S.fullmatch(text)
    if not m:
        raise ValueError(f"{text[:40]!r} is not a Kubernetes quantity")
    number, suffix = m.group(1), m.group(2) or ""
    factor = _K8S_FACTOR[suffix] if suffix in _K8S_FACTOR else Decimal(10) ** int(suffix[1:])  # e3: 10**3
    size = math.ceil(Decimal(number) * factor)
    if size < 1:
        raise ValueError(f"{text[:40]!r} is less than one byte")
    if suffix.endswith("i") and _SIZE.fullmatch(text):  # (docker has no exa: 1Ei becomes bytes)
        return text
    return str(size)

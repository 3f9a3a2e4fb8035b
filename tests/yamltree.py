"""``mappings(node)``: every mapping of a parsed YAML (or JSON) tree, the tree's own first, then
depth first in document order -- what a test that looks for one kind of Kubernetes object or
container in compiled manifests walks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def mappings(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from mappings(value)
    elif isinstance(node, list):
        for value in node:
            yield from mappings(value)

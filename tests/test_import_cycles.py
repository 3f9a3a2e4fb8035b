"""The import graph of autobench has no circle (issue #26): a module never needs, however
indirectly, a module that needs it.  The graph is import-linter's own (grimp), with every
import counted that runs, also those inside functions (``if TYPE_CHECKING:`` imports never run)."""

from __future__ import annotations

import grimp


def circles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def test_the_import_graph_has_no_circle() -> None:
    found = circles(grimp.build_graph("autobench", exclude_type_checking_imports=True, cache_dir=None))
    assert found == set(), sorted(sorted(c) for c in found)


def test_the_circle_finder_finds_a_circle_and_only_circles() -> None:
    graph = grimp.ImportGraph()
    for module in ("p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p.c", imported="p.d")
    assert circles(graph) == {frozenset({"p.a", "p.b", "p.c"})}
    graph.remove_import(importer="p.c", imported="p.a")
    assert circles(graph) == set()

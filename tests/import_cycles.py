"""Import circles: modules that import each other, directly or round a longer loop (run by `make lint`).

    python -m tests.import_cycles [PACKAGE ...]

A circle means neither module can be read, tested or moved without the other; a name imported only for type
checking counts too, since a reader follows it just the same. The graph is grimp's (import-linter's own), so
the check sees the imports `lint-imports` sees; a strongly connected component of more than one module is a
circle. Exits 1 and names each circle's modules when there is one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import grimp

PACKAGES = ("extraction", "infra", "workers", "api", "toolout", "offline_model", "bench")


def circles(packages: Iterable[str]) -> list[list[str]]:
    """Every group of modules that reach each other by imports (Tarjan's components, iteratively)."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    return [sorted(c) for c in _components(imports) if len(c) > 1]


def _components(imports: dict[str, list[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in imports:
        if root in index:
            continue
        work = [(root, iter(imports[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next((w for w in edges if w in imports), None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    found.append(_pop_component(node, stack, on_stack))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                on_stack.add(step)
                work.append((step, iter(imports[step])))
            elif step in on_stack:
                low[node] = min(low[node], index[step])
    return found


def _pop_component(root: str, stack: list[str], on_stack: set[str]) -> list[str]:
    component: list[str] = []
    while True:
        module = stack.pop()
        on_stack.discard(module)
        component.append(module)
        if module == root:
            return component


def main(argv: list[str]) -> int:
    found = circles(argv or PACKAGES)
    for circle in found:
        print("import circle: " + " <-> ".join(circle))
    print(f"import circles: {len(found)}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The workers' modules import each other without a cycle (lazy imports included), and no production module
has side effects when imported: environment, monkey-patches and apps belong to entry points."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("extraction", "infra", "workers", "api", "toolout")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module an `import` or `from … import` anywhere in the file names (function bodies too), except under
    `if TYPE_CHECKING:`, which never runs: a type named for the checker only is no import at run time."""
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes of `tree`, leaving out the bodies of `if TYPE_CHECKING:` (their `else` runs, so it stays)."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and ast.unparse(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}:
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return nodes


def graph(package: str) -> dict[str, set[str]]:
    modules = {module_name(path): path for path in (ROOT / package).rglob("*.py")}
    return {
        name: {dep for dep in imported_modules(path) if dep in modules and dep != name}
        for name, path in modules.items()
    }


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    return next((cycle for node in sorted(edges) if node not in state and (cycle := visit(node))), None)


def test_an_import_for_the_type_checker_only_is_no_runtime_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
        "def f():\n    import c\n"
    )
    assert imported_modules(module) == {"typing", "typing.TYPE_CHECKING", "b", "c"}


def test_the_cycle_finder_finds_a_lazy_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_workers_import_graph_is_acyclic() -> None:
    edges = graph("workers")
    assert "workers.job.pipeline" in edges and edges["workers.celery.tasks"] >= {
        "workers.job.context",
        "workers.job.drive",
    }
    assert find_cycle(edges) is None


def test_no_production_package_has_an_import_cycle() -> None:
    for package in PACKAGES:
        assert find_cycle(graph(package)) is None, package


def subpackage_graph(package: str) -> dict[str, set[str]]:
    """The module graph folded to `package.<subpackage>` nodes (top-level modules stay themselves)."""
    folded: dict[str, set[str]] = {}
    for name, deps in graph(package).items():
        node = ".".join(name.split(".")[:2])
        folded.setdefault(node, set()).update(".".join(dep.split(".")[:2]) for dep in deps)
    return {node: deps - {node} for node, deps in folded.items()}


def test_the_engine_subpackages_are_layered() -> None:
    """`extraction/` is grouped by idea: the groups depend on each other one way (no two import each other),
    and the document layer, which every strategy reads through, depends on no other group."""
    edges = subpackage_graph("extraction")
    assert {"extraction.documents", "extraction.strategies", "extraction.texts", "extraction.variables"} <= set(edges)
    assert find_cycle(edges) is None
    assert edges["extraction.documents"] <= {"extraction.errors", "extraction.protocols"}


def test_no_first_party_import_hides_behind_except_import_error() -> None:
    offenders = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Try) and _catches_import_error(node):
                    first_party = {m for stmt in node.body for m in imported_modules_of(stmt)} & _first_party()
                    if first_party:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {sorted(first_party)}")
    assert offenders == []


def imported_modules_of(stmt: ast.stmt) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def _first_party() -> set[str]:
    return set(PACKAGES)


def _catches_import_error(node: ast.Try) -> bool:
    caught = {ast.unparse(handler.type) for handler in node.handlers if handler.type is not None}
    return bool(caught & {"ImportError", "ModuleNotFoundError"})


IMPORT_ALL = """
import importlib, json, os, pkgutil, sys
before = dict(os.environ)
report = {"changed_env": [], "patched": False, "celery_apps": 0}
for package in sys.argv[1:]:
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if info.name.endswith("__main__") or info.name.startswith("bench"):
            continue
        importlib.import_module(info.name)
        if dict(os.environ) != before:
            report["changed_env"].append(info.name)
            before = dict(os.environ)
from kombu.transport import redis as kombu_redis
report["patched"] = getattr(kombu_redis.Channel._connparams, "_toolout_guarded", False)
from celery import _state
report["celery_apps"] = len([app for app in _state._get_active_apps()])
print(json.dumps(report))
"""


def test_importing_every_module_changes_no_environment_patches_nothing_and_builds_no_app() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, *PACKAGES], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"changed_env": [], "patched": False, "celery_apps": 0}

"""bench/ and tests/ stand side by side: each measures or checks the source, neither imports the other.

What both need to start a stack lives in the source (`toolout.devstack.stack`, `toolout.devstack.processes`), so a bench
never runs on a test fixture's assumptions and a test never breaks because a bench was reshaped. A test
may still *run* a bench, as a process (`python -m bench…`), the way a user does.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def roots_imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def importers(folder: str, forbidden: str) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*.py") if forbidden in roots_imported(p)]


def test_bench_imports_no_test_module() -> None:
    assert importers("bench", "tests") == []


def test_tests_import_no_bench_module() -> None:
    assert importers("tests", "bench") == []


def test_the_check_sees_imports_where_there_are_some() -> None:
    assert {"bench", "argparse"} <= roots_imported(ROOT / "bench" / "__main__.py")
    assert "toolout" in roots_imported(ROOT / "tests" / "fixtures" / "stack.py")

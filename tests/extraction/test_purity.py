"""The engine stays pure: no module under extraction/ may import an I/O or framework library."""

import ast
from pathlib import Path

import pytest

FORBIDDEN = {
    "redis",
    "boto3",
    "botocore",
    "celery",
    "kombu",
    "fastapi",
    "starlette",
    "httpx",
    "requests",
    "litellm",
    "socket",
    "re2",
    "urllib3",
    "aiohttp",
    "uvicorn",
    "infra",
    "workers",
    "api",
    "gigatoken",  # the fast store-time counter comes in from infra (infra.outputs.tokenizers)
    "awkward",
    "numpy",
}
ENGINE = Path(__file__).resolve().parents[2] / "extraction"


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module",
            "__import__",
        }:
            roots |= {
                a.value.split(".")[0] for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            }
    return roots


@pytest.mark.parametrize("module", sorted(ENGINE.rglob("*.py")), ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_imports_nothing_impure(module: Path) -> None:
    assert not imported_roots(module) & FORBIDDEN


def test_the_check_reaches_every_subpackage() -> None:
    """The engine is grouped by idea; a new subpackage is checked the day it appears."""
    checked = {p.parent for p in ENGINE.rglob("*.py")}
    packages = {p.parent for p in ENGINE.rglob("__init__.py")}
    assert packages <= checked and len(packages) >= 8


def test_the_checker_sees_forbidden_imports(tmp_path: Path) -> None:
    sample = tmp_path / "bad.py"
    sample.write_text("import os\nfrom redis import Redis\nimport importlib\nimportlib.import_module('socket')\n")
    assert imported_roots(sample) & FORBIDDEN == {"redis", "socket"}

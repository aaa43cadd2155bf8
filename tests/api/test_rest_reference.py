"""The REST reference's status codes come from the app, not from a hand-typed list.

`docs/hooks/openapi.py` replaces the `<!-- status-codes -->` marker of docs/reference/rest.md with a table built
from `create_app(...).openapi()` at each docs build; these tests hold the page to the marker and the table to
what the routes declare.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from tests.docs_pages import docs_hook

ROOT = Path(__file__).resolve().parents[2]
REST = ROOT / "docs" / "reference" / "rest.md"


def hook() -> ModuleType:
    return docs_hook("openapi")


def rows(table: str) -> dict[str, tuple[str, str]]:
    found = re.findall(r"^\| `(\w+ \S+)` \| ([^|]+) \| ([^|]+) \|$", table, re.M)
    return {route: (ok.strip(), errors.strip()) for route, ok, errors in found}


def test_the_page_takes_its_status_codes_from_the_hook() -> None:
    openapi = hook()
    page = REST.read_text()
    assert page.count(openapi.MARKER) == 1
    rendered = openapi.on_page_markdown(page, page=None)
    assert openapi.MARKER not in rendered and "| `GET /v1/outputs/{handle}/lines` |" in rendered


def test_the_table_has_every_operation_with_the_codes_it_declares() -> None:
    openapi = hook()
    document = openapi.openapi_document()
    table = rows(openapi.status_table(document))
    operations = {
        f"{method.upper()} {path}": sorted(op["responses"])
        for path, ops in document["paths"].items()
        for method, op in ops.items()
    }
    assert set(table) == set(operations)
    for route, codes in operations.items():
        ok, errors = table[route]
        shown = [c for c in f"{ok}, {errors}".split(", ") if c != "none"]
        assert sorted(shown) == codes, route


def test_lines_and_grep_say_they_answer_406() -> None:
    table = rows(hook().status_table(hook().openapi_document()))
    assert "406" in table["GET /v1/outputs/{handle}/lines"][1]
    assert "406" in table["GET /v1/outputs/{handle}/grep"][1]


def test_no_escaped_pipe_shows_literally() -> None:
    """Inside a code span MkDocs does not unescape `\\|`: the reader would see the backslash."""
    assert "\\|" not in REST.read_text()

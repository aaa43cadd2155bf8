"""docs/troubleshooting.md quotes messages the code really gives, so the page cannot drift from the errors.

Each ```text block of the page is a message, `…` standing for what varies. The source's string literals are read
from its syntax trees, with adjacent literals joined as Python joins them and each f-string's `{…}` written as
`…`: a quoted message must be one of those strings, or part of one, exactly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from infra.settings import Settings
from tests.docs_pages import blocks, page

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ("extraction", "infra", "workers", "api", "toolout")


def rendered(node: ast.JoinedStr) -> str:
    return "".join(part.value if isinstance(part, ast.Constant) else "…" for part in node.values)


def source_strings() -> list[str]:
    found = []
    for path in (p for package in SOURCE for p in (ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                found.append(rendered(node))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append(node.value)
    return found


def messages() -> list[str]:
    return [body.strip() for body in blocks(page("troubleshooting.md"), "text")]


def test_the_page_covers_the_first_ten_errors() -> None:
    sections = [line for line in page("troubleshooting.md").splitlines() if line.startswith("## ")]
    assert len(sections) >= 10 and len(messages()) >= 10


@pytest.mark.parametrize("message", messages())
def test_each_quoted_message_is_one_the_code_gives(message: str) -> None:
    assert any(message in text for text in source_strings()), message


def test_the_timeout_message_is_what_settings_raise() -> None:
    """The one a deployment meets before anything runs: raised here, not only found in the source."""
    quoted = next(m for m in messages() if m.startswith("timeouts must be strictly ordered"))
    with pytest.raises(ValidationError) as raised:
        Settings(model_timeout_seconds=500)
    assert quoted.removesuffix("…)") in str(raised.value)


def test_the_walk_renders_f_strings_as_the_page_writes_them() -> None:
    tree = ast.parse('f"tenant {tenant!r} already has {n} jobs" "; retry"')
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr))
    assert rendered(node) == "tenant … already has … jobs; retry"

"""The project's documentation as tests read it: pages, sections and fenced code blocks.

Docs pages are Markdown under `docs/` (the MkDocs site) plus the README, its front door. A block of code that
a page means to be run is run by a test through these helpers, so a page cannot drift from what works.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```", re.S | re.M)


def page(path: str) -> str:
    """A page's text: `README.md`, or a path under `docs/` such as `guides/mcp.md`."""
    return (ROOT / path if path == "README.md" else ROOT / "docs" / path).read_text(encoding="utf-8")


def pages() -> list[str]:
    """Every page: the README and each Markdown file of the docs site."""
    return ["README.md", *sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))]


def section(text: str, heading: str) -> str:
    """From the line `heading` to the next heading of the same or a higher level, outside code fences."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == heading)
    fenced, taken = False, [lines[start]]
    for line in lines[start + 1 :]:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(rf"#{{1,{level}}} ", line):
            break
        taken.append(line)
    return "".join(taken)


def blocks(text: str, language: str | None = None) -> list[str]:
    """The fenced code blocks of `text`, in order; only those of `language` when one is given."""
    return [body for lang, body in FENCE.findall(text) if language is None or lang == language]


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block of `text`, in order."""
    return FENCE.findall(text)


def docs_hook(name: str) -> ModuleType:
    """A MkDocs hook of `docs/hooks/` (`openapi`, `module_map`), loaded from its file: docs/ is no package."""
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

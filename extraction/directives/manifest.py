"""The compact notice a routed output leaves in the context instead of its content (docs/spec/directives.md §Manifest).

    [tool output routed] search -> variable:search_results (total 12,340 chars)
    [input routed] 3 files -> variable:foo (total 12,340 chars)
    paths: notes/2026-01-01, notes/2026-01-02, notes/2026-01-03

Sizes are characters (what a model reads), never bytes, with `,` thousands separators. The
destination is printed as finally written (a `new`-mode `variable:foo_2`, an expanded
`file:archive/2026-01-01`). The `paths:` line lists the items' paths when they are known, at
most `MAX_PATHS` of them (then `… and N more`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from extraction.directives.specs import Destination
from extraction.documents.lines import count_chars

MAX_PATHS = 50


class RoutedItem(BaseModel):
    """One routed input item: where it came from (if it has a path) and its size in characters."""

    chars: int
    path: str | None = None


def chars_of(content: str | bytes) -> int:
    """Characters of an output, from text or from UTF-8 bytes (without decoding them)."""
    return len(content) if isinstance(content, str) else count_chars(content)


def tool_manifest(tool: str, destination: Destination | str, chars: int) -> str:
    """What the model sees instead of a routed tool result."""
    return f"[tool output routed] {tool} -> {destination} (total {chars:,} chars)"


def input_manifest(items: Sequence[RoutedItem], destination: Destination | str, *, noun: str = "file") -> str:
    """What the prompt holds instead of routed `@input` content: count, destination, total, paths."""
    count = len(items)
    total = sum(item.chars for item in items)
    head = f"[input routed] {count:,} {noun}{'' if count == 1 else 's'} -> {destination} (total {total:,} chars)"
    paths = [item.path for item in items if item.path]
    if not paths:
        return head
    shown = ", ".join(paths[:MAX_PATHS])
    more = f", … and {len(paths) - MAX_PATHS:,} more" if len(paths) > MAX_PATHS else ""
    return f"{head}\npaths: {shown}{more}"

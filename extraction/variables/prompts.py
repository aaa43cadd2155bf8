"""The variable instructions appended to an agent's system prompt (docs/spec/variables.md §Instructions), and previews.

`instructions(variables, style="full")` is the exact full text:
its header (which starts with a newline), then `\\nNo variables saved yet.` or
`\\n### Available Variables:\\n` and one ``- `$name` (tool): preview`` line per variable.

`style="minimal"` swaps the header for a two-line one (same title, one sentence that also shows
the array-index form) and keeps the same list: for agents whose prompts are already long.

A preview is about `PREVIEW_CHARS` characters of the value: strings as text, other values as
compact JSON; every whitespace run becomes one space (one line per variable); a longer preview is
cut to `PREVIEW_CHARS` characters, trailing spaces dropped, and ends with `…` (U+2026).
An empty value previews as `(empty)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel

from extraction.variables.paths import compact_json

PREVIEW_CHARS = 100
ELLIPSIS = "…"
EMPTY_PREVIEW = "(empty)"

FULL_HEADER = """
## Tool Output Variables

Tool outputs are automatically saved as variables. Use them in subsequent tool calls:
- Pass full data: `{ "weather": "$weather_nyc" }`
- Access fields: `{ "temp": "$weather_nyc.temperature" }`

This is faster and more accurate than re-describing data.
"""

MINIMAL_HEADER = """
## Tool Output Variables

Pass saved tool outputs by reference, not by copying: `"$name"`, `"$name.field"`, `"$name.items[0]"`.
"""

NO_VARIABLES = "\nNo variables saved yet."
LIST_TITLE = "\n### Available Variables:\n"

Style = Literal["full", "minimal"]
_WHITESPACE = re.compile(r"\s+")
_JSON_TOKENS = re.compile(r'["\\]|\s+')


class VariableLine(BaseModel):
    """What the instructions show of one variable."""

    name: str
    tool: str
    preview: str


def instructions(variables: Iterable[VariableLine], style: Style = "full") -> str:
    """The prompt section that teaches `$name` references and lists the session's variables."""
    header = FULL_HEADER if style == "full" else MINIMAL_HEADER
    lines = [f"- `${v.name}` ({v.tool}): {v.preview}" for v in variables]
    if not lines:
        return header + NO_VARIABLES
    return header + LIST_TITLE + "\n".join(lines)


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """About `limit` chars of a value: text as is, other values compact JSON (rules above)."""
    text = value if isinstance(value, str) else compact_json(value)
    return _shorten(text, limit, more=False)


def preview_from_head(head: str, *, is_json: bool, more: bool, limit: int = PREVIEW_CHARS) -> str:
    """The same preview from the first few KB of a stored output (no need to load all of it).

    `is_json`: whitespace outside strings is removed first, so a pretty-printed blob previews as
    compact JSON (identical to `preview(value)` when the blob uses no `\\u` escapes); `more`:
    `head` is only the beginning of the content, so the preview ends with `…` regardless.
    A JSON string at the top level previews with its quotes (it is read as JSON text here).
    """
    return _shorten(squeeze_json(head) if is_json else head, limit, more=more)


def _shorten(text: str, limit: int, *, more: bool) -> str:
    flat = _WHITESPACE.sub(" ", text).strip()
    if not flat and not more:
        return EMPTY_PREVIEW
    if len(flat) <= limit and not more:
        return flat
    return flat[:limit].rstrip() + ELLIPSIS


def squeeze_json(text: str) -> str:
    """JSON text with the whitespace between tokens removed (strings untouched); a prefix is fine."""
    out: list[str] = []
    copied, skip_until, in_string = 0, 0, False
    for match in _JSON_TOKENS.finditer(text):
        at, token = match.start(), match.group()
        if at < skip_until:
            continue  # the character after a backslash inside a string
        if token == "\\":
            skip_until = at + 2 if in_string else skip_until
        elif token == '"':
            in_string = not in_string
        elif not in_string:
            out.append(text[copied:at])
            copied = match.end()
    out.append(text[copied:])
    return "".join(out)

"""When a tool output is too big to hand to the model, and what the model is told instead."""

from __future__ import annotations

from extraction.documents.stats import DocumentStats
from extraction.errors import InvalidInput

TOO_LARGE_TEMPLATE = (
    "Tool output is too large ({bytes} bytes, {lines} lines, {tokens} tokens).\n"
    'Call tool_output(handle = "{handle}", extract = "what to extract").\n'
    "Provide precise and detailed instructions in `extract` about what you are looking for."
)
"""docs/spec/tool-output.md §Too-large message: three lines, no trailing newline."""


def is_oversized(stats: DocumentStats, *, max_bytes: int, budget_tokens: int) -> bool:
    """Too large when either limit is exceeded: bytes cap the payload, tokens cap the model's context."""
    return stats.bytes > max_bytes or stats.tokens > budget_tokens


def too_large_message(stats: DocumentStats, handle: str) -> str:
    """The tool result the model sees instead of an oversized output, naming the handle to extract from."""
    if not handle or any(ch in handle for ch in '"\n\r'):
        raise InvalidInput("handle must be non-empty and free of quotes and line breaks", handle=handle)
    return TOO_LARGE_TEMPLATE.format(bytes=stats.bytes, lines=stats.lines, tokens=stats.tokens, handle=handle)

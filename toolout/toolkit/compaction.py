"""docs/spec/tools.md §Compaction: keep tool outputs in the context while they fit; past a budget, replace the oldest
ones with a short reference (`output_ref`) the model can read back with `tool_output_cache`.

Pure: the caller supplies the token counter and the reference of each tool message (the toolkit
knows the handle of every output it stored, and stores the others on demand).

Rules:
* The conversation's size is the sum over messages of their text (content, tool call arguments)
  plus `MESSAGE_OVERHEAD_TOKENS` each.
* While that exceeds `budget_tokens`, the oldest tool result not yet compacted is replaced, if
  doing so saves tokens. The last `keep_last` tool results are never replaced (the model has
  usually not read them yet). Compacting stops when the budget is met or nothing is left to
  replace: a conversation can stay over budget (its other messages are not ours to cut).
* A replaced message keeps its role and `tool_call_id`; its content becomes `reference_text(...)`,
  which starts with `[output_ref <id>]` (that is also how an already compacted message is recognised).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolout.toolkit.adapters import content_text, field

MESSAGE_OVERHEAD_TOKENS = 4
REFERENCE_PREFIX = "[output_ref "


def reference_text(ref_id: str, chars: int, lines: int) -> str:
    """What the model reads instead of a compacted tool output."""
    return (
        f"{REFERENCE_PREFIX}{ref_id}] This tool output ({chars:,} chars, {lines:,} lines) was moved out of the "
        f'context to save space. Read it with tool_output_cache(ref_id="{ref_id}", offset, limit) or search it '
        f'with tool_output_cache_grep(ref_id="{ref_id}", pattern).'
    )


def is_compacted(message: Any) -> bool:
    return content_text(message).startswith(REFERENCE_PREFIX)


def message_tokens(message: Any, count: Callable[[str], int]) -> int:
    """Tokens of one message: its text, its tool calls' names and arguments, and a fixed overhead."""
    calls = field(message, "tool_calls") or []
    call_text = "".join(
        f"{field(field(c, 'function'), 'name')}{field(field(c, 'function'), 'arguments')}" for c in calls
    )
    return count(content_text(message) + call_text) + MESSAGE_OVERHEAD_TOKENS


def select_for_compaction(
    messages: Sequence[Any], budget_tokens: int, count: Callable[[str], int], *, keep_last: int = 1
) -> list[int]:
    """Indexes of the tool messages to replace, oldest first (rules in the module docstring)."""
    sizes = [message_tokens(m, count) for m in messages]
    total = sum(sizes)
    tool_indexes = [i for i, m in enumerate(messages) if field(m, "role") == "tool"]
    candidates = tool_indexes[: max(0, len(tool_indexes) - keep_last)]
    reference_tokens = count(reference_text("00000000-0000-0000-0000-000000000000", 10**6, 10**5))
    chosen: list[int] = []
    for index in candidates:
        if total <= budget_tokens:
            break
        saved = sizes[index] - reference_tokens - MESSAGE_OVERHEAD_TOKENS
        if saved > 0 and not is_compacted(messages[index]) and isinstance(field(messages[index], "content"), str):
            chosen.append(index)
            total -= saved
    return chosen


def compacted(message: Mapping[str, Any] | Any, ref_id: str) -> dict[str, Any]:
    """The replacement of one tool message: same role and tool_call_id, the reference as content."""
    text = content_text(message)
    return {
        "role": "tool",
        "tool_call_id": field(message, "tool_call_id"),
        "content": reference_text(ref_id, len(text), text.count("\n") + 1 if text else 0),
    }

"""Chat-completions shapes in and out: tool calls from any SDK, assistant messages as plain dicts.

Agents get tool calls as litellm objects (`ChatCompletionMessageToolCall`), openai SDK objects
(same attribute names), or plain dicts (`{"id", "type": "function", "function": {"name",
"arguments"}}`). `tool_calls_of` accepts any of these, a list of them, an assistant message that
carries them, or a whole completion response (its first choice), and gives `ToolCall`s.
`message_dict` turns an assistant message object into the dict to append to the history.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolout.toolkit.errors import ToolkitError

RawArguments = str | Mapping[str, Any] | None


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: its id (echoed in the tool message), the tool's name, the raw arguments."""

    id: str
    name: str
    arguments: RawArguments = None

    @property
    def arguments_text(self) -> str:
        """The arguments as JSON text, verbatim when the model sent text."""
        if self.arguments is None:
            return "{}"
        if isinstance(self.arguments, str):
            return self.arguments or "{}"
        return json.dumps(dict(self.arguments), ensure_ascii=False)


def field(obj: Any, name: str, default: Any = None) -> Any:
    """`obj[name]` for mappings, `obj.name` for objects (litellm/openai models), else `default`."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def tool_calls_of(source: Any) -> list[ToolCall]:
    """The tool calls in a response, a message, a list of calls, or one call (see the module docstring)."""
    if source is None:
        return []
    choices = field(source, "choices")
    if choices:
        return tool_calls_of(field(choices[0], "message"))
    if field(source, "function") is not None:
        return [to_tool_call(source)]
    calls = field(source, "tool_calls") if not isinstance(source, list | tuple) else source
    if calls is None and (isinstance(source, Mapping) or field(source, "role") is not None):
        return []  # a message without tool calls
    if not isinstance(calls, Iterable) or isinstance(calls, str | bytes | Mapping):
        raise ToolkitError(f"expected tool calls, a message or a completion, got {type(source).__name__}")
    return [to_tool_call(call) for call in calls]


def to_tool_call(call: Any) -> ToolCall:
    function = field(call, "function")
    name = field(function, "name")
    if not isinstance(name, str) or not name:
        raise ToolkitError(f"a tool call without a function name: {call!r}"[:300])
    call_id = field(call, "id") or ""
    return ToolCall(str(call_id), name, field(function, "arguments"))


def message_dict(message: Any) -> dict[str, Any]:
    """An assistant message (object or dict) as a plain chat-completions dict, tool calls included."""
    if isinstance(message, Mapping):
        return dict(message)
    result: dict[str, Any] = {"role": field(message, "role") or "assistant", "content": field(message, "content")}
    calls = tool_calls_of(message)
    if calls:
        result["tool_calls"] = [call_dict(call) for call in calls]
    return result


def call_dict(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_text}}


def content_text(message: Any) -> str:
    """A message's content as text (content parts' texts joined), for token counting and reading answers."""
    content = field(message, "content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(field(part, "text") or "") for part in content)

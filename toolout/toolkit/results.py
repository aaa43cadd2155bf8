"""What a tool call produces (docs/spec/tools.md §Results): `ToolResult` = `TextResult` | `PartsResult` | `JsonResult`.

Conversion to the tool message the model reads (§5.2):
* text  -> the content string, as is;
* json  -> `stable_json(value)`: `sort_keys=True`, compact separators, non-ASCII kept. Sorted so
  the same value always gives the same bytes (prompt caches, transcripts and tests stay stable
  however the dict was built); compact because every space is a token the model pays for;
  pydantic models, dataclasses, datetimes, UUIDs... are made JSON-able by pydantic first;
* parts -> a list of OpenAI chat-completions content parts (`{"type": "text", "text"}`,
  `{"type": "image_url", "image_url": {"url", "detail"?}}`). Chat completions accepts only text
  parts in a `tool` message; carrying images to the model (e.g. as a follow-up user message) is
  the runtime adapter's job, not the result's.
An error result is the same shapes with `is_error=True` (an exception in a tool is
`Error executing tool: <message>`, see `execution_error`).

`to_tool_result` normalises whatever `execute` returned: a ToolResult as is, `str` -> text,
anything else (pydantic model, dict, list, number, bool, None) -> json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic_core import to_jsonable_python

EXECUTION_ERROR_PREFIX = "Error executing tool: "


@dataclass(frozen=True)
class TextPart:
    text: str
    type: ClassVar[str] = "text"


@dataclass(frozen=True)
class ImagePart:
    """An image by URL (an `https:` URL or a `data:image/...;base64,` URL)."""

    url: str
    detail: Literal["auto", "low", "high"] | None = None
    type: ClassVar[str] = "image"


Part = TextPart | ImagePart


@dataclass(frozen=True)
class TextResult:
    text: str
    is_error: bool = False
    type: ClassVar[str] = "text"


@dataclass(frozen=True)
class PartsResult:
    parts: tuple[Part, ...]
    is_error: bool = False
    type: ClassVar[str] = "parts"


@dataclass(frozen=True)
class JsonResult:
    value: Any
    is_error: bool = False
    type: ClassVar[str] = "json"


ToolResult = TextResult | PartsResult | JsonResult
TOOL_RESULT_TYPES = (TextResult, PartsResult, JsonResult)


@dataclass(frozen=True)
class ToolMessage:
    """The tool message (docs/spec/tools.md §Results): what goes back to the model for one tool call."""

    tool_call_id: str
    content: str | list[dict[str, Any]]
    is_error: bool = False
    name: str | None = field(default=None)

    def to_openai(self) -> dict[str, Any]:
        """OpenAI chat-completions `tool` message (no `is_error`: that API has no such field)."""
        return {"role": "tool", "tool_call_id": self.tool_call_id, "content": self.content}


def to_tool_result(value: Any, *, is_error: bool = False) -> ToolResult:
    """Normalise an `execute` return value (or a callback's replacement) into a ToolResult."""
    if isinstance(value, TOOL_RESULT_TYPES):
        return value
    if isinstance(value, str):
        return TextResult(value, is_error=is_error)
    return JsonResult(value, is_error=is_error)


def execution_error(message: str) -> TextResult:
    """The text the model reads when a tool raised (docs/spec/tools.md §Results)."""
    return TextResult(EXECUTION_ERROR_PREFIX + message, is_error=True)


def stable_json(value: Any) -> str:
    """Deterministic, compact JSON text of `value` (see the module docstring)."""
    return json.dumps(to_jsonable_python(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def result_content(result: ToolResult) -> str | list[dict[str, Any]]:
    """The tool message content for a result (§5.2)."""
    if isinstance(result, TextResult):
        return result.text
    if isinstance(result, JsonResult):
        return stable_json(result.value)
    return [part_content(part) for part in result.parts]


def part_content(part: Part) -> dict[str, Any]:
    """One OpenAI chat-completions content part."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    image: dict[str, Any] = {"url": part.url}
    if part.detail is not None:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def result_value(result: ToolResult) -> Any:
    """A result as a plain value to nest inside another JSON result (a composite tool's `results`)."""
    if isinstance(result, TextResult):
        return result.text
    if isinstance(result, JsonResult):
        return result.value
    return [part_content(part) for part in result.parts]


def tool_message(result: ToolResult, tool_call_id: str, name: str | None = None) -> ToolMessage:
    """The ToolMessage for one call's result."""
    return ToolMessage(tool_call_id, result_content(result), is_error=result.is_error, name=name)

"""The agent toolkit, client side: define tools, validate and run their calls, compose them, and
plug them into toolout with `Toolkit`.

Importing `toolout.toolkit` loads only pydantic, the standard library and the pure `extraction`
package, so tools can be defined anywhere. Public API (one idea per module):
`define_tool`, `tool`, `Tool` (tool.py); `ToolContext` (context.py); `Dependency` (deps.py);
`CancelToken` (cancel.py); `composite_tool` (composite.py); the results (results.py); the errors;
and, loaded on first use (they need httpx, the SDK's transport): `Toolkit` (runtime.py),
`AgentResult` (agent.py), `CallReport` (call_pipeline.py), `ToolCall` (adapters.py).
"""

import importlib
from typing import TYPE_CHECKING, Any

from toolout.toolkit.callbacks import Callbacks
from toolout.toolkit.cancel import CancelToken
from toolout.toolkit.composite import composite_tool
from toolout.toolkit.context import ToolContext
from toolout.toolkit.deps import Dependency
from toolout.toolkit.errors import DependencyError, ToolCanceled, ToolDefinitionError, ToolkitError
from toolout.toolkit.results import (
    ImagePart,
    JsonResult,
    PartsResult,
    TextPart,
    TextResult,
    ToolMessage,
    ToolResult,
    result_content,
    stable_json,
    tool_message,
)
from toolout.toolkit.tool import Tool, define_tool, tool

if TYPE_CHECKING:
    from toolout.toolkit.adapters import ToolCall
    from toolout.toolkit.agent import AgentResult
    from toolout.toolkit.call_pipeline import CallReport
    from toolout.toolkit.runtime import Toolkit

_LAZY = {
    "Toolkit": "toolout.toolkit.runtime",
    "AgentResult": "toolout.toolkit.agent",
    "CallReport": "toolout.toolkit.call_pipeline",
    "ToolCall": "toolout.toolkit.adapters",
}


def __getattr__(name: str) -> Any:
    """The runtime's names, imported when first asked for (see the module docstring)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentResult",
    "CallReport",
    "Callbacks",
    "CancelToken",
    "Dependency",
    "DependencyError",
    "ImagePart",
    "JsonResult",
    "PartsResult",
    "TextPart",
    "TextResult",
    "Tool",
    "ToolCall",
    "ToolCanceled",
    "ToolContext",
    "ToolDefinitionError",
    "ToolMessage",
    "ToolResult",
    "Toolkit",
    "ToolkitError",
    "composite_tool",
    "define_tool",
    "result_content",
    "stable_json",
    "tool",
    "tool_message",
]

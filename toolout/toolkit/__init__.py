"""The agent toolkit, client side: define tools, validate and run their calls, compose them.

Imports only pydantic, the standard library and the pure `extraction` package, so an agent can
use it without the server's dependencies. Public API (one idea per module):
`define_tool`, `tool`, `Tool` (tool.py); `ToolContext` (context.py); `Dependency` (deps.py);
`CancelToken` (cancel.py); `composite_tool` (composite.py); the results (results.py); the errors.
"""

from toolout.toolkit.callbacks import Callbacks
from toolout.toolkit.cancel import CancelToken
from toolout.toolkit.composite import composite_tool
from toolout.toolkit.context import ToolContext
from toolout.toolkit.deps import Dependency
from toolout.toolkit.errors import DependencyError, ToolCancelled, ToolDefinitionError, ToolkitError
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

__all__ = [
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
    "ToolCancelled",
    "ToolContext",
    "ToolDefinitionError",
    "ToolMessage",
    "ToolResult",
    "ToolkitError",
    "composite_tool",
    "define_tool",
    "result_content",
    "stable_json",
    "tool",
    "tool_message",
]

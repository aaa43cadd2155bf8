"""The toolkit's typed errors, rooted in the service's error tree (`extraction.errors`)."""

from __future__ import annotations

import asyncio

from extraction.errors import InvalidInput, ToolOutError


class ToolkitError(ToolOutError):
    """Base of the errors the toolkit raises on purpose."""

    code = "toolkit_error"


class ToolDefinitionError(ToolkitError, InvalidInput):
    """A tool cannot be defined as written (bad name, unsupported signature, duplicate sub-tool...)."""

    code = "tool_definition"


class DependencyError(ToolkitError):
    """A dependency could not be resolved the way it was asked for (e.g. synchronously on the event loop)."""

    code = "dependency"


class ToolCanceled(asyncio.CancelledError):
    """The tool call's context was canceled while it ran.

    A `CancelledError` (a `BaseException`), on purpose: nothing that catches `Exception` - a tool's
    error handling, `on_error`, a composite tool's per-call isolation - swallows a cancellation.
    """

    def __init__(self, reason: str = "canceled") -> None:
        super().__init__(reason)
        self.reason = reason

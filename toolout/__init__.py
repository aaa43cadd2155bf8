"""toolout, the client: the SDK that stores tool outputs and runs extractions, and the Toolkit for an agent loop.

`from toolout import ToolOutClient, Toolkit, tool` is the public API; each name is imported when first used, so
`import toolout` (and every `toolout` command) stays quick. The server (`api`, `workers`, `infra`, the offline
model) and the development harness (`toolout.devstack`) are the `toolout-server` distribution.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "ToolOutClient": "toolout.client",
    "AsyncToolOutClient": "toolout.client",
    "ToolOutAPIError": "toolout.client",
    "BadRequestError": "toolout.client",
    "NotFoundError": "toolout.client",
    "ConflictError": "toolout.client",
    "TooManyRequestsError": "toolout.client",
    "UnavailableError": "toolout.client",
    "TransportError": "toolout.client",
    "Toolkit": "toolout.toolkit",
    "tool": "toolout.toolkit",
    "define_tool": "toolout.toolkit",
    "composite_tool": "toolout.toolkit",
}
"""Each public name and the module that defines it (docs/reference/python.md lists the same names)."""

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

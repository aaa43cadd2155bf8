"""One error tree for the whole service; `infra` extends it, `api` maps it to HTTP in one place."""

from __future__ import annotations

from typing import Any


class ToolOutError(Exception):
    """Base of every error toolout raises on purpose."""

    code = "internal_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(ToolOutError):
    """A caller gave a value we cannot work with (the message says which and why)."""

    code = "invalid_input"


class NotFound(ToolOutError):
    """The named object does not exist (or is not visible to this caller)."""

    code = "not_found"


class Conflict(ToolOutError):
    """The request clashes with the object's current state."""

    code = "conflict"


class PayloadTooLarge(InvalidInput):
    """An upload exceeded the configured byte limit; nothing was stored."""

    code = "payload_too_large"


class ExtractionError(ToolOutError):
    """An extraction strategy could not execute (this is what triggers the truncate fallback)."""

    code = "extraction_failed"


class ChunkBudgetError(ExtractionError):
    """The model's context leaves no room for a chunk once prompt and output are reserved."""

    code = "chunk_budget"


class ReduceDepthError(ExtractionError):
    """Recursive reduce would need more levels than allowed."""

    code = "reduce_depth"


class ReportParseError(ExtractionError):
    """A model answer carried no usable final-report wrapper."""

    code = "report_parse"


class PatternError(InvalidInput):
    """A grep pattern is invalid or uses syntax the linear-time engine does not support."""

    code = "invalid_pattern"


class StrictSchemaError(InvalidInput):
    """A JSON schema cannot be expressed in OpenAI strict mode (the message names the path and why)."""

    code = "strict_schema"

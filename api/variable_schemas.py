"""Request and response bodies of the variables, files, output-routing and buffer routes (CONTRACT_VARIABLES.md).

Timestamps are unix seconds (floats), as in every other view of this API.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.schemas import GrepView, ReadView
from extraction.directives.specs import WriteMode
from extraction.variables.resolve import ResolveWarning
from infra.stores.records import OutputRecord


class VariableView(BaseModel):
    """One variable: its current version's handle, origin, sizes and a ~100-char preview."""

    name: str
    handle: str
    tool: str
    bytes: int
    tokens: int
    chars: int
    content_type: str
    created_at: float = Field(description="when the variable was first written")
    updated_at: float = Field(description="when its current version was written")
    source: str = Field(description='the tool name, "input", or "export"')
    preview: str


class VariableList(BaseModel):
    items: list[VariableView] = Field(description="oldest first")


class FileView(BaseModel):
    """One file of the session's file space (a stored output with a path)."""

    path: str
    handle: str
    bytes: int
    chars: int
    content_type: str
    created_at: float
    updated_at: float


class FileList(BaseModel):
    items: list[FileView] = Field(description="oldest first")


def _chars(record: OutputRecord) -> int:
    return record.chars if record.chars is not None else record.stats.bytes


def variable_view(record: OutputRecord) -> VariableView:
    return VariableView(
        name=record.name or "",
        handle=record.handle,
        tool=record.tool_name,
        bytes=record.stats.bytes,
        tokens=record.stats.tokens,
        chars=_chars(record),
        content_type=record.content_type,
        created_at=record.created_at,
        updated_at=record.written_at,
        source=record.origin,
        preview=record.preview,
    )


def file_view(record: OutputRecord) -> FileView:
    return FileView(
        path=record.path or "",
        handle=record.handle,
        bytes=record.stats.bytes,
        chars=_chars(record),
        content_type=record.content_type,
        created_at=record.created_at,
        updated_at=record.written_at,
    )


class ResolveRequest(BaseModel):
    """A tool call's arguments (any JSON) whose `$refs` the server resolves."""

    model_config = ConfigDict(extra="forbid")

    value: Any = Field(description='any JSON: "$name", "$name.field", "$name.items[0].id", or text with refs')
    max_value_chars: int | None = Field(
        None, ge=1, description="refuse a reference longer than this (capped by TOOLOUT_MAX_RESOLVED_VALUE_CHARS)"
    )


class ResolveResult(BaseModel):
    value: Any
    warnings: list[ResolveWarning]


class ExportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    destination: str = Field(min_length=1, description="a relative session file path; {today} is the UTC date")
    write_mode: WriteMode = WriteMode.APPEND


class CharsWindow(BaseModel):
    """Characters [offset, offset + len(text)) of a variable."""

    name: str
    offset: int
    text: str
    total_chars: int
    next_offset: int | None = Field(description="where the next window starts; null at the end")
    rendered: str = Field(description="what buffer_ops shows the model for the same call")


class LinesWindow(ReadView):
    """Numbered lines of a variable (the same window as `/v1/outputs/{handle}/lines`)."""

    name: str
    rendered: str


class BufferMatches(GrepView):
    name: str


class SearchView(BaseModel):
    target: str
    scope: str | None
    buffers: list[BufferMatches] = Field(description="per searched buffer, in search order")
    matches: int
    rendered: str


class ExportView(BaseModel):
    name: str
    path: str = Field(description="the file written (after {today} and write_mode=new naming)")
    handle: str
    chars: int
    write_mode: WriteMode
    rendered: str


class RoutingParseRequest(BaseModel):
    """Directive text, or the dict form the SDK toolkit takes; exactly one of the two."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, max_length=100_000, description="@tools / @input directive lines")
    tools: dict[str, Any] | None = Field(None, description='{"tool": {"output": "variable:x", "write_mode": "new"}}')

    @model_validator(mode="after")
    def _exactly_one(self) -> RoutingParseRequest:
        if (self.text is None) == (self.tools is None):
            raise ValueError("give exactly one of text (directive lines) or tools (the dict form)")
        return self

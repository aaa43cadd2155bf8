"""buffer_ops (docs/spec/buffer-ops.md): the tool call forwarded verbatim, and its REST equivalents as JSON.

`POST /v1/sessions/{id}/buffer_ops` takes the tool call's JSON arguments and answers the text the model
should see. A misuse by the model (no range, an unknown buffer, a bad regex) is a tool result too: 200
with the `Error: …` text and `X-Tool-Error: true`; only a body that is not a JSON object is a 422.

The REST routes (`…/variables/{name}/peek|read|export`, `…/search`) run the very same operation through
`extraction.buffers.ops.run_buffer_op` — same checks, same limits — and answer JSON: the window or matches
that were read (captured on the way to the store) plus `rendered`, the text `buffer_ops` would show.
Their mistakes are ordinary HTTP errors (422 for a bad range, 404 for an unknown name).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from api.deps import ServicesDep, Tenant
from api.errors import error_responses, validation_error
from api.routers import API_PREFIX
from api.session_access import NAME_DESCRIPTION, checked_name, session_buffers
from api.upload_routing import utc_today
from api.variable_schemas import (
    BufferMatches,
    CharsWindow,
    ExportRequest,
    ExportView,
    LinesWindow,
    SearchView,
)
from extraction.buffers.ops import BUFFER_OPS_PARAMETERS, BufferLimits, run_buffer_op
from extraction.buffers.store import BufferInfo, ExportResult
from extraction.directives.specs import WriteMode
from extraction.documents.grep import GrepResult
from extraction.documents.line_matchers import LineMatcher
from extraction.documents.lines import ReadResult
from extraction.errors import InvalidInput, NotFound
from infra.outputs.buffers import SessionBuffers
from infra.outputs.grep_engine import MAX_PATTERN_CHARS, compile_matcher
from infra.stores.records import Space

router = APIRouter(prefix=f"{API_PREFIX}/sessions", tags=["buffers"])

LIMITS = BufferLimits()
"""Internal limits (read size, matches, context; docs/spec/buffer-ops.md §Operations): not settings."""
TOOL_ERROR_HEADER = "X-Tool-Error"
_TOOL_CALL_BODY = {
    "requestBody": {
        "required": True,
        "description": "The buffer_ops tool call's arguments, verbatim (extraction.buffers.ops.buffer_ops_tool()).",
        "content": {"application/json": {"schema": BUFFER_OPS_PARAMETERS}},
    }
}
_TOOL_RESULT: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the text the model sees (X-Tool-Error: true when it is an `Error: …` text)",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}


class _Capture:
    """A `BufferStore` that keeps what the operation read or wrote, for the JSON answers."""

    def __init__(self, store: SessionBuffers) -> None:
        self.store = store
        self.chars: tuple[int, str] | None = None
        self.lines: ReadResult | None = None
        self.greps: list[tuple[str, GrepResult]] = []
        self.exported: ExportResult | None = None

    def buffers(self) -> Sequence[BufferInfo]:
        return self.store.buffers()

    def info(self, name: str) -> BufferInfo | None:
        return self.store.info(name)

    def read_chars(self, name: str, offset: int, length: int) -> str:
        text = self.store.read_chars(name, offset, length)
        self.chars = (offset, text)
        return text

    def read_lines(self, name: str, start_line: int, count: int, *, max_line_chars: int) -> ReadResult:
        self.lines = self.store.read_lines(name, start_line, count, max_line_chars=max_line_chars)
        return self.lines

    def grep(
        self, name: str, matcher: LineMatcher, *, context: int, max_matches: int, max_line_chars: int
    ) -> GrepResult:
        result = self.store.grep(name, matcher, context=context, max_matches=max_matches, max_line_chars=max_line_chars)
        self.greps.append((name, result))
        return result

    def export(self, name: str, path: str, write_mode: WriteMode) -> ExportResult:
        self.exported = self.store.export(name, path, write_mode)
        return self.exported


def _run(store: SessionBuffers | _Capture, args: dict[str, Any]) -> str:
    return run_buffer_op(args, store, compile_pattern=compile_matcher, limits=LIMITS, today=utc_today())


# --- the tool call ----------------------------------------------------------------------------
@router.post(
    "/{session_id}/buffer_ops",
    response_model=None,
    responses={**_TOOL_RESULT, **error_responses(404, 422, 503)},
    openapi_extra=_TOOL_CALL_BODY,
)
async def buffer_ops(
    session_id: uuid.UUID, request: Request, services: ServicesDep, tenant: Tenant
) -> PlainTextResponse:
    """Run one `buffer_ops` call; the answer is the tool result text (an `Error: …` text for a misuse)."""
    args = _tool_arguments(await request.body())
    store = await run_in_threadpool(session_buffers, services, session_id, tenant)
    return await run_in_threadpool(_tool_result, store, args)


def _tool_arguments(body: bytes) -> dict[str, Any]:
    try:
        args = json.loads(body)
    except ValueError as err:
        raise validation_error(
            ("body",), f"the body must be the tool call's JSON arguments: {err}", "json_invalid"
        ) from None
    if not isinstance(args, dict):
        raise validation_error(("body",), 'the body must be a JSON object such as {"operation": "list"}', "dict_type")
    return args


def _tool_result(store: SessionBuffers, args: dict[str, Any]) -> PlainTextResponse:
    """Misuse is a tool result, not an HTTP failure (the classes `extraction.buffers.ops.execute_buffer_op` catches)."""
    try:
        return PlainTextResponse(_run(store, args))
    except (InvalidInput, NotFound) as err:
        return PlainTextResponse(f"Error: {err.message}", headers={TOOL_ERROR_HEADER: "true"})


# --- REST equivalents -------------------------------------------------------------------------
def _named(services: ServicesDep, session_id: uuid.UUID, tenant: str, name: str) -> _Capture:
    """The session's buffers, checked to have `name` (404 `unknown_variable` listing the names otherwise)."""
    checked_name(name)
    store = session_buffers(services, session_id, tenant)
    store.variables.existing(name)
    return _Capture(store)


def _given(**params: Any) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


NameParam = Annotated[str, Path(description=NAME_DESCRIPTION)]


@router.get("/{session_id}/variables/{name}/peek", response_model=CharsWindow, responses=error_responses(404, 422))
def peek(
    session_id: uuid.UUID,
    name: NameParam,
    services: ServicesDep,
    tenant: Tenant,
    offset: Annotated[int, Query(ge=0, description="0-based character offset")] = 0,
    max_chars: Annotated[int | None, Query(ge=1, description=f"default {LIMITS.peek_chars}")] = None,
) -> CharsWindow:
    """Up to `max_chars` characters from `offset` (buffer_ops `peek`)."""
    capture = _named(services, session_id, tenant, name)
    rendered = _run(capture, _given(operation="peek", target=name, offset=offset, max_chars=max_chars))
    return _chars_window(capture, name, offset, rendered)


@router.get(
    "/{session_id}/variables/{name}/read",
    response_model=LinesWindow | CharsWindow,
    responses=error_responses(404, 422),
)
def read(
    session_id: uuid.UUID,
    name: NameParam,
    services: ServicesDep,
    tenant: Tenant,
    start_line: Annotated[int | None, Query(ge=1, description="first line (1-based; with end_line)")] = None,
    end_line: Annotated[int | None, Query(ge=1, description="last line (inclusive; with start_line)")] = None,
    offset: Annotated[int | None, Query(ge=0, description="0-based character offset (with length)")] = None,
    length: Annotated[int | None, Query(ge=1, description="characters from offset (with offset)")] = None,
) -> LinesWindow | CharsWindow:
    """A line range or a character range (buffer_ops `read`): exactly one of `start_line` + `end_line` (at most
    the read limit's lines, the end not before the start) and `offset` + `length`. No range, half of one, both, or one
    over the limits is a 422."""
    capture = _named(services, session_id, tenant, name)
    args = _given(operation="read", target=name, start_line=start_line, end_line=end_line, offset=offset, length=length)
    rendered = _run(capture, args)
    if capture.lines is not None:
        return LinesWindow(**capture.lines.model_dump(), name=name, rendered=rendered)
    return _chars_window(capture, name, offset or 0, rendered)


def _chars_window(capture: _Capture, name: str, offset: int, rendered: str) -> CharsWindow:
    info = capture.info(name)
    total = info.chars if info else 0
    text = capture.chars[1] if capture.chars else ""
    end = offset + len(text)
    return CharsWindow(
        name=name,
        offset=offset,
        text=text,
        total_chars=total,
        next_offset=end if end < total else None,
        rendered=rendered,
    )


@router.get("/{session_id}/search", response_model=SearchView, responses=error_responses(400, 404, 422))
def search(
    session_id: uuid.UUID,
    services: ServicesDep,
    tenant: Tenant,
    target: Annotated[str, Query(min_length=1, max_length=MAX_PATTERN_CHARS, description="text, or RE2 regex")],
    scope: Annotated[str | None, Query(description="the variable to search; omit for every one")] = None,
    regex: Annotated[bool, Query(description="target is an RE2 regex")] = False,
    ignore_case: Annotated[bool, Query()] = False,
    context: Annotated[int | None, Query(ge=0, le=LIMITS.max_context, description="lines around each match")] = None,
    max_matches: Annotated[int | None, Query(ge=1, le=LIMITS.max_matches)] = None,
) -> SearchView:
    """Matching lines with context, per variable (buffer_ops `search`); an unsupported regex is a 400."""
    if scope is not None:
        capture = _named(services, session_id, tenant, scope)
    else:
        capture = _Capture(session_buffers(services, session_id, tenant))
    args = _given(
        operation="search",
        target=target,
        scope=scope,
        regex=regex or None,
        ignore_case=ignore_case or None,
        context=context,
        max_matches=max_matches,
    )
    rendered = _run(capture, args)
    found = [BufferMatches(**result.model_dump(), name=name) for name, result in capture.greps]
    return SearchView(
        target=target, scope=scope, buffers=found, matches=sum(b.matches for b in found), rendered=rendered
    )


@router.post(
    "/{session_id}/variables/{name}/export",
    response_model=ExportView,
    responses=error_responses(400, 404, 409, 422, 503),
)
def export(
    session_id: uuid.UUID, name: NameParam, body: ExportRequest, services: ServicesDep, tenant: Tenant
) -> ExportView:
    """Write the variable to a session file (buffer_ops `export`): append (default), replace or new."""
    capture = _named(services, session_id, tenant, name)
    args = {"operation": "export", "target": name, "destination": body.destination, "write_mode": body.write_mode.value}
    rendered = _run(capture, args)
    result = capture.exported
    assert result is not None  # the operation ran its export or raised
    handle = capture.store.records.names.alias(capture.store.session.id, Space.FILE, result.path) or ""
    return ExportView(
        name=name, path=result.path, handle=handle, chars=result.chars, write_mode=result.write_mode, rendered=rendered
    )

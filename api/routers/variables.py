"""Session variables (docs/spec/variables.md): list them, look one up, resolve `$refs` in JSON or in streamed
text, and the prompt section that teaches an agent to use them.

A variable is a stored output with a name; the resolving rules are `extraction.variables.resolve` /
`extraction.variables.stream` unchanged, run against `infra.outputs.variables.SessionVariables`, which
streams only what a reference needs out of the stored content. Resolved values longer than
`TOOLOUT_MAX_RESOLVED_VALUE_CHARS` (or the request's smaller `max_value_chars`) are refused with a 422
that suggests passing the handle instead.
"""

from __future__ import annotations

import codecs
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import PlainTextResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from api.deps import ServicesDep, Tenant
from api.errors import error_responses
from api.routers import API_PREFIX
from api.session_access import NAME_DESCRIPTION, checked_name, session_variables
from api.variable_schemas import ResolveRequest, ResolveResult, VariableList, VariableView, variable_view
from extraction.variables.prompts import VariableLine, instructions
from extraction.variables.resolve import resolve
from extraction.variables.stream import VariableStream

router = APIRouter(prefix=f"{API_PREFIX}/sessions", tags=["variables"])


class DuplexStreamingResponse(StreamingResponse):
    """A streamed answer produced while the request body is still being read.

    Starlette's `StreamingResponse` (under ASGI < 2.4, which uvicorn reports) also waits for a disconnect by
    calling `receive()`, and so swallows request body chunks our iterator needs. Here the body iterator is
    the only reader; a client that goes away surfaces there (`ClientDisconnect`) or as a failed send.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.stream_response(send)
        except OSError:
            raise ClientDisconnect() from None


_TEXT_BODY = {
    "requestBody": {
        "required": True,
        "description": "Text with $references, streamed (chunked transfer is fine).",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}
_TEXT_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"description": "text/plain", "content": {"text/plain": {"schema": {"type": "string"}}}}
}


@router.get("/{session_id}/variables", response_model=VariableList, responses=error_responses(404, 422))
def list_variables(session_id: uuid.UUID, services: ServicesDep, tenant: Tenant) -> VariableList:
    """Every variable of the session, oldest first: name, handle, tool, sizes, times, source, preview."""
    variables = session_variables(services, session_id, tenant)
    return VariableList(items=[variable_view(record) for record in variables.all_records()])


@router.get("/{session_id}/variables/{name}", response_model=VariableView, responses=error_responses(404, 422))
def get_variable(
    session_id: uuid.UUID,
    name: Annotated[str, Path(description=NAME_DESCRIPTION)],
    services: ServicesDep,
    tenant: Tenant,
) -> VariableView:
    """One variable; 404 `unknown_variable` listing the session's names in `details.available`."""
    checked_name(name)
    return variable_view(session_variables(services, session_id, tenant).existing(name))


@router.post("/{session_id}/resolve", response_model=ResolveResult, responses=error_responses(400, 404, 422, 503))
def resolve_value(session_id: uuid.UUID, body: ResolveRequest, services: ServicesDep, tenant: Tenant) -> ResolveResult:
    """The rules of docs/spec/variables.md §Resolution over any JSON: a whole `"$name.path"` becomes the typed
    value, refs in longer strings are interpolated; an unknown or missing whole reference is a 422 naming what
    exists; `$HOME` in text is a warning."""
    limit = min(
        body.max_value_chars or services.settings.max_resolved_value_chars, services.settings.max_resolved_value_chars
    )
    resolved = resolve(body.value, session_variables(services, session_id, tenant), max_value_chars=limit)
    return ResolveResult(value=resolved.value, warnings=resolved.warnings)


@router.post(
    "/{session_id}/resolve-stream",
    response_class=StreamingResponse,
    responses={**_TEXT_RESPONSE, **error_responses(404, 422, 503)},
    openapi_extra=_TEXT_BODY,
)
async def resolve_text_stream(
    session_id: uuid.UUID, request: Request, services: ServicesDep, tenant: Tenant
) -> StreamingResponse:
    """The text with its `$refs` resolved, streamed back as it arrives (docs/spec/variables.md §Streaming:
    a ref split across chunks is held until it is complete). Lenient: unknown refs and bad paths stay as written;
    warnings are not sent."""
    variables = await run_in_threadpool(session_variables, services, session_id, tenant)
    stream = VariableStream(variables, strict=False, max_value_chars=services.settings.max_resolved_value_chars)
    return DuplexStreamingResponse(_resolved(request, stream), media_type="text/plain; charset=utf-8")


async def _resolved(request: Request, stream: VariableStream) -> AsyncIterator[bytes]:
    """Decode, resolve (lookups block on Redis and blobs: in a worker thread), encode; chunk by chunk."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    async for chunk in request.stream():
        text = decoder.decode(chunk)
        if text and (out := await run_in_threadpool(stream.feed, text)):
            yield out.encode()
    tail = decoder.decode(b"", final=True)
    if out := await run_in_threadpool(lambda: stream.feed(tail) + stream.finish()):
        yield out.encode()


@router.get(
    "/{session_id}/instructions",
    response_model=None,
    responses={**_TEXT_RESPONSE, **error_responses(404, 422)},
)
def get_instructions(
    session_id: uuid.UUID,
    services: ServicesDep,
    tenant: Tenant,
    style: Annotated[
        Literal["full", "minimal"], Query(description="full: the whole instructions text; minimal: two lines")
    ] = "full",
) -> PlainTextResponse:
    """The "## Tool Output Variables" prompt section, then the session's variables (one `- $name (tool): preview`
    line each) or "No variables saved yet."."""
    records = session_variables(services, session_id, tenant).all_records()
    lines = [VariableLine(name=r.name or "", tool=r.tool_name, preview=r.preview) for r in records]
    return PlainTextResponse(instructions(lines, style))

"""Stored tool outputs: upload (streamed), metadata, ranged content, delete.

An upload is measured while it streams to a spool file (`api.ingest`) and then handed to the blob
store with `put_file`, so a 1 GB output costs bounded memory. The answer carries the exact
too-large text (docs/spec/tool-output.md §Too-large message) the agent framework shows the model
in place of the output. With an `Idempotency-Key` a retried upload stores nothing new: the body is
still received (its sha256 is part of the fingerprint), then the first answer is replayed.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
import unicodedata
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response, status
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.costs import OutputUsage, output_usage
from api.deps import BlobsDep, JobsDep, MetricsDep, RecordsDep, Services, ServicesDep, SettingsDep, Tenant
from api.errors import error_responses, validation_error
from api.idempotency import IdempotencyKey, idempotent
from api.ingest import Spooled, spool, spool_dir, too_large
from api.lifecycle import purge_output
from api.ranges import parse_range
from api.retention import output_deadline, requested_ttl
from api.routers import API_PREFIX
from api.schemas import (
    InlineResult,
    OutputView,
    RoutedResult,
    StorePolicy,
    UploadResult,
    kind_fields,
    output_links,
    output_view,
)
from api.upload_guards import check_encoding
from api.upload_routing import UploadRoute, upload_route, utc_today
from extraction.directives.manifest import tool_manifest
from extraction.directives.specs import DestinationKind
from extraction.documents.structured import SNIFF_BYTES
from extraction.errors import InvalidInput
from extraction.texts.oversize import is_oversized, too_large_message
from infra.blobstore import BlobStore
from infra.outputs.content import content_reader
from infra.outputs.storing import Target, UploadMeta, store_output, write_options
from infra.outputs.versions import FileSource
from infra.outputs.views import message_stats, reading_view
from infra.query.loaded_forms import wants_preload
from infra.stores.idempotency import fingerprint
from infra.stores.records import OutputRecord, SessionRecord

router = APIRouter(prefix=API_PREFIX, tags=["outputs"])
log = logging.getLogger("toolout.api.ingest")

MAX_TOOL_NAME_CHARS = 256
MAX_CONTENT_TYPE_CHARS = 256
DEFAULT_CONTENT_TYPE = "text/plain"

_RAW_BODY = {
    "requestBody": {
        "required": True,
        "description": "The raw tool output, streamed (chunked transfer is fine), uncompressed and not empty. "
        "A write mode needs a routed output (variable: or file:); a name goes with an inline upload or "
        "the same variable:NAME.",
        "content": {
            "text/plain": {"schema": {"type": "string", "minLength": 1}},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary", "minLength": 1}},
        },
    }
}


def _header_text(value: str) -> str:
    """Headers arrive as latin-1; recover UTF-8 a client sent raw (e.g. a tool name in Japanese)."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _tool_name(header: str | None, query: str | None) -> str:
    name = (_header_text(header) if header is not None else query or "").strip()
    loc = ("header", "x-tool-name") if header is not None else ("query", "tool_name")
    if len(name) > MAX_TOOL_NAME_CHARS:
        raise validation_error(loc, f"at most {MAX_TOOL_NAME_CHARS} characters", "string_too_long")
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        # A header cannot carry them, so only the query could smuggle a NUL or a line break into prompts and results.
        raise validation_error(
            loc, "must not contain control characters (NUL, line breaks, ...)", "string_pattern_mismatch"
        )
    return name or "unknown"


def _tool_args(header: str | None, query: str | None) -> str:
    """The arguments stay verbatim (the prompts quote them), but they must be JSON."""
    args, loc = (
        (_header_text(header), ("header", "x-tool-args")) if header is not None else (query, ("query", "tool_args"))
    )
    if args is None or not args.strip():
        return "{}"
    try:
        json.loads(args)
    except ValueError as exc:
        raise validation_error(
            loc, f"must be valid JSON (the tool's arguments verbatim): {exc}", "json_invalid"
        ) from exc
    return args


def upload_meta(
    x_tool_name: Annotated[str | None, Header(description="the tool that produced the output")] = None,
    x_tool_args: Annotated[str | None, Header(description="the tool's arguments, verbatim JSON")] = None,
    content_type: Annotated[str | None, Header()] = None,
    tool_name: Annotated[str | None, Query(description="alternative to X-Tool-Name")] = None,
    tool_args: Annotated[str | None, Query(description="alternative to X-Tool-Args")] = None,
) -> UploadMeta:
    """Headers win over query parameters; both are optional."""
    kind = (content_type or DEFAULT_CONTENT_TYPE).strip()[:MAX_CONTENT_TYPE_CHARS] or DEFAULT_CONTENT_TYPE
    return UploadMeta(
        tool_name=_tool_name(x_tool_name, tool_name), tool_args=_tool_args(x_tool_args, tool_args), content_type=kind
    )


def _check_declared_length(request: Request, limit: int) -> None:
    """Refuse before reading a byte when Content-Length already says the body is too big."""
    declared = request.headers.get("content-length")
    if declared is None:
        return
    if not declared.strip().isdigit():
        raise InvalidInput("Content-Length must be a non-negative integer", content_length=declared)
    if int(declared) > limit:
        raise too_large(limit, content_length=int(declared))


@router.post(
    "/sessions/{session_id}/outputs",
    status_code=status.HTTP_201_CREATED,
    response_model=UploadResult | RoutedResult,
    responses={
        200: {"model": InlineResult, "description": "store=if_oversized and the output fits"},
        **error_responses(400, 404, 408, 409, 413, 415, 422, 503),
    },
    openapi_extra=_RAW_BODY,
)
async def upload_output(
    session_id: uuid.UUID,
    request: Request,
    services: ServicesDep,
    metrics: MetricsDep,
    tenant: Tenant,
    meta: Annotated[UploadMeta, Depends(upload_meta)],
    route: Annotated[UploadRoute, Depends(upload_route)],
    ttl: Annotated[int | None, Depends(requested_ttl)],
    store: Annotated[
        StorePolicy, Query(description="always, or only when the output is oversized (inline uploads)")
    ] = "always",
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Store one tool output (the raw body) in the session and measure it; idempotent with an `Idempotency-Key`.

    `output=variable:NAME|file:PATH|discard` routes it instead of answering with its stats (see `api.upload_routing`).
    `X-TTL` (or `?ttl=`) deletes it, with all derived from it, that long after it is stored (`api.retention`).
    """
    settings = services.settings
    _check_declared_length(request, settings.max_upload_bytes)
    check_encoding(request)
    session = await run_in_threadpool(services.records.sessions.get_session, str(session_id), tenant)
    started = time.perf_counter()
    with services.uploads.held(settings.max_uploads_in_flight):
        spooled = await spool(
            request.stream(),
            directory=spool_dir(settings),
            limit=settings.max_upload_bytes,
            encoding=settings.tokenizer_encoding,
            read_timeout=settings.upload_read_timeout_seconds,
        )
    received = time.perf_counter() - started
    meta = dataclasses.replace(meta, expires_at=output_deadline(session, ttl))  # counted from when it is stored
    metrics.upload_bytes.inc(spooled.size)
    try:
        key_print = _upload_fingerprint(request, meta, spooled, store, route, ttl)
        produce = functools.partial(_finish_upload, services, session, meta, spooled, store, route)
        keep = functools.partial(idempotent, session_id=session.id)
        return await run_in_threadpool(keep, services.idempotency, tenant, idempotency_key, key_print, produce)
    finally:
        spooled.remove()
        stored = time.perf_counter() - started - received
        log.info("upload of %d bytes: received and measured in %.2fs, stored in %.2fs", spooled.size, received, stored)


def _upload_fingerprint(
    request: Request, meta: UploadMeta, spooled: Spooled, store: StorePolicy, route: UploadRoute, ttl: int | None
) -> str:
    """The same upload: same path, same bytes (the sha256 measured while streaming), same tool headers, policy,
    route (name, output, write mode) and TTL."""
    stats = spooled.measured.stats
    return fingerprint(
        "POST",
        request.url.path,
        stats.sha256,
        str(stats.bytes),
        meta.tool_name,
        meta.tool_args,
        meta.content_type,
        store,
        str(ttl),
        *route.fingerprint_parts(),
    )


def _finish_upload(
    services: Services,
    session: SessionRecord,
    meta: UploadMeta,
    spooled: Spooled,
    store: StorePolicy,
    route: UploadRoute,
) -> JSONResponse:
    """A small output under `store=if_oversized` comes back inline; a routed one gets a manifest; else 201."""
    settings, stats = services.settings, spooled.measured.stats
    oversized = is_oversized(
        stats, max_bytes=settings.tool_response_max_bytes, budget_tokens=settings.context_budget_tokens
    )
    target = route.target(utc_today())
    if target is None:
        return _routed(meta, spooled, "discard", None)
    if route.kind is DestinationKind.INLINE and store == "if_oversized" and not oversized:
        content = spooled.read().decode("utf-8", errors="replace")
        return JSONResponse(
            InlineResult(**stats.model_dump(), content=content).model_dump(), status_code=status.HTTP_200_OK
        )
    head = _head(spooled.path) if oversized and settings.query_preload else b""
    record = _store(services, session, meta, spooled, target)
    if wants_preload(settings, record, head, oversized=oversized):
        services.dispatcher.preload(record.handle, record.tenant)
    if route.kind is not DestinationKind.INLINE:
        return _routed(meta, spooled, f"{target.space.value}:{record.alias(target.space)}", record)
    message = too_large_message(message_stats(record), record.handle) if oversized else None
    links = output_links(record.handle, session.id)
    result = UploadResult(
        **stats.model_dump(),
        **kind_fields(record),
        handle=record.handle,
        session_id=session.id,
        oversized=oversized,
        message=message,
        name=record.name,
        links=links,
    )
    return JSONResponse(
        result.model_dump(mode="json"), status_code=status.HTTP_201_CREATED, headers={"Location": links["self"]}
    )


def _store(
    services: Services, session: SessionRecord, meta: UploadMeta, spooled: Spooled, target: Target
) -> OutputRecord:
    """The spooled output stored at `target`: inline in its record when small, else moved into the blob store."""
    blobs = services.blobs
    return store_output(
        blobs,
        services.records,
        session,
        meta,
        spooled.measured,
        spooled.lines,
        functools.partial(_put_spooled, blobs, spooled.path),
        target=target,
        options=write_options(services.settings),
        source=FileSource(spooled.path),
        chars=spooled.chars,
        head=spooled.known.head,
    )


def _routed(meta: UploadMeta, spooled: Spooled, destination: str, record: OutputRecord | None) -> JSONResponse:
    """The routed answer: where the output went and the manifest the model sees instead (docs/spec/directives.md)."""
    result = RoutedResult(
        destination=destination,
        name=record.name if record else None,
        path=record.path if record else None,
        handle=record.handle if record else None,
        chars=spooled.chars,
        bytes=spooled.size,
        manifest=tool_manifest(meta.tool_name, destination, spooled.chars),
    )
    return JSONResponse(result.model_dump(mode="json"), status_code=status.HTTP_201_CREATED)


def _head(path: str) -> bytes:
    """What the preload sniffs, read before the spool file passes to the store."""
    with open(path, "rb") as f:
        return f.read(SNIFF_BYTES)


def _put_spooled(blobs: BlobStore, path: str, key: str) -> None:
    """The spool file passes to the store (a local store renames it: no copy)."""
    blobs.put_file(key, path)


@router.get("/outputs/{handle}", response_model=OutputView, responses=error_responses(404, 422))
def get_output(handle: uuid.UUID, records: RecordsDep, jobs: JobsDep, tenant: Tenant) -> OutputView:
    """What is stored under a handle: origin, stats, retention, what extracting from it cost, links (no content)."""
    record = records.outputs.get_output(str(handle), tenant)
    view = output_view(record)
    view.usage = output_usage(record.handle, jobs.records.list_for_session(record.session_id, tenant))
    return view


@router.get("/outputs/{handle}/usage", response_model=OutputUsage, responses=error_responses(404, 422))
def get_output_usage(handle: uuid.UUID, records: RecordsDep, jobs: JobsDep, tenant: Tenant) -> OutputUsage:
    """What the output's extraction jobs spent on models (calls, tokens, USD), job by job; a job answered from
    the result cache says so and costs nothing."""
    record = records.outputs.get_output(str(handle), tenant)
    return output_usage(record.handle, jobs.records.list_for_session(record.session_id, tenant))


@router.get(
    "/outputs/{handle}/content",
    response_class=StreamingResponse,
    responses={
        200: {"description": "the whole output"},
        206: {"description": "the requested byte range"},
        **error_responses(404, 416, 422),
    },
)
def get_content(
    handle: uuid.UUID,
    records: RecordsDep,
    blobs: BlobsDep,
    settings: SettingsDep,
    tenant: Tenant,
    byte_range: Annotated[
        str | None, Header(alias="Range", description="one range: bytes=a-b, bytes=a- or bytes=-n")
    ] = None,
    redacted: Annotated[
        bool, Query(description="true: the redacted view, as models read it (the bytes as stored when none)")
    ] = False,
) -> StreamingResponse:
    """The raw bytes, streamed from the blob store; a single byte range gives a 206. With `redacted=true`,
    what a model may be shown instead: the content with its secrets replaced (docs/privacy.md)."""
    stored = records.outputs.get_output(str(handle), tenant)
    record = reading_view(stored, "raw") if redacted else stored
    reader = content_reader(blobs, record)
    size = reader.size(record.blob_key)
    span = parse_range(byte_range, size)
    records.sessions.touch(record.session_id)
    start, end = span or (0, size)
    headers = {"Accept-Ranges": "bytes", "Content-Length": str(end - start), "ETag": f'"{record.stats.sha256}"'}
    if span is not None:
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    body = reader.iter_range(record.blob_key, start, end, block_size=settings.blob_read_block_bytes)
    return StreamingResponse(body, status_code=206 if span else 200, media_type=record.content_type, headers=headers)


@router.delete("/outputs/{handle}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 422))
def delete_output(handle: uuid.UUID, services: ServicesDep, tenant: Tenant) -> Response:
    """Remove one output and all derived from it: its jobs and their traces, cached answers, kept replays, then
    its blobs (text view and tables too), so a failure leaves a record a retry can still find."""
    record = services.records.outputs.get_output(str(handle), tenant)
    purge_output(services, record)
    return Response(status_code=status.HTTP_204_NO_CONTENT)

"""A job's trace (`infra.stores.jobs.traces`): read whole, or followed live as server-sent events.

`GET /v1/extractions/{id}/trace` answers the events kept so far (from `after` on) with the job's status;
`GET /v1/extractions/{id}/events` streams them as they are written (`text/event-stream`: each event's
`id` is its `seq`, so a client that reconnects with `Last-Event-ID` resumes where it was), then the
job's end. Both read through the job's tenant check: another tenant's job is a 404, as everywhere.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from api.deps import JobsDep, Tenant
from api.errors import error_responses
from api.routers import API_PREFIX
from infra.stores.jobs import JobStatus, JobStores

router = APIRouter(prefix=f"{API_PREFIX}/extractions", tags=["extractions"])

POLL_SECONDS = 0.25
"""How often a live feed looks for new events: a map call takes seconds, so a quarter second is live."""
KEEPALIVE_SECONDS = 15.0
"""A comment line this often keeps proxies from closing a quiet feed."""

After = Annotated[int, Query(ge=0, description="only events whose seq is at least this (what a reader already has)")]


class TraceView(BaseModel):
    """A job's trace: what each map, reduce and sub-agent step read and said, in the order it was written."""

    job_id: str
    status: JobStatus
    events: list[dict[str, Any]] = Field(
        description="each with `seq` and `kind` (map, reduce, tool, failed, fallback, truncated)"
    )
    next: int = Field(description="the `after` that reads only what comes next")
    truncated: bool = Field(description="the trace reached `trace_max_bytes`; later steps are not in it")


@router.get("/{job_id}/trace", response_model=TraceView, responses=error_responses(404, 422))
def get_trace(job_id: uuid.UUID, jobs: JobsDep, tenant: Tenant, after: After = 0) -> TraceView:
    job = jobs.records.get(str(job_id), tenant)
    events = jobs.traces.trace(job.id, after)
    return TraceView(
        job_id=job.id,
        status=job.status,
        events=events,
        next=events[-1]["seq"] + 1 if events else after,
        truncated=any(event["kind"] == "truncated" for event in events),
    )


@router.get(
    "/{job_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **error_responses(404, 422)},
)
def follow_trace(
    job_id: uuid.UUID,
    request: Request,
    jobs: JobsDep,
    tenant: Tenant,
    after: After = 0,
    last_event_id: Annotated[int | None, Header(ge=0, include_in_schema=False)] = None,
) -> StreamingResponse:
    """The job's trace events as they are written (`event: trace`), its status as it changes (`event: status`),
    and `event: end` once the job is terminal and every event was sent."""
    job = jobs.records.get(str(job_id), tenant)  # a 404 before the stream starts
    start = after if last_event_id is None else last_event_id + 1
    return StreamingResponse(_feed(jobs, job.id, tenant, start, request), media_type="text/event-stream")


async def _feed(jobs: JobStores, job_id: str, tenant: str, after: int, request: Request) -> AsyncIterator[str]:
    status, quiet_since = "", time.monotonic()
    while not await request.is_disconnected():
        job = await run_in_threadpool(jobs.records.get, job_id, tenant)
        events = await run_in_threadpool(jobs.traces.trace, job_id, after)
        for event in events:
            yield f"id: {event['seq']}\nevent: trace\ndata: {json.dumps(event)}\n\n"
            after = event["seq"] + 1
        progress, changed = _progress(job.status, job.chunks_done, job.chunks_total), bool(events)
        if progress != status:
            status, changed = progress, True
            yield f"event: status\ndata: {progress}\n\n"
        if job.status.terminal:
            yield "event: end\ndata: {}\n\n"
            return
        if changed:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
            quiet_since = time.monotonic()
            yield ": keep-alive\n\n"
        await asyncio.sleep(POLL_SECONDS)


def _progress(status: JobStatus, done: int, total: int) -> str:
    return json.dumps({"status": status.value, "chunks_done": done, "chunks_total": total})

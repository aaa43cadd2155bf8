"""Sessions: the unit an agent conversation owns, and the unit of cleanup.

Ids in paths are typed `UUID`, so a malformed id is a 422 before any store is asked, the same for
every resource. Routes are plain `def`: their Redis and blob calls block, so FastAPI runs them in
its threadpool instead of on the event loop.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Response, status

from api.costs import SessionUsage, session_usage
from api.deps import JobsDep, RecordsDep, ServicesDep, SettingsDep, Tenant
from api.errors import error_responses
from api.lifecycle import purge_session
from api.retention import requested_ttl, session_deadline
from api.routers import API_PREFIX
from api.schemas import JobList, SessionView, job_view, session_view

router = APIRouter(prefix=f"{API_PREFIX}/sessions", tags=["sessions"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=SessionView, responses=error_responses(422))
def create_session(
    records: RecordsDep,
    settings: SettingsDep,
    tenant: Tenant,
    response: Response,
    ttl: Annotated[int | None, Depends(requested_ttl)],
) -> SessionView:
    """Open a session; uploads and extractions hang off it until it is deleted, idles out or its TTL (`X-TTL`,
    `?ttl=`, else the tenant's default) runs out, whichever comes first."""
    record = records.sessions.create_session(tenant)
    deadline = session_deadline(settings, tenant, ttl, now=record.created_at)
    if deadline is not None:
        records.retention.expire_session_at(record.id, deadline)
        record = record.model_copy(update={"expires_at": deadline})
    response.headers["Location"] = f"/v1/sessions/{record.id}"
    return session_view(record, ttl_seconds=settings.session_ttl_seconds)


@router.get("/{session_id}", response_model=SessionView, responses=error_responses(404, 422))
def get_session(session_id: uuid.UUID, records: RecordsDep, settings: SettingsDep, tenant: Tenant) -> SessionView:
    """The session and its stored handles; reading it counts as use and postpones its expiry."""
    record = records.sessions.get_session(str(session_id), tenant)
    return session_view(
        record, ttl_seconds=settings.session_ttl_seconds, outputs=records.sessions.session_handles(record.id)
    )


@router.delete("/{session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 422))
def delete_session(session_id: uuid.UUID, services: ServicesDep, tenant: Tenant) -> Response:
    """Remove the session with its blobs, jobs and records (the end of an agent conversation)."""
    record = services.records.sessions.get_session(str(session_id), tenant)
    purge_session(services, record.id, record.tenant)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{session_id}/usage", response_model=SessionUsage, responses=error_responses(404, 422))
def get_usage(session_id: uuid.UUID, records: RecordsDep, jobs: JobsDep, tenant: Tenant) -> SessionUsage:
    """What the session's extraction jobs spent on models (calls, tokens, USD), in all and per output; a job
    answered from the result cache says so and costs nothing."""
    record = records.sessions.get_session(str(session_id), tenant)
    return session_usage(record.id, jobs.records.list_for_session(record.id, tenant))


@router.get("/{session_id}/extractions", response_model=JobList, responses=error_responses(404, 422))
def list_extractions(session_id: uuid.UUID, records: RecordsDep, jobs: JobsDep, tenant: Tenant) -> JobList:
    """Every extraction job of the session, oldest first."""
    record = records.sessions.get_session(str(session_id), tenant)
    return JobList(items=[job_view(job) for job in jobs.records.list_for_session(record.id, tenant)])

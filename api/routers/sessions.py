"""Sessions: the unit an agent conversation owns, and the unit of cleanup.

Ids in paths are typed `UUID`, so a malformed id is a 422 before any store is asked, the same for
every resource. Routes are plain `def`: their Redis and blob calls block, so FastAPI runs them in
its threadpool instead of on the event loop.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from api.deps import JobsDep, RecordsDep, ServicesDep, SettingsDep, Tenant
from api.errors import error_responses
from api.lifecycle import purge_session
from api.routers import API_PREFIX
from api.schemas import JobList, SessionView, job_view, session_view

router = APIRouter(prefix=f"{API_PREFIX}/sessions", tags=["sessions"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=SessionView)
def create_session(records: RecordsDep, settings: SettingsDep, tenant: Tenant, response: Response) -> SessionView:
    """Open a session; uploads and extractions hang off it until it is deleted or idles out."""
    record = records.create_session(tenant)
    response.headers["Location"] = f"/v1/sessions/{record.id}"
    return session_view(record, ttl_seconds=settings.session_ttl_seconds)


@router.get("/{session_id}", response_model=SessionView, responses=error_responses(404, 422))
def get_session(session_id: uuid.UUID, records: RecordsDep, settings: SettingsDep, tenant: Tenant) -> SessionView:
    """The session and its stored handles; reading it counts as use and postpones its expiry."""
    record = records.get_session(str(session_id), tenant)
    return session_view(record, ttl_seconds=settings.session_ttl_seconds, outputs=records.session_handles(record.id))


@router.delete("/{session_id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 422))
def delete_session(session_id: uuid.UUID, services: ServicesDep, tenant: Tenant) -> Response:
    """Remove the session with its blobs, jobs and records (the end of an agent conversation)."""
    record = services.records.get_session(str(session_id), tenant)
    purge_session(services, record.id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{session_id}/extractions", response_model=JobList, responses=error_responses(404, 422))
def list_extractions(session_id: uuid.UUID, records: RecordsDep, jobs: JobsDep, tenant: Tenant) -> JobList:
    """Every extraction job of the session, oldest first."""
    record = records.get_session(str(session_id), tenant)
    return JobList(items=[job_view(job) for job in jobs.list_for_session(record.id, tenant)])

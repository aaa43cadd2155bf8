"""The session's file space: stored outputs with a path (`output=file:PATH` uploads and buffer_ops exports).

A file is read like any stored output, through `/v1/outputs/{handle}/content|lines|grep`; listing gives
each path's current handle. Paths are relative (`extraction.directives.file_paths`); `{today}` was expanded
when written.
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from api.deps import ServicesDep, Tenant
from api.errors import error_responses
from api.routers import API_PREFIX
from api.session_access import open_session
from api.variable_schemas import FileList, file_view
from infra.stores.records import Space

router = APIRouter(prefix=f"{API_PREFIX}/sessions", tags=["files"])


@router.get("/{session_id}/files", response_model=FileList, responses=error_responses(404, 422))
def list_files(session_id: uuid.UUID, services: ServicesDep, tenant: Tenant) -> FileList:
    """Every file of the session, oldest first: path, handle (read it through `/v1/outputs/{handle}/…`), sizes."""
    session = open_session(services, session_id, tenant)
    handles = services.records.names.aliases(session.id, Space.FILE)
    found = {record.handle: record for record in services.records.outputs.get_outputs(handles.values(), session.tenant)}
    current = [found[handle] for handle in handles.values() if handle in found]
    return FileList(items=[file_view(record) for record in sorted(current, key=lambda r: (r.created_at, r.path or ""))])

"""Opening a session's variables and buffers for a request: tenant check first, then the pure protocols' adapters.

Called in route bodies (not as dependencies), so every parameter is validated (422) before Redis is asked.
A session of another tenant is a 404 exactly like an unknown one (`RecordSessions.get_session`).
"""

from __future__ import annotations

import uuid

from api.deps import Services
from extraction.variables.names import validate_name
from infra.outputs.buffers import SessionBuffers
from infra.outputs.stored import grep_time_budget
from infra.outputs.storing import write_options
from infra.outputs.variables import SessionVariables
from infra.stores.records import SessionRecord

NAME_DESCRIPTION = "a variable name: [A-Za-z_][A-Za-z0-9_]* (at most 128 chars; 422 invalid_variable_name otherwise)"


def open_session(services: Services, session_id: uuid.UUID, tenant: str) -> SessionRecord:
    return services.records.sessions.get_session(str(session_id), tenant)


def session_variables(services: Services, session_id: uuid.UUID, tenant: str) -> SessionVariables:
    session = open_session(services, session_id, tenant)
    return SessionVariables(
        services.records, services.blobs, session, block_size=services.settings.blob_read_block_bytes
    )


def session_buffers(services: Services, session_id: uuid.UUID, tenant: str) -> SessionBuffers:
    session = open_session(services, session_id, tenant)
    return SessionBuffers(
        services.records,
        services.blobs,
        session,
        options=write_options(services.settings),
        grep_time_budget=grep_time_budget(services.settings),
    )


def checked_name(name: str) -> str:
    """A name from a path: 422 `invalid_variable_name` saying what is wrong with it."""
    return validate_name(name)

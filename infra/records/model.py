"""Sessions and stored-output records: who owns what, and what is known of each stored output."""

from __future__ import annotations

import time
import uuid

from pydantic import BaseModel, Field

from extraction.errors import NotFound
from extraction.stats import DocumentStats

DEFAULT_TENANT = "dev"


class SessionRecord(BaseModel):
    """One agent session: the unit of ownership and cleanup."""

    id: str
    tenant: str = DEFAULT_TENANT
    created_at: float
    last_used_at: float


class OutputRecord(BaseModel):
    """What we know of one stored tool output; the bytes live in the blob store under `blob_key`."""

    handle: str
    session_id: str
    tenant: str = DEFAULT_TENANT
    tool_name: str = "unknown"
    tool_args: str = "{}"
    content_type: str = "text/plain"
    stats: DocumentStats
    blob_key: str
    index_key: str
    lines_key: str | None = None
    created_at: float = Field(default_factory=time.time)


def blob_key(session_id: str, handle: str) -> str:
    """Where the raw output lives: `sessions/<session>/<handle>`."""
    return f"sessions/{session_id}/{handle}"


def session_prefix(session_id: str) -> str:
    return f"sessions/{session_id}/"


def new_id() -> str:
    """Session ids and handles are random UUID4s: unguessable, and valid blob-key segments."""
    return str(uuid.uuid4())


def session_not_found(session_id: str) -> NotFound:
    return NotFound(f"no session {session_id!r}", session_id=session_id)


def output_not_found(handle: str) -> NotFound:
    return NotFound(f"no stored output with handle {handle!r}", handle=handle)

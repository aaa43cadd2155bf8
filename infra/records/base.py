"""The record store interface: sessions, and the records of the outputs stored in them.

A session groups the outputs (and jobs) of one agent conversation; deleting it, or leaving it
idle past its TTL, removes its records here and its blobs in the blob store (`api/lifecycle.py`).
Every implementation raises `NotFound` for unknown, idle-expired or other tenants' objects (a
foreign id looks exactly like an unknown one) and `BackendUnavailable` when its backend is down.
`RedisRecordStore` runs in production; `MemoryRecordStore` serves the embedded mode and unit tests.
"""

from __future__ import annotations

from typing import Protocol

from extraction.errors import NotFound
from infra.records.model import DEFAULT_TENANT, OutputRecord, SessionRecord


class RecordStore(Protocol):
    """Sessions and output records."""

    # --- sessions -----------------------------------------------------------------------------
    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord: ...

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        """The live session, its idle timer restarted; idle-expired and other tenants' sessions are `NotFound`."""
        ...

    def touch(self, session_id: str) -> None:
        """Restart the session's idle timer (any use of its outputs counts)."""
        ...

    def idle_sessions(self, limit: int = 100) -> list[str]:
        """Sessions unused for longer than the TTL, oldest first (the sweeper's work list)."""
        ...

    def session_handles(self, session_id: str) -> list[str]: ...

    def drop_session_records(self, session_id: str) -> None:
        """Remove the session and its output records (blobs and jobs are the caller's to remove)."""
        ...

    # --- outputs ------------------------------------------------------------------------------
    def put_output(self, record: OutputRecord) -> None: ...

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord: ...

    def delete_output(self, record: OutputRecord) -> None: ...

    def find_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord | None:
        try:
            return self.get_output(handle, tenant)
        except NotFound:
            return None

"""Sessions: the unit of ownership and cleanup of an agent conversation's outputs (and jobs).

Deleting a session, or leaving it idle past its TTL, removes its records here and its blobs in the blob store
(`api/lifecycle.py`). Every implementation raises `NotFound` for unknown, idle-expired or other tenants' sessions (a
foreign id looks exactly like an unknown one) and `BackendUnavailable` when its backend is down.
"""

from __future__ import annotations

from typing import Protocol

from infra.stores.records.model import DEFAULT_TENANT, OutputRecord, SessionRecord


class RecordSessions(Protocol):
    """Sessions, and what each holds."""

    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord: ...

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        """The live session, its idle timer restarted; idle-expired and other tenants' sessions are `NotFound`."""
        ...

    def touch(self, session_id: str) -> None:
        """Restart the session's idle timer (any use of its outputs counts)."""
        ...

    def session_handles(self, session_id: str) -> list[str]: ...

    def session_outputs(self, session_id: str) -> list[OutputRecord]:
        """The records of every output of the session, retired versions included (what ending it deletes)."""
        ...

    def drop_session_records(self, session_id: str) -> None:
        """Remove the session, its output records, plans, names, paths, counters and index entries (blobs and
        jobs are the caller's)."""
        ...

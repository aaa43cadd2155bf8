"""Sessions in process memory."""

from __future__ import annotations

from infra.stores.records.memory_state import MemoryRecordState
from infra.stores.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    expired,
    new_id,
    session_not_found,
)
from infra.stores.records.sessions.base import RecordSessions


class MemoryRecordSessions(RecordSessions):
    """`RecordSessions` over the in-memory records."""

    def __init__(self, state: MemoryRecordState) -> None:
        self._s = state

    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        now = self._s.clock()
        record = SessionRecord(id=new_id(), tenant=tenant, created_at=now, last_used_at=now)
        with self._s.lock:
            self._s.sessions[record.id] = record
            self._s.last_use[record.id] = now
        return record

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        with self._s.lock:
            record, last_used = self._s.sessions.get(session_id), self._s.last_use.get(session_id)
            if record is None or record.tenant != tenant or last_used is None or self._s.idle(last_used):
                raise session_not_found(session_id)
            if expired(record.expires_at, self._s.clock()):
                raise session_not_found(session_id)
            self.touch(session_id)
            return record.model_copy(update={"last_used_at": self._s.clock()})

    def touch(self, session_id: str) -> None:
        with self._s.lock:
            if session_id in self._s.last_use:
                self._s.last_use[session_id] = self._s.clock()

    def session_handles(self, session_id: str) -> list[str]:
        with self._s.lock:
            return self._s.handles_of(session_id)

    def session_outputs(self, session_id: str) -> list[OutputRecord]:
        with self._s.lock:
            return [self._s.outputs[handle].model_copy(deep=True) for handle in self._s.handles_of(session_id)]

    def drop_session_records(self, session_id: str) -> None:
        with self._s.lock:
            for handle in self._s.handles_of(session_id):
                self._s.forget_output(handle)
            for space in Space:
                self._s.aliases.pop((session_id, space), None)
            for key in [key for key in self._s.counters if key[0] == session_id]:
                del self._s.counters[key]
            self._s.sessions.pop(session_id, None)
            self._s.last_use.pop(session_id, None)

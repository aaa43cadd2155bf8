"""Retention in process memory: read off the sessions' and outputs' own fields."""

from __future__ import annotations

from infra.stores.records.memory_state import MemoryRecordState
from infra.stores.records.model import OutputRecord
from infra.stores.records.retention.base import Expiring, RecordRetention


class MemoryRecordRetention(RecordRetention):
    """`RecordRetention` over the in-memory records."""

    def __init__(self, state: MemoryRecordState) -> None:
        self._s = state

    def idle_sessions(self, limit: int = 100) -> list[str]:
        with self._s.lock:
            idle = sorted((used, session_id) for session_id, used in self._s.last_use.items() if self._s.idle(used))
        return [session_id for _, session_id in idle[:limit]]

    def expire_session_at(self, session_id: str, at: float) -> None:
        with self._s.lock:
            if session_id in self._s.sessions:
                self._s.sessions[session_id] = self._s.sessions[session_id].model_copy(update={"expires_at": at})

    def expiring(self, before: float, limit: int = 100) -> list[Expiring]:
        with self._s.lock:
            sessions = [(record.expires_at, Expiring("session", record.id)) for record in self._s.sessions.values()]
            outputs = [(record.expires_at, Expiring("output", record.handle)) for record in self._s.outputs.values()]
        due = sorted(((at, item.member), item) for at, item in sessions + outputs if at is not None and at < before)
        return [item for _, item in due[:limit]]

    def retire_output(self, record: OutputRecord, at: float) -> None:
        with self._s.lock:
            if record.handle in self._s.outputs:
                self._s.retired[record.handle] = at

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        with self._s.lock:
            due = sorted((at, handle) for handle, at in self._s.retired.items() if at < before)
            return [self._s.outputs[handle].model_copy(deep=True) for _, handle in due[:limit]]

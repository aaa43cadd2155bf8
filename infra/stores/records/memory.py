"""Sessions and output records in process memory, for the embedded mode and unit tests.

Idle expiry follows an injectable clock, so a test moves time instead of sleeping through a TTL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from infra.stores.records.base import MAX_PLANS, AliasSwap, RecordStore
from infra.stores.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    new_id,
    output_not_found,
    session_not_found,
)


class MemoryRecordStore(RecordStore):
    """`RecordStore` in dicts; thread-safe within one process (one lock makes every compare-and-set atomic)."""

    def __init__(self, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time) -> None:
        self._ttl, self._clock = session_ttl_seconds, clock
        self._sessions: dict[str, SessionRecord] = {}
        self._last_use: dict[str, float] = {}
        self._outputs: dict[str, OutputRecord] = {}
        self._aliases: dict[tuple[str, Space], dict[str, str]] = {}
        self._counters: dict[tuple[str, str], int] = {}
        self._retired: dict[str, float] = {}
        self._plans: dict[str, dict[str, str]] = {}
        self._lock = threading.RLock()

    # --- sessions -----------------------------------------------------------------------------
    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        now = self._clock()
        record = SessionRecord(id=new_id(), tenant=tenant, created_at=now, last_used_at=now)
        with self._lock:
            self._sessions[record.id] = record
            self._last_use[record.id] = now
        return record

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        with self._lock:
            record, last_used = self._sessions.get(session_id), self._last_use.get(session_id)
            if record is None or record.tenant != tenant or last_used is None or self._expired(last_used):
                raise session_not_found(session_id)
            self.touch(session_id)
            return record.model_copy(update={"last_used_at": self._clock()})

    def touch(self, session_id: str) -> None:
        with self._lock:
            if session_id in self._last_use:
                self._last_use[session_id] = self._clock()

    def idle_sessions(self, limit: int = 100) -> list[str]:
        with self._lock:
            idle = sorted((used, session_id) for session_id, used in self._last_use.items() if self._expired(used))
        return [session_id for _, session_id in idle[:limit]]

    def _expired(self, last_used: float) -> bool:
        return last_used < self._clock() - self._ttl

    def session_handles(self, session_id: str) -> list[str]:
        with self._lock:
            return sorted(handle for handle, record in self._outputs.items() if record.session_id == session_id)

    def session_outputs(self, session_id: str) -> list[OutputRecord]:
        with self._lock:
            return [self._outputs[handle].model_copy(deep=True) for handle in self.session_handles(session_id)]

    def drop_session_records(self, session_id: str) -> None:
        with self._lock:
            for handle in self.session_handles(session_id):
                del self._outputs[handle]
                self._retired.pop(handle, None)
                self._plans.pop(handle, None)
            for space in Space:
                self._aliases.pop((session_id, space), None)
            for key in [key for key in self._counters if key[0] == session_id]:
                del self._counters[key]
            self._sessions.pop(session_id, None)
            self._last_use.pop(session_id, None)

    # --- outputs ------------------------------------------------------------------------------
    def put_output(self, record: OutputRecord) -> None:
        with self._lock:
            self._outputs[record.handle] = record.model_copy(deep=True)

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord:
        with self._lock:
            record = self._outputs.get(handle)
        if record is None or record.tenant != tenant:
            raise output_not_found(handle)
        return record.model_copy(deep=True)

    def get_outputs(self, handles: Iterable[str], tenant: str = DEFAULT_TENANT) -> list[OutputRecord]:
        found = (self.find_output(handle, tenant) for handle in handles)
        return [record for record in found if record is not None]

    def delete_output(self, record: OutputRecord) -> None:
        with self._lock:
            self._outputs.pop(record.handle, None)
            self._retired.pop(record.handle, None)
            self._plans.pop(record.handle, None)
            for space in Space:
                key = record.alias(space)
                if key is not None:
                    self.unbind_alias(record.session_id, space, key, record.handle)

    # --- chunk plans --------------------------------------------------------------------------
    def chunk_plan(self, record: OutputRecord, key: str) -> str | None:
        with self._lock:
            return self._plans.get(record.handle, {}).get(key)

    def keep_chunk_plan(self, record: OutputRecord, key: str, plan: str) -> None:
        with self._lock:
            if record.handle not in self._outputs:
                return
            plans = self._plans.setdefault(record.handle, {})
            if key not in plans and len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = plan

    # --- names and file paths -----------------------------------------------------------------
    def aliases(self, session_id: str, space: Space) -> dict[str, str]:
        with self._lock:
            return dict(self._aliases.get((session_id, space), {}))

    def alias(self, session_id: str, space: Space, key: str) -> str | None:
        with self._lock:
            return self._aliases.get((session_id, space), {}).get(key)

    def bind_alias(self, session_id: str, space: Space, key: str, handle: str, *, expected: str | None) -> AliasSwap:
        with self._lock:
            if session_id not in self._sessions:
                raise session_not_found(session_id)
            names = self._aliases.setdefault((session_id, space), {})
            previous = names.get(key)
            if previous != expected:
                return AliasSwap(bound=False, previous=previous)
            names[key] = handle
            return AliasSwap(bound=True, previous=previous)

    def unbind_alias(self, session_id: str, space: Space, key: str, handle: str) -> bool:
        with self._lock:
            names = self._aliases.get((session_id, space), {})
            if names.get(key) != handle:
                return False
            del names[key]
            return True

    def next_count(self, session_id: str, counter: str) -> int:
        with self._lock:
            if session_id not in self._sessions:
                raise session_not_found(session_id)
            count = self._counters.get((session_id, counter), 0) + 1
            self._counters[(session_id, counter)] = count
            return count

    # --- retired versions ---------------------------------------------------------------------
    def retire_output(self, record: OutputRecord, at: float) -> None:
        with self._lock:
            if record.handle in self._outputs:
                self._retired[record.handle] = at

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        with self._lock:
            due = sorted((at, handle) for handle, at in self._retired.items() if at < before)
            return [self._outputs[handle].model_copy(deep=True) for _, handle in due[:limit]]

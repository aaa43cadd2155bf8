"""Names, paths and counters in process memory: one lock makes every compare-and-set atomic."""

from __future__ import annotations

from infra.stores.records.memory_state import MemoryRecordState
from infra.stores.records.model import Space, session_not_found
from infra.stores.records.names.base import AliasSwap, RecordNames


class MemoryRecordNames(RecordNames):
    """`RecordNames` over the in-memory records."""

    def __init__(self, state: MemoryRecordState) -> None:
        self._s = state

    def aliases(self, session_id: str, space: Space) -> dict[str, str]:
        with self._s.lock:
            return dict(self._s.aliases.get((session_id, space), {}))

    def alias(self, session_id: str, space: Space, key: str) -> str | None:
        with self._s.lock:
            return self._s.aliases.get((session_id, space), {}).get(key)

    def bind_alias(self, session_id: str, space: Space, key: str, handle: str, *, expected: str | None) -> AliasSwap:
        with self._s.lock:
            if session_id not in self._s.sessions:
                raise session_not_found(session_id)
            names = self._s.aliases.setdefault((session_id, space), {})
            previous = names.get(key)
            if previous != expected:
                return AliasSwap(bound=False, previous=previous)
            names[key] = handle
            return AliasSwap(bound=True, previous=previous)

    def unbind_alias(self, session_id: str, space: Space, key: str, handle: str) -> bool:
        with self._s.lock:
            names = self._s.aliases.get((session_id, space), {})
            if names.get(key) != handle:
                return False
            del names[key]
            return True

    def next_count(self, session_id: str, counter: str) -> int:
        with self._s.lock:
            if session_id not in self._s.sessions:
                raise session_not_found(session_id)
            count = self._s.counters.get((session_id, counter), 0) + 1
            self._s.counters[(session_id, counter)] = count
            return count

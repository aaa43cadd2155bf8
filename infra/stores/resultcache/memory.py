"""The result cache's index in process memory (embedded mode, unit tests); expiry follows an injectable clock."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from infra.stores.resultcache.base import MAX_SOURCES, ResultCache


@dataclass
class _Key:
    sources: dict[str, tuple[float, int, str]] = field(default_factory=dict)
    """job id → (when it was offered, in which order, the handle it read)."""
    expires_at: float = 0.0


class MemoryResultCache(ResultCache):
    def __init__(self, *, ttl_seconds: int, clock: Callable[[], float] = time.time) -> None:
        self._ttl, self._clock = ttl_seconds, clock
        self._keys: dict[str, _Key] = {}
        self._lock = threading.Lock()
        self._order = itertools.count()

    def remember(self, key: str, job_id: str, handle: str) -> None:
        with self._lock:
            entry = self._live(key) or self._keys.setdefault(key, _Key())
            entry.sources[job_id] = (self._clock(), next(self._order), handle)
            entry.expires_at = self._clock() + self._ttl
            for stale in _newest_first(entry)[MAX_SOURCES:]:
                del entry.sources[stale]

    def sources(self, key: str) -> list[str]:
        with self._lock:
            entry = self._live(key)
            return _newest_first(entry) if entry is not None else []

    def forget(self, key: str, job_id: str) -> None:
        with self._lock:
            entry = self._live(key)
            if entry is not None:
                entry.sources.pop(job_id, None)

    def forget_outputs(self, handles: list[str]) -> int:
        gone = set(handles)
        with self._lock:
            doomed = [(e, job) for e in self._keys.values() for job, (*_, h) in e.sources.items() if h in gone]
            for entry, job_id in doomed:
                del entry.sources[job_id]
        return len(doomed)

    def _live(self, key: str) -> _Key | None:
        entry = self._keys.get(key)
        if entry is not None and entry.expires_at <= self._clock():
            del self._keys[key]
            return None
        return entry


def _newest_first(entry: _Key) -> list[str]:
    return sorted(entry.sources, key=lambda job_id: entry.sources[job_id][:2], reverse=True)

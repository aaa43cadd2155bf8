"""Indexes that span jobs or sessions, kept one copy per cluster slot (see `infra.redis.slots`).

Writers name the copy beside the keys they change (`keys.per_slot(index, tag)`) and register its slot once
per process before the first write, and again a minute later (a set of at most 16384 numbers, so registering
again is harmless, and a registry lost to a FLUSHALL is rebuilt within a minute by the writers still writing).
Readers of the whole index (the watchdog, the sweeper, `/metrics`) walk the registered copies. On one Redis
the copies are simply several keys; on a cluster each lives on the primary that owns its slot.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import redis

from infra.redis import keys
from infra.redis.client import text_list
from infra.redis.slots import key_slot

REREGISTER_SECONDS = 60.0


class SlotIndex:
    """One per-slot index (`jobs:active`, `metrics:usage`, …) on one client."""

    def __init__(self, client: redis.Redis, index: str) -> None:
        self._client = client
        self._index = index
        self._registered: dict[int, float] = {}
        self._lock = threading.Lock()

    def key_for(self, tag: str) -> str:
        """The copy beside the keys tagged `{tag}`, registered so readers find it."""
        slot = key_slot("{" + tag + "}")
        now = time.monotonic()
        if now - self._registered.get(slot, -REREGISTER_SECONDS) >= REREGISTER_SECONDS:
            self._client.sadd(keys.slots_in_use(self._index), slot)
            with self._lock:
                self._registered[slot] = now
        return keys.slot_copy(self._index, slot)

    def copies(self) -> Iterator[str]:
        """Every copy written so far, in slot order."""
        slots = sorted(int(slot) for slot in text_list(self._client.smembers(keys.slots_in_use(self._index))))
        return (keys.slot_copy(self._index, slot) for slot in slots)

"""What the in-memory parts of the record store share: the sessions, outputs, aliases and plans, one lock, the clock.

For the embedded mode (`toolout.local`) and unit tests. Each part keeps the same promises as its Redis twin under
this one lock (an `RLock`: a part may call another while holding it). Idle expiry follows an injectable clock, so a
test moves time instead of sleeping through a TTL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from infra.stores.records.model import OutputRecord, SessionRecord, Space


class MemoryRecordState:
    """The sessions and outputs of one process; callers hold `lock` around every read and change."""

    def __init__(self, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time) -> None:
        self.ttl, self.clock = session_ttl_seconds, clock
        self.sessions: dict[str, SessionRecord] = {}
        self.last_use: dict[str, float] = {}
        self.outputs: dict[str, OutputRecord] = {}
        self.aliases: dict[tuple[str, Space], dict[str, str]] = {}
        self.counters: dict[tuple[str, str], int] = {}
        self.retired: dict[str, float] = {}
        self.plans: dict[str, dict[str, str]] = {}
        self.lock = threading.RLock()

    def idle(self, last_used: float) -> bool:
        """Whether a session last used at `last_used` has been idle past the TTL."""
        return last_used < self.clock() - self.ttl

    def handles_of(self, session_id: str) -> list[str]:
        return sorted(handle for handle, record in self.outputs.items() if record.session_id == session_id)

    def forget_output(self, handle: str) -> None:
        """The record, its retired mark and its plans (its name or path is the caller's)."""
        self.outputs.pop(handle, None)
        self.retired.pop(handle, None)
        self.plans.pop(handle, None)

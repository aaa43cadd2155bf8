"""The in-memory twin of the rate limiter: the same GCRA as `lua/reserve_slot.lua`, under one lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from infra.llm.ratelimit.base import Cost, RateLimit


class MemoryRateLimiter:
    """`RateLimiter` for one process (embedded mode, unit tests); `clock` returns seconds."""

    def __init__(self, *, burst_seconds: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._burst_ms = burst_seconds * 1000
        self._clock = clock
        self._lock = threading.Lock()
        self._tat: dict[tuple[str, str], float] = {}

    def reserve(self, model: str, limit: RateLimit, tokens: int) -> float:
        cost = Cost.of(limit, tokens)
        with self._lock:
            now = self._clock() * 1000
            spends = {"r": cost.per_request_ms, "t": cost.per_token_ms * cost.tokens}
            used = {name: spend for name, spend in spends.items() if spend > 0}
            wait = max([0.0, *(self._tat.get((model, name), 0.0) - self._burst_ms - now for name in used)])
            for name, spend in used.items():
                self._tat[(model, name)] = max(self._tat.get((model, name), 0.0), now + wait) + spend
        return wait / 1000

"""A heavy latency tail: `tail_fraction` of calls take `tail_multiplier` times the base latency.

Real providers' tails are per call, not per prompt: the same request sent twice is slow or fast
independently. So the decision hashes the request digest with its *arrival number* (how many times this
server has seen that digest): a hedge, which repeats its original's request exactly, arrives as the next
number and draws afresh, while a rerun of the same bench still draws the same sequence (deterministic).

Slow or not, a call with tails on waits in short steps and stops once its client has gone away, as a
provider stops generating for a closed connection; `cancelled` counts those calls (how a test sees that a
hedge's loser really was cancelled over HTTP).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from offline_model.config import OfflineModelConfig

STEP_SECONDS = 0.02


@dataclass
class TailCounts:
    """Calls that drew the tail, and calls whose client went away before the answer."""

    slow: int = 0
    cancelled: int = 0


class TailPlan:
    """Which arrivals are slow: a function of (seed, request digest, arrival number)."""

    def __init__(self, max_tracked: int = 50_000) -> None:
        self._arrivals: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_tracked
        self.counts = TailCounts()

    def multiplier(self, knobs: OfflineModelConfig, digest: str, unit: Callable[..., float]) -> float:
        """`tail_multiplier` for the slow arrivals, else 1 (`unit`: the server's hash to [0, 1))."""
        if knobs.tail_fraction <= 0:
            return 1.0
        if unit("tail", knobs.seed, digest, self._arrival(digest)) >= knobs.tail_fraction:
            return 1.0
        self.counts.slow += 1
        return knobs.tail_multiplier

    async def wait(self, seconds: float, disconnected: Callable[[], Awaitable[bool]]) -> bool:
        """Sleep `seconds` unless the client goes first; False (and counted) when it did."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(STEP_SECONDS, left))
            if await disconnected():
                self.counts.cancelled += 1
                return False
        return True

    def _arrival(self, digest: str) -> int:
        with self._lock:
            arrival = self._arrivals.pop(digest, 0)
            self._arrivals[digest] = arrival + 1
            if len(self._arrivals) > self._max:
                self._arrivals.popitem(last=False)
            return arrival

"""Latency distributions per (model, stage): a sliding window of the last answered calls, per worker process.

Per process is enough: a worker runs a job's calls on its own threads, so its window fills after one job,
and a hedge trigger needs a rough percentile, not a fleet-wide exact one. A stage with too few samples of
its own (a reduce: one call per job) borrows its model's window across stages, which fills with the maps.
"""

from __future__ import annotations

import threading
from collections import deque


class LatencyWindow:
    """The last `size` latencies (seconds) of one key; thread-safe (a worker's map threads share it)."""

    def __init__(self, size: int) -> None:
        self._samples: deque[float] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self._lock:
            self._samples.append(seconds)

    def __len__(self) -> int:
        return len(self._samples)

    def percentile(self, p: float) -> float:
        """The nearest-rank `p`-th percentile (0 < p <= 100); ValueError on an empty window."""
        with self._lock:
            ordered = sorted(self._samples)
        if not ordered:
            raise ValueError("no latency samples yet")
        rank = max(1, -(-len(ordered) * p // 100))
        return ordered[int(rank) - 1]


class LatencyBook:
    """One window per (model, stage) and one per model (all its stages), created on first use."""

    def __init__(self, size: int = 200) -> None:
        self._size = size
        self._windows: dict[tuple[str, str], LatencyWindow] = {}
        self._lock = threading.Lock()

    def add(self, model: str, stage: str, seconds: float) -> None:
        self._window(model, stage).add(seconds)
        self._window(model, "*").add(seconds)

    def window(self, model: str, stage: str, min_samples: int) -> LatencyWindow | None:
        """The stage's window once it holds `min_samples`, else the model's, else None (too early to tell)."""
        for key in ((model, stage), (model, "*")):
            found = self._windows.get(key)
            if found is not None and len(found) >= min_samples:
                return found
        return None

    def _window(self, model: str, stage: str) -> LatencyWindow:
        with self._lock:
            return self._windows.setdefault((model, stage), LatencyWindow(self._size))

"""The offline model's own provider limits: `--rpm` / `--tpm`, answered with 429 past them, as a provider does.

A token bucket per resource holding one minute's worth, refilled continuously (how OpenAI describes its
limits): a burst of up to `rpm` requests passes, then requests pass at `rpm / 60` a second. A request is
charged its prompt tokens plus its `max_tokens` against `tpm` when it arrives, before any answer. The
counts (`ServedCounts`) let tests and benches check that toolout's own limiter kept every call under them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class Bucket:
    per_minute: int
    level: float = -1.0
    at: float = 0.0

    def refill(self, now: float) -> None:
        if self.level < 0:
            self.level, self.at = float(self.per_minute), now
        self.level = min(float(self.per_minute), self.level + (now - self.at) * self.per_minute / 60)
        self.at = now

    def seconds_until(self, amount: float) -> float:
        return max(0.0, (amount - self.level) * 60 / self.per_minute)


@dataclass
class ServedCounts:
    """Calls the limits let through (an injected fault may still fail them), calls they refused with a 429, and
    when the first and the last were let through."""

    admitted: int = 0
    rate_limited: int = 0
    first_at: float | None = None
    last_at: float | None = None


@dataclass
class ProviderLimits:
    """rpm/tpm of the offline model (0 = unlimited); `admit` is atomic across the server's threads."""

    rpm: int = 0
    tpm: int = 0
    counts: ServedCounts = field(default_factory=ServedCounts)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _buckets: dict[str, Bucket] = field(default_factory=dict, repr=False)

    def admit(self, tokens: int, now: float | None = None) -> float:
        """0 when the request may be served (it is charged now); else the seconds until it could be."""
        now = time.monotonic() if now is None else now
        wanted = {"rpm": (self.rpm, 1.0), "tpm": (self.tpm, float(min(tokens, self.tpm)))}
        with self._lock:
            buckets = {name: self._bucket(name, limit) for name, (limit, _) in wanted.items() if limit > 0}
            for bucket in buckets.values():
                bucket.refill(now)
            wait = max([0.0, *(b.seconds_until(wanted[name][1]) for name, b in buckets.items())])
            if wait > 0:
                self.counts.rate_limited += 1
                return wait
            for name, bucket in buckets.items():
                bucket.level -= wanted[name][1]
            self.counts.admitted += 1
            self.counts.first_at = self.counts.first_at or time.time()
            self.counts.last_at = time.time()
            return 0.0

    def _bucket(self, name: str, limit: int) -> Bucket:
        return self._buckets.setdefault(name, Bucket(limit))

"""What the soak's agents record as they go: each request's latency, each failure, and every id they made.

The agents (`bench.soak.run`, `bench.soak.variables`) share one `Stats` under its lock.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolout.client import ToolOutAPIError


@dataclass
class Stats:
    """Latency per operation and every failure, shared by the agents (under a lock)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    sessions: int = 0
    deleted_mid_job: int = 0
    owners: set[str] = field(default_factory=set)
    """Every session id and output handle the agents made (all deleted by the end): whose keys must go."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, op: str, call: Callable[[], Any], expected: tuple[int, ...] = ()) -> Any:
        """Run one request; a 4xx in `expected` is an answer, anything else that fails is an error."""
        started = time.perf_counter()
        try:
            return call()
        except ToolOutAPIError as exc:
            if exc.status not in expected:
                self.error(op, f"{exc.status} {exc.code}: {exc.message}")
            return exc
        except Exception as exc:  # noqa: BLE001 - a connection error, a timeout: all count
            self.error(op, f"{type(exc).__name__}: {exc}")
            return exc
        finally:
            with self.lock:
                self.latencies[op].append(time.perf_counter() - started)

    def error(self, op: str, what: str) -> None:
        with self.lock:
            self.errors[op].append(what)

    def own(self, answer: object, key: str = "handle") -> None:
        """Note the session id or output handle an answer carries (nothing when the request failed)."""
        owner = answer if isinstance(answer, str) else answer.get(key) if isinstance(answer, dict) else None
        if isinstance(owner, str):
            with self.lock:
                self.owners.add(owner)

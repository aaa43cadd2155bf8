"""Wake a long poll the moment its job ends, instead of when its next re-read comes round.

`GET /v1/extractions/{id}?wait=N` (what every SDK `wait` uses) would otherwise re-read the job over and over, so a
waiting client learns of the end late and the API spends a Redis round trip per waiter per re-read.
Instead the job store announces each end (`finish.lua` PUBLISHes the job id;
the in-memory twin calls its finish listeners) and `JobEnds` wakes the requests watching that id. The
slow re-read stays as the fallback for an announcement missed while the feed reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class EndWatch:
    """One request's interest in one job: `wait` returns early once the job may have ended."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def wake(self) -> None:
        """Safe from any thread: the event is set on the watcher's own loop (if it is still running: a
        request can end between the waker's look at the watches and this call)."""
        with contextlib.suppress(RuntimeError):  # "Event loop is closed"
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self, timeout: float) -> bool:
        """True when woken (then cleared, for the next wait), False after `timeout` seconds."""
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            return False
        self._event.clear()
        return True


class JobEnds:
    """The watches of one process, by job id; `ended(job_id)` wakes them, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: dict[str, set[EndWatch]] = {}

    @contextmanager
    def watch(self, job_id: str) -> Iterator[EndWatch]:
        """Watch `job_id` for the block's duration; enter it *before* reading the job, so no end slips between."""
        watch = EndWatch()
        with self._lock:
            self._watches.setdefault(job_id, set()).add(watch)
        try:
            yield watch
        finally:
            with self._lock:
                watches = self._watches.get(job_id, set())
                watches.discard(watch)
                if not watches:
                    self._watches.pop(job_id, None)

    def ended(self, job_id: str) -> None:
        with self._lock:
            watches = list(self._watches.get(job_id, ()))
        for watch in watches:
            watch.wake()

    def watching(self) -> int:
        """How many jobs have a watch (for tests and metrics)."""
        with self._lock:
            return len(self._watches)

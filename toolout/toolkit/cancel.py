"""A cancellation token both sync and async tool code can use (like an `AbortSignal`).

Async code awaits `token.wait()`; sync code running in a worker thread polls `token.canceled`,
calls `token.raise_if_canceled()` between steps, or blocks in `token.wait_sync(timeout)`.
`cancel()` may be called from any thread: it wakes the awaiting event loops thread-safely.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import suppress

from toolout.toolkit.errors import ToolCanceled


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.reason: str | None = None

    @property
    def canceled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "canceled") -> None:
        """Cancel (idempotent: the first reason is kept) and wake every waiter."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with suppress(RuntimeError):  # that loop is closed: nobody is waiting there any more
                loop.call_soon_threadsafe(_resolve, future)

    def raise_if_canceled(self) -> None:
        if self.canceled:
            raise ToolCanceled(self.reason or "canceled")

    def wait_sync(self, timeout: float | None = None) -> bool:
        """Block until canceled or `timeout` elapses; True if canceled (for sync tools)."""
        return self._event.wait(timeout)

    async def wait(self) -> None:
        """Return once the token is canceled."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._event.is_set():
                return
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            with self._lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

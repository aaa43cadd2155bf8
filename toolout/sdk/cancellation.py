"""The cancel race, and its sync twin: stdlib only, so the toolkit imports it without httpx.

One copy of the race for everything that races a `CancelToken`: the async client runs each effect
through `until_canceled` (`toolout.sdk.async_client`), and the toolkit each tool call
(`toolout.toolkit.tool`). The `_sync` twins are what the generated sync client calls instead
(`toolout._unasync` renames `x` to `x_sync`): a sync request cannot be interrupted once sent (at
most one long-poll, 5 s), so only its sleeps wait on the token.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Cancellation(Protocol):
    """Anything shaped like `toolout.toolkit.CancelToken` (the SDK does not import the toolkit)."""

    @property
    def canceled(self) -> bool: ...

    def raise_if_canceled(self) -> None: ...

    def wait_sync(self, timeout: float | None = None) -> bool: ...

    async def wait(self) -> None: ...


async def until_canceled(work: Awaitable[T], cancel: Cancellation | None) -> T:
    """`work`, unless `cancel` fires first: then `work` is canceled and the token's error raised.

    Cancelling the task that awaits this cancels `work` too.
    """
    if cancel is None:
        return await work
    if cancel.canceled:
        if inspect.iscoroutine(work):
            work.close()  # never started: close it so asyncio does not warn it was never awaited
        cancel.raise_if_canceled()
    task = asyncio.ensure_future(work)
    await _first_of(task, cancel)
    if task.done():
        return task.result()
    task.cancel()
    task.add_done_callback(_consume)
    cancel.raise_if_canceled()
    raise AssertionError("unreachable: the token fired")  # pragma: no cover


async def _first_of(task: asyncio.Future[Any], cancel: Cancellation) -> None:
    """Wait until `task` is done or `cancel` fires; an outside cancellation cancels `task` too."""
    watcher = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        watcher.cancel()


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome so asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


def until_canceled_sync(done: T, cancel: Cancellation | None) -> T:
    """The sync twin: the work has already run to its end (sync work cannot be interrupted)."""
    return done


async def cancelable_sleep(seconds: float, cancel: Cancellation | None) -> None:
    await until_canceled(asyncio.sleep(seconds), cancel)


def cancelable_sleep_sync(seconds: float, cancel: Cancellation | None) -> None:
    """Sleep on the token, so a cancellation ends the sleep at once."""
    if cancel is None:
        time.sleep(seconds)
    elif cancel.wait_sync(seconds):
        cancel.raise_if_canceled()

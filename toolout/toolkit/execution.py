"""How tool code runs: async functions on the event loop, sync ones in a worker thread.

The core is async (`await tool.run(...)`). A sync `execute` runs in a worker thread (context
variables copied) so a slow or blocking tool never stalls the loop, its timeout or its
cancellation. Python cannot stop a thread: when a sync tool is canceled or times out, the call
returns at once and the thread runs on until the tool checks `ctx.canceled` /
`ctx.raise_if_canceled()` (cooperative, like an AbortSignal). An async tool is canceled
at its next `await`.

The worker is a daemon thread of its own, not the loop's default executor: `asyncio.run` (and so
`Tool.run_sync`) joins the default executor's threads before returning, which would make a
timed-out or canceled sync tool block the caller until it finished anyway.

A call races its token with `toolout.sdk.cancellation.until_canceled`, the same race the async client
runs each request through (one copy: the SDK cannot import the toolkit, so it lives there).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for `async def` functions, partials of them and objects with an `async def __call__`."""
    target = fn.func if isinstance(fn, functools.partial) else fn
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(type(target).__call__)


async def call_tool_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await an async `fn`; run a sync one in a worker thread (and await what it returns, if awaitable)."""
    if is_async_callable(fn):
        return await fn(*args, **kwargs)
    result = await in_daemon_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def in_daemon_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a new daemon thread; awaiting it never waits for an abandoned thread."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            result = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine, which re-raises it
            _deliver(loop, future.set_exception, future, exc)
        else:
            _deliver(loop, future.set_result, future, result)

    threading.Thread(target=target, name=f"toolout-tool-{getattr(fn, '__name__', 'call')}", daemon=True).start()
    return await future


def _deliver(
    loop: asyncio.AbstractEventLoop, setter: Callable[[Any], None], future: asyncio.Future[Any], value: Any
) -> None:
    def settle() -> None:
        if not future.done():  # nobody waits any more (canceled, timed out): drop the outcome
            setter(value)

    with suppress(RuntimeError):  # the loop is closed: the caller has long gone
        loop.call_soon_threadsafe(settle)


async def with_timeout(work: Awaitable[T], timeout: float | None) -> T:
    """`work`, or `TimeoutError("timed out after N s")` (an execution error the model can read)."""
    if timeout is None:
        return await work
    try:
        return await asyncio.wait_for(work, timeout)
    except TimeoutError:
        raise TimeoutError(f"timed out after {timeout:g} s") from None

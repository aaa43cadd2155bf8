"""The two executors of plans (`toolout.sdk.plans`): one sync, one async; nothing else sends requests.

Both drive a plan the same way: perform each yielded effect, send the parsed answer back (or throw
the typed `ToolOutAPIError` in, so a plan can handle a 404), and return what the plan returns.
They are the SDK's transport seam: an httpx error (no connection, a timeout) leaves them only as
`toolout.sdk.errors.TransportError`, a `ToolOutAPIError` like every other failure.

Cancellation (optional `cancel`: anything shaped like `toolout.toolkit.CancelToken`) is checked
before each effect; the async transport also races every effect against it, the sync one waits
out its sleeps on it (an HTTP request already sent runs to its end: at most one long-poll, 5 s).
A cancellation is delivered once, thrown into the plan at the effect it interrupted, so a plan may
clean up (`tool_output` cancels its job on the service) before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable
from typing import Any, Protocol, TypeVar

import httpx

from toolout.sdk.errors import wrapped_transport_errors
from toolout.sdk.plans import Effect, Local, Plan, Request, Sleep, ToolOutAPIError, answer, with_model

T = TypeVar("T")


class Cancellation(Protocol):
    @property
    def canceled(self) -> bool: ...

    def raise_if_canceled(self) -> None: ...

    def wait_sync(self, timeout: float | None = None) -> bool: ...

    async def wait(self) -> None: ...


class _Driver:
    """The plan's side of the loop: what to resume it with next, and whether cancellation was delivered."""

    def __init__(self, plan: Plan[Any], cancel: Cancellation | None) -> None:
        self.plan, self.cancel, self.delivered = plan, cancel, False
        self._value: Any = None
        self._error: BaseException | None = None

    def next_effect(self) -> Effect:
        """Resume the plan; `StopIteration` (with the plan's result) when it is done."""
        error, self._error = self._error, None
        return self.plan.throw(error) if error is not None else self.plan.send(self._value)

    def answer(self, value: Any) -> None:
        self._value = value

    def fail(self, error: BaseException) -> None:
        self._value, self._error = None, error

    @property
    def watching(self) -> Cancellation | None:
        """The token to honour for the next effect (none once a cancellation was delivered: cleanup runs)."""
        return None if self.delivered else self.cancel

    def check(self) -> None:
        if self.watching is not None:
            self.watching.raise_if_canceled()

    def deliver(self, exc: asyncio.CancelledError) -> bool:
        """Throw our token's cancellation into the plan, once; False for any other cancellation."""
        if self.delivered or self.cancel is None or not self.cancel.canceled:
            return False
        self.delivered = True
        self.fail(exc)
        return True


def _result(stop: StopIteration) -> Any:
    return stop.value


class SyncTransport:
    """Runs plans on an `httpx.Client`."""

    _http: httpx.Client
    model: str | None = None
    """The model extraction requests name when they name none (one of the service's allowed models)."""

    def execute(self, plan: Plan[T], *, cancel: Cancellation | None = None) -> T:
        driver = _Driver(plan, cancel)
        while True:
            try:
                effect = driver.next_effect()
            except StopIteration as stop:
                return _result(stop)  # type: ignore[no-any-return]  # the plan's return value is its T
            try:
                driver.check()
                driver.answer(self._perform(effect, driver.watching))
            except ToolOutAPIError as exc:
                driver.fail(exc)
            except asyncio.CancelledError as exc:
                if not driver.deliver(exc):
                    raise

    def _perform(self, effect: Effect, cancel: Cancellation | None) -> Any:
        if isinstance(effect, Local):
            return effect.run_sync()
        if isinstance(effect, Sleep):
            if cancel is None:
                time.sleep(effect.seconds)
            elif cancel.wait_sync(effect.seconds):
                cancel.raise_if_canceled()
            return None
        return self._request(effect)

    def _request(self, request: Request) -> Any:
        if isinstance(request.content, AsyncIterable):
            raise TypeError("the sync client streams a bytes iterable; an async iterable needs AsyncToolOutClient")
        request = with_model(request, self.model)
        with wrapped_transport_errors():
            response = self._http.request(request.method, request.path, **request.send_kwargs())
        return answer(request, response)


class AsyncTransport:
    """Runs plans on an `httpx.AsyncClient`."""

    _http: httpx.AsyncClient
    model: str | None = None
    """The model extraction requests name when they name none (one of the service's allowed models)."""

    async def execute(self, plan: Plan[T], *, cancel: Cancellation | None = None) -> T:
        driver = _Driver(plan, cancel)
        while True:
            try:
                effect = driver.next_effect()
            except StopIteration as stop:
                return _result(stop)  # type: ignore[no-any-return]  # the plan's return value is its T
            try:
                driver.check()
                driver.answer(await self._raced(self._perform(effect), driver.watching))
            except ToolOutAPIError as exc:
                driver.fail(exc)
            except asyncio.CancelledError as exc:
                if not driver.deliver(exc):
                    raise  # the task itself was canceled (or canceled again): nothing to deliver

    async def _perform(self, effect: Effect) -> Any:
        if isinstance(effect, Local):
            return await effect.run_async()
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        request = with_model(effect, self.model)
        with wrapped_transport_errors():
            response = await self._http.request(request.method, request.path, **request.send_kwargs())
        return answer(request, response)

    @staticmethod
    async def _raced(work: Any, cancel: Cancellation | None) -> Any:
        """`work`, unless `cancel` fires first: then `work` is canceled and the token's error raised."""
        if cancel is None:
            return await work
        task = asyncio.ensure_future(work)
        watcher = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            watcher.cancel()
        if task.done():
            return task.result()
        task.cancel()
        cancel.raise_if_canceled()
        raise AssertionError("unreachable: the token fired")  # pragma: no cover

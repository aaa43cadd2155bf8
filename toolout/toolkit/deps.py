"""Dependency injection: `Dependency(id, create)` resolved per tool call (docs/spec/tools.md).

Resolution rules, in order: a value already known to the call (given in `deps` when the context
was built, or resolved earlier in this call) -> the override registered under the same id ->
`dependency.create()`. `create` and overrides may be sync or async; a sync one runs inline on the
event loop, so keep it quick (make it async if it does I/O).

The cache lives for one tool call (`DependencyScope`): one `create` per dependency per call, even
when several coroutines resolve it concurrently (they await the same pending creation). A
creation that raised stays failed for the rest of that call rather than being retried.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar, cast, overload

from toolout.toolkit.errors import DependencyError

T = TypeVar("T")
Factory = Callable[[], Any]


class Dependency(Generic[T]):
    """A named way to obtain a value a tool needs (a client, a root directory...); `id` is the override key.

    `create` takes no arguments and returns the value, or an awaitable of it (an `async def`).
    """

    __slots__ = ("create", "id")

    @overload
    def __init__(self, id: str, create: Callable[[], Awaitable[T]]) -> None: ...

    @overload
    def __init__(self, id: str, create: Callable[[], T]) -> None: ...

    def __init__(self, id: str, create: Callable[[], Any]) -> None:
        self.id = id
        self.create = create

    def __repr__(self) -> str:
        return f"Dependency({self.id!r})"


class DependencyScope:
    """The values resolved during one tool call."""

    def __init__(self, values: Mapping[str, Any] | None = None, overrides: Mapping[str, Factory] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})
        self._overrides: dict[str, Factory] = dict(overrides or {})
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def values(self) -> Mapping[str, Any]:
        """Read-only view of what this call knows: given values and those resolved so far."""
        return MappingProxyType(self._values)

    async def resolve(self, dependency: Dependency[T]) -> T:
        if dependency.id in self._values:
            return cast(T, self._values[dependency.id])
        self._loop = asyncio.get_running_loop()
        pending = self._pending.get(dependency.id)
        if pending is None:
            pending = asyncio.ensure_future(self._create(dependency))
            self._pending[dependency.id] = pending
        if pending.done():
            return cast(T, pending.result())
        return cast(T, await asyncio.shield(pending))

    def resolve_sync(self, dependency: Dependency[T]) -> T:
        """Resolve from a sync tool running in a worker thread (the call's event loop does the work)."""
        if dependency.id in self._values:
            return cast(T, self._values[dependency.id])
        loop = self._loop
        if loop is None:
            return asyncio.run(self.resolve(dependency))
        if _running_loop() is loop:
            raise DependencyError(
                f"resolve_sync({dependency.id!r}) called on the event loop: use `await ctx.resolve(...)`"
            )
        return asyncio.run_coroutine_threadsafe(self.resolve(dependency), loop).result()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the loop the call runs on, so worker threads can resolve through it."""
        self._loop = loop

    async def _create(self, dependency: Dependency[T]) -> T:
        factory = self._overrides.get(dependency.id, dependency.create)
        value = factory()
        if inspect.isawaitable(value):
            value = await value
        self._values[dependency.id] = value
        return cast(T, value)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None

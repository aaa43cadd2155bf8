"""`ToolContext`: what a running tool may use besides its arguments (docs/spec/tools.md §ToolContext and dependencies).

* `resolve(dep)` / `resolve_sync(dep)` and `deps` (the values known to this call, by id): see
  `toolout.toolkit.deps`; `overrides` (id -> factory) replace a dependency's `create`;
* cancellation: `canceled`, `raise_if_canceled()`, `wait_canceled()` and `cancel_token`
  (shared by every call made with this context: cancelling it cancels the running tool);
* `logger` and `now()` (an injectable clock, UTC by default).

The agent loop builds one context (for a session, a turn, or a call); `Tool.run` derives a
per-call copy with `for_call()`, so the dependency cache never outlives one call however the
context is reused. A composite tool's sub-calls share the composite call's copy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from toolout.toolkit.cancel import CancelToken
from toolout.toolkit.deps import Dependency, DependencyScope, Factory

T = TypeVar("T")
LOGGER = logging.getLogger("toolout.toolkit")


def utc_now() -> datetime:
    return datetime.now(UTC)


class ToolContext:
    def __init__(
        self,
        *,
        deps: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Factory] | None = None,
        cancel_token: CancelToken | None = None,
        logger: logging.Logger | None = None,
        clock: Callable[[], datetime] = utc_now,
        tool_name: str | None = None,
    ) -> None:
        self._given = dict(deps or {})
        self._overrides = dict(overrides or {})
        self.cancel_token = cancel_token or CancelToken()
        self.logger = logger or LOGGER
        self.clock = clock
        self.tool_name = tool_name
        self._scope = DependencyScope(self._given, self._overrides)

    def for_call(self, tool_name: str) -> ToolContext:
        """A copy for one tool call: same token, logger, clock, values and overrides; a fresh cache."""
        call = ToolContext(
            deps=self._given,
            overrides=self._overrides,
            cancel_token=self.cancel_token,
            logger=self.logger,
            clock=self.clock,
            tool_name=tool_name,
        )
        call._scope.bind(asyncio.get_running_loop())
        return call

    def with_cancel_token(self, cancel_token: CancelToken) -> ToolContext:
        """A copy with everything but the cancellation token (a per-call `cancel=` in the runtime)."""
        return ToolContext(
            deps=self._given,
            overrides=self._overrides,
            cancel_token=cancel_token,
            logger=self.logger,
            clock=self.clock,
            tool_name=self.tool_name,
        )

    @property
    def deps(self) -> Mapping[str, Any]:
        return self._scope.values

    async def resolve(self, dependency: Dependency[T]) -> T:
        return await self._scope.resolve(dependency)

    def resolve_sync(self, dependency: Dependency[T]) -> T:
        """For sync tools (they run in a worker thread); on the event loop, use `await resolve()`."""
        return self._scope.resolve_sync(dependency)

    def now(self) -> datetime:
        return self.clock()

    @property
    def canceled(self) -> bool:
        return self.cancel_token.canceled

    def cancel(self, reason: str = "canceled") -> None:
        self.cancel_token.cancel(reason)

    def raise_if_canceled(self) -> None:
        self.cancel_token.raise_if_canceled()

    async def wait_canceled(self) -> None:
        await self.cancel_token.wait()

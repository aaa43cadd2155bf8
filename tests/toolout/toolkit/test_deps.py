"""Dependency injection (docs/spec/tools.md): overrides by id, one create per call, sync and async."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolout.toolkit.context import ToolContext
from toolout.toolkit.deps import Dependency, DependencyScope
from toolout.toolkit.errors import DependencyError


class Counter:
    """A `create` that counts its calls."""

    def __init__(self, value: Any = "made") -> None:
        self.calls = 0
        self.value = value

    def __call__(self) -> Any:
        self.calls += 1
        return self.value


def test_create_is_called_once_per_scope() -> None:
    create = Counter()
    dep = Dependency("db", create)

    async def twice(scope: DependencyScope) -> list[Any]:
        return [await scope.resolve(dep), await scope.resolve(dep)]

    assert asyncio.run(twice(DependencyScope())) == ["made", "made"]
    assert create.calls == 1
    asyncio.run(twice(DependencyScope()))
    assert create.calls == 2


def test_async_create_and_concurrent_resolves_share_one_creation() -> None:
    calls = 0

    async def main() -> list[str]:
        gate = asyncio.Event()

        async def create() -> str:
            nonlocal calls
            calls += 1
            await gate.wait()
            return "client"

        dep = Dependency("client", create)
        scope = DependencyScope()
        waiters = [asyncio.ensure_future(scope.resolve(dep)) for _ in range(5)]
        await asyncio.sleep(0)
        gate.set()
        return await asyncio.gather(*waiters)

    assert asyncio.run(main()) == ["client"] * 5
    assert calls == 1


def test_an_override_replaces_create_by_id() -> None:
    create, override = Counter("real"), Counter("fake")
    dep = Dependency("root", create)
    scope = DependencyScope(overrides={"root": override})
    assert asyncio.run(scope.resolve(dep)) == "fake"
    assert (create.calls, override.calls) == (0, 1)


def test_an_async_override() -> None:
    async def fake() -> str:
        return "async fake"

    scope = DependencyScope(overrides={"root": fake})
    assert asyncio.run(scope.resolve(Dependency("root", Counter()))) == "async fake"


def test_given_values_win_and_deps_shows_what_is_known() -> None:
    create = Counter("created")
    ctx = ToolContext(deps={"workdir": "/tmp/w"})

    async def main() -> tuple[Any, Any, dict[str, Any]]:
        call = ctx.for_call("t")
        given = await call.resolve(Dependency("workdir", Counter("ignored")))
        made = await call.resolve(Dependency("db", create))
        return given, made, dict(call.deps)

    assert asyncio.run(main()) == ("/tmp/w", "created", {"workdir": "/tmp/w", "db": "created"})


def test_each_call_gets_a_fresh_cache_from_the_same_context() -> None:
    create = Counter()
    dep = Dependency("db", create)
    ctx = ToolContext()

    async def main() -> None:
        await ctx.for_call("a").resolve(dep)
        await ctx.for_call("b").resolve(dep)

    asyncio.run(main())
    assert create.calls == 2


def test_a_failed_creation_stays_failed_for_the_call() -> None:
    calls = 0

    def create() -> str:
        nonlocal calls
        calls += 1
        raise ConnectionError("db down")

    dep = Dependency("db", create)

    async def main() -> None:
        scope = DependencyScope()
        for _ in range(2):
            with pytest.raises(ConnectionError, match="db down"):
                await scope.resolve(dep)

    asyncio.run(main())
    assert calls == 1


def test_resolve_sync_from_a_worker_thread_goes_through_the_loop() -> None:
    create = Counter()
    dep = Dependency("db", create)
    seen: list[str] = []

    async def main() -> None:
        call = ctx.for_call("t")

        def sync_tool() -> None:
            assert threading.current_thread() is not threading.main_thread()
            seen.extend([call.resolve_sync(dep), call.resolve_sync(dep)])

        await asyncio.to_thread(sync_tool)
        assert await call.resolve(dep) == "made"

    ctx = ToolContext()
    asyncio.run(main())
    assert seen == ["made", "made"] and create.calls == 1


def test_resolve_sync_on_the_event_loop_is_refused() -> None:
    async def main() -> None:
        call = ToolContext().for_call("t")
        with pytest.raises(DependencyError, match=r"resolve_sync\('db'\) called on the event loop"):
            call.resolve_sync(Dependency("db", Counter()))

    asyncio.run(main())


def test_resolve_sync_outside_any_call_runs_its_own_loop() -> None:
    assert ToolContext().resolve_sync(Dependency("db", Counter("x"))) == "x"

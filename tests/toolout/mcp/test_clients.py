"""An MCP server keeps at most `limit` API clients, one per key, and never closes one a request is using."""

from __future__ import annotations

import asyncio
import contextlib

from toolout.client import AsyncToolOutClient
from toolout.mcp.clients import ClientCache


class Recorder:
    """Makes real (unused) clients and remembers which keys were made and which closed."""

    def __init__(self) -> None:
        self.made: list[str | None] = []
        self.clients: dict[str | None, list[AsyncToolOutClient]] = {}

    def connect(self, key: str | None) -> AsyncToolOutClient:
        self.made.append(key)
        client = AsyncToolOutClient("http://api.invalid", api_key=key)
        self.clients.setdefault(key, []).append(client)
        return client

    def closed(self, key: str | None) -> list[bool]:
        return [client._http.is_closed for client in self.clients[key]]


def test_the_least_recently_used_idle_clients_go_beyond_the_limit() -> None:
    made = Recorder()
    cache = ClientCache(made.connect, limit=2)

    async def scenario() -> None:
        for key in ("a", "b", "a", "c"):  # "a" was used again after "b": "b" is the oldest when "c" comes
            async with cache.using(key):
                pass
        assert len(cache) == 2 and made.closed("b") == [True] and made.closed("a") == [False]
        async with cache.using("b"):
            pass  # made again
        assert made.made == ["a", "b", "c", "b"] and made.closed("a") == [True]
        await cache.aclose()

    asyncio.run(scenario())
    assert all(closed for key in made.clients for closed in made.closed(key)) and len(cache) == 0


def test_a_client_serving_a_request_is_closed_only_after_it() -> None:
    made = Recorder()
    cache = ClientCache(made.connect, limit=1)

    async def scenario() -> None:
        first, second = contextlib.AsyncExitStack(), contextlib.AsyncExitStack()
        busy = await first.enter_async_context(cache.using("busy"))
        await second.enter_async_context(cache.using("other"))
        async with cache.using("busy") as same:
            assert same is busy  # a second request with the same key shares the client
        assert len(cache) == 2 and made.closed("busy") == made.closed("other") == [False]  # both in use
        await first.aclose()  # busy's requests are over: now it can go, the least recently used
        assert made.closed("busy") == [True] and made.closed("other") == [False] and len(cache) == 1
        await second.aclose()
        assert made.closed("other") == [False] and len(cache) == 1  # within the limit: kept for the next call
        await cache.aclose()

    asyncio.run(scenario())

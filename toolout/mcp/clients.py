"""The API clients of an MCP server: one per API key, at most `limit` of them kept.

Over HTTP, `toolout mcp` forwards each caller's own bearer key, so it meets as many keys as it has
callers; a client (and its connection pool) kept for every key it ever saw would grow without bound.
The least recently used idle clients are closed once there are more than `limit`. A client still
serving a request is never closed under it: it goes, if it is still over the limit, when its last
request ends. Everything runs on the server's one event loop, so no lock is needed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from toolout.client import AsyncToolOutClient

DEFAULT_MAX_CLIENTS = 256


@dataclass
class _Kept:
    client: AsyncToolOutClient
    users: int = 0


class ClientCache:
    """`using(key)` lends the key's client (made on first use), most recently used last."""

    def __init__(self, connect: Callable[[str | None], AsyncToolOutClient], limit: int = DEFAULT_MAX_CLIENTS) -> None:
        self._connect, self._limit = connect, limit
        self._kept: dict[str | None, _Kept] = {}

    @contextlib.asynccontextmanager
    async def using(self, key: str | None) -> AsyncIterator[AsyncToolOutClient]:
        kept = self._kept.pop(key, None) or _Kept(self._connect(key))
        self._kept[key] = kept  # re-inserted: the most recently used is last
        kept.users += 1
        try:
            yield kept.client
        finally:
            kept.users -= 1
            await self._trim()

    async def _trim(self) -> None:
        idle = [key for key, kept in self._kept.items() if kept.users == 0]
        for key in idle[: max(0, len(self._kept) - self._limit)]:
            await self._kept.pop(key).client.aclose()

    def __len__(self) -> int:
        return len(self._kept)

    async def aclose(self) -> None:
        kept, self._kept = list(self._kept.values()), {}
        for entry in kept:
            await entry.client.aclose()

"""Names and paths in Redis: one hash per session and space, bound and unbound by compare-and-set in Lua
(`lua/bind_alias.lua`, `lua/unbind_alias.lua`); counters one hash per session (`lua/next_count.lua`)."""

from __future__ import annotations

from infra.redis import keys
from infra.redis.client import redis_errors, text, text_map
from infra.redis.lua import lua_source
from infra.stores.records.model import Space, session_not_found
from infra.stores.records.names.base import AliasSwap, RecordNames
from infra.stores.records.redis_context import RedisRecordContext

PACKAGE = "infra.stores.records.names"
"""Where this part's Lua scripts live (`lua/`)."""


class RedisRecordNames(RecordNames):
    """`RecordNames` on one Redis or a Redis Cluster: every script touches one session's keys."""

    def __init__(self, context: RedisRecordContext) -> None:
        self._c = context
        self._bind = context.r.register_script(lua_source(PACKAGE, "bind_alias"))
        self._unbind = context.r.register_script(lua_source(PACKAGE, "unbind_alias"))
        self._count = context.r.register_script(lua_source(PACKAGE, "next_count"))

    def aliases(self, session_id: str, space: Space) -> dict[str, str]:
        with redis_errors():
            return text_map(self._c.r.hgetall(keys.session_aliases(session_id, space)))

    def alias(self, session_id: str, space: Space, key: str) -> str | None:
        with redis_errors():
            found = self._c.r.hget(keys.session_aliases(session_id, space), key)
        return None if found is None else text(found)

    def bind_alias(self, session_id: str, space: Space, key: str, handle: str, *, expected: str | None) -> AliasSwap:
        hash_keys = [keys.session_aliases(session_id, space), keys.session(session_id)]
        with redis_errors():
            status, previous = self._bind(keys=hash_keys, args=[key, handle, expected or ""])
        if int(status) < 0:
            raise session_not_found(session_id)
        return AliasSwap(bound=int(status) == 1, previous=text(previous) or None)

    def unbind_alias(self, session_id: str, space: Space, key: str, handle: str) -> bool:
        with redis_errors():
            return bool(self._unbind(keys=[keys.session_aliases(session_id, space)], args=[key, handle]))

    def next_count(self, session_id: str, counter: str) -> int:
        session_keys = [keys.session_counters(session_id), keys.session(session_id)]
        with redis_errors():
            count = int(self._count(keys=session_keys, args=[counter]))
        if count < 0:
            raise session_not_found(session_id)
        return count

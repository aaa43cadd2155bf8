"""Sessions and output records in Redis: a hash per session, a JSON string per output, a sorted set of last uses;
names and paths as one hash per session and space, bound by compare-and-set in Lua (`lua/bind_alias.lua`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import redis

from infra import keys
from infra.lua import lua_source
from infra.records.base import MAX_PLANS, AliasSwap, RecordStore
from infra.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    new_id,
    output_not_found,
    session_not_found,
)
from infra.redis_client import redis_errors, text, text_list, text_map


class RedisRecordStore(RecordStore):
    """`RecordStore` on one Redis; every method raises `NotFound` or `BackendUnavailable`, never redis errors."""

    def __init__(
        self, client: redis.Redis, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._r = client
        self._ttl = session_ttl_seconds
        self._clock = clock
        self._bind = client.register_script(lua_source("infra.records", "bind_alias"))
        self._unbind = client.register_script(lua_source("infra.records", "unbind_alias"))
        self._count = client.register_script(lua_source("infra.records", "next_count"))
        self._keep_plan = client.register_script(lua_source("infra.records", "keep_plan"))

    # --- sessions -----------------------------------------------------------------------------
    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        now = self._clock()
        record = SessionRecord(id=new_id(), tenant=tenant, created_at=now, last_used_at=now)
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.hset(keys.session(record.id), mapping={"id": record.id, "tenant": tenant, "created_at": now})
            pipe.zadd(keys.SESSIONS_BY_LAST_USE, {record.id: now})
            pipe.execute()
        return record

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        with redis_errors():
            data = text_map(self._r.hgetall(keys.session(session_id)))
            last_used = self._r.zscore(keys.SESSIONS_BY_LAST_USE, session_id)
        if not data or data.get("tenant") != tenant or last_used is None or self._expired(last_used):
            raise session_not_found(session_id)
        self.touch(session_id)
        return SessionRecord(
            id=data["id"], tenant=data["tenant"], created_at=float(data["created_at"]), last_used_at=self._clock()
        )

    def touch(self, session_id: str) -> None:
        with redis_errors():
            self._r.zadd(keys.SESSIONS_BY_LAST_USE, {session_id: self._clock()}, xx=True)

    def idle_sessions(self, limit: int = 100) -> list[str]:
        with redis_errors():
            found = self._r.zrangebyscore(keys.SESSIONS_BY_LAST_USE, 0, self._clock() - self._ttl, start=0, num=limit)
        return text_list(found)

    def _expired(self, last_used: float) -> bool:
        return last_used < self._clock() - self._ttl

    def session_handles(self, session_id: str) -> list[str]:
        with redis_errors():
            return sorted(text_list(self._r.smembers(keys.session_outputs(session_id))))

    def drop_session_records(self, session_id: str) -> None:
        handles = self.session_handles(session_id)
        with redis_errors():
            pipe = self._r.pipeline()
            for handle in handles:
                pipe.delete(keys.output(handle), keys.output_plans(handle))
            if handles:
                pipe.zrem(keys.RETIRED_OUTPUTS, *handles)
            aliases = [keys.session_aliases(session_id, space) for space in Space]
            pipe.delete(keys.session(session_id), keys.session_outputs(session_id), keys.session_counters(session_id))
            pipe.delete(*aliases)
            pipe.zrem(keys.SESSIONS_BY_LAST_USE, session_id)
            pipe.execute()

    # --- outputs ------------------------------------------------------------------------------
    def put_output(self, record: OutputRecord) -> None:
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.set(keys.output(record.handle), record.model_dump_json())
            pipe.sadd(keys.session_outputs(record.session_id), record.handle)
            pipe.execute()

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord:
        with redis_errors():
            raw = self._r.get(keys.output(handle))
        if raw is None:
            raise output_not_found(handle)
        record = OutputRecord.model_validate_json(raw)
        if record.tenant != tenant:
            raise output_not_found(handle)
        return record

    def get_outputs(self, handles: Iterable[str], tenant: str = DEFAULT_TENANT) -> list[OutputRecord]:
        wanted = list(handles)
        if not wanted:
            return []
        with redis_errors():
            raws = self._r.mget([keys.output(handle) for handle in wanted])
        records = [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]
        return [record for record in records if record.tenant == tenant]

    def delete_output(self, record: OutputRecord) -> None:
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.delete(keys.output(record.handle), keys.output_plans(record.handle))
            pipe.srem(keys.session_outputs(record.session_id), record.handle)
            pipe.zrem(keys.RETIRED_OUTPUTS, record.handle)
            pipe.execute()
        for space in Space:
            key = record.alias(space)
            if key is not None:
                self.unbind_alias(record.session_id, space, key, record.handle)

    # --- chunk plans --------------------------------------------------------------------------
    def chunk_plan(self, record: OutputRecord, key: str) -> str | None:
        with redis_errors():
            found = self._r.hget(keys.output_plans(record.handle), key)
        return None if found is None else text(found)

    def keep_chunk_plan(self, record: OutputRecord, key: str, plan: str) -> None:
        with redis_errors():
            self._keep_plan(
                keys=[keys.output(record.handle), keys.output_plans(record.handle)], args=[key, plan, MAX_PLANS]
            )

    # --- names and file paths -----------------------------------------------------------------
    def aliases(self, session_id: str, space: Space) -> dict[str, str]:
        with redis_errors():
            return text_map(self._r.hgetall(keys.session_aliases(session_id, space)))

    def alias(self, session_id: str, space: Space, key: str) -> str | None:
        with redis_errors():
            found = self._r.hget(keys.session_aliases(session_id, space), key)
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
        with redis_errors():
            count = int(self._count(keys=[keys.session_counters(session_id), keys.session(session_id)], args=[counter]))
        if count < 0:
            raise session_not_found(session_id)
        return count

    # --- retired versions ---------------------------------------------------------------------
    def retire_output(self, record: OutputRecord, at: float) -> None:
        with redis_errors():
            self._r.zadd(keys.RETIRED_OUTPUTS, {record.handle: at})

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        with redis_errors():
            handles = text_list(self._r.zrangebyscore(keys.RETIRED_OUTPUTS, "-inf", f"({before}", start=0, num=limit))
            raws = self._r.mget([keys.output(handle) for handle in handles]) if handles else []
        vanished = [handle for handle, raw in zip(handles, raws, strict=True) if raw is None]
        if vanished:
            with redis_errors():
                self._r.zrem(keys.RETIRED_OUTPUTS, *vanished)
        return [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]

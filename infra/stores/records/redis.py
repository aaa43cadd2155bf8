"""Sessions and output records in Redis: a hash per session, a JSON string per output, per-slot sorted sets of
last uses and retired versions; names and paths as one hash per session and space, bound by compare-and-set in Lua
(`lua/bind_alias.lua`).

Laid out for a Redis Cluster (`infra.redis.keys`): a session's keys share the tag `{<session id>}`, an output's keys the
tag `{<handle>}`. An output does not share its session's tag, because a handle is all a caller gives to read an
output (`get_output(handle)`), so its key cannot name the session; and no step needs both atomically: every script
touches one session (`bind_alias`, `next_count`, `unbind_alias`) or one output (`keep_plan`). The few steps that
change a session and an output (storing, deleting, dropping a session) run one tag at a time, in an order where a
crash between them leaves only what is harmless or repaired later: a session's set naming a handle whose record
is gone (readers skip it; dropping the session removes it), never a record no session names (it would never be
deleted). The indexes that span sessions or outputs (last uses, retired versions) are kept per slot
(`infra.redis.slot_index`), changed beside the session or output they index and read whole by walking their copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text, text_list, text_map
from infra.redis.lua import lua_source
from infra.redis.slot_index import SlotIndex
from infra.stores.records.base import MAX_PLANS, AliasSwap, RecordStore
from infra.stores.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    new_id,
    output_not_found,
    session_not_found,
)


class RedisRecordStore(RecordStore):
    """`RecordStore` on one Redis or a Redis Cluster; every method raises `NotFound` or `BackendUnavailable`, never
    redis errors."""

    def __init__(
        self, client: redis.Redis, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._r = client
        self._ttl = session_ttl_seconds
        self._clock = clock
        self._last_use = SlotIndex(client, keys.SESSIONS_BY_LAST_USE)
        self._retired = SlotIndex(client, keys.RETIRED_OUTPUTS)
        self._bind = client.register_script(lua_source("infra.stores.records", "bind_alias"))
        self._unbind = client.register_script(lua_source("infra.stores.records", "unbind_alias"))
        self._count = client.register_script(lua_source("infra.stores.records", "next_count"))
        self._keep_plan = client.register_script(lua_source("infra.stores.records", "keep_plan"))

    # --- sessions -----------------------------------------------------------------------------
    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        now = self._clock()
        record = SessionRecord(id=new_id(), tenant=tenant, created_at=now, last_used_at=now)
        with redis_errors():
            last_use = self._last_use.key_for(record.id)
            pipe = self._r.pipeline(transaction=True)  # one tag: the session and its slot's copy of the index
            pipe.hset(keys.session(record.id), mapping={"id": record.id, "tenant": tenant, "created_at": now})
            pipe.zadd(last_use, {record.id: now})
            pipe.execute()
        return record

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            pipe.hgetall(keys.session(session_id))
            pipe.zscore(keys.sessions_by_last_use(session_id), session_id)
            found, last_used = pipe.execute()
        data = text_map(found)
        if not data or data.get("tenant") != tenant or last_used is None or self._expired(last_used):
            raise session_not_found(session_id)
        self.touch(session_id)
        return SessionRecord(
            id=data["id"], tenant=data["tenant"], created_at=float(data["created_at"]), last_used_at=self._clock()
        )

    def touch(self, session_id: str) -> None:
        with redis_errors():
            self._r.zadd(self._last_use.key_for(session_id), {session_id: self._clock()}, xx=True)

    def idle_sessions(self, limit: int = 100) -> list[str]:
        with redis_errors():
            found = self._oldest(self._last_use, 0, self._clock() - self._ttl, limit)
        return [session_id for _, session_id, _ in found]

    def _expired(self, last_used: float) -> bool:
        return last_used < self._clock() - self._ttl

    def _oldest(
        self, index: SlotIndex, low: float | str, high: float | str, limit: int
    ) -> list[tuple[float, str, str]]:
        """(score, member, copy) of the `limit` lowest-scored members in `[low, high]` over every copy of `index`:
        the first `limit` of each copy, in one round trip per primary, merged."""
        copies = list(index.copies())
        pipe = self._r.pipeline(transaction=False)
        for copy in copies:
            pipe.zrangebyscore(copy, low, high, start=0, num=limit, withscores=True)
        found = [
            (float(score), text(member), copy)
            for copy, members in zip(copies, pipe.execute() if copies else [], strict=True)
            for member, score in members
        ]
        return sorted(found)[:limit]

    def session_handles(self, session_id: str) -> list[str]:
        with redis_errors():
            return sorted(text_list(self._r.smembers(keys.session_outputs(session_id))))

    def session_outputs(self, session_id: str) -> list[OutputRecord]:
        with redis_errors():
            raws = self._raw_outputs(self.session_handles(session_id))
        return [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]

    def drop_session_records(self, session_id: str) -> None:
        """The outputs first (one tag each), then the session's own keys and index entry (one tag, at once): a
        crash half-way leaves the session listed, so the next DELETE or sweep drops it again."""
        handles = self.session_handles(session_id)
        with redis_errors():
            if handles:
                pipe = self._r.pipeline(transaction=False)
                for handle in handles:
                    self._queue_output_removal(pipe, handle)
                pipe.execute()
            aliases = [keys.session_aliases(session_id, space) for space in Space]
            pipe = self._r.pipeline(transaction=True)
            for key in (keys.session(session_id), keys.session_outputs(session_id), keys.session_counters(session_id)):
                pipe.delete(key)
            for key in aliases:
                pipe.delete(key)
            pipe.zrem(keys.sessions_by_last_use(session_id), session_id)
            pipe.execute()

    @staticmethod
    def _queue_output_removal(pipe: redis.client.Pipeline, handle: str) -> None:
        """An output's keys and retired mark: all on its tag (one DEL per key: a cluster pipeline takes no other)."""
        pipe.delete(keys.output(handle))
        pipe.delete(keys.output_plans(handle))
        pipe.zrem(keys.retired_outputs(handle), handle)

    # --- outputs ------------------------------------------------------------------------------
    def put_output(self, record: OutputRecord) -> None:
        """The session's set names the handle before the record exists (see the module's docstring)."""
        with redis_errors():
            self._r.sadd(keys.session_outputs(record.session_id), record.handle)
            self._r.set(keys.output(record.handle), record.model_dump_json())

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
        with redis_errors():
            raws = self._raw_outputs(list(handles))
        records = [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]
        return [record for record in records if record.tenant == tenant]

    def _raw_outputs(self, handles: list[str]) -> list[str | bytes | None]:
        """GET of each record in one pipeline (not MGET: the records live on many slots)."""
        if not handles:
            return []
        pipe = self._r.pipeline(transaction=False)
        for handle in handles:
            pipe.get(keys.output(handle))
        return list(pipe.execute())

    def delete_output(self, record: OutputRecord) -> None:
        """The record first, then the session's set, then its name or path (each step on one tag)."""
        with redis_errors():
            pipe = self._r.pipeline(transaction=True)
            self._queue_output_removal(pipe, record.handle)
            pipe.execute()
            self._r.srem(keys.session_outputs(record.session_id), record.handle)
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
            self._r.zadd(self._retired.key_for(record.handle), {record.handle: at})

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        with redis_errors():
            due = self._oldest(self._retired, "-inf", f"({before}", limit)
            raws = self._raw_outputs([handle for _, handle, _ in due])
            vanished = [(copy, handle) for (_, handle, copy), raw in zip(due, raws, strict=True) if raw is None]
            if vanished:
                pipe = self._r.pipeline(transaction=False)
                for copy, handle in vanished:
                    pipe.zrem(copy, handle)
                pipe.execute()
        return [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]

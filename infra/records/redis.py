"""Sessions and output records in Redis: a hash per session, a JSON string per output, a sorted set of last uses."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from infra import keys
from infra.records.base import RecordStore
from infra.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    new_id,
    output_not_found,
    session_not_found,
)
from infra.redis_client import redis_errors, text_list, text_map


class RedisRecordStore(RecordStore):
    """`RecordStore` on one Redis; every method raises `NotFound` or `BackendUnavailable`, never redis errors."""

    def __init__(
        self, client: redis.Redis, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time
    ) -> None:
        self._r = client
        self._ttl = session_ttl_seconds
        self._clock = clock

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
                pipe.delete(keys.output(handle))
            pipe.delete(keys.session(session_id), keys.session_outputs(session_id))
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

    def delete_output(self, record: OutputRecord) -> None:
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.delete(keys.output(record.handle))
            pipe.srem(keys.session_outputs(record.session_id), record.handle)
            pipe.execute()

"""Sessions in Redis: a hash per session, a set of its handles, its last use in a per-slot sorted set."""

from __future__ import annotations

from infra.redis import keys
from infra.redis.client import redis_errors, text_list, text_map
from infra.stores.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    expired,
    new_id,
    session_not_found,
)
from infra.stores.records.redis_context import RedisRecordContext
from infra.stores.records.retention.base import Expiring
from infra.stores.records.sessions.base import RecordSessions


class RedisRecordSessions(RecordSessions):
    """`RecordSessions` on one Redis or a Redis Cluster; raises `NotFound` or `BackendUnavailable`, never redis
    errors."""

    def __init__(self, context: RedisRecordContext) -> None:
        self._c = context

    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        now = self._c.clock()
        record = SessionRecord(id=new_id(), tenant=tenant, created_at=now, last_used_at=now)
        with redis_errors():
            last_use = self._c.last_use.key_for(record.id)
            pipe = self._c.r.pipeline(transaction=True)  # one tag: the session and its slot's copy of the index
            pipe.hset(keys.session(record.id), mapping={"id": record.id, "tenant": tenant, "created_at": now})
            pipe.zadd(last_use, {record.id: now})
            pipe.execute()
        return record

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        with redis_errors():
            pipe = self._c.r.pipeline(transaction=False)
            pipe.hgetall(keys.session(session_id))
            pipe.zscore(keys.sessions_by_last_use(session_id), session_id)
            found, last_used = pipe.execute()
        data = text_map(found)
        expires_at = float(data["expires_at"]) if "expires_at" in data else None
        if not data or data.get("tenant") != tenant or last_used is None or self._c.idle(last_used):
            raise session_not_found(session_id)
        if expired(expires_at, self._c.clock()):
            raise session_not_found(session_id)
        self.touch(session_id)
        return SessionRecord(
            id=data["id"],
            tenant=data["tenant"],
            created_at=float(data["created_at"]),
            last_used_at=self._c.clock(),
            expires_at=expires_at,
        )

    def touch(self, session_id: str) -> None:
        with redis_errors():
            self._c.r.zadd(self._c.last_use.key_for(session_id), {session_id: self._c.clock()}, xx=True)

    def session_handles(self, session_id: str) -> list[str]:
        with redis_errors():
            return sorted(text_list(self._c.r.smembers(keys.session_outputs(session_id))))

    def session_outputs(self, session_id: str) -> list[OutputRecord]:
        with redis_errors():
            raws = self._c.raw_outputs(self.session_handles(session_id))
        return [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]

    def drop_session_records(self, session_id: str) -> None:
        """The outputs first (one tag each), then the session's own keys and index entries (one tag, at once): a
        crash half-way leaves the session listed, so the next DELETE or sweep drops it again."""
        handles = self.session_handles(session_id)
        with redis_errors():
            if handles:
                pipe = self._c.r.pipeline(transaction=False)
                for handle in handles:
                    self._c.queue_output_removal(pipe, handle)
                pipe.execute()
            aliases = [keys.session_aliases(session_id, space) for space in Space]
            pipe = self._c.r.pipeline(transaction=True)
            for key in (keys.session(session_id), keys.session_outputs(session_id), keys.session_counters(session_id)):
                pipe.delete(key)
            for key in aliases:
                pipe.delete(key)
            pipe.zrem(keys.sessions_by_last_use(session_id), session_id)
            pipe.zrem(keys.expiring(session_id), Expiring("session", session_id).member)
            pipe.execute()

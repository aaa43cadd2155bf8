"""Retention in Redis: per-slot sorted sets of last uses, deadlines and retired versions (`infra.redis.slot_index`),
each entry beside the session or output it indexes."""

from __future__ import annotations

from infra.redis import keys
from infra.redis.client import redis_errors
from infra.stores.records.model import OutputRecord
from infra.stores.records.redis_context import RedisRecordContext
from infra.stores.records.retention.base import Expiring, RecordRetention


class RedisRecordRetention(RecordRetention):
    """`RecordRetention` on one Redis or a Redis Cluster."""

    def __init__(self, context: RedisRecordContext) -> None:
        self._c = context

    def idle_sessions(self, limit: int = 100) -> list[str]:
        with redis_errors():
            found = self._c.oldest(self._c.last_use, 0, self._c.clock() - self._c.ttl, limit)
        return [session_id for _, session_id, _ in found]

    def expire_session_at(self, session_id: str, at: float) -> None:
        with redis_errors():
            deadlines = self._c.deadlines.key_for(session_id)
            pipe = self._c.r.pipeline(transaction=True)  # one tag: the session and its slot's copy of the index
            pipe.hset(keys.session(session_id), "expires_at", at)
            pipe.zadd(deadlines, {Expiring("session", session_id).member: at})
            pipe.execute()

    def expiring(self, before: float, limit: int = 100) -> list[Expiring]:
        """Entries whose session or output is already gone (a crash between deleting and unlisting) are dropped."""
        with redis_errors():
            due = [
                (Expiring.of(member), copy)
                for _, member, copy in self._c.oldest(self._c.deadlines, "-inf", f"({before}", limit)
            ]
            pipe = self._c.r.pipeline(transaction=False)
            for item, _ in due:
                pipe.exists(keys.session(item.id) if item.kind == "session" else keys.output(item.id))
            found = pipe.execute() if due else []
            vanished = [(item, copy) for (item, copy), there in zip(due, found, strict=True) if not there]
            for item, copy in vanished:
                self._c.r.zrem(copy, item.member)
        return [item for (item, _), there in zip(due, found, strict=True) if there]

    def retire_output(self, record: OutputRecord, at: float) -> None:
        with redis_errors():
            self._c.r.zadd(self._c.retired.key_for(record.handle), {record.handle: at})

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        with redis_errors():
            due = self._c.oldest(self._c.retired, "-inf", f"({before}", limit)
            raws = self._c.raw_outputs([handle for _, handle, _ in due])
            vanished = [(copy, handle) for (_, handle, copy), raw in zip(due, raws, strict=True) if raw is None]
            if vanished:
                pipe = self._c.r.pipeline(transaction=False)
                for copy, handle in vanished:
                    pipe.zrem(copy, handle)
                pipe.execute()
        return [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]

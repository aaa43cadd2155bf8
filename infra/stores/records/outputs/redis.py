"""Output records in Redis: a JSON string per output, named in its session's set, its deadline in a per-slot index."""

from __future__ import annotations

from collections.abc import Iterable

from infra.redis import keys
from infra.redis.client import redis_errors
from infra.stores.records.model import DEFAULT_TENANT, OutputRecord, Space, expired, output_not_found
from infra.stores.records.names.base import RecordNames
from infra.stores.records.outputs.base import RecordOutputs
from infra.stores.records.redis_context import RedisRecordContext
from infra.stores.records.retention.base import Expiring


class RedisRecordOutputs(RecordOutputs):
    """`RecordOutputs` on one Redis or a Redis Cluster; deleting an output unbinds its alias through `names`."""

    def __init__(self, context: RedisRecordContext, names: RecordNames) -> None:
        self._c, self._names = context, names

    def put_output(self, record: OutputRecord) -> None:
        """The session's set names the handle before the record exists (`infra.stores.records.redis_context`)."""
        with redis_errors():
            self._c.r.sadd(keys.session_outputs(record.session_id), record.handle)
            self._c.r.set(keys.output(record.handle), record.model_dump_json())
            if record.expires_at is not None:
                deadlines = self._c.deadlines.key_for(record.handle)
                self._c.r.zadd(deadlines, {Expiring("output", record.handle).member: record.expires_at})

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord:
        record = self.stored_output(handle)
        if record is None or record.tenant != tenant or expired(record.expires_at, self._c.clock()):
            raise output_not_found(handle)
        return record

    def stored_output(self, handle: str) -> OutputRecord | None:
        with redis_errors():
            raw = self._c.r.get(keys.output(handle))
        return None if raw is None else OutputRecord.model_validate_json(raw)

    def get_outputs(self, handles: Iterable[str], tenant: str = DEFAULT_TENANT) -> list[OutputRecord]:
        with redis_errors():
            raws = self._c.raw_outputs(list(handles))
        records = [OutputRecord.model_validate_json(raw) for raw in raws if raw is not None]
        now = self._c.clock()
        return [record for record in records if record.tenant == tenant and not expired(record.expires_at, now)]

    def delete_output(self, record: OutputRecord) -> None:
        """The record first, then the session's set, then its name or path (each step on one tag)."""
        with redis_errors():
            pipe = self._c.r.pipeline(transaction=True)
            self._c.queue_output_removal(pipe, record.handle)
            pipe.execute()
            self._c.r.srem(keys.session_outputs(record.session_id), record.handle)
        for space in Space:
            key = record.alias(space)
            if key is not None:
                self._names.unbind_alias(record.session_id, space, key, record.handle)

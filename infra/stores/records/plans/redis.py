"""Chunk plans in Redis: one hash per output on its tag, written by Lua only while the record exists
(`lua/keep_plan.lua`)."""

from __future__ import annotations

from infra.redis import keys
from infra.redis.client import redis_errors, text
from infra.redis.lua import lua_source
from infra.stores.records.model import OutputRecord
from infra.stores.records.plans.base import MAX_PLANS, RecordPlans
from infra.stores.records.redis_context import RedisRecordContext

PACKAGE = "infra.stores.records.plans"
"""Where this part's Lua script lives (`lua/`)."""


class RedisRecordPlans(RecordPlans):
    """`RecordPlans` on one Redis or a Redis Cluster."""

    def __init__(self, context: RedisRecordContext) -> None:
        self._c = context
        self._keep = context.r.register_script(lua_source(PACKAGE, "keep_plan"))

    def chunk_plan(self, record: OutputRecord, key: str) -> str | None:
        with redis_errors():
            found = self._c.r.hget(keys.output_plans(record.handle), key)
        return None if found is None else text(found)

    def keep_chunk_plan(self, record: OutputRecord, key: str, plan: str) -> None:
        with redis_errors():
            self._keep(keys=[keys.output(record.handle), keys.output_plans(record.handle)], args=[key, plan, MAX_PLANS])

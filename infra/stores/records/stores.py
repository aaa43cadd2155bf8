"""The record store, split by concern: each part a small protocol with its Redis implementation and in-memory twin.

A caller names the part it works with (`records.sessions.get_session`, `records.outputs.put_output`,
`records.names.bind_alias`), so each protocol stays small and each contract suite checks one concern. The parts
share one backend: on Redis a `RedisRecordContext` (one client, the indexes), in memory a `MemoryRecordState` (the
records, one lock); a session's outputs, names, counters and plans all go when it is dropped, as
`RecordSessions.drop_session_records` says.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from infra.stores.records.memory_state import MemoryRecordState
from infra.stores.records.names.base import RecordNames
from infra.stores.records.names.memory import MemoryRecordNames
from infra.stores.records.names.redis import RedisRecordNames
from infra.stores.records.outputs.base import RecordOutputs
from infra.stores.records.outputs.memory import MemoryRecordOutputs
from infra.stores.records.outputs.redis import RedisRecordOutputs
from infra.stores.records.plans.base import RecordPlans
from infra.stores.records.plans.memory import MemoryRecordPlans
from infra.stores.records.plans.redis import RedisRecordPlans
from infra.stores.records.redis_context import RedisRecordContext
from infra.stores.records.retention.base import RecordRetention
from infra.stores.records.retention.memory import MemoryRecordRetention
from infra.stores.records.retention.redis import RedisRecordRetention
from infra.stores.records.sessions.base import RecordSessions
from infra.stores.records.sessions.memory import MemoryRecordSessions
from infra.stores.records.sessions.redis import RedisRecordSessions


@dataclass(frozen=True)
class RecordStores:
    """The parts of the record store, over one backend."""

    sessions: RecordSessions
    outputs: RecordOutputs
    names: RecordNames
    plans: RecordPlans
    retention: RecordRetention


def redis_record_stores(
    client: redis.Redis, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time
) -> RecordStores:
    """The record store on one Redis (or Redis Cluster); safe to share between threads and processes."""
    context = RedisRecordContext(client, session_ttl_seconds=session_ttl_seconds, clock=clock)
    names = RedisRecordNames(context)
    return RecordStores(
        sessions=RedisRecordSessions(context),
        outputs=RedisRecordOutputs(context, names),
        names=names,
        plans=RedisRecordPlans(context),
        retention=RedisRecordRetention(context),
    )


def memory_record_stores(*, session_ttl_seconds: int, clock: Callable[[], float] = time.time) -> RecordStores:
    """The record store in process memory (the embedded mode, unit tests); thread-safe within one process."""
    state = MemoryRecordState(session_ttl_seconds=session_ttl_seconds, clock=clock)
    names = MemoryRecordNames(state)
    return RecordStores(
        sessions=MemoryRecordSessions(state),
        outputs=MemoryRecordOutputs(state, names),
        names=names,
        plans=MemoryRecordPlans(state),
        retention=MemoryRecordRetention(state),
    )

"""What the Redis parts of the record store share: one client, the session TTL, the clock and the indexes that span
sessions or outputs.

Laid out for a Redis Cluster (`infra.redis.keys`): a session's keys share the tag `{<session id>}`, an output's keys the
tag `{<handle>}`. An output does not share its session's tag, because a handle is all a caller gives to read an
output (`outputs.get_output(handle)`), so its key cannot name the session; and no step needs both atomically: every
script touches one session (`bind_alias`, `next_count`, `unbind_alias`) or one output (`keep_plan`). The few steps that
change a session and an output (storing, deleting, dropping a session) run one tag at a time, in an order where a
crash between them leaves only what is harmless or repaired later: a session's set naming a handle whose record
is gone (readers skip it; dropping the session removes it), never a record no session names (it would never be
deleted). The indexes that span sessions or outputs (last uses, retired versions, deadlines) are kept per slot
(`infra.redis.slot_index`), changed beside the session or output they index and read whole by walking their copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from infra.redis import keys
from infra.redis.client import text
from infra.redis.slot_index import SlotIndex
from infra.stores.records.retention.base import Expiring


class RedisRecordContext:
    """One Redis as the record store's parts see it; safe to share between threads and processes."""

    def __init__(
        self, client: redis.Redis, *, session_ttl_seconds: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.r = client
        self.ttl, self.clock = session_ttl_seconds, clock
        self.last_use = SlotIndex(client, keys.SESSIONS_BY_LAST_USE)
        self.retired = SlotIndex(client, keys.RETIRED_OUTPUTS)
        self.deadlines = SlotIndex(client, keys.EXPIRING)

    def idle(self, last_used: float) -> bool:
        """Whether a session last used at `last_used` has been idle past the TTL."""
        return last_used < self.clock() - self.ttl

    def oldest(self, index: SlotIndex, low: float | str, high: float | str, limit: int) -> list[tuple[float, str, str]]:
        """(score, member, copy) of the `limit` lowest-scored members in `[low, high]` over every copy of `index`:
        the first `limit` of each copy, in one round trip per primary, merged."""
        copies = list(index.copies())
        pipe = self.r.pipeline(transaction=False)
        for copy in copies:
            pipe.zrangebyscore(copy, low, high, start=0, num=limit, withscores=True)
        found = [
            (float(score), text(member), copy)
            for copy, members in zip(copies, pipe.execute() if copies else [], strict=True)
            for member, score in members
        ]
        return sorted(found)[:limit]

    def raw_outputs(self, handles: list[str]) -> list[str | bytes | None]:
        """GET of each record in one pipeline (not MGET: the records live on many slots)."""
        if not handles:
            return []
        pipe = self.r.pipeline(transaction=False)
        for handle in handles:
            pipe.get(keys.output(handle))
        return list(pipe.execute())

    @staticmethod
    def queue_output_removal(pipe: redis.client.Pipeline, handle: str) -> None:
        """An output's keys and index entries: all on its tag (one DEL per key: a cluster pipeline takes no other)."""
        pipe.delete(keys.output(handle))
        pipe.delete(keys.output_plans(handle))
        pipe.zrem(keys.retired_outputs(handle), handle)
        pipe.zrem(keys.expiring(handle), Expiring("output", handle).member)

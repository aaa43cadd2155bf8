"""The result cache's index in Redis: a sorted set of source jobs per key, a set of (key, job) per output.

Both expire `ttl_seconds` after the last offer, so an unused key costs nothing for long; deleting an
output reads its set once and removes exactly its sources.

The two live on different Redis Cluster slots (a key's set is shared by the outputs of every source, an output's
by every key it answered), so they are written by one non-transactional pipeline, not MULTI/EXEC, and nothing
mixes them in a script. A crash between the two writes costs nothing: a source whose way back from its output was
never written is still checked by whoever looks it up (its output must still exist, `base`), and expires.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text_list
from infra.stores.resultcache.base import MAX_SOURCES, ResultCache

SEPARATOR = " "
"""Between the key and the job id in an output's set (neither contains a space)."""


class RedisResultCache(ResultCache):
    def __init__(self, client: redis.Redis, *, ttl_seconds: int, clock: Callable[[], float] = time.time) -> None:
        self._r, self._ttl, self._clock = client, ttl_seconds, clock

    def remember(self, key: str, job_id: str, handle: str) -> None:
        sources, owned = keys.result_cache(key), keys.result_cache_output(handle)
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)  # two slots: see the module's docstring
            pipe.zadd(sources, {job_id: self._clock()})
            pipe.zremrangebyrank(sources, 0, -MAX_SOURCES - 1)
            pipe.expire(sources, self._ttl)
            pipe.sadd(owned, f"{key}{SEPARATOR}{job_id}")
            pipe.expire(owned, self._ttl)
            pipe.execute()

    def sources(self, key: str) -> list[str]:
        with redis_errors():
            return text_list(self._r.zrevrange(keys.result_cache(key), 0, MAX_SOURCES - 1))

    def forget(self, key: str, job_id: str) -> None:
        with redis_errors():
            self._r.zrem(keys.result_cache(key), job_id)

    def forget_outputs(self, handles: list[str]) -> int:
        if not handles:
            return 0
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            for handle in handles:
                pipe.smembers(keys.result_cache_output(handle))
            owned = [text_list(members) for members in pipe.execute()]
            pipe = self._r.pipeline(transaction=False)  # one key per command: they live on many slots
            for members in owned:
                for member in members:
                    key, _, job_id = member.partition(SEPARATOR)
                    pipe.zrem(keys.result_cache(key), job_id)
            for handle in handles:
                pipe.delete(keys.result_cache_output(handle))
            results = pipe.execute()
        return sum(int(found) for found in results[: len(results) - len(handles)])

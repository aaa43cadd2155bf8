"""The rate limiter in Redis: one hash per model, every reservation one Lua step (`lua/reserve_slot.lua`)."""

from __future__ import annotations

import redis

from infra.llm.ratelimit.base import Cost, RateLimit
from infra.redis import keys
from infra.redis.client import redis_errors
from infra.redis.lua import lua_source


class RedisRateLimiter:
    """`RateLimiter` shared by every process on one Redis (its clock is the only one used)."""

    def __init__(self, client: redis.Redis, *, burst_seconds: float = 1.0) -> None:
        self._burst_ms = burst_seconds * 1000
        self._script = client.register_script(lua_source("infra.llm.ratelimit", "reserve_slot"))

    def reserve(self, model: str, limit: RateLimit, tokens: int) -> float:
        cost = Cost.of(limit, tokens)
        args: list[str | int] = [repr(cost.per_request_ms), repr(cost.per_token_ms), cost.tokens, repr(self._burst_ms)]
        with redis_errors():
            waited_ms = self._script(keys=[keys.model_rate_limit(model)], args=args)
        return int(waited_ms) / 1000

"""Provider limits (rpm, tpm) per model, shared by every worker: see `base`."""

from infra.llm.ratelimit.base import RateLimit, RateLimiter
from infra.llm.ratelimit.memory import MemoryRateLimiter
from infra.llm.ratelimit.redis import RedisRateLimiter

__all__ = ["MemoryRateLimiter", "RateLimit", "RateLimiter", "RedisRateLimiter"]

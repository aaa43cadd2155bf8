"""Provider limits (rpm, tpm) per model, shared by every worker: see `base`."""

from infra.ratelimit.base import RateLimit, RateLimiter
from infra.ratelimit.memory import MemoryRateLimiter
from infra.ratelimit.redis import RedisRateLimiter

__all__ = ["MemoryRateLimiter", "RateLimit", "RateLimiter", "RedisRateLimiter"]

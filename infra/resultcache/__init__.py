"""The result cache: the `ResultCache` index (protocol, Redis, in-memory twin) and its key."""

from infra.resultcache.base import MAX_SOURCES, ResultCache
from infra.resultcache.memory import MemoryResultCache
from infra.resultcache.redis import RedisResultCache

__all__ = ["MAX_SOURCES", "MemoryResultCache", "RedisResultCache", "ResultCache"]

"""The result cache: the `ResultCache` index (protocol, Redis, in-memory twin) and its key."""

from infra.stores.resultcache.base import MAX_SOURCES, ResultCache
from infra.stores.resultcache.memory import MemoryResultCache
from infra.stores.resultcache.redis import RedisResultCache

__all__ = ["MAX_SOURCES", "MemoryResultCache", "RedisResultCache", "ResultCache"]

"""API keys: the `ApiKeyStore` rules, its Redis implementation and its in-memory twin."""

from infra.apikeys.base import ApiKeyInfo, ApiKeyStore, check_tenant, configured_keys, hash_key, new_key
from infra.apikeys.memory import MemoryApiKeyStore
from infra.apikeys.redis import RedisApiKeyStore

__all__ = [
    "ApiKeyInfo",
    "ApiKeyStore",
    "MemoryApiKeyStore",
    "RedisApiKeyStore",
    "check_tenant",
    "configured_keys",
    "hash_key",
    "new_key",
]

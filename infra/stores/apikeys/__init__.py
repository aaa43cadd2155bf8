"""API keys: the `ApiKeyStore` rules, its Redis implementation and its in-memory twin."""

from infra.stores.apikeys.base import ApiKeyInfo, ApiKeyStore, check_tenant, configured_keys, hash_key, new_key
from infra.stores.apikeys.memory import MemoryApiKeyStore
from infra.stores.apikeys.redis import RedisApiKeyStore

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

"""Idempotency keys: the `IdempotencyStore` rules, its Redis implementation and its in-memory twin."""

from infra.stores.idempotency.base import IdempotencyStore, Lease, StoredResponse, fingerprint
from infra.stores.idempotency.memory import MemoryIdempotencyStore
from infra.stores.idempotency.redis import RedisIdempotencyStore

__all__ = [
    "IdempotencyStore",
    "Lease",
    "MemoryIdempotencyStore",
    "RedisIdempotencyStore",
    "StoredResponse",
    "fingerprint",
]

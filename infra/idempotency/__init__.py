"""Idempotency keys: the `IdempotencyStore` rules, its Redis implementation and its in-memory twin."""

from infra.idempotency.base import IdempotencyStore, Lease, StoredResponse, fingerprint
from infra.idempotency.memory import MemoryIdempotencyStore
from infra.idempotency.redis import RedisIdempotencyStore

__all__ = [
    "IdempotencyStore",
    "Lease",
    "MemoryIdempotencyStore",
    "RedisIdempotencyStore",
    "StoredResponse",
    "fingerprint",
]

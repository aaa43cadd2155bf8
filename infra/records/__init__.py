"""Sessions and output records: the `RecordStore` interface, its Redis implementation and its in-memory twin."""

from infra.records.base import AliasSwap, RecordStore
from infra.records.memory import MemoryRecordStore
from infra.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    blob_key,
    new_id,
    session_prefix,
)
from infra.records.redis import RedisRecordStore

__all__ = [
    "DEFAULT_TENANT",
    "AliasSwap",
    "MemoryRecordStore",
    "OutputRecord",
    "RecordStore",
    "RedisRecordStore",
    "SessionRecord",
    "Space",
    "blob_key",
    "new_id",
    "session_prefix",
]

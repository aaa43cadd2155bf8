"""Sessions and output records: the `RecordStore` interface, its Redis implementation and its in-memory twin."""

from infra.stores.records.base import AliasSwap, RecordStore
from infra.stores.records.memory import MemoryRecordStore
from infra.stores.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    SessionRecord,
    Space,
    TextView,
    blob_key,
    new_id,
    session_prefix,
)
from infra.stores.records.redis import RedisRecordStore

__all__ = [
    "DEFAULT_TENANT",
    "AliasSwap",
    "MemoryRecordStore",
    "OutputRecord",
    "RecordStore",
    "RedisRecordStore",
    "SessionRecord",
    "Space",
    "TextView",
    "blob_key",
    "new_id",
    "session_prefix",
]

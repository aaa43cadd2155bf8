"""Sessions and output records: the `RecordStore` interface, its Redis implementation and its in-memory twin."""

from infra.records.base import RecordStore
from infra.records.memory import MemoryRecordStore
from infra.records.model import DEFAULT_TENANT, OutputRecord, SessionRecord, blob_key, new_id, session_prefix
from infra.records.redis import RedisRecordStore

__all__ = [
    "DEFAULT_TENANT",
    "MemoryRecordStore",
    "OutputRecord",
    "RecordStore",
    "RedisRecordStore",
    "SessionRecord",
    "blob_key",
    "new_id",
    "session_prefix",
]

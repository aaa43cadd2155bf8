"""Sessions and output records, one part per concern (`infra.stores.records.stores`): sessions, output records,
names and paths, chunk plans and retention."""

from infra.stores.records.model import (
    DEFAULT_TENANT,
    OutputRecord,
    Redaction,
    SessionRecord,
    Space,
    TextView,
    blob_key,
    new_id,
    session_prefix,
)
from infra.stores.records.names.base import AliasSwap, RecordNames
from infra.stores.records.outputs.base import RecordOutputs
from infra.stores.records.plans.base import MAX_PLANS, RecordPlans
from infra.stores.records.retention.base import Expiring, RecordRetention
from infra.stores.records.sessions.base import RecordSessions
from infra.stores.records.stores import RecordStores, memory_record_stores, redis_record_stores

__all__ = [
    "DEFAULT_TENANT",
    "MAX_PLANS",
    "AliasSwap",
    "Expiring",
    "OutputRecord",
    "RecordNames",
    "RecordOutputs",
    "RecordPlans",
    "RecordRetention",
    "RecordSessions",
    "RecordStores",
    "Redaction",
    "SessionRecord",
    "Space",
    "TextView",
    "blob_key",
    "memory_record_stores",
    "new_id",
    "redis_record_stores",
    "session_prefix",
]

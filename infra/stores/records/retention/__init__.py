"""Retention: idle sessions, deadlines and retired versions, the sweeper's work lists (`retention.redis`, and its
twin `retention.memory`)."""

from infra.stores.records.retention.base import Expiring, RecordRetention

__all__ = ["Expiring", "RecordRetention"]

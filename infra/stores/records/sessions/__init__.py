"""Sessions: created, opened per tenant, kept alive by use, listed and dropped with everything in them
(`sessions.redis`, and its twin `sessions.memory`)."""

from infra.stores.records.sessions.base import RecordSessions

__all__ = ["RecordSessions"]

"""Names and file paths: a session's aliases of handles, bound by compare-and-set, and its default-name counters
(`names.redis`, and its twin `names.memory`)."""

from infra.stores.records.names.base import AliasSwap, RecordNames

__all__ = ["AliasSwap", "RecordNames"]

"""Output records: stored, read per tenant, listed, deleted (`outputs.redis`, and its twin `outputs.memory`)."""

from infra.stores.records.outputs.base import RecordOutputs

__all__ = ["RecordOutputs"]

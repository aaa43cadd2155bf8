"""Chunk plans: a cache of how an output was cut into chunks for a budget (`infra.planning.plans`), kept with the
output and gone with it (`outputs.delete_output`, `sessions.drop_session_records`)."""

from __future__ import annotations

from typing import Protocol

from infra.stores.records.model import OutputRecord

MAX_PLANS = 8
"""Chunk plans kept per output: one per distinct budget (question length) in use, never an unbounded list."""


class RecordPlans(Protocol):
    """The chunk plans of each output, by key."""

    def chunk_plan(self, record: OutputRecord, key: str) -> str | None:
        """The chunk plan kept for `record` under `key`, or None."""
        ...

    def keep_chunk_plan(self, record: OutputRecord, key: str, plan: str) -> None:
        """Keep a plan of `record` under `key`, only while the record exists; at most `MAX_PLANS` per output."""
        ...

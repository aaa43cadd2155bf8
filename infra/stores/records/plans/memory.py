"""Chunk plans in process memory."""

from __future__ import annotations

from infra.stores.records.memory_state import MemoryRecordState
from infra.stores.records.model import OutputRecord
from infra.stores.records.plans.base import MAX_PLANS, RecordPlans


class MemoryRecordPlans(RecordPlans):
    """`RecordPlans` over the in-memory records."""

    def __init__(self, state: MemoryRecordState) -> None:
        self._s = state

    def chunk_plan(self, record: OutputRecord, key: str) -> str | None:
        with self._s.lock:
            return self._s.plans.get(record.handle, {}).get(key)

    def keep_chunk_plan(self, record: OutputRecord, key: str, plan: str) -> None:
        with self._s.lock:
            if record.handle not in self._s.outputs:
                return
            plans = self._s.plans.setdefault(record.handle, {})
            if key not in plans and len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = plan

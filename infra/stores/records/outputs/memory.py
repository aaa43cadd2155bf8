"""Output records in process memory."""

from __future__ import annotations

from collections.abc import Iterable

from infra.stores.records.memory_state import MemoryRecordState
from infra.stores.records.model import DEFAULT_TENANT, OutputRecord, Space, expired, output_not_found
from infra.stores.records.names.base import RecordNames
from infra.stores.records.outputs.base import RecordOutputs


class MemoryRecordOutputs(RecordOutputs):
    """`RecordOutputs` over the in-memory records; deleting an output unbinds its alias through `names`."""

    def __init__(self, state: MemoryRecordState, names: RecordNames) -> None:
        self._s, self._names = state, names

    def put_output(self, record: OutputRecord) -> None:
        with self._s.lock:
            self._s.outputs[record.handle] = record.model_copy(deep=True)

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord:
        with self._s.lock:
            record = self._s.outputs.get(handle)
        if record is None or record.tenant != tenant or expired(record.expires_at, self._s.clock()):
            raise output_not_found(handle)
        return record.model_copy(deep=True)

    def stored_output(self, handle: str) -> OutputRecord | None:
        with self._s.lock:
            record = self._s.outputs.get(handle)
        return None if record is None else record.model_copy(deep=True)

    def get_outputs(self, handles: Iterable[str], tenant: str = DEFAULT_TENANT) -> list[OutputRecord]:
        found = (self.find_output(handle, tenant) for handle in handles)
        return [record for record in found if record is not None]

    def delete_output(self, record: OutputRecord) -> None:
        with self._s.lock:
            self._s.forget_output(record.handle)
            for space in Space:
                key = record.alias(space)
                if key is not None:
                    self._names.unbind_alias(record.session_id, space, key, record.handle)

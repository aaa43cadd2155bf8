"""The records of the outputs stored in sessions: one per version, never changed once written.

Every implementation raises `NotFound` for unknown, expired or other tenants' outputs (a foreign handle looks
exactly like an unknown one) and `BackendUnavailable` when its backend is down.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from extraction.errors import NotFound
from infra.stores.records.model import DEFAULT_TENANT, OutputRecord


class RecordOutputs(Protocol):
    """Output records, by handle."""

    def put_output(self, record: OutputRecord) -> None: ...

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord: ...

    def stored_output(self, handle: str) -> OutputRecord | None:
        """The record as stored, whatever its tenant or deadline: what the sweeper deletes once it expired."""
        ...

    def delete_output(self, record: OutputRecord) -> None:
        """Remove the record, its plans and index entries; its name or path is dropped if it still points here."""
        ...

    def find_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord | None:
        try:
            return self.get_output(handle, tenant)
        except NotFound:
            return None

    def get_outputs(self, handles: Iterable[str], tenant: str = DEFAULT_TENANT) -> list[OutputRecord]:
        """The records of `handles` that exist and belong to `tenant`, in the order asked (one round trip)."""
        ...

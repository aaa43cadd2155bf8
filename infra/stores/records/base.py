"""The record store interface: sessions, and the records of the outputs stored in them.

A session groups the outputs (and jobs) of one agent conversation; deleting it, or leaving it
idle past its TTL, removes its records here and its blobs in the blob store (`api/lifecycle.py`).
Every implementation raises `NotFound` for unknown, idle-expired or other tenants' objects (a
foreign id looks exactly like an unknown one) and `BackendUnavailable` when its backend is down.
`RedisRecordStore` runs in production; `MemoryRecordStore` serves the embedded mode and unit tests.

Names and file paths are per-session *aliases* of handles (one hash per session and `Space`):
`bind_alias` is a compare-and-set, so two writers racing for the same name (write mode `new`,
default naming, two appends to one variable) can never both win, and nothing is lost — the loser
sees what won and tries again (`infra.outputs.placement`). A version replaced by a newer one is *retired*:
kept readable for a grace period (a running extraction job may be reading it) and then removed by
the sweeper (`api.lifecycle`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from extraction.errors import NotFound
from infra.stores.records.model import DEFAULT_TENANT, OutputRecord, SessionRecord, Space

MAX_PLANS = 8
"""Chunk plans kept per output: one per distinct budget (question length) in use, never an unbounded list."""


@dataclass(frozen=True)
class AliasSwap:
    """What `bind_alias` did: `bound` or not, and the handle the alias held before the call."""

    bound: bool
    previous: str | None


class RecordStore(Protocol):
    """Sessions and output records."""

    # --- sessions -----------------------------------------------------------------------------
    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord: ...

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        """The live session, its idle timer restarted; idle-expired and other tenants' sessions are `NotFound`."""
        ...

    def touch(self, session_id: str) -> None:
        """Restart the session's idle timer (any use of its outputs counts)."""
        ...

    def idle_sessions(self, limit: int = 100) -> list[str]:
        """Sessions unused for longer than the TTL, oldest first (the sweeper's work list)."""
        ...

    def session_handles(self, session_id: str) -> list[str]: ...

    def session_outputs(self, session_id: str) -> list[OutputRecord]:
        """The records of every output of the session, retired versions included (what ending it deletes)."""
        ...

    def drop_session_records(self, session_id: str) -> None:
        """Remove the session, its output records, names, paths and counters (blobs and jobs are the caller's)."""
        ...

    # --- outputs ------------------------------------------------------------------------------
    def put_output(self, record: OutputRecord) -> None: ...

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord: ...

    def delete_output(self, record: OutputRecord) -> None:
        """Remove the record (and its retired mark); its name or path is dropped if it still points here."""
        ...

    def find_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord | None:
        try:
            return self.get_output(handle, tenant)
        except NotFound:
            return None

    def get_outputs(self, handles: Iterable[str], tenant: str = DEFAULT_TENANT) -> list[OutputRecord]:
        """The records of `handles` that exist and belong to `tenant`, in the order asked (one round trip)."""
        ...

    # --- chunk plans (a cache: `infra.planning.plans`) -----------------------------------------
    def chunk_plan(self, record: OutputRecord, key: str) -> str | None:
        """The plan kept for `record` under `key`, or None; it goes with the output (delete, session drop)."""
        ...

    def keep_chunk_plan(self, record: OutputRecord, key: str, plan: str) -> None:
        """Keep a plan of `record` under `key`, only while the record exists; at most `MAX_PLANS` per output."""
        ...

    # --- names and file paths -----------------------------------------------------------------
    def aliases(self, session_id: str, space: Space) -> dict[str, str]:
        """Every name (or path) of the session and the handle it points to."""
        ...

    def alias(self, session_id: str, space: Space, key: str) -> str | None: ...

    def bind_alias(self, session_id: str, space: Space, key: str, handle: str, *, expected: str | None) -> AliasSwap:
        """Point `key` at `handle` only if it now points at `expected` (None: only if `key` is free).

        `NotFound` when the session is gone (nothing is bound then).
        """
        ...

    def unbind_alias(self, session_id: str, space: Space, key: str, handle: str) -> bool:
        """Remove `key` only if it still points at `handle` (deleting an output never drops a newer version)."""
        ...

    def next_count(self, session_id: str, counter: str) -> int:
        """1, 2, 3, … per (session, counter): default names `<tool>_<n>`. `NotFound` when the session is gone."""
        ...

    # --- retired versions ---------------------------------------------------------------------
    def retire_output(self, record: OutputRecord, at: float) -> None:
        """Mark a version replaced at time `at` (again: postpone it); `retired_outputs` hands it to the sweeper."""
        ...

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        """Versions retired before `before`, oldest first (deleting one takes it off the list)."""
        ...
